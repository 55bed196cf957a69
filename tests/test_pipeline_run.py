"""The pipeline end to end on the CPU backend: run dir, analysis, interrupt, pinned/registered logic."""

from __future__ import annotations

import json
import threading

import numpy as np
import pytest

from gpuscope.clock import CLOCK
from gpuscope.errors import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_RESOURCE, ResourceError
from gpuscope.parsers import parse_log
from gpuscope.workload import curve
from gpuscope.workload import timinglog as tl
from gpuscope.workload.backends import get_backend
from gpuscope.workload.cpu import CpuBackend
from gpuscope.workload.devices import HostDevice
from gpuscope.workload.hostmem import HostMemory
from gpuscope.workload.pipeline import Pipeline
from gpuscope.workload.pipeline_types import PipelineConfig
from gpuscope.workload.runner import WorkloadRun
from gpuscope.workload.srs import SRS_SEED_H, SRS_SEED_W, Srs
from gpuscope.workload.synth import partition_bytes
from gpuscope.workload.verify import Verifier
from tests.test_hostmem import FakeAllocator

PHASES = {"synth", "lock_wait", "h2d", "ntt", "msm", "barrier", "batch_add", "tail_msm", "prep"}


def _run(tmp_path, **kw):
    cfg = PipelineConfig(**{"mode": "pinned", "log_n": 8, "partitions": 4, "workers": 2,
                            "synth_threads": 2, "verify": True, **kw})
    run = WorkloadRun(cfg, backend="cpu", out=str(tmp_path / "run"), argv=["test"], sample=False)
    run.prepare()
    run.start()
    return run


def test_cpu_run_end_to_end(tmp_path):
    run = _run(tmp_path)
    out = run.finish()
    assert (out.status, out.exit_code) == ("complete", 0)
    d = out.path
    meta = json.loads((d / "meta.json").read_text())
    assert meta["status"] == "complete" and meta["exit_code"] == 0
    assert meta["workload"]["backend"] == "cpu"
    assert "no effect" in meta["workload"]["mode_effective"] or "CPU" in meta["workload"]["mode_effective"]
    assert meta["pipeline"]["partitions_done"] == 4 and meta["pipeline"]["verified"] == 4
    # timing.log: the cuzk parser reads every line, one complete tenure per partition
    parsed = parse_log(str(d / "timing.log"))
    assert parsed.format == "cuzk" and len(parsed.skipped) == 0
    assert int(parsed.records["complete"].sum()) == 4
    ev = parsed.timeline
    assert (ev["event"] == "GPU_END").sum() == 4 and (ev["event"] == "SYNTH_END").sum() == 4
    # spans.csv: every phase of every partition
    import pandas as pd

    spans = pd.read_csv(d / "spans.csv")
    assert set(spans["phase"]) == PHASES
    assert (spans["t_end"] >= spans["t_start"]).all()
    per_part = spans[spans["phase"] == "tail_msm"].groupby("partition").size()
    assert sorted(per_part.index) == [0, 1, 2, 3]
    # summary.json = the analysis of the run directory
    summ = json.loads((d / "summary.json").read_text())
    assert summ["log"]["records"] == 4 and summ["source"]["kind"] == "cuzk"
    assert summ["log"]["split"]["inconsistent_records"] == 0
    assert summ["log"]["split"]["h2d_ms"] == 0.0  # no upload on the CPU backend
    assert out.analysis is not None and out.analysis.log.records == 4


def test_interrupt_leaves_a_complete_rundir_with_status_interrupted(tmp_path):
    run = _run(tmp_path, partitions=60, log_n=8, verify=False)
    deadline = CLOCK.mono() + 20
    while run.pipeline.done < 1 and CLOCK.mono() < deadline:
        run.wait(0.02)
    run.request_stop()
    out = run.finish()
    assert (out.status, out.exit_code) == ("interrupted", EXIT_INTERRUPTED)
    meta = json.loads((out.path / "meta.json").read_text())
    assert meta["status"] == "interrupted"
    done = meta["pipeline"]["partitions_done"]
    assert 1 <= done < 60
    parsed = parse_log(str(out.path / "timing.log"))
    assert int(parsed.records["complete"].sum()) == done  # no half tenure was written
    assert json.loads((out.path / "summary.json").read_text())["log"]["records"] == done
    assert run.pipeline.budget.used == 0  # every synthesized partition was given back


def _pipeline(tmp_path, mode, fa, *, backend=None, partitions=5, verify=True, budget_parts=3):
    cfg = PipelineConfig(mode=mode, log_n=6, partitions=partitions, workers=2, synth_threads=3,
                         verify=verify)
    scfg = cfg.synth_config()
    cfg.host_budget_bytes = partition_bytes(scfg) * budget_parts
    be = backend or get_backend("cpu")
    mem = HostMemory(mode, allocator=fa, pinned_budget_bytes=cfg.resolved_pinned_budget())
    n = 1 << cfg.log_n
    srs = {0: Srs(be.generate_points(n, SRS_SEED_H), be.generate_points(n, SRS_SEED_W),
                  resident=True, chunk=1 << 22)}
    lines = []

    class Sink:
        def write_line(self, text, mono=None):
            lines.append(text)

        def flush(self):
            pass

        def close(self):
            pass

    log = tl.TimingLog(Sink(), tl.SpansWriter(tmp_path / "spans.csv"), job_id="t",
                       t0_mono=CLOCK.mono())
    ver = Verifier(be, log_n=cfg.log_n, m=n, h_seed=SRS_SEED_H, w_seed=SRS_SEED_W) if verify else None
    p = Pipeline(cfg, be, {0: HostDevice(0)}, mem, log, srs=srs, verifier=ver)
    return p, mem, lines


def test_pinned_pool_is_reused_across_partitions_and_freed(tmp_path):
    fa = FakeAllocator()
    p, mem, lines = _pipeline(tmp_path, "pinned", fa, partitions=8)
    res = p.run()
    assert res.error is None and res.done == 8
    assert all(r.verified for r in res.results)
    pool = mem.pool.counters
    assert pool.allocations <= 3  # never more buffers than the budget holds
    assert pool.hits == 8 - pool.allocations  # every other partition reused a buffer
    assert pool.in_use_bytes == 0
    mem.close()
    assert fa.live == {}
    assert sum(1 for ln in lines if ln.startswith("CUZK_TIMING: mutex_held_ms=")) == 8


def test_registered_mode_registers_every_partition_and_leaves_nothing(tmp_path):
    fa = FakeAllocator()
    p, mem, _ = _pipeline(tmp_path, "registered", fa, partitions=4)
    # registrations take turns with uploads: (un)register only while holding the DMA lock
    reg, unreg = fa.host_register, fa.host_unregister

    def checked_register(ptr, nbytes):
        assert p._dma.locked()
        reg(ptr, nbytes)

    def checked_unregister(ptr):
        assert p._dma.locked()
        unreg(ptr)

    fa.host_register, fa.host_unregister = checked_register, checked_unregister
    res = p.run()
    assert res.error is None and res.done == 4
    assert sum(1 for c in fa.calls if c[0] == "register") == 4 * 4  # a, b, c, witness
    assert sum(1 for c in fa.calls if c[0] == "unregister") == 16
    assert fa.registered == {}


class WrongMsm(CpuBackend):
    def msm(self, points, scalars):
        good = super().msm(points, scalars)
        return curve.point_to_limbs(curve.add(curve.limbs_to_point(good), curve.G1_GEN))


def test_verification_mismatch_fails_the_run(tmp_path):
    p, mem, _ = _pipeline(tmp_path, "pageable", None, backend=WrongMsm(), partitions=3)
    res = p.run()
    assert res.error is not None and res.error.exit_code == EXIT_FAILED
    assert "H MSM differs" in str(res.error)
    assert p.budget.used == 0


def test_budget_smaller_than_one_partition_is_a_resource_error(tmp_path):
    cfg = PipelineConfig(mode="pageable", log_n=8, partitions=2, host_budget_bytes=1000)
    with pytest.raises(ResourceError) as e:
        cfg.validate()
    assert e.value.exit_code == EXIT_RESOURCE and "--host-budget-mib" in e.value.one_line()


def test_budget_gives_backpressure(tmp_path):
    fa = FakeAllocator()
    p, mem, _ = _pipeline(tmp_path, "pinned", fa, partitions=6, budget_parts=1, verify=False)
    seen = []
    stop = threading.Event()

    def watch():
        while not stop.is_set():
            seen.append(p.budget.used)
            stop.wait(0.001)

    t = threading.Thread(target=watch)
    t.start()
    res = p.run()
    stop.set()
    t.join()
    assert res.done == 6
    assert max(seen) <= p.budget.budget and p.budget.peak <= p.budget.budget
    assert p.budget.waits > 0  # synthesis had to wait for the workers
    assert mem.pool.counters.allocations == 1


def test_prep_bitmap_marks_exactly_the_scalar_one_rows(tmp_path):
    p, mem, _ = _pipeline(tmp_path, "pageable", None, partitions=2, verify=True)
    res = p.run()
    assert res.error is None  # the verifier checks batch_add = sum over the ones
    assert np.all([r.verified for r in res.results])


class OutOfMemoryError(Exception):
    """Stands in for cupy.cuda.memory.OutOfMemoryError (matched by name)."""


class OomBackend(CpuBackend):
    def msm(self, points, scalars):
        raise OutOfMemoryError("Out of memory allocating 1,610,612,736 bytes (allocated so far: 9 GiB)")


def test_device_oom_is_a_resource_error_naming_the_flags(tmp_path):
    p, mem, _ = _pipeline(tmp_path, "pageable", None, backend=OomBackend(), partitions=2, verify=False)
    res = p.run()
    assert isinstance(res.error, ResourceError) and res.error.exit_code == EXIT_RESOURCE
    msg = res.error.one_line()
    assert "out of device memory during msm" in msg and "1,610,612,736 bytes" in msg
    assert "--log-n" in msg and "--workers" in msg


def test_two_gpus_each_with_its_own_mutex_and_workers(tmp_path):
    """Two 'GPUs' (host devices, CPU backends): per-GPU locks, tenures never interleave in the log."""
    from gpuscope.clock import Clock
    from gpuscope.rundir import TimingLogWriter

    cfg = PipelineConfig(mode="pageable", log_n=6, partitions=10, workers=2, synth_threads=3,
                         gpus=[0, 1], verify=True)
    n = 1 << cfg.log_n
    backends = {0: CpuBackend(), 1: CpuBackend()}
    srs = {g: Srs(backends[g].generate_points(n, SRS_SEED_H), backends[g].generate_points(n, SRS_SEED_W),
                  resident=True, chunk=1 << 22) for g in (0, 1)}
    clock = Clock()
    log = tl.TimingLog(TimingLogWriter(tmp_path / "timing.log", None, clock),
                       tl.SpansWriter(tmp_path / "spans.csv", clock), job_id="t",
                       t0_mono=clock.mono(), clock=clock)
    ver = Verifier(backends, log_n=cfg.log_n, m=n, h_seed=SRS_SEED_H, w_seed=SRS_SEED_W)
    p = Pipeline(cfg, backends, {0: HostDevice(0), 1: HostDevice(1)}, HostMemory("pageable"), log,
                 srs=srs, verifier=ver)
    assert set(p.mutexes) == {0, 1} and len(p.workers) == 4
    assert sorted(w.worker for w in p.workers) == [0, 1, 2, 3]
    res = p.run()
    log.close()
    assert res.error is None and res.done == 10 and all(r.verified for r in res.results)
    assert {r.gpu for r in res.results} == {0, 1}
    parsed = parse_log(str(tmp_path / "timing.log"))
    assert len(parsed.skipped) == 0
    assert int(parsed.records["complete"].sum()) == 10
    assert (parsed.records["n_gpus"] == 1).all()
    import pandas as pd

    spans = pd.read_csv(tmp_path / "spans.csv")
    assert set(spans.loc[spans["phase"] == "h2d", "gpu"]) == {0, 1}


def test_device_oom_context_names_what_ran_out_and_lets_other_errors_through():
    from gpuscope.workload.devices import device_oom_as_resource_error

    with pytest.raises(ResourceError, match="GPU 1 ran out of device memory during SRS point generation"):
        with device_oom_as_resource_error(1, "SRS point generation (2048 points)"):
            raise OutOfMemoryError("Out of memory allocating 512 bytes")
    with pytest.raises(ValueError, match="not memory"):
        with device_oom_as_resource_error(0, "x"):
            raise ValueError("not memory")

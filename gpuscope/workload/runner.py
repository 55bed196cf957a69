"""One `gpuscope run`: run directory, sampler, SRS set-up, the pipeline, meta and summary.

    run = WorkloadRun(cfg, backend="auto", out=None, argv=sys.argv)
    run.prepare()          # checks, run dir (status running), SRS points, sampler
    run.start()            # the pipeline on a background thread
    while run.alive(): ... run.progress() ...   # the caller's live view; run.request_stop() on Ctrl-C
    outcome = run.finish() # status complete|interrupted|failed, summary.json, everything freed

No printing here: the CLI renders `progress()` and the final analysis.
"""

from __future__ import annotations

import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpuscope import __version__
from gpuscope import nvml as nvml_mod
from gpuscope.clock import CLOCK
from gpuscope.errors import (
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    GpuscopeError,
    UsageError,
)
from gpuscope.rundir import RunDir, host_info, iso_now
from gpuscope.workload import timinglog as tl
from gpuscope.workload.devices import device_oom_as_resource_error
from gpuscope.workload.hostmem import HostMemory, fmt_bytes, normalize_mode
from gpuscope.workload.pipeline import Pipeline
from gpuscope.workload.pipeline_types import PipelineConfig, PipelineResult
from gpuscope.workload.srs import SRS_SEED_H, SRS_SEED_W, build_srs

GPU_DEFAULT_LOG_N = 24
CPU_DEFAULT_LOG_N = 10
CPU_MAX_LOG_N = 14


def default_log_n(backend_name: str) -> int:
    """--log-n when the user gives none: 2^24 on a GPU, 2^10 on the CPU reference."""
    return GPU_DEFAULT_LOG_N if backend_name == "gpu" else CPU_DEFAULT_LOG_N


@dataclass
class RunOutcome:
    status: str  # complete | interrupted | failed
    exit_code: int
    path: Path
    result: PipelineResult | None
    analysis: Any = None  # gpuscope.analysis.Analysis, when the log could be analyzed
    analysis_error: str | None = None
    error: BaseException | None = None
    notes: list[str] = field(default_factory=list)


class WorkloadRun:
    def __init__(self, cfg: PipelineConfig, *, backend: str = "auto", out: str | None = None,
                 argv: list[str] | None = None, sample: bool = True,
                 sample_interval_s: float = 0.020, on_error=None, on_setup=None):
        """`on_error(msg)`: errors the run goes on after (a full disk); `on_setup(msg)`: one line
        as each set-up step that can take seconds starts (pinning, SRS points, warm-up)."""
        self.cfg = cfg
        self.backend_kind = backend
        self.out = out
        self.argv = list(argv) if argv is not None else list(sys.argv)
        self.sample = sample
        self.sample_interval_s = sample_interval_s
        self.on_error = on_error or (lambda msg: None)
        self.on_setup = on_setup or (lambda msg: None)
        self.notes: list[str] = []
        self.rd: RunDir | None = None
        self.pipeline: Pipeline | None = None
        self.sampler = None
        self.samples_sink = None
        self.log: tl.TimingLog | None = None
        self.mem: HostMemory | None = None
        self.backend = None
        self._srs_host: list[Any] = []
        self._thread: threading.Thread | None = None
        self._result: PipelineResult | None = None
        self._exc: BaseException | None = None
        self.setup_s: dict[str, float] = {}
        self.interrupts = 0

    # -- set-up ----------------------------------------------------------------------------
    def prepare(self) -> None:
        from gpuscope.workload.backends import get_backend

        cfg = self.cfg
        cfg.mode = normalize_mode(cfg.mode)
        if self.backend_kind not in ("auto", "gpu", "cpu"):
            raise UsageError(f"--backend: unknown backend {self.backend_kind!r} (auto, gpu or cpu)")
        self.backend = get_backend(self.backend_kind)
        on_gpu = self.backend.name == "gpu"
        if not on_gpu:
            if cfg.log_n > CPU_MAX_LOG_N:
                raise UsageError(
                    f"--log-n {cfg.log_n} is too large for the CPU reference backend "
                    f"(at most {CPU_MAX_LOG_N}; it computes with Python integers)",
                    hint=f"use --log-n {CPU_DEFAULT_LOG_N} or run on a GPU")
            self.notes.append(
                "CPU reference backend (no GPU): host-memory modes have no effect, no PCIe "
                "traffic and no NVML samples; the timings are those of Python-integer arithmetic")
            cfg.gpus = [0]
            cfg.srs_resident = True
        cfg.validate()

        rd = RunDir.create(self.out, mode=cfg.mode, on_error=self._report)
        self.rd = rd
        from gpuscope.workload.synth import partition_bytes

        meta = {
            "gpuscope_version": __version__, "kind": "workload", "mode": cfg.mode,
            "argv": self.argv, "host": host_info(), "started": iso_now(), "status": "running",
            "workload": {
                "backend": self.backend.name, "mode": cfg.mode,
                "mode_effective": cfg.mode if on_gpu else "none (CPU backend)",
                "log_n": cfg.log_n, "n": 1 << cfg.log_n, "partitions": cfg.partitions,
                "workers_per_gpu": cfg.workers, "synth_threads": cfg.synth_threads,
                "gpus": cfg.gpus, "contention_threads": cfg.contention, "verify": cfg.verify,
                "srs": "resident" if cfg.srs_resident else "pinned-host, streamed",
                "srs_chunk_points": 1 << cfg.srs_chunk_log,
                "abc_bytes_per_partition": 3 * (1 << cfg.log_n) * 32,
                "h2d_bytes_per_partition": 4 * (1 << cfg.log_n) * 32,
                "partition_host_bytes": partition_bytes(cfg.synth_config()),
                "host_budget_bytes": cfg.resolved_host_budget(),
                "pinned_budget_bytes": cfg.resolved_pinned_budget() if cfg.mode == "pinned" else None,
                "general_share": cfg.general_share, "bool_share": cfg.bool_share, "seed": cfg.seed,
            },
            "notes": self.notes,
        }
        # NVML (absence is not an error): GPU facts for meta, and the sampler
        nv = nvml_mod.get() if self.sample else None
        gpu_meta: list[dict] = []
        if nv is not None and on_gpu:
            from gpuscope.recorder import _gpu_meta

            n = nv.device_count()
            bad = [g for g in cfg.gpus if not 0 <= g < n]
            if bad:
                raise UsageError(f"--gpus: no GPU {bad[0]} (this machine has {n})")
            meta["driver"] = nv.system() or None
            gpu_meta = _gpu_meta(nv, cfg.gpus)
        meta["gpus"] = gpu_meta
        meta["line_rate_gbs"] = next((g.get("line_rate_gbs") for g in gpu_meta
                                      if g.get("line_rate_gbs")), None)
        if meta["line_rate_gbs"] is None and on_gpu:
            from gpuscope import linerate

            meta["line_rate_gbs"] = linerate.measured_line_rate()
        rd.write_meta(**meta)

        samples = rd.samples_writer()
        self.samples_sink = _LastRowTee(samples)
        if nv is not None and on_gpu:
            from gpuscope.sampler import Sampler

            self.sampler = Sampler(nv, cfg.gpus, self.samples_sink,
                                   interval_s=self.sample_interval_s, on_error=self._report)
        else:
            why = ("CPU backend" if not on_gpu else
                   f"no samples: {nvml_mod.unavailable_reason() or 'sampling off'}")
            rd.write_meta(sampler=why)

        # devices, host memory, SRS points
        t0 = time.perf_counter()
        devices = self._devices(on_gpu)
        backends = self._backends(devices, on_gpu)
        allocator = None
        if on_gpu and (cfg.mode != "pageable" or not cfg.srs_resident):
            from gpuscope.workload.hostmem import CudaHostAllocator

            allocator = CudaHostAllocator()
        self.mem = HostMemory(cfg.mode if on_gpu else "pageable", allocator=allocator,
                              pinned_budget_bytes=cfg.resolved_pinned_budget())
        if self.mem.pool is not None and cfg.prewarm:
            # a daemon's pool is long-lived: pin the buffers the pipeline will cycle through now,
            # outside the timed run (meta: setup.pinned_prewarm_s; --no-prewarm shows the cold cost)
            t1 = time.perf_counter()
            nbytes = partition_bytes(cfg.synth_config())
            want = min(cfg.partitions, cfg.resolved_pinned_budget() // nbytes)
            self.on_setup(f"pinning the pool's host buffers ({want} x {fmt_bytes(nbytes)}, cudaHostAlloc)")
            self.setup_s["pinned_prewarm_buffers"] = self.mem.pool.prewarm(nbytes, want)
            self.setup_s["pinned_prewarm_s"] = time.perf_counter() - t1
        n, m = 1 << cfg.log_n, cfg.synth_config().m
        where = ("CPU reference" if not on_gpu else "kept on the GPU" if cfg.srs_resident
                 else "kept in pinned host memory")
        self.on_setup(f"generating the SRS points ({n + m:,} G1 points, {where})")
        with device_oom_as_resource_error(cfg.gpus[0], f"SRS point generation ({n + m} points)"):
            srs = build_srs(cfg, devices, backends, allocator, on_gpu, self._srs_host)
        self.setup_s["srs_s"] = time.perf_counter() - t0
        if on_gpu:
            self._warm_up(devices, backends)

        spans = rd.spans_writer()
        self.log = tl.TimingLog(rd.timing_log(), spans, job_id=f"gpuscope-{rd.path.name}",
                                t0_mono=CLOCK.mono())
        verifier = None
        if cfg.verify:
            from gpuscope.workload.verify import Verifier

            verifier = Verifier(backends, log_n=cfg.log_n, m=cfg.synth_config().m,
                                h_seed=SRS_SEED_H, w_seed=SRS_SEED_W, seed=cfg.seed)
            rd.write_meta(verify=verifier.describe())
        self.pipeline = Pipeline(cfg, backends, devices, self.mem, self.log, srs=srs,
                                 verifier=verifier)
        rd.write_meta(setup=self.setup_s)

    def _warm_up(self, devices: dict[int, Any], backends: dict[int, Any]) -> None:
        """Every kernel once per GPU before the clock starts (GpuBackend.warm_up: CuPy's JIT
        kernels and the 2^log_n tables), so the first tenures time the work, not the setup;
        meta setup.kernel_warmup_s says what it cost."""
        t0 = time.perf_counter()
        self.on_setup(f"warming the kernels up at 2^{self.cfg.log_n} on GPU {', '.join(map(str, devices))}")
        for g, dev in devices.items():
            dev.activate()
            with device_oom_as_resource_error(g, f"the kernel warm-up at 2^{self.cfg.log_n}"):
                backends[g].warm_up(self.cfg.log_n, seed=self.cfg.seed)
        devices[self.cfg.gpus[0]].activate()
        self.setup_s["kernel_warmup_s"] = time.perf_counter() - t0

    def _devices(self, on_gpu: bool) -> dict[int, Any]:
        from gpuscope.workload.devices import CudaDevice, HostDevice

        if not on_gpu:
            return {0: HostDevice(0)}
        return {g: CudaDevice(g) for g in self.cfg.gpus}

    def _backends(self, devices: dict[int, Any], on_gpu: bool) -> dict[int, Any]:
        """One GPU backend per GPU, created with that GPU current (its tables live there)."""
        if not on_gpu or len(devices) == 1:
            return {g: self.backend for g in devices}
        from gpuscope.workload.gpu import GpuBackend

        out = {}
        for g, dev in devices.items():
            dev.activate()
            out[g] = GpuBackend()
        devices[self.cfg.gpus[0]].activate()
        return out

    def _report(self, msg: str) -> None:
        self.notes.append(msg)
        self.on_error(msg)

    # -- running -----------------------------------------------------------------------------
    def start(self) -> None:
        if self.sampler is not None:
            self.sampler.start()
        self.rd.write_meta(pipeline_started=iso_now())
        self._thread = threading.Thread(target=self._run, name="gpuscope-pipeline", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self._result = self.pipeline.run()
        except BaseException as e:  # noqa: BLE001 - reported by finish()
            self._exc = e

    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def wait(self, timeout: float | None = None) -> None:
        if self._thread is not None:
            self._thread.join(timeout)

    def request_stop(self) -> None:
        self.interrupts += 1
        if self.pipeline is not None:
            self.pipeline.request_stop()

    def progress(self) -> dict[str, Any]:
        p = self.pipeline
        if p is None:
            return {}
        return {
            "done": p.done, "total": self.cfg.partitions, "synthesized": p.synthesized,
            "queued": p.queue.qsize(),
            "workers": [(s.gpu, s.worker, s.phase, s.partition, s.done) for s in p.workers],
            "samples": self.samples_sink.last() if self.samples_sink is not None else {},
            "elapsed_s": CLOCK.mono() - p.t_start if p.t_start else 0.0,
            "stopping": p.stop.is_set(),
        }

    # -- the end -----------------------------------------------------------------------------
    def finish(self) -> RunOutcome:
        """Wait for the pipeline, free everything, write meta/summary. Never raises for the run."""
        self.wait()
        res, err = self._result, self._exc
        if res is not None and res.error is not None:
            err = res.error
        stats = None
        if self.sampler is not None:
            stats = self.sampler.stop()
        self._release()
        if err is not None:
            status, code = "failed", getattr(err, "exit_code", EXIT_FAILED)
        elif res is None or res.stopped or self.interrupts:
            status, code = "interrupted", EXIT_INTERRUPTED
        else:
            status, code = "complete", EXIT_OK
        if res is not None and status == "interrupted" and res.done == self.cfg.partitions:
            status, code = "complete", EXIT_OK  # Ctrl-C after the last partition: nothing lost
        out = RunOutcome(status=status, exit_code=code, path=self.rd.path, result=res, error=err,
                         notes=self.notes)
        fields: dict[str, Any] = {"status": status, "exit_code": code, "ended": iso_now(),
                                  "notes": self.notes}
        if stats is not None:
            fields["sampler"] = stats.to_dict()
        if res is not None:
            fields["pipeline"] = res.summary()
        if err is not None:
            fields["error"] = (err.one_line() if isinstance(err, GpuscopeError)
                               else f"{type(err).__name__}: {err}")
        self.rd.write_meta(**fields)
        self._analyze(out)
        return out

    def finish_failed_setup(self, err: BaseException | None = None) -> None:
        """prepare() raised: free what it took and mark the run directory failed (if any)."""
        if err is None:
            err = sys.exc_info()[1]
        self._release()
        if self.rd is not None:
            code = getattr(err, "exit_code", EXIT_FAILED)
            if isinstance(err, KeyboardInterrupt):
                status, code = "interrupted", EXIT_INTERRUPTED
            else:
                status = "failed"
            msg = err.one_line() if isinstance(err, GpuscopeError) else f"{type(err).__name__}: {err}"
            self.rd.write_meta(status=status, exit_code=code, ended=iso_now(), error=msg,
                               notes=self.notes)

    def _release(self) -> None:
        """Close samples.csv, timing.log and spans.csv, then free host memory and SRS copies."""
        if self.samples_sink is not None:
            self.samples_sink.close()
        if self.log is not None:
            self.log.close()
        if self.mem is not None:
            self.mem.close()
        for hp in self._srs_host:
            hp.free()
        self._srs_host = []

    def _analyze(self, out: RunOutcome) -> None:
        from gpuscope.analysis import AnalyzeOptions, analyze, load_source
        from gpuscope.linerate import resolve_line_rate

        try:
            parsed, ctx = load_source(self.rd.path)
            rate, rate_src = resolve_line_rate(None, ctx.meta)
            opts = AnalyzeOptions(
                line_rate_gbs=rate,
                line_rate_source=rate_src,
                abc_bytes=4 * (1 << self.cfg.log_n) * 32)
            out.analysis = analyze(parsed, None, opts, context=ctx)
        except GpuscopeError as e:
            out.analysis_error = e.one_line()
            return
        self.rd.write_json("summary.json", out.analysis.to_json())


class _LastRowTee:
    """Sampler sink: write through to samples.csv, keep the latest row per GPU for the live view."""

    def __init__(self, writer):
        self.writer = writer
        self._last: dict[int, dict] = {}
        self._lock = threading.Lock()

    def write_row(self, row: dict) -> None:
        self.writer.write_row(row)
        with self._lock:
            self._last[int(row.get("gpu", -1))] = dict(row)

    def last(self) -> dict[int, dict]:
        with self._lock:
            return {k: dict(v) for k, v in self._last.items()}

    def close(self) -> None:
        self.writer.close()

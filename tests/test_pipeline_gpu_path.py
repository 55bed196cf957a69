"""The pipeline's GPU-only Python (uploads into device buffers, the SRS streamed in chunks with
two buffers and a copy stream) without a GPU: a fake CUDA device whose arrays are numpy arrays
with CuPy's set/get, and the CPU backend doing the arithmetic; --verify checks every MSM, so a
wrong chunk bound or a lost partial sum fails here."""

from __future__ import annotations

import contextlib
import types

import numpy as np

from gpuscope.clock import CLOCK
from gpuscope.workload import timinglog as tl
from gpuscope.workload.backends import get_backend
from gpuscope.workload.hostmem import HostMemory
from gpuscope.workload.pipeline import Pipeline
from gpuscope.workload.pipeline_types import PipelineConfig
from gpuscope.workload.srs import SRS_SEED_H, SRS_SEED_W, Srs
from gpuscope.workload.verify import Verifier
from tests.test_pipeline_lines import _Lines


class DevArray(np.ndarray):
    """A 'device' array: CuPy's set (host -> device) and get (device -> host)."""

    def set(self, host):
        self[...] = host

    def get(self):
        return np.array(self)


class FakeStream:
    records = 0

    def __init__(self, non_blocking=False):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def record(self):
        FakeStream.records += 1
        return object()

    def wait_event(self, event):
        assert event is not None

    def synchronize(self):
        pass


def _empty(shape, dtype):
    return np.zeros(shape, dtype).view(DevArray)


FAKE_CP = types.SimpleNamespace(
    empty=_empty, cuda=types.SimpleNamespace(Stream=FakeStream, get_current_stream=FakeStream))


class FakeCudaDevice:
    kind = "gpu"

    def __init__(self, index=0):
        self.index = index
        self.cp = FAKE_CP
        self.uploaded = 0

    def activate(self):
        pass

    def alloc_like(self, arrays):
        return [_empty(a.shape, a.dtype) for a in arrays]

    def upload_into(self, dst, src):
        n = 0
        for d, s in zip(dst, src, strict=True):
            d.set(s)
            n += s.nbytes
        self.uploaded += n
        return n

    def upload(self, arrays):
        raise AssertionError("a GPU device uploads into its own buffers")

    def synchronize(self):
        pass

    def nvtx(self, name):
        return contextlib.nullcontext()

    def to_device(self, arr):
        return np.array(arr).view(DevArray)


def test_streamed_srs_and_device_uploads_verify(tmp_path):
    cfg = PipelineConfig(mode="pageable", log_n=6, partitions=3, workers=2, synth_threads=2,
                         verify=True, srs_chunk_log=10)
    be = get_backend("cpu")
    n, m = 1 << cfg.log_n, cfg.synth_config().m
    chunk = 16  # below the CLI's minimum on purpose: n and m span several chunks
    srs = {0: Srs(be.generate_points(n, SRS_SEED_H), be.generate_points(m, SRS_SEED_W),
                  resident=False, chunk=chunk)}
    assert n > 2 * chunk and m > 2 * chunk
    dev = FakeCudaDevice()
    lines = _Lines()
    log = tl.TimingLog(lines, tl.SpansWriter(tmp_path / "spans.csv"), job_id="t", t0_mono=CLOCK.mono())
    ver = Verifier(be, log_n=cfg.log_n, m=m, h_seed=SRS_SEED_H, w_seed=SRS_SEED_W)
    FakeStream.records = 0
    res = Pipeline(cfg, be, {0: dev}, HostMemory("pageable"), log, srs=srs, verifier=ver).run()
    assert res.error is None, res.error
    assert res.done == 3 and all(r.verified for r in res.results)
    per = 3 * n * 32 + m * 32
    assert [r.h2d_bytes for r in res.results] == [per] * 3 and dev.uploaded == 3 * per
    assert sum(f"h2d_bytes={per}" in text for text, _ in lines.out) == 3
    chunks = -(-n // chunk) + 2 * -(-m // chunk)  # H MSM, batch_add, tail MSM per partition
    assert FakeStream.records == 3 * chunks


def test_streamed_srs_is_made_once_in_pinned_host_memory_for_every_gpu():
    """build_srs's streamed branch (a GPU's) with fake devices and allocator: each point set is
    generated once, on the first GPU, copied down into a buffer the host allocator pinned, and
    shared by every GPU; the pinned copies are listed for release, the device pool emptied."""
    from gpuscope.workload.srs import build_srs
    from tests.test_hostmem import FakeAllocator

    cpu = get_backend("cpu")
    made, emptied = [], []

    class OnDevice:  # generate_points' result on a GPU: get(out=) copies it down
        def __init__(self, a):
            self.a = a

        def get(self, out):
            out[...] = self.a

    class GpuPoints:
        def generate_points(self, n, seed):
            made.append((n, seed))
            return OnDevice(cpu.generate_points(n, seed))

    devices = {g: FakeCudaDevice(g) for g in (0, 1)}
    for d in devices.values():
        d.cp = types.SimpleNamespace(get_default_memory_pool=lambda: types.SimpleNamespace(
            free_all_blocks=lambda: emptied.append(1)))
    cfg = PipelineConfig(mode="pageable", log_n=6, gpus=[0, 1], srs_chunk_log=10)
    n, m = 1 << cfg.log_n, cfg.synth_config().m
    alloc, pinned = FakeAllocator(), []
    srs = build_srs(cfg, devices, {0: GpuPoints(), 1: GpuPoints()}, alloc, True, pinned)
    assert made == [(n, SRS_SEED_H), (m, SRS_SEED_W)] and emptied == [1]
    assert [hp.nbytes for hp in pinned] == [n * 96, m * 96] and len(alloc.live) == 2
    assert set(srs) == {0, 1} and srs[0].h is srs[1].h and not srs[0].resident
    assert srs[0].chunk == 1 << 10
    assert np.array_equal(srs[0].h, cpu.generate_points(n, SRS_SEED_H))
    assert np.array_equal(srs[1].w, cpu.generate_points(m, SRS_SEED_W))
    assert {int(hp.ptr) for hp in pinned} == set(alloc.live)  # the points live in pinned buffers

"""The pipeline's timing output pinned exactly: every clock reading comes from a step clock
per thread (the k-th reading of a thread is k(k+1)/2 ms), so each thread's lines, spans and
results are the same on every run, and a refactoring that moves, drops or swaps a reading
changes them. CPU backend, one worker, one synthesis thread, two partitions, verified."""

from __future__ import annotations

import threading

from gpuscope.clock import Clock
from gpuscope.workload import timinglog as tl
from gpuscope.workload.backends import get_backend
from gpuscope.workload.devices import HostDevice
from gpuscope.workload.hostmem import HostMemory
from gpuscope.workload.pipeline import Pipeline
from gpuscope.workload.pipeline_types import PipelineConfig
from gpuscope.workload.srs import SRS_SEED_H, SRS_SEED_W, Srs
from gpuscope.workload.verify import Verifier


class StepClock(Clock):
    def __init__(self) -> None:
        super().__init__()
        self.wall0, self.mono0 = 1.7e9, 0.0
        self._calls: dict[str, int] = {}
        self._lock = threading.Lock()

    def mono(self) -> float:
        name = threading.current_thread().name
        with self._lock:
            k = self._calls[name] = self._calls.get(name, 0) + 1
        return 0.001 * k * (k + 1) / 2


class _PerThread:
    """Lines and spans in the order each thread wrote them."""

    def __init__(self) -> None:
        self.lines: dict[str, list] = {}
        self.spans: dict[str, list] = {}

    def write_line(self, text, mono=None):
        self.lines.setdefault(threading.current_thread().name, []).append((text, round(mono, 6)))

    def span(self, *row):
        row = tuple(round(v, 6) if isinstance(v, float) else v for v in row)
        self.spans.setdefault(threading.current_thread().name, []).append(row)

    def flush(self):
        pass

    def close(self):
        pass


def _run():
    cfg = PipelineConfig(mode="pageable", log_n=6, partitions=2, workers=1, synth_threads=1, verify=True)
    be = get_backend("cpu")
    m = cfg.synth_config().m
    srs = {0: Srs(be.generate_points(1 << cfg.log_n, SRS_SEED_H), be.generate_points(m, SRS_SEED_W),
                  resident=True, chunk=1 << 22)}
    clock = StepClock()
    out = _PerThread()
    log = tl.TimingLog(out, out, job_id="j", t0_mono=clock.mono(), clock=clock)
    ver = Verifier(be, log_n=cfg.log_n, m=m, h_seed=SRS_SEED_H, w_seed=SRS_SEED_W)
    p = Pipeline(cfg, be, {0: HostDevice(0)}, HostMemory("pageable"), log, srs=srs, verifier=ver,
                 clock=clock)
    return p.run(), out


WORKER_LINES = [
    ("TIMELINE,0,GPU_PICKUP,j,worker=0,partition=0", 0.001),
    ("CUZK_TIMING: split_vectors_ms=3 setup_to_split_ms=2", 0.006),
    ("TIMELINE,14,GPU_START,j,worker=0,partition=0", 0.015),  # the tenure's block comes at release
    ("CUZK_TIMING: pre_lock_cpu_ms=9 mutex_wait_ms=5", 0.015),
    ("CUZK_NTT_H: d_b_alloc=7ms ntt_kernels=19ms coset_intt_sync=11ms msm_init=12ms msm_invoke=13ms "
     "msm_dtor=14ms total=84ms", 0.105),
    ("CUZK_TIMING: gpu_tid=0 h2d_ms=9 h2d_bytes=0", 0.105),
    ("CUZK_TIMING: gpu_tid=0 ntt_msm_h_ms=84", 0.105),
    ("CUZK_TIMING: gpu_tid=0 barrier_wait_ms=15", 0.12),
    ("CUZK_TIMING: gpu_tid=0 batch_add_ms=16", 0.136),
    ("CUZK_TIMING: gpu_tid=0 tail_msm_ms=17 gpu_total_ms=132", 0.153),
    ("CUZK_TIMING: mutex_held_ms=156 total_start_fn_ms=170", 0.171),
    ("TIMELINE,189,GPU_END,j,worker=0,partition=0,gpu_ms=132", 0.19),
    ("TIMELINE,209,GPU_PICKUP,j,worker=0,partition=1", 0.21),
    ("CUZK_TIMING: split_vectors_ms=22 setup_to_split_ms=21", 0.253),
    ("TIMELINE,299,GPU_START,j,worker=0,partition=1", 0.3),
    ("CUZK_TIMING: pre_lock_cpu_ms=66 mutex_wait_ms=24", 0.3),
    ("CUZK_NTT_H: d_b_alloc=26ms ntt_kernels=57ms coset_intt_sync=30ms msm_init=31ms msm_invoke=32ms "
     "msm_dtor=33ms total=236ms", 0.561),
    ("CUZK_TIMING: gpu_tid=0 h2d_ms=28 h2d_bytes=0", 0.561),
    ("CUZK_TIMING: gpu_tid=0 ntt_msm_h_ms=236", 0.561),
    ("CUZK_TIMING: gpu_tid=0 barrier_wait_ms=34", 0.595),
    ("CUZK_TIMING: gpu_tid=0 batch_add_ms=35", 0.63),
    ("CUZK_TIMING: gpu_tid=0 tail_msm_ms=36 gpu_total_ms=341", 0.666),
    ("CUZK_TIMING: mutex_held_ms=403 total_start_fn_ms=493", 0.703),
    ("TIMELINE,740,GPU_END,j,worker=0,partition=1,gpu_ms=341", 0.741),
]
WORKER_SPANS = [
    (0.01, 0.015, 0, 0, 0, "lock_wait"), (0.036, 0.045, 0, 0, 0, "h2d"), (0.045, 0.066, 0, 0, 0, "ntt"),
    (0.066, 0.105, 0, 0, 0, "msm"), (0.105, 0.12, 0, 0, 0, "barrier"), (0.12, 0.136, 0, 0, 0, "batch_add"),
    (0.136, 0.153, 0, 0, 0, "tail_msm"),
    (0.276, 0.3, 0, 0, 1, "lock_wait"), (0.378, 0.406, 0, 0, 1, "h2d"), (0.406, 0.465, 0, 0, 1, "ntt"),
    (0.465, 0.561, 0, 0, 1, "msm"), (0.561, 0.595, 0, 0, 1, "barrier"), (0.595, 0.63, 0, 0, 1, "batch_add"),
    (0.63, 0.666, 0, 0, 1, "tail_msm"),
]


def test_each_thread_writes_exactly_these_lines_and_spans():
    res, out = _run()
    assert res.error is None and not res.stopped
    assert out.lines["gpu0-worker0"] == WORKER_LINES
    assert out.spans["gpu0-worker0"] == WORKER_SPANS
    assert out.lines["synth-0"] == [
        ("TIMELINE,0,SYNTH_START,j,partition=0", 0.001),
        ("TIMELINE,2,SYNTH_END,j,partition=0,synth_ms=2", 0.003),
        ("TIMELINE,5,GPU_QUEUE,j,partition=0", 0.006),
        ("TIMELINE,9,SYNTH_START,j,partition=1", 0.01),
        ("TIMELINE,14,SYNTH_END,j,partition=1,synth_ms=5", 0.015),
        ("TIMELINE,20,GPU_QUEUE,j,partition=1", 0.021),
    ]
    assert out.spans["synth-0"] == [(0.001, 0.003, -1, -1, 0, "synth"), (0.01, 0.015, -1, -1, 1, "synth")]
    for p in (0, 1):
        assert out.lines[f"prep-{p}"] == [("CUZK_TIMING: prep_msm_ms=2", 0.003)]
        assert out.spans[f"prep-{p}"] == [(0.001, 0.003, 0, 0, p, "prep")]
    assert set(out.lines) == {"gpu0-worker0", "synth-0", "prep-0", "prep-1"}


def test_results_and_summary_follow_from_the_same_readings():
    res, _ = _run()
    got = [(r.index, r.gpu, r.worker, round(r.held_s, 6), round(r.h2d_s, 6), r.h2d_bytes,
            round(r.gpu_total_s, 6), round(r.barrier_s, 6), round(r.mutex_wait_s, 6),
            round(r.dma_wait_s, 6), r.verified) for r in res.results]
    assert got == [(0, 0, 0, 0.156, 0.009, 0, 0.132, 0.015, 0.005, 0.008, True),
                   (1, 0, 0, 0.403, 0.028, 0, 0.341, 0.034, 0.024, 0.027, True)]
    s = res.summary()
    assert (s["partitions_done"], s["wall_s"], s["mutex_held_s"], s["h2d_s"], s["verified"]) == (
        2, 0.003, 0.559, 0.037, 2)
    assert s["upload_wait_for_registration_s"] == 0.035 and s["srs"] == {"resident": True}

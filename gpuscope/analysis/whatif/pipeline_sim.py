"""A small discrete-event simulation of the CuZK-style mutex pipeline.

The model (docs/COMPARE.md has the picture):

- `synth_threads` synthesis threads produce partitions in order; partition i is ready
  `synth_ms[i]` after its thread became free. With `slots` (the host-memory budget in
  partitions, as `gpuscope run` sizes it) a thread starts a partition only while fewer
  than `slots` partitions are in flight — synthesizing, queued or held by a worker until
  it has finished with it — so a small budget throttles supply as it does in the real
  pipeline. Without `slots` the queue is unbounded and supply never blocks.
- `workers` GPU workers per GPU share that GPU's mutex (`gpus` GPUs, one mutex each). A free worker takes the next ready
  partition (FIFO), starts its prep thread at once (`prep_ms`, in parallel), spends
  `pre_ms` on CPU work before the lock, then queues for the mutex (FIFO by request time).
- Holding the mutex: the upload (`upload_ms`), the GPU work before the barrier
  (`gpu_pre_ms`: NTTs, H MSM, bookkeeping), the barrier (waits until prep has finished),
  the GPU work after the barrier (`gpu_post_ms`: batch_add, tail MSM); then it releases
  the mutex and spends `post_ms` on CPU work (b_g2_msm) before taking the next partition.

Pure: numbers in, numbers out. Times are milliseconds; t=0 is when synthesis starts.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

# Event kinds, in the order they are processed at equal times: a release hands the lock
# on before a new request at the same instant can take it, and a worker that became free
# at that instant picks its partition after both.
# A finished synthesis is seen before a request or a free worker at the same instant.
_RELEASE, _SYNTH_DONE, _REQUEST, _FREE = 0, 1, 2, 3


@dataclass(frozen=True, init=False)
class PartitionTimes:
    """Per-partition phase durations in ms (arrays of equal length, one entry per partition).
    The optional ones given as None are zeros."""

    upload_ms: np.ndarray
    gpu_pre_ms: np.ndarray
    gpu_post_ms: np.ndarray
    synth_ms: np.ndarray
    prep_ms: np.ndarray
    pre_ms: np.ndarray
    post_ms: np.ndarray

    def __init__(self, upload_ms: Sequence[float] | np.ndarray, gpu_pre_ms: ArrayLike, gpu_post_ms: ArrayLike,
                 synth_ms: ArrayLike | None = None, prep_ms: ArrayLike | None = None,
                 pre_ms: ArrayLike | None = None, post_ms: ArrayLike | None = None) -> None:
        given = {"upload_ms": upload_ms, "gpu_pre_ms": gpu_pre_ms, "gpu_post_ms": gpu_post_ms,
                 "synth_ms": synth_ms, "prep_ms": prep_ms, "pre_ms": pre_ms, "post_ms": post_ms}
        n = len(upload_ms)
        for name, v in given.items():
            v = np.zeros(n) if v is None else np.asarray(v, dtype=float)
            if v.shape != (n,):
                raise ValueError(f"{name}: expected {n} values, got shape {v.shape}")
            if np.isnan(v).any() or (v < 0).any():
                raise ValueError(f"{name}: durations must be finite and >= 0")
            object.__setattr__(self, name, v)

    @property
    def n(self) -> int:
        return len(self.upload_ms)


@dataclass
class SimResult:
    """What happened to each partition, and the run as a whole (ms)."""

    workers: int
    synth_threads: int | None
    gpus: int
    ready: np.ndarray       # synthesis finished
    pick: np.ndarray        # a worker took it
    request: np.ndarray     # asked for the mutex
    grant: np.ndarray       # got the mutex
    release: np.ndarray     # released the mutex
    done: np.ndarray        # worker finished its post-lock CPU work
    worker: np.ndarray      # which worker
    barrier_ms: np.ndarray  # time held at the barrier
    times: PartitionTimes = field(repr=False)

    @property
    def n(self) -> int:
        return len(self.grant)

    @property
    def lock_wait_ms(self) -> np.ndarray:
        return self.grant - self.request

    @property
    def held_ms(self) -> np.ndarray:
        return self.release - self.grant

    @property
    def makespan_ms(self) -> float:
        return float(self.done.max()) if self.n else 0.0

    @property
    def gpu_span_ms(self) -> float:
        """First grant to last release: the span the GPU-busy fraction is measured over."""
        return float(self.release.max() - self.grant.min()) if self.n else 0.0

    @property
    def throughput_ppm(self) -> float:
        """Partitions per minute over the whole makespan."""
        m = self.makespan_ms
        return self.n / m * 60_000.0 if m > 0 else float("nan")

    @property
    def held_fraction(self) -> float:
        """Share of the GPU span with the mutex held (the TIMELINE GPU_START..GPU_END view),
        averaged over the GPUs."""
        s = self.gpu_span_ms * self.gpus
        return float(self.held_ms.sum() / s) if s > 0 else float("nan")

    @property
    def compute_fraction(self) -> float:
        """Share of the GPU span spent in GPU work (upload and barrier excluded)."""
        s = self.gpu_span_ms * self.gpus
        busy = self.times.gpu_pre_ms.sum() + self.times.gpu_post_ms.sum()
        return float(busy / s) if s > 0 else float("nan")


def synthesis_ready_times(synth_ms: np.ndarray, threads: int | None) -> np.ndarray:
    """When each partition leaves synthesis: in order, each on the earliest-free thread.

    `threads=None` means unlimited supply in parallel (every partition ready at its own
    synth time from t=0); with no synthesis times at all everything is ready at 0.
    """
    synth_ms = np.asarray(synth_ms, dtype=float)
    if threads is None:
        return synth_ms.copy()
    if threads < 1:
        raise ValueError("synth_threads must be >= 1")
    free = [0.0] * threads
    heapq.heapify(free)
    ready = np.empty_like(synth_ms)
    for i, s in enumerate(synth_ms):
        start = heapq.heappop(free)
        ready[i] = start + s
        heapq.heappush(free, ready[i])
    return ready


def simulate(times: PartitionTimes, *, workers: int = 2, synth_threads: int | None = None,
             gpus: int = 1, slots: int | None = None) -> SimResult:
    """Run the mutex pipeline over `times.n` partitions with `workers` workers per GPU on
    `gpus` GPUs (one mutex each; worker w belongs to GPU w // workers). `slots` bounds the
    partitions in flight (needs `synth_threads`); None leaves supply unbounded."""
    if workers < 1 or gpus < 1:
        raise ValueError("workers and gpus must be >= 1")
    if slots is not None and slots < 1:
        raise ValueError("slots must be >= 1")
    if slots is not None and synth_threads is not None and synth_threads < 1:
        raise ValueError("synth_threads must be >= 1")
    sim = _MutexPipeline(times, workers=workers, synth_threads=synth_threads, gpus=gpus, slots=slots)
    sim.run()
    return SimResult(workers=workers, synth_threads=synth_threads, gpus=gpus, ready=sim.ready, pick=sim.pick,
                     request=sim.request, grant=sim.grant, release=sim.release, done=sim.done,
                     worker=sim.worker_of, barrier_ms=sim.barrier, times=times)


class _MutexPipeline:
    """The simulation's state and its event handlers: the event queue, synthesis (with
    `slots`, budgeted: partitions start only while fewer than `slots` are in flight), the
    workers, and each GPU's mutex with its FIFO of waiting workers. Times in ms."""

    def __init__(self, times: PartitionTimes, *, workers: int, synth_threads: int | None, gpus: int,
                 slots: int | None) -> None:
        n = times.n
        self.times, self.n, self.workers, self.gpus = times, n, workers, gpus
        self.budgeted = slots is not None and synth_threads is not None
        self.slots = slots or 0  # (read only when budgeted: slots >= 1 then)
        # budgeted: filled as synthesis finishes; else known up front
        self.ready = np.full(n, np.nan) if self.budgeted else synthesis_ready_times(times.synth_ms, synth_threads)
        self.pick = np.full(n, np.nan)
        self.request = np.full(n, np.nan)
        self.grant = np.full(n, np.nan)
        self.release = np.full(n, np.nan)
        self.done = np.full(n, np.nan)
        self.worker_of = np.full(n, -1, dtype=np.int64)
        self.barrier = np.zeros(n)
        self.events: list[tuple[float, int, int, int, int]] = []  # (time, kind, seq, worker, partition)
        self.seq = 0
        self.next_partition = 0
        self.synth_free = synth_threads or 0  # idle synthesis threads (budgeted)
        self.synth_in_flight = 0
        self.synth_next = 0
        self.idle: list[int] = []  # budgeted: free workers waiting for the next partition
        self.lock_holder = [-1] * gpus
        self.waiting: list[list[tuple[int, int]]] = [[] for _ in range(gpus)]  # per GPU, FIFO of (worker, partition)

    def run(self) -> None:
        for w in range(self.workers * self.gpus):
            self.push(0.0, _FREE, w, -1)
        if self.budgeted:
            self.start_synthesis(0.0)
        handlers = {_FREE: self.on_free, _SYNTH_DONE: self.on_synth_done, _REQUEST: self.on_request,
                    _RELEASE: self.on_release}
        while self.events:
            t, kind, _, w, p = heapq.heappop(self.events)
            handlers[kind](t, w, p)

    def push(self, t: float, kind: int, w: int, p: int) -> None:
        heapq.heappush(self.events, (t, kind, self.seq, w, p))
        self.seq += 1

    # -- synthesis and picking partitions --------------------------------------------------
    def start_synthesis(self, t: float) -> None:
        while self.synth_free > 0 and self.synth_next < self.n and self.synth_in_flight < self.slots:
            q = self.synth_next
            self.synth_next += 1
            self.synth_free -= 1
            self.synth_in_flight += 1
            self.push(t + self.times.synth_ms[q], _SYNTH_DONE, -1, q)

    def take(self, t: float, w: int, p: int) -> None:
        self.worker_of[p] = w
        self.pick[p] = max(t, self.ready[p])
        self.push(self.pick[p] + self.times.pre_ms[p], _REQUEST, w, p)

    def dispatch(self, t: float) -> None:
        while self.idle and self.next_partition < self.n and not np.isnan(self.ready[self.next_partition]):
            self.take(t, self.idle.pop(0), self.next_partition)
            self.next_partition += 1

    # -- the mutex ---------------------------------------------------------------------------
    def start_tenure(self, t: float, w: int, p: int) -> None:
        times = self.times
        self.lock_holder[w // self.workers] = w
        self.grant[p] = t
        at_barrier = t + times.upload_ms[p] + times.gpu_pre_ms[p]
        prep_end = self.pick[p] + times.prep_ms[p]
        self.barrier[p] = max(0.0, prep_end - at_barrier)
        self.push(at_barrier + self.barrier[p] + times.gpu_post_ms[p], _RELEASE, w, p)

    # -- the events --------------------------------------------------------------------------
    def on_free(self, t: float, w: int, p: int) -> None:
        """Worker w is free (p: the partition it finished, -1 at the start)."""
        if self.budgeted:
            if p >= 0:  # the worker is done with partition p: its budget slot frees
                self.synth_in_flight -= 1
                self.start_synthesis(t)
            self.idle.append(w)
            self.dispatch(t)
            return
        if self.next_partition >= self.n:
            return
        self.take(t, w, self.next_partition)
        self.next_partition += 1

    def on_synth_done(self, t: float, w: int, p: int) -> None:
        self.ready[p] = t
        self.synth_free += 1
        self.start_synthesis(t)
        self.dispatch(t)

    def on_request(self, t: float, w: int, p: int) -> None:
        self.request[p] = t
        g = w // self.workers
        if self.lock_holder[g] < 0:
            self.start_tenure(t, w, p)
        else:
            self.waiting[g].append((w, p))

    def on_release(self, t: float, w: int, p: int) -> None:
        self.release[p] = t
        g = w // self.workers
        self.lock_holder[g] = -1
        self.done[p] = t + self.times.post_ms[p]
        self.push(self.done[p], _FREE, w, p)
        if self.waiting[g]:
            w2, p2 = self.waiting[g].pop(0)
            self.start_tenure(t, w2, p2)

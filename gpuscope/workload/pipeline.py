"""The CuZK-model proving pipeline: synthesis threads -> budgeted queue -> GPU workers.

Shaped like the production prover (../shared/formats/CUZK_FORMATS.md):

- synthesis threads build partitions (a, b, c, witness; gpuscope.workload.synth) into host
  memory of the run's mode and queue them; a `MemoryBudget` of host bytes gives
  backpressure (a partition's bytes are taken before it is synthesized and given back only
  when its GPU work is done), not a count alone;
- per GPU, N workers share one GPU mutex. Per partition a worker starts a prep thread
  (split the 0/1 witness scalars from the rest, build the bitmap), takes the mutex
  (mutex_wait), allocates and uploads a/b/c and the witness (h2d), computes H with NTTs,
  runs the H MSM over the SRS points (pinned host memory streamed to the GPU in chunks, or
  resident with --srs-resident), waits at the barrier for prep (barrier_wait), runs
  batch_add and the tail MSM, and releases the mutex (mutex_held);
- `contention` extra host threads copy memory, as synthesis threads do in production.

Every phase is real work through gpuscope.workload's backend; its times go to timing.log
in the prover's line formats and to spans.csv exactly. A stop request (Ctrl-C) takes
effect at the next phase boundary; all host memory is given back either way.
"""

from __future__ import annotations

import contextlib
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gpuscope.clock import CLOCK, Clock
from gpuscope.errors import ResourceError, UsageError
from gpuscope.workload import curve
from gpuscope.workload import timinglog as tl
from gpuscope.workload.devices import device_oom_as_resource_error
from gpuscope.workload.hostmem import HostMemory, fmt_bytes
from gpuscope.workload.synth import Partition, SynthConfig, partition_bytes, synthesize

SRS_SEED_H = 0x5EED_0001
SRS_SEED_W = 0x5EED_0002


class Stopped(Exception):
    """Raised inside pipeline threads when a stop was requested (phase boundary)."""


@dataclass
class PipelineConfig:
    mode: str = "pinned"
    log_n: int = 10
    partitions: int = 4
    workers: int = 2  # per GPU
    synth_threads: int = 2
    gpus: list[int] = field(default_factory=lambda: [0])
    contention: int = 0
    verify: bool = False
    srs_resident: bool = False
    srs_chunk_log: int = 24  # points per streamed SRS chunk = 2^srs_chunk_log
    prewarm: bool = True  # pinned mode: pin the pool's buffers before the clock starts
    host_budget_bytes: int | None = None  # default: one partition per worker and per synthesis thread
    pinned_budget_bytes: int | None = None  # default: the host budget
    general_share: float = 0.02
    bool_share: float = 0.9
    seed: int = 1

    def synth_config(self) -> SynthConfig:
        return SynthConfig(log_n=self.log_n, general_share=self.general_share,
                           bool_share=self.bool_share, seed=self.seed)

    def resolved_host_budget(self) -> int:
        if self.host_budget_bytes is not None:
            return int(self.host_budget_bytes)
        # Every worker holds a partition (in its tenure or waiting for the lock) and every
        # synthesis thread fills one: a smaller default starves the GPUs of synthesized work
        # (on 2 GPUs, workers*gpus + 2 held synthesis to 2 partitions in flight).
        return partition_bytes(self.synth_config()) * (self.workers * len(self.gpus) + self.synth_threads)

    def resolved_pinned_budget(self) -> int:
        if self.pinned_budget_bytes is not None:
            return int(self.pinned_budget_bytes)
        return self.resolved_host_budget()

    def validate(self) -> None:
        self.synth_config().validate()
        if self.partitions < 1:
            raise UsageError(f"--partitions must be >= 1, got {self.partitions}")
        if self.workers < 1:
            raise UsageError(f"--workers must be >= 1, got {self.workers}")
        if self.synth_threads < 1:
            raise UsageError(f"--synth-threads must be >= 1, got {self.synth_threads}")
        if self.contention < 0:
            raise UsageError(f"--contention must be >= 0, got {self.contention}")
        if not self.gpus:
            raise UsageError("--gpus needs at least one GPU index")
        if len(set(self.gpus)) != len(self.gpus) or min(self.gpus) < 0:
            raise UsageError(f"--gpus must list distinct GPU indices, got {self.gpus}")
        if not 10 <= self.srs_chunk_log <= 30:
            raise UsageError(f"--srs-chunk-log must be within 10..30, got {self.srs_chunk_log}")
        need = partition_bytes(self.synth_config())
        if self.resolved_host_budget() < need:
            raise ResourceError(
                f"one partition needs {fmt_bytes(need)} of host memory, more than the host "
                f"budget of {fmt_bytes(self.resolved_host_budget())}",
                hint="raise --host-budget-mib or lower --log-n")
        if self.mode == "pinned" and self.resolved_pinned_budget() < need:
            raise ResourceError(
                f"one partition needs {fmt_bytes(need)} of pinned memory, more than the pinned "
                f"budget of {fmt_bytes(self.resolved_pinned_budget())}",
                hint="raise --pinned-budget-mib or lower --log-n")


class MemoryBudget:
    """Host bytes in flight (synthesized, not yet proved). acquire() blocks while over budget."""

    def __init__(self, budget: int):
        self.budget = int(budget)
        self.used = 0
        self.peak = 0
        self.waits = 0
        self.wait_s = 0.0
        self._cv = threading.Condition()

    def acquire(self, nbytes: int, stop: threading.Event) -> None:
        if nbytes > self.budget:
            raise ResourceError(f"{fmt_bytes(nbytes)} exceeds the host budget of "
                                f"{fmt_bytes(self.budget)}", hint="raise --host-budget-mib")
        t0 = time.perf_counter()
        waited = False
        with self._cv:
            while self.used + nbytes > self.budget:
                if stop.is_set():
                    raise Stopped()
                waited = True
                self._cv.wait(0.05)
            self.used += nbytes
            self.peak = max(self.peak, self.used)
            if waited:
                self.waits += 1
                self.wait_s += time.perf_counter() - t0

    def release(self, nbytes: int) -> None:
        with self._cv:
            self.used -= nbytes
            self._cv.notify_all()


@dataclass
class WorkerState:
    gpu: int
    worker: int  # global worker id (gpu position * workers + local id)
    phase: str = "idle"
    partition: int = -1
    done: int = 0


@dataclass
class PartitionResult:
    index: int
    gpu: int
    worker: int
    held_s: float
    h2d_s: float
    h2d_bytes: int
    gpu_total_s: float
    barrier_s: float
    mutex_wait_s: float
    dma_wait_s: float = 0.0  # registered mode: upload waited for another worker's (un)registration
    verified: bool = False


@dataclass
class PipelineResult:
    results: list[PartitionResult]
    wall_s: float
    stopped: bool
    error: BaseException | None
    memory: dict
    budget: dict
    synthesized: int
    srs: dict

    @property
    def done(self) -> int:
        return len(self.results)

    def summary(self) -> dict:
        held = sum(r.held_s for r in self.results)
        h2d = sum(r.h2d_s for r in self.results)
        nbytes = sum(r.h2d_bytes for r in self.results)
        return {
            "partitions_done": self.done,
            "wall_s": round(self.wall_s, 6),
            "partitions_per_s": (self.done / self.wall_s) if self.wall_s > 0 else None,
            "mutex_held_s": round(held, 6),
            "h2d_s": round(h2d, 6),
            "h2d_bytes": nbytes,
            "h2d_gbs": (nbytes / h2d / 1e9) if h2d > 0 else None,
            "h2d_share_of_held": (h2d / held) if held > 0 else None,
            "verified": sum(1 for r in self.results if r.verified),
            "upload_wait_for_registration_s": round(sum(r.dma_wait_s for r in self.results), 6),
            "stopped": self.stopped,
            "host_memory": self.memory,
            "host_budget": self.budget,
            "srs": self.srs,
        }


def _sum_points(parts: list[np.ndarray]) -> np.ndarray:
    if len(parts) == 1:
        return np.asarray(parts[0])
    pts = curve.limbs_to_points(np.stack([np.asarray(p) for p in parts]))
    return curve.point_to_limbs(curve.sum_points(pts))


class Srs:
    """The SRS point sets (H query: n points; witness query: m points) for one GPU.

    Streamed (default): the points live once in pinned host memory and every MSM copies them
    to the GPU chunk by chunk, the next chunk's copy overlapping the current chunk's MSM.
    Resident: a copy per GPU stays in device memory. CPU backend: plain numpy arrays.
    """

    def __init__(self, h_points: Any, w_points: Any, *, resident: bool, chunk: int):
        self.h = h_points
        self.w = w_points
        self.resident = resident
        self.chunk = chunk

    def run(self, device, which: str, fn: Callable[..., np.ndarray], *args: Any) -> np.ndarray:
        """fn(points_slice, *[arg slices]) summed over chunks (a single call when resident)."""
        points = self.h if which == "h" else self.w
        if self.resident or device.kind != "gpu":
            return np.asarray(fn(points, *args))
        return _stream_points(device, points, self.chunk, fn, args)


def _stream_points(device, host_points: np.ndarray, chunk: int, fn, args) -> np.ndarray:
    cp = device.cp
    n = host_points.shape[0]
    if n <= chunk:
        d = cp.empty(host_points.shape, host_points.dtype)
        d.set(host_points)
        device.synchronize()
        return np.asarray(fn(d, *args))
    copy_stream = cp.cuda.Stream(non_blocking=True)
    bufs = [cp.empty((chunk,) + host_points.shape[1:], host_points.dtype) for _ in range(2)]
    events: list[Any] = [None, None]
    bounds = [(s, min(s + chunk, n)) for s in range(0, n, chunk)]

    def issue(k: int) -> None:
        s, e = bounds[k]
        with copy_stream:
            bufs[k % 2][: e - s].set(host_points[s:e])
            events[k % 2] = copy_stream.record()

    partial = []
    issue(0)
    for k, (s, e) in enumerate(bounds):
        cp.cuda.get_current_stream().wait_event(events[k % 2])
        if k + 1 < len(bounds):
            issue(k + 1)  # buffer (k+1)%2 was used by chunk k-1, whose fn already returned
        partial.append(np.asarray(fn(bufs[k % 2][: e - s], *[a[s:e] for a in args])))
    copy_stream.synchronize()
    return _sum_points(partial)


class Pipeline:
    """Run the pipeline once. `run()` blocks; `request_stop()` may be called from any thread."""

    def __init__(self, cfg: PipelineConfig, backend: Any, devices: dict[int, Any],
                 hostmem: HostMemory, log: tl.TimingLog, *, srs: dict[int, Srs],
                 verifier: Any | None = None, clock: Clock = CLOCK):
        self.cfg = cfg
        # one backend per GPU (its tables live on that GPU); a single one is shared
        self.backends = backend if isinstance(backend, dict) else {g: backend for g in cfg.gpus}
        self.devices = devices
        self.mem = hostmem
        self.log = log
        self.srs = srs
        self.verifier = verifier
        self.clock = clock
        self.scfg = cfg.synth_config()
        self.stop = threading.Event()
        self.budget = MemoryBudget(cfg.resolved_host_budget())
        self.queue: queue.Queue[Partition] = queue.Queue()
        self.mutexes = {g: threading.Lock() for g in cfg.gpus}
        # registered mode: cudaHostRegister/Unregister running beside a DMA cut an H2D copy from
        # 55 to ~17 GB/s on an H200 (tools/gpu_run_check.py --probe-register), so registrations
        # and uploads take turns (one lock for all GPUs: the driver's pinning is host-wide)
        self._dma = threading.Lock() if cfg.mode == "registered" else None
        self.workers = [WorkerState(gpu=g, worker=gi * cfg.workers + w)
                        for gi, g in enumerate(cfg.gpus) for w in range(cfg.workers)]
        self.results: list[PartitionResult] = []
        self.synthesized = 0
        self._next_index = 0
        self._taken = 0
        self._lock = threading.Lock()
        self._error: BaseException | None = None
        self.t_start = 0.0

    # -- control ---------------------------------------------------------------------------
    def request_stop(self) -> None:
        self.stop.set()

    def _registration(self):
        """Held while registering/unregistering and while uploading (registered mode only)."""
        return self._dma if self._dma is not None else contextlib.nullcontext()

    def _check(self) -> None:
        if self.stop.is_set():
            raise Stopped()

    def _fail(self, e: BaseException) -> None:
        with self._lock:
            if self._error is None:
                self._error = e
        self.stop.set()

    @property
    def done(self) -> int:
        with self._lock:
            return len(self.results)

    # -- synthesis ---------------------------------------------------------------------------
    def _claim_index(self) -> int | None:
        with self._lock:
            if self._next_index >= self.cfg.partitions:
                return None
            i = self._next_index
            self._next_index += 1
            return i

    def _synth_loop(self) -> None:
        nbytes = partition_bytes(self.scfg)
        try:
            while not self.stop.is_set():
                i = self._claim_index()
                if i is None:
                    return
                self.budget.acquire(nbytes, self.stop)
                try:
                    t0 = self.clock.mono()
                    self.log.timeline("SYNTH_START", f"partition={i}", t0)
                    try:
                        part = synthesize(i, self.scfg, self.mem, stop=self.stop)
                    except InterruptedError:
                        raise Stopped() from None
                except BaseException:
                    self.budget.release(nbytes)
                    raise
                t1 = self.clock.mono()
                part.meta["budget_bytes"] = nbytes
                self.log.timeline("SYNTH_END", f"partition={i},synth_ms={tl.ms(t1 - t0)}", t1)
                self.log.span(t0, t1, -1, -1, i, "synth")
                if self.stop.is_set():
                    self._drop(part)
                    return
                with self._lock:
                    self.synthesized += 1
                self.log.timeline("GPU_QUEUE", f"partition={i}")
                self.queue.put(part)
        except Stopped:
            return
        except BaseException as e:  # noqa: BLE001 - handed to the main thread
            self._fail(e)

    def _drop(self, part: Partition) -> None:
        self.mem.release(part.block)
        self.budget.release(part.meta.get("budget_bytes", partition_bytes(self.scfg)))

    # -- contention ----------------------------------------------------------------------------
    def _contention_loop(self, k: int) -> None:
        """Copy 64 MiB buffers back and forth: memory-bandwidth pressure on the host."""
        rng = np.random.default_rng(k)
        src = rng.integers(0, 255, size=64 << 20, dtype=np.uint8)
        dst = np.empty_like(src)
        while not self.stop.is_set():
            np.copyto(dst, src)
            np.copyto(src, dst)

    # -- GPU workers ---------------------------------------------------------------------------
    def _worker_loop(self, st: WorkerState) -> None:
        dev = self.devices[st.gpu]
        try:
            dev.activate()
            while not self.stop.is_set():
                with self._lock:
                    if self._taken >= self.cfg.partitions:
                        return
                try:
                    part = self.queue.get(timeout=0.05)
                except queue.Empty:
                    continue
                with self._lock:
                    self._taken += 1
                try:
                    res = self._prove(st, dev, part)
                finally:
                    self._drop(part)
                    st.phase = "idle"
                    st.partition = -1
                with self._lock:
                    self.results.append(res)
                st.done += 1
        except Stopped:
            return
        except BaseException as e:  # noqa: BLE001
            self._fail(e)

    def _prove(self, st: WorkerState, dev, part: Partition) -> PartitionResult:
        clk, log = self.clock, self.log
        gpu, w, p = st.gpu, st.worker, part.index
        st.partition = p
        st.phase = "pickup"
        t_pick = clk.mono()
        log.timeline("GPU_PICKUP", f"worker={w},partition={p}", t_pick)

        # prep thread: split 0/1 scalars from the rest, bitmap of the ones (runs concurrently)
        prep: dict[str, Any] = {}

        def run_prep() -> None:
            try:
                prep_work()
            except BaseException as e:  # noqa: BLE001 - re-raised at the barrier
                prep["error"] = e

        def prep_work() -> None:
            t0 = clk.mono()
            s64 = part.scalars.view(np.uint64)  # (m, 4) little-endian 64-bit words
            hi_zero = (s64[:, 1] | s64[:, 2] | s64[:, 3]) == 0
            ones = hi_zero & (s64[:, 0] == 1)
            zeros = hi_zero & (s64[:, 0] == 0)
            prep["ones"] = ones.astype(np.uint8)
            prep["n_ones"] = int(ones.sum())
            prep["n_zeros"] = int(zeros.sum())
            t1 = clk.mono()
            log.line(tl.line_prep_msm(t1 - t0), t1)
            log.span(t0, t1, gpu, w, p, "prep")

        prep_thread = threading.Thread(target=run_prep, name=f"prep-{p}", daemon=True)
        prep_thread.start()

        # before the lock: make the host arrays uploadable (registered mode: page-lock them)
        st.phase = "split"
        t_split0 = clk.mono()
        host_arrays = [part.a, part.b, part.c, part.scalars]
        with self._registration():
            self.mem.prepare_upload(part.block)
        t_split1 = clk.mono()
        log.line(tl.line_split_vectors(t_split1 - t_split0, t_split0 - t_pick), t_split1)
        self._check()

        st.phase = "lock_wait"
        t_req = clk.mono()
        mutex = self.mutexes[gpu]
        while not mutex.acquire(timeout=0.05):
            if self.stop.is_set():
                prep_thread.join()
                with self._registration():
                    self.mem.finish_upload(part.block)
                raise Stopped()
        try:
            t_lock = clk.mono()
            log.span(t_req, t_lock, gpu, w, p, "lock_wait")
            tenure = log.tenure()
            tenure.line(tl.line_lock_taken(t_req - t_pick, t_lock - t_req), t_lock)
            log.timeline("GPU_START", f"worker={w},partition={p}", t_lock)
            try:
                with device_oom_as_resource_error(gpu, lambda: st.phase):  # the phase that ran out
                    out = self._under_lock(st, dev, part, host_arrays, prep, prep_thread, tenure, t_lock)
            finally:
                prep_thread.join()
            t_rel = clk.mono()
            tenure.line(tl.line_mutex_held(t_rel - t_lock, t_rel - t_pick), t_rel)
            tenure.commit()
        finally:
            mutex.release()
        gpu_total = out["gpu_total"]
        log.timeline("GPU_END", f"worker={w},partition={p},gpu_ms={tl.ms(gpu_total)}")
        st.phase = "unregister"
        with self._registration():
            self.mem.finish_upload(part.block)
        res = PartitionResult(index=p, gpu=gpu, worker=w, held_s=t_rel - t_lock,
                              h2d_s=out["h2d"], h2d_bytes=out["h2d_bytes"], gpu_total_s=gpu_total,
                              barrier_s=out["barrier"], mutex_wait_s=t_lock - t_req,
                              dma_wait_s=out["dma_wait"])
        if self.verifier is not None:
            st.phase = "verify"
            self.verifier.check(part, h=out["h_mont"], h_scalars=out["h_std"], h_msm=out["h_msm"],
                                ones=prep["ones"], batch=out["batch"], tail=out["tail"],
                                device_index=gpu)
            res.verified = True
        return res

    def _under_lock(self, st, dev, part, host_arrays, prep, prep_thread, tenure, t_lock) -> dict:
        clk, log, be = self.clock, self.log, self.backends[st.gpu]
        gpu, w, p = st.gpu, st.worker, part.index
        gpu_tid = 0  # the GPU's index inside one call: one GPU per call here
        self._check()
        # d_b_alloc + h2d + NTTs (ntt_kernels = upload + kernels; coset_intt_sync = the wait)
        st.phase = "h2d"
        t0 = clk.mono()
        with dev.nvtx(f"gpuscope.d_b_alloc p{p}"):
            dbufs = dev.alloc_like(host_arrays)
        t_alloc = clk.mono()
        with self._registration(), dev.nvtx(f"gpuscope.h2d p{p}"):
            t1 = clk.mono()  # after any registration in flight (registered mode)
            if dev.kind == "gpu":
                nbytes = dev.upload_into(dbufs, host_arrays)
                d_a, d_b, d_c, d_s = dbufs
            else:
                (d_a, d_b, d_c, d_s), nbytes = dev.upload(host_arrays)
        t2 = clk.mono()
        log.span(t1, t2, gpu, w, p, "h2d")
        self._check()
        st.phase = "ntt"
        with dev.nvtx(f"gpuscope.ntt p{p}"):
            h = be.compute_h(d_a, d_b, d_c)
            t3 = clk.mono()
            dev.synchronize()
        t4 = clk.mono()
        log.span(t2, t4, gpu, w, p, "ntt")
        del d_a, d_b, d_c
        self._check()
        # H MSM over the SRS's H points
        st.phase = "msm"
        with dev.nvtx(f"gpuscope.msm_h p{p}"):
            h_std = be.to_standard(h)
            dev.synchronize()
            t5 = clk.mono()
            h_msm = self.srs[gpu].run(dev, "h", be.msm, h_std)
            t6 = clk.mono()
            h_keep = h if self.verifier is not None else None
            del h
            if self.verifier is None:
                del h_std
                h_std = None
            t7 = clk.mono()
        log.span(t4, t7, gpu, w, p, "msm")
        ntt_msm_h = t7 - t0
        tenure.line(tl.line_ntt_h(t_alloc - t0, t3 - t1, t4 - t3, t5 - t4, t6 - t5, t7 - t6, ntt_msm_h), t7)
        tenure.line(tl.line_h2d(gpu_tid, t2 - t1, nbytes), t7)
        tenure.line(tl.line_ntt_msm_h(gpu_tid, ntt_msm_h), t7)
        self._check()
        # barrier: wait for the prep thread
        st.phase = "barrier"
        prep_thread.join()
        t8 = clk.mono()
        if "error" in prep:
            raise prep["error"]
        log.span(t7, t8, gpu, w, p, "barrier")
        tenure.line(tl.line_barrier(gpu_tid, t8 - t7), t8)
        self._check()
        st.phase = "batch_add"
        ones = prep["ones"]
        d_ones = dev.to_device(ones)
        with dev.nvtx(f"gpuscope.batch_add p{p}"):
            batch = self.srs[gpu].run(dev, "w", be.batch_add, d_ones)
            dev.synchronize()
        t9 = clk.mono()
        log.span(t8, t9, gpu, w, p, "batch_add")
        tenure.line(tl.line_batch_add(gpu_tid, t9 - t8), t9)
        self._check()
        st.phase = "tail_msm"
        with dev.nvtx(f"gpuscope.tail_msm p{p}"):
            tail = self.srs[gpu].run(dev, "w", be.tail_msm, d_s, d_ones)
            dev.synchronize()
        t10 = clk.mono()
        log.span(t9, t10, gpu, w, p, "tail_msm")
        gpu_total = t10 - t0
        tenure.line(tl.line_tail_msm(gpu_tid, t10 - t9, gpu_total), t10)
        return {"h2d": t2 - t1, "h2d_bytes": nbytes, "gpu_total": gpu_total, "barrier": t8 - t7,
                "dma_wait": t1 - t_alloc,
                "h_mont": h_keep, "h_std": h_std, "h_msm": h_msm, "batch": batch, "tail": tail}

    # -- run -----------------------------------------------------------------------------------
    def run(self) -> PipelineResult:
        cfg = self.cfg
        self.t_start = self.clock.mono()
        threads: list[threading.Thread] = []
        for k in range(cfg.contention):
            threads.append(threading.Thread(target=self._contention_loop, args=(k,),
                                            name=f"contention-{k}", daemon=True))
        work: list[threading.Thread] = []
        for k in range(cfg.synth_threads):
            work.append(threading.Thread(target=self._synth_loop, name=f"synth-{k}", daemon=True))
        for st in self.workers:
            work.append(threading.Thread(target=self._worker_loop, args=(st,),
                                         name=f"gpu{st.gpu}-worker{st.worker}", daemon=True))
        for t in threads + work:
            t.start()
        try:
            while any(t.is_alive() for t in work):
                for t in work:
                    t.join(timeout=0.05)
        finally:
            self.stop.set()  # contention threads end with the work
            for t in work + threads:
                t.join(timeout=30)
            self._drain()
        wall = self.clock.mono() - self.t_start
        err = self._error
        stopped = err is None and self.done < cfg.partitions
        return PipelineResult(
            results=sorted(self.results, key=lambda r: r.index), wall_s=wall, stopped=stopped,
            error=err, memory=self.mem.stats(),
            budget={"budget": self.budget.budget, "peak": self.budget.peak,
                    "waits": self.budget.waits, "wait_s": round(self.budget.wait_s, 6)},
            synthesized=self.synthesized,
            srs={"resident": next(iter(self.srs.values())).resident if self.srs else None},
        )

    def _drain(self) -> None:
        """Give back the memory of partitions synthesized but never proved."""
        while True:
            try:
                part = self.queue.get_nowait()
            except queue.Empty:
                return
            self._drop(part)

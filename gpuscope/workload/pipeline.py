"""The CuZK-model proving pipeline: synthesis threads -> budgeted queue -> GPU workers.

Shaped like the production prover (../shared/formats/CUZK_FORMATS.md):

- synthesis threads build partitions (a, b, c, witness; gpuscope.workload.synth) into host
  memory of the run's mode and queue them; a `MemoryBudget` of host bytes gives
  backpressure (a partition's bytes are taken before it is synthesized and given back only
  when its GPU work is done), not a count alone;
- per GPU, N workers share one GPU mutex; each partition is one tenure of a worker
  (gpuscope.workload.tenure: prep thread, split, mutex_wait, h2d, NTTs, the H MSM over the
  SRS (gpuscope.workload.srs), barrier, batch_add, tail MSM, mutex_held);
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
from typing import TYPE_CHECKING

import numpy as np

from gpuscope.clock import CLOCK, Clock
from gpuscope.errors import ResourceError
from gpuscope.units import fmt_bytes
from gpuscope.workload import timinglog as tl
from gpuscope.workload.hostmem import HostMemory
from gpuscope.workload.pipeline_types import (
    PartitionResult,
    PipelineConfig,
    PipelineResult,
    Stopped,
    WorkerState,
)
from gpuscope.workload.srs import Srs
from gpuscope.workload.synth import Partition, partition_bytes, synthesize
from gpuscope.workload.tenure import GpuTenure

if TYPE_CHECKING:
    from gpuscope.workload.backends import Backend
    from gpuscope.workload.devices import Device
    from gpuscope.workload.verify import Verifier


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



class Pipeline:
    """Run the pipeline once. `run()` blocks; `request_stop()` may be called from any thread."""

    def __init__(self, cfg: PipelineConfig, backend: Backend | dict[int, Backend],
                 devices: dict[int, Device], hostmem: HostMemory, log: tl.TimingLog, *,
                 srs: dict[int, Srs], verifier: Verifier | None = None, clock: Clock = CLOCK):
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

    def registration(self) -> contextlib.AbstractContextManager:
        """Held while registering/unregistering and while uploading (registered mode only)."""
        return self._dma if self._dma is not None else contextlib.nullcontext()

    def check_stop(self) -> None:
        """Stopped when a stop was requested: called at every phase boundary."""
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
                    res = GpuTenure(self, st, dev, part).run()
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

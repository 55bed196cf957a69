"""The GPU worker's tenure: one partition from pickup to the release of the GPU lock.

Per partition a worker starts the prep thread (prep.py), makes the host arrays uploadable
(registered mode: page-locks them; split_vectors), takes its GPU's mutex (mutex_wait) and,
under it, allocates and uploads a/b/c and the witness (h2d), computes H with NTTs, runs the
H MSM over the SRS points, waits at the barrier for prep (barrier_wait), runs batch_add and
the tail MSM, and releases the mutex (mutex_held). Every phase's interval goes to spans.csv
when it ends; the tenure's GPU-region lines are collected and written as one block at the
release (timinglog.Tenure). A stop request takes effect at the next phase boundary.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import numpy as np

from gpuscope.workload import timinglog as tl
from gpuscope.workload.devices import device_oom_as_resource_error
from gpuscope.workload.pipeline_types import PartitionResult, Stopped, WorkerState
from gpuscope.workload.prep import PrepThread

if TYPE_CHECKING:
    import contextlib

    from gpuscope.clock import Clock
    from gpuscope.workload.backends import Backend
    from gpuscope.workload.devices import Device
    from gpuscope.workload.hostmem import HostMemory
    from gpuscope.workload.layout import Array
    from gpuscope.workload.srs import Srs
    from gpuscope.workload.synth import Partition
    from gpuscope.workload.verify import Verifier

GPU_TID = 0  # the GPU's index inside one call: one GPU per call here


class Pipeline(Protocol):
    """What a tenure uses of the pipeline that runs it (gpuscope.workload.pipeline.Pipeline): the
    shared devices, memory, locks and log, and its stop; declared here so tenure imports nothing
    of the pipeline back."""

    backends: dict[int, Backend]
    clock: Clock
    log: tl.TimingLog
    mem: HostMemory
    mutexes: dict[int, threading.Lock]
    srs: dict[int, Srs]
    stop: threading.Event
    verifier: Verifier | None

    def check_stop(self) -> None: ...

    def registration(self) -> contextlib.AbstractContextManager: ...


@dataclass
class TenureTimes:
    """The clock readings of one tenure (monotonic seconds), in the order they are taken."""

    pick: float = 0.0  # the worker took the partition
    split0: float = 0.0  # making the host arrays uploadable ...
    split1: float = 0.0  # ... done
    req: float = 0.0  # the lock is asked for
    lock: float = 0.0  # the lock is taken
    gpu0: float = 0.0  # GPU work starts: device buffers are allocated (d_b_alloc) ...
    alloc: float = 0.0  # ... done
    up0: float = 0.0  # the upload starts (after any registration in flight) ...
    up1: float = 0.0  # ... done
    ntt_issued: float = 0.0  # compute_h returned (kernels queued)
    ntt_done: float = 0.0  # ... and finished (coset_intt_sync)
    msm0: float = 0.0  # h in standard form: the H MSM starts (msm_init) ...
    msm1: float = 0.0  # ... done (msm_invoke)
    msm_freed: float = 0.0  # h freed (msm_dtor): the barrier starts
    barrier: float = 0.0  # prep joined
    batch: float = 0.0  # batch_add done
    tail: float = 0.0  # tail MSM done
    rel: float = 0.0  # just before the lock is released


class GpuTenure:
    """One partition through one GPU worker. `run()` once, in the worker's thread."""

    prep: PrepThread  # started by run() at pickup, joined at the barrier (or a stop)
    lines: tl.Tenure  # the GPU-region lines of the tenure, opened when the lock is taken

    def __init__(self, pipe: Pipeline, st: WorkerState, dev: Device, part: Partition) -> None:
        self.pipe, self.st, self.dev, self.part = pipe, st, dev, part
        self.clk, self.log = pipe.clock, pipe.log
        self.gpu, self.w, self.p = st.gpu, st.worker, part.index
        self.t = TenureTimes()
        self.host_arrays: list[np.ndarray] = []
        self.h2d_bytes = 0
        self.gpu_total = 0.0
        self._h: Array = None  # H (Montgomery) between compute_h and the H MSM, the only reference
        self.h_mont: Array = None  # kept for the verifier
        self.h_std: Array = None
        self.h_msm: np.ndarray | None = None
        self.batch: np.ndarray | None = None
        self.tail: np.ndarray | None = None

    def run(self) -> PartitionResult:
        """Pickup, prep, split, lock, the work under it, release; then the result (verified)."""
        self._pick_up()
        self.prep = PrepThread(self.part, self.clk, self.log, self.gpu, self.w).start()
        self._make_uploadable()
        mutex = self._take_lock()
        try:
            self._hold_lock()
        finally:
            mutex.release()
        self._after_release()
        res = self._result()
        if (verifier := self.pipe.verifier) is not None:
            self._verify(verifier)
            res.verified = True
        return res

    # -- before the lock ------------------------------------------------------------------
    def _pick_up(self) -> None:
        self.st.partition = self.p
        self.st.phase = "pickup"
        self.t.pick = self.clk.mono()
        self.log.timeline("GPU_PICKUP", f"worker={self.w},partition={self.p}", self.t.pick)

    def _make_uploadable(self) -> None:
        """Before the lock: make the host arrays uploadable (registered mode: page-lock them)."""
        t, part = self.t, self.part
        self.st.phase = "split"
        t.split0 = self.clk.mono()
        self.host_arrays = [part.a, part.b, part.c, part.scalars]
        with self.pipe.registration():
            self.pipe.mem.prepare_upload(part.block)
        t.split1 = self.clk.mono()
        self.log.line(tl.line_split_vectors(t.split1 - t.split0, t.split0 - t.pick), t.split1)
        self.pipe.check_stop()

    def _take_lock(self) -> threading.Lock:
        """The GPU's mutex, polled so that a stop request ends the wait (prep joined, upload undone)."""
        self.st.phase = "lock_wait"
        self.t.req = self.clk.mono()
        mutex = self.pipe.mutexes[self.gpu]
        while not mutex.acquire(timeout=0.05):
            if self.pipe.stop.is_set():
                self.prep.join()
                with self.pipe.registration():
                    self.pipe.mem.finish_upload(self.part.block)
                raise Stopped()
        return mutex

    # -- under the lock -------------------------------------------------------------------
    def _hold_lock(self) -> None:
        """From the lock taken to just before its release; the tenure's lines go out as one block."""
        t, log = self.t, self.log
        t.lock = self.clk.mono()
        log.span(t.req, t.lock, self.gpu, self.w, self.p, "lock_wait")
        self.lines = log.tenure()
        self.lines.line(tl.line_lock_taken(t.req - t.pick, t.lock - t.req), t.lock)
        log.timeline("GPU_START", f"worker={self.w},partition={self.p}", t.lock)
        try:
            with device_oom_as_resource_error(self.gpu, lambda: self.st.phase):  # the phase that ran out
                self._under_lock()
        finally:
            self.prep.join()
        t.rel = self.clk.mono()
        self.lines.line(tl.line_mutex_held(t.rel - t.lock, t.rel - t.pick), t.rel)
        self.lines.commit()

    def _under_lock(self) -> None:
        """The GPU work, phase by phase; the device buffers live until it returns."""
        check = self.pipe.check_stop
        check()
        dbufs, (d_a, d_b, d_c, d_s) = self._upload()
        self._compute_h(d_a, d_b, d_c)
        del d_a, d_b, d_c
        check()
        self._h_msm()
        check()
        self._barrier()
        check()
        d_ones = self._batch_add()
        check()
        self._tail_msm(d_s, d_ones)

    def _span(self, t0: float, t1: float, phase: str) -> None:
        self.log.span(t0, t1, self.gpu, self.w, self.p, phase)

    def _upload(self) -> tuple[list[Array], list[Array]]:
        """d_b_alloc + h2d (ntt_kernels = upload + kernels): the device buffers, and the four
        arrays on the device (on the GPU the buffers themselves)."""
        t, dev, clk = self.t, self.dev, self.clk
        self.st.phase = "h2d"
        t.gpu0 = clk.mono()
        with dev.nvtx(f"gpuscope.d_b_alloc p{self.p}"):
            dbufs = dev.alloc_like(self.host_arrays)
        t.alloc = clk.mono()
        with self.pipe.registration(), dev.nvtx(f"gpuscope.h2d p{self.p}"):
            t.up0 = clk.mono()  # after any registration in flight (registered mode)
            if dev.kind == "gpu":
                self.h2d_bytes = dev.upload_into(dbufs, self.host_arrays)
                arrays = dbufs
            else:
                arrays, self.h2d_bytes = dev.upload(self.host_arrays)
        t.up1 = clk.mono()
        self._span(t.up0, t.up1, "h2d")
        return dbufs, arrays

    def _compute_h(self, d_a: Array, d_b: Array, d_c: Array) -> None:
        """H with NTTs (coset_intt_sync = the wait for the kernels)."""
        t, dev = self.t, self.dev
        self.st.phase = "ntt"
        with dev.nvtx(f"gpuscope.ntt p{self.p}"):
            self._h = self.pipe.backends[self.gpu].compute_h(d_a, d_b, d_c)
            t.ntt_issued = self.clk.mono()
            dev.synchronize()
        t.ntt_done = self.clk.mono()
        self._span(t.up1, t.ntt_done, "ntt")

    def _h_msm(self) -> None:
        """The H MSM over the SRS's H points; h is freed inside (msm_dtor) unless verified."""
        t, dev, clk, be = self.t, self.dev, self.clk, self.pipe.backends[self.gpu]
        verified = self.pipe.verifier is not None
        self.st.phase = "msm"
        with dev.nvtx(f"gpuscope.msm_h p{self.p}"):
            self.h_std = be.to_standard(self._h)
            dev.synchronize()
            t.msm0 = clk.mono()
            self.h_msm = self.pipe.srs[self.gpu].run(dev, "h", be.msm, self.h_std)
            t.msm1 = clk.mono()
            self.h_mont = self._h if verified else None
            self._h = None
            if not verified:
                self.h_std = None
            t.msm_freed = clk.mono()
        self._span(t.ntt_done, t.msm_freed, "msm")
        self._ntt_h_lines()

    def _ntt_h_lines(self) -> None:
        """CUZK_NTT_H and its per-GPU lines (h2d inside ntt_kernels), stamped at the MSM's end."""
        t, lines = self.t, self.lines
        ntt_msm_h = t.msm_freed - t.gpu0
        lines.line(tl.line_ntt_h(t.alloc - t.gpu0, t.ntt_issued - t.up0, t.ntt_done - t.ntt_issued,
                                 t.msm0 - t.ntt_done, t.msm1 - t.msm0, t.msm_freed - t.msm1, ntt_msm_h),
                   t.msm_freed)
        lines.line(tl.line_h2d(GPU_TID, t.up1 - t.up0, self.h2d_bytes), t.msm_freed)
        lines.line(tl.line_ntt_msm_h(GPU_TID, ntt_msm_h), t.msm_freed)

    def _barrier(self) -> None:
        """Wait for the prep thread; its error, if any, ends the tenure here."""
        t = self.t
        self.st.phase = "barrier"
        self.prep.join()
        t.barrier = self.clk.mono()
        if self.prep.error is not None:
            raise self.prep.error
        self._span(t.msm_freed, t.barrier, "barrier")
        self.lines.line(tl.line_barrier(GPU_TID, t.barrier - t.msm_freed), t.barrier)

    def _batch_add(self) -> Array:
        """Sum of the witness points whose scalar is 1; returns the bitmap on the device."""
        t, dev, be = self.t, self.dev, self.pipe.backends[self.gpu]
        self.st.phase = "batch_add"
        ones = self.prep.ones
        assert ones is not None  # (the barrier joined the prep thread, and it did not fail)
        d_ones = dev.to_device(ones)
        with dev.nvtx(f"gpuscope.batch_add p{self.p}"):
            self.batch = self.pipe.srs[self.gpu].run(dev, "w", be.batch_add, d_ones)
            dev.synchronize()
        t.batch = self.clk.mono()
        self._span(t.barrier, t.batch, "batch_add")
        self.lines.line(tl.line_batch_add(GPU_TID, t.batch - t.barrier), t.batch)
        return d_ones

    def _tail_msm(self, d_s: Array, d_ones: Array) -> None:
        """The MSM over the other witness points (bitmap clear)."""
        t, dev, be = self.t, self.dev, self.pipe.backends[self.gpu]
        self.st.phase = "tail_msm"
        with dev.nvtx(f"gpuscope.tail_msm p{self.p}"):
            self.tail = self.pipe.srs[self.gpu].run(dev, "w", be.tail_msm, d_s, d_ones)
            dev.synchronize()
        t.tail = self.clk.mono()
        self._span(t.batch, t.tail, "tail_msm")
        self.gpu_total = t.tail - t.gpu0
        self.lines.line(tl.line_tail_msm(GPU_TID, t.tail - t.batch, self.gpu_total), t.tail)

    # -- after the lock -------------------------------------------------------------------
    def _after_release(self) -> None:
        self.log.timeline("GPU_END", f"worker={self.w},partition={self.p},gpu_ms={tl.ms(self.gpu_total)}")
        self.st.phase = "unregister"
        with self.pipe.registration():
            self.pipe.mem.finish_upload(self.part.block)

    def _result(self) -> PartitionResult:
        t = self.t
        return PartitionResult(index=self.p, gpu=self.gpu, worker=self.w, held_s=t.rel - t.lock,
                               h2d_s=t.up1 - t.up0, h2d_bytes=self.h2d_bytes,
                               gpu_total_s=self.gpu_total, barrier_s=t.barrier - t.msm_freed,
                               mutex_wait_s=t.lock - t.req, dma_wait_s=t.up0 - t.alloc)

    def _verify(self, verifier: Verifier) -> None:
        self.st.phase = "verify"
        ones, h_msm, batch, tail = self.prep.ones, self.h_msm, self.batch, self.tail
        assert ones is not None and h_msm is not None and batch is not None and tail is not None  # (the
        # tenure ran every phase: run() verifies only after the lock was held to its end)
        verifier.check(self.part, h=self.h_mont, h_scalars=self.h_std, h_msm=h_msm, ones=ones,
                       batch=batch, tail=tail, device_index=self.gpu)

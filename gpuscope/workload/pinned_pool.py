"""The pinned mode's pool: reusable cudaHostAlloc buffers under a byte budget.

cudaHostAlloc is expensive (1.3 s for 1.5 GiB measured on an H200 host), so buffers are
recycled, never freed between partitions: an exact-size free list, eviction of idle buffers
of other sizes when a new size does not fit, backpressure (waiting for a release) when the
budget is in use, and counters (allocations, hits, evictions, waits, bytes).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

import numpy as np

from gpuscope.errors import ResourceError, UsageError
from gpuscope.units import fmt_bytes
from gpuscope.workload.hostalloc import AllocationFailed, HostAllocator


@dataclass
class PoolCounters:
    allocations: int = 0  # cudaHostAlloc calls
    hits: int = 0  # acquisitions served from the free list
    frees: int = 0  # cudaFreeHost calls (evictions + close)
    evictions: int = 0  # free buffers freed to make room under the budget
    waits: int = 0  # acquisitions that had to wait for a release
    alloc_s: float = 0.0  # time spent inside cudaHostAlloc
    bytes: int = 0  # bytes pinned now (in use + free list)
    peak_bytes: int = 0
    in_use_bytes: int = 0

    def as_dict(self) -> dict:
        return dict(self.__dict__)


@dataclass(eq=False)
class PinnedBuffer:
    ptr: int
    nbytes: int
    array: np.ndarray  # uint8 view of the whole buffer
    in_use: bool = field(default=False)

    def as_array(self, shape: tuple[int, ...], dtype) -> np.ndarray:
        dt = np.dtype(dtype)
        count = int(np.prod(shape))
        return self.array[: count * dt.itemsize].view(dt).reshape(shape)


class PinnedPool:
    """Exact-size free list of pinned host buffers under a byte budget.

    `acquire(n)` returns a free buffer of exactly n bytes when there is one (a hit);
    otherwise it pins a new one if the budget allows, first freeing idle buffers of other
    sizes; otherwise it waits for a `release` (backpressure) until `timeout_s` or `stop`.
    A single request larger than the budget is an error (exit 6) naming the flag to raise.
    """

    def __init__(self, budget_bytes: int, allocator: HostAllocator, *,
                 budget_flag: str = "--pinned-budget-mib"):
        if budget_bytes <= 0:
            raise UsageError(f"pinned budget must be positive, got {budget_bytes} bytes")
        self.budget = int(budget_bytes)
        self.alloc = allocator
        self.flag = budget_flag
        self.counters = PoolCounters()
        self._free: dict[int, list[PinnedBuffer]] = {}
        self._all: list[PinnedBuffer] = []
        self._cv = threading.Condition()
        self._closed = False

    # -- public -------------------------------------------------------------------------
    def acquire(self, nbytes: int, *, stop: threading.Event | None = None,
                timeout_s: float | None = None) -> PinnedBuffer:
        nbytes = int(nbytes)
        if nbytes <= 0:
            raise ValueError("nbytes must be positive")
        if nbytes > self.budget:
            raise ResourceError(
                f"a pinned buffer of {fmt_bytes(nbytes)} does not fit the pinned-memory budget "
                f"of {fmt_bytes(self.budget)}",
                hint=f"raise {self.flag} or lower --log-n",
            )
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        waited = False
        with self._cv:
            while True:
                if self._closed:
                    raise RuntimeError("pinned pool is closed")
                free = self._free.get(nbytes)
                if free:
                    buf = free.pop()
                    buf.in_use = True
                    self.counters.hits += 1
                    self.counters.in_use_bytes += nbytes
                    return buf
                self._evict_until_fits(nbytes)
                if self.counters.bytes + nbytes <= self.budget:
                    buf = self._pin_new(nbytes)
                    buf.in_use = True
                    self.counters.in_use_bytes += nbytes
                    return buf
                if stop is not None and stop.is_set():
                    raise InterruptedError("stopped while waiting for pinned memory")
                if deadline is not None and time.monotonic() >= deadline:
                    raise ResourceError(
                        f"timed out waiting for {fmt_bytes(nbytes)} of pinned memory "
                        f"({fmt_bytes(self.counters.in_use_bytes)} of {fmt_bytes(self.budget)} in use)",
                        hint=f"raise {self.flag}",
                    )
                if not waited:
                    self.counters.waits += 1
                    waited = True
                self._cv.wait(0.05)

    def prewarm(self, nbytes: int, count: int) -> int:
        """Pin `count` buffers of `nbytes` now (as a long-lived daemon's pool already would be)
        and put them on the free list. Stops at the budget. Returns how many were pinned."""
        bufs = []
        try:
            for _ in range(count):
                with self._cv:
                    if self.counters.bytes + nbytes > self.budget:
                        break
                    bufs.append(self._pin_new(nbytes))
        finally:
            with self._cv:
                for b in bufs:
                    self._free.setdefault(nbytes, []).append(b)
                self._cv.notify_all()
        return len(bufs)

    def release(self, buf: PinnedBuffer) -> None:
        with self._cv:
            if not buf.in_use:
                raise RuntimeError("pinned buffer released twice")
            buf.in_use = False
            self.counters.in_use_bytes -= buf.nbytes
            if self._closed:
                self._free_one(buf)
            else:
                self._free.setdefault(buf.nbytes, []).append(buf)
            self._cv.notify_all()

    def close(self) -> None:
        """Free every idle buffer now; buffers still in use are freed when released."""
        with self._cv:
            self._closed = True
            for bufs in self._free.values():
                for b in bufs:
                    self._free_one(b)
            self._free.clear()
            self._cv.notify_all()

    @property
    def free_bytes(self) -> int:
        with self._cv:
            return sum(b.nbytes for bs in self._free.values() for b in bs)

    # -- internals (caller holds the lock) ----------------------------------------------
    def _pin_new(self, nbytes: int) -> PinnedBuffer:
        t0 = time.perf_counter()
        try:
            ptr = self.alloc.host_alloc(nbytes)
        except AllocationFailed as e:
            raise ResourceError(
                f"could not pin {fmt_bytes(nbytes)} of host memory "
                f"({fmt_bytes(self.counters.bytes)} already pinned): {e}",
                hint=f"lower {self.flag} or --log-n, or use --mode registered",
            ) from None
        self.counters.alloc_s += time.perf_counter() - t0
        buf = PinnedBuffer(ptr=ptr, nbytes=nbytes, array=self.alloc.view(ptr, nbytes))
        self._all.append(buf)
        self.counters.allocations += 1
        self.counters.bytes += nbytes
        self.counters.peak_bytes = max(self.counters.peak_bytes, self.counters.bytes)
        return buf

    def _free_one(self, buf: PinnedBuffer) -> None:
        buf.array = np.empty(0, np.uint8)  # drop the view before the memory goes away
        self.alloc.free_host(buf.ptr)
        self.counters.frees += 1
        self.counters.bytes -= buf.nbytes
        self._all.remove(buf)

    def _evict_until_fits(self, nbytes: int) -> None:
        """Free idle buffers of other sizes, largest first, until `nbytes` fits the budget."""
        if self.counters.bytes + nbytes <= self.budget:
            return
        idle = sorted((b for size, bs in self._free.items() if size != nbytes for b in bs),
                      key=lambda b: -b.nbytes)
        for b in idle:
            if self.counters.bytes + nbytes <= self.budget:
                break
            self._free[b.nbytes].remove(b)
            if not self._free[b.nbytes]:
                del self._free[b.nbytes]
            self._free_one(b)
            self.counters.evictions += 1

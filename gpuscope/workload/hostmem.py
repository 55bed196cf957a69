"""Host memory for the synthesized a/b/c vectors: pageable, pinned pool, or registered.

The three modes of `gpuscope run --mode`:

- ``pageable``  plain numpy heap arrays. A host-to-device copy from them is staged by the
  driver through a small pinned bounce buffer (the article's slow path).
- ``pinned``    a reusable pool of cudaHostAlloc buffers (`PinnedPool`): an exact-size free
  list, a byte budget, reuse across partitions, counters (allocations, hits, bytes).
  cudaHostAlloc is expensive (1.3 s for 1.5 GiB measured on an H200 host), so buffers are
  recycled, never freed between partitions.
- ``registered`` plain numpy arrays, page-locked with cudaHostRegister just before the
  upload and unregistered after (`HostMemory.prepare_upload` / `finish_upload`).

The CUDA calls go through an injectable allocator object (`CudaHostAllocator` in
production, a fake in the tests) so the pool logic is covered without a GPU.
"""

from __future__ import annotations

import ctypes
import threading
import time
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from gpuscope import cuda
from gpuscope.errors import ResourceError, UsageError

MODES = ("pageable", "pinned", "registered")
MODE_ALIASES = {"unpinned": "pageable", "pageable": "pageable", "pinned": "pinned",
                "registered": "registered"}

MiB = 1 << 20


def normalize_mode(mode: str) -> str:
    """`unpinned` is accepted as `pageable`; anything else unknown is a usage error."""
    key = (mode or "").strip().lower()
    if key not in MODE_ALIASES:
        raise UsageError(
            f"unknown host-memory mode {mode!r}",
            hint="use one of: pinned, pageable (alias unpinned), registered",
        )
    return MODE_ALIASES[key]


def fmt_bytes(n: int) -> str:
    if n >= 1 << 30:
        return f"{n / (1 << 30):.2f} GiB"
    if n >= MiB:
        return f"{n / MiB:.1f} MiB"
    return f"{n} B"


class HostAllocator(Protocol):
    """What the pool needs from CUDA. Pointers are plain ints."""

    def host_alloc(self, nbytes: int) -> int: ...

    def free_host(self, ptr: int) -> None: ...

    def host_register(self, ptr: int, nbytes: int) -> None: ...

    def host_unregister(self, ptr: int) -> None: ...

    def view(self, ptr: int, nbytes: int) -> np.ndarray:
        """A uint8 numpy view of `nbytes` at `ptr` (no copy)."""
        ...


class AllocationFailed(Exception):
    """Raised by an allocator when the host (or driver) cannot pin the memory."""


def _view_from_address(ptr: int, nbytes: int) -> np.ndarray:
    buf = (ctypes.c_uint8 * nbytes).from_address(ptr)
    return np.frombuffer(buf, dtype=np.uint8, count=nbytes)


class CudaHostAllocator:
    """cudaHostAlloc / cudaFreeHost / cudaHostRegister / cudaHostUnregister through CuPy."""

    def __init__(self) -> None:
        # fails early, in the caller, when CuPy is absent
        self._rt = cuda.require("pinned or registered host memory").cuda.runtime

    def host_alloc(self, nbytes: int) -> int:
        # cudaHostAllocPortable (1): pinned for every CUDA context, so multi-GPU workers share it.
        try:
            return int(self._rt.hostAlloc(nbytes, 1))
        except self._rt.CUDARuntimeError as e:
            raise AllocationFailed(str(e)) from e

    def free_host(self, ptr: int) -> None:
        self._rt.freeHost(ptr)

    def host_register(self, ptr: int, nbytes: int) -> None:
        try:
            self._rt.hostRegister(ptr, nbytes, 1)  # cudaHostRegisterPortable
        except self._rt.CUDARuntimeError as e:
            raise AllocationFailed(str(e)) from e

    def host_unregister(self, ptr: int) -> None:
        self._rt.hostUnregister(ptr)

    def view(self, ptr: int, nbytes: int) -> np.ndarray:
        return _view_from_address(ptr, nbytes)


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


PAGE = 4096


def _page_aligned_arrays(shapes, sizes, dt) -> list[np.ndarray]:
    """Plain heap arrays, each starting on its own page, as separate heap vectors would.

    cudaHostRegister pins whole pages: two arrays sharing a page could not both be
    registered (cudaErrorHostMemoryAlreadyRegistered)."""
    spans = [-(-size // PAGE) * PAGE for size in sizes]
    raw = np.empty(sum(spans) + PAGE, dtype=np.uint8)
    off = (-raw.ctypes.data) % PAGE
    out = []
    for shape, size, span in zip(shapes, sizes, spans, strict=True):
        out.append(raw[off: off + size].view(dt).reshape(shape))
        off += span
    return out


@dataclass(eq=False)
class HostBlock:
    """The synthesized host arrays of one partition (a, b, c) and where their memory came from.

    In pinned mode all arrays are views into one pool buffer, taken in one acquisition, so
    synthesis threads never hold part of a partition while waiting for the rest (no deadlock
    under the budget).
    """

    arrays: list[np.ndarray]
    pinned: PinnedBuffer | None = None
    registered: list[int] = field(default_factory=list)  # pointers registered now

    @property
    def nbytes(self) -> int:
        return sum(a.nbytes for a in self.arrays)


class HostMemory:
    """The host-memory mode behind synthesis and upload.

    new_block()       -> HostBlock of arrays the synthesis thread fills in place
    prepare_upload()  registered mode: cudaHostRegister each array (outside the GPU lock)
    finish_upload()   registered mode: cudaHostUnregister each array
    release()         pinned mode: the buffer goes back to the pool's free list
    close()           frees the pool and any registration still outstanding
    """

    def __init__(self, mode: str, *, allocator: HostAllocator | None = None,
                 pinned_budget_bytes: int = 0):
        self.mode = normalize_mode(mode)
        self.alloc = allocator
        self.pool: PinnedPool | None = None
        self.registered_bytes = 0
        self.register_count = 0
        self.register_s = 0.0
        self.unregister_s = 0.0
        self._registered: dict[int, int] = {}
        self._lock = threading.Lock()
        if self.mode in ("pinned", "registered") and allocator is None:
            raise ValueError(f"mode {self.mode} needs a host allocator")
        if self.mode == "pinned":
            self.pool = PinnedPool(pinned_budget_bytes, allocator)

    def new_block(self, shapes: list[tuple[int, ...]], dtype, *,
                  stop: threading.Event | None = None) -> HostBlock:
        dt = np.dtype(dtype)
        sizes = [int(np.prod(s)) * dt.itemsize for s in shapes]
        if self.mode == "pageable":
            return HostBlock(arrays=[np.empty(s, dt) for s in shapes])
        if self.mode == "registered":
            return HostBlock(arrays=_page_aligned_arrays(shapes, sizes, dt))
        buf = self.pool.acquire(sum(sizes), stop=stop)
        arrays, off = [], 0
        for shape, size in zip(shapes, sizes, strict=True):
            arrays.append(buf.array[off: off + size].view(dt).reshape(shape))
            off += size
        return HostBlock(arrays=arrays, pinned=buf)

    def prepare_upload(self, block: HostBlock) -> float:
        """Registered mode: page-lock every array of the block. Returns seconds spent."""
        if self.mode != "registered":
            return 0.0
        t0 = time.perf_counter()
        for a in block.arrays:
            ptr = int(a.ctypes.data)
            if ptr in block.registered:
                continue
            try:
                self.alloc.host_register(ptr, a.nbytes)
            except AllocationFailed as e:
                raise ResourceError(
                    f"cudaHostRegister of {fmt_bytes(a.nbytes)} failed "
                    f"({fmt_bytes(self.registered_bytes)} already registered): {e}",
                    hint="lower --log-n or --workers, or use --mode pinned",
                ) from None
            block.registered.append(ptr)
            with self._lock:
                self._registered[ptr] = a.nbytes
                self.registered_bytes += a.nbytes
                self.register_count += 1
        dt = time.perf_counter() - t0
        with self._lock:
            self.register_s += dt
        return dt

    def finish_upload(self, block: HostBlock) -> float:
        """Registered mode: unregister what prepare_upload registered. Returns seconds spent."""
        if self.mode != "registered":
            return 0.0
        t0 = time.perf_counter()
        self._unregister(block)
        dt = time.perf_counter() - t0
        with self._lock:
            self.unregister_s += dt
        return dt

    def release(self, block: HostBlock) -> None:
        """The partition is done: drop registrations, return pinned memory to the pool."""
        self._unregister(block)
        if block.pinned is not None:
            buf, block.pinned = block.pinned, None
            block.arrays = []
            self.pool.release(buf)

    def close(self) -> None:
        """Free everything: outstanding registrations, then the pool's idle buffers."""
        with self._lock:
            while self._registered:
                ptr, n = self._registered.popitem()
                self.registered_bytes -= n
                self.alloc.host_unregister(ptr)
        if self.pool is not None:
            self.pool.close()

    def stats(self) -> dict:
        out: dict = {"mode": self.mode}
        if self.pool is not None:
            out["pool"] = self.pool.counters.as_dict()
            out["pool"]["budget"] = self.pool.budget
        if self.mode == "registered":
            out["registrations"] = self.register_count
            out["register_s"] = round(self.register_s, 6)
            out["unregister_s"] = round(self.unregister_s, 6)
            out["registered_bytes_now"] = self.registered_bytes
        return out

    def _unregister(self, block: HostBlock) -> None:
        while block.registered:
            ptr = block.registered.pop()
            with self._lock:  # close() may race us: whoever pops the pointer unregisters it
                n = self._registered.pop(ptr, None)
                if n is None:
                    continue
                self.registered_bytes -= n
                self.alloc.host_unregister(ptr)

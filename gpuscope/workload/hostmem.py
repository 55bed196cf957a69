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

The pool is gpuscope.workload.pinned_pool; the CUDA calls go through an injectable allocator
object (gpuscope.workload.hostalloc: `CudaHostAllocator` in production, a fake in the tests)
so the pool logic is covered without a GPU.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from gpuscope.errors import ResourceError, UsageError
from gpuscope.units import fmt_bytes
from gpuscope.workload.hostalloc import AllocationFailed, HostAllocator
from gpuscope.workload.pinned_pool import PinnedBuffer, PinnedPool

MODE_ALIASES = {"unpinned": "pageable", "pageable": "pageable", "pinned": "pinned",
                "registered": "registered"}


def normalize_mode(mode: str) -> str:
    """`unpinned` is accepted as `pageable`; anything else unknown is a usage error."""
    key = (mode or "").strip().lower()
    if key not in MODE_ALIASES:
        raise UsageError(
            f"unknown host-memory mode {mode!r}",
            hint="use one of: pinned, pageable (alias unpinned), registered",
        )
    return MODE_ALIASES[key]


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
            assert allocator is not None  # (refused just above)
            self.pool = PinnedPool(pinned_budget_bytes, allocator)

    def new_block(self, shapes: Sequence[tuple[int, ...]], dtype, *,
                  stop: threading.Event | None = None) -> HostBlock:
        dt = np.dtype(dtype)
        sizes = [int(np.prod(s)) * dt.itemsize for s in shapes]
        if self.mode == "pageable":
            return HostBlock(arrays=[np.empty(s, dt) for s in shapes])
        if self.mode == "registered":
            return HostBlock(arrays=_page_aligned_arrays(shapes, sizes, dt))
        assert self.pool is not None  # (the pinned mode, the one left, has its pool)
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
        alloc = self._allocator()
        t0 = time.perf_counter()
        for a in block.arrays:
            ptr = int(a.ctypes.data)
            if ptr in block.registered:
                continue
            try:
                alloc.host_register(ptr, a.nbytes)
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
            assert self.pool is not None  # (a pinned buffer came from the pool)
            self.pool.release(buf)

    def close(self) -> None:
        """Free everything: outstanding registrations, then the pool's idle buffers."""
        with self._lock:
            while self._registered:
                ptr, n = self._registered.popitem()
                self.registered_bytes -= n
                self._allocator().host_unregister(ptr)
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

    def _allocator(self) -> HostAllocator:
        """The allocator, there in every mode that registers or pins (__init__ refuses else)."""
        assert self.alloc is not None
        return self.alloc

    def _unregister(self, block: HostBlock) -> None:
        while block.registered:
            ptr = block.registered.pop()
            with self._lock:  # close() may race us: whoever pops the pointer unregisters it
                n = self._registered.pop(ptr, None)
                if n is None:
                    continue
                self.registered_bytes -= n
                self._allocator().host_unregister(ptr)

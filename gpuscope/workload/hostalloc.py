"""What the host-memory modes need from CUDA: pin (cudaHostAlloc / cudaFreeHost) and register
(cudaHostRegister / cudaHostUnregister) host memory, and a numpy view of a pinned pointer.

`HostAllocator` is the protocol (pointers are plain ints); `CudaHostAllocator` does it
through CuPy (gpuscope.cuda); the tests stand a fake in. An allocator raises
`AllocationFailed` when the host or driver cannot pin the memory.
"""

from __future__ import annotations

import ctypes
from typing import Protocol

import numpy as np

from gpuscope import cuda


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
    return np.frombuffer(memoryview(buf), dtype=np.uint8, count=nbytes)


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

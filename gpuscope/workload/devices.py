"""Where a pipeline worker's GPU work runs: a CUDA device through CuPy, or the host (CPU backend).

The pipeline talks to one `Device` per GPU: allocate device buffers, upload host arrays,
synchronize, NVTX ranges, and the SRS point sets (pinned host copies streamed to the GPU in
chunks, or resident on the device). `HostDevice` is the CPU backend's stand-in: no copies,
no streams, and the host-memory modes have no effect there.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Literal

import numpy as np

from gpuscope import cuda
from gpuscope.errors import ResourceError, UsageError
from gpuscope.units import fmt_bytes
from gpuscope.workload.hostalloc import AllocationFailed, HostAllocator

if TYPE_CHECKING:
    from gpuscope.workload.layout import Array


def as_device_oom(e: BaseException, gpu: int, what: str) -> ResourceError | None:
    """A CuPy out-of-memory error -> ResourceError naming the size and the flags to lower."""
    if type(e).__name__ != "OutOfMemoryError":
        return None
    return ResourceError(
        f"GPU {gpu} ran out of device memory during {what} ({' '.join(str(e).split())[:160]})",
        hint="lower --log-n or --workers, or drop --srs-resident",
    )


@contextlib.contextmanager
def device_oom_as_resource_error(gpu: int, what: str | Callable[[], str]) -> Iterator[None]:
    """Inside, a CuPy out-of-memory error leaves as as_device_oom's ResourceError (the size
    and the flags to lower); `what` may be a callable, read when the error happens."""
    try:
        yield
    except Exception as e:
        oom = as_device_oom(e, gpu, what() if callable(what) else what)
        if oom is None:
            raise
        raise oom from None


class HostDevice:
    """The CPU backend: arrays stay where they are, phases are synchronous."""

    kind: Literal["cpu"] = "cpu"

    def __init__(self, index: int = 0):
        self.index = index

    def activate(self) -> None:
        return None

    def upload(self, arrays: list[np.ndarray]) -> tuple[list[Array], int]:
        """No copy on the host: returns the arrays and 0 bytes moved."""
        return list(arrays), 0

    def alloc_like(self, arrays: list[np.ndarray]) -> list[Array]:
        return [None] * len(arrays)

    def synchronize(self) -> None:
        return None

    def free(self, *arrays: Array) -> None:
        return None

    @contextlib.contextmanager
    def nvtx(self, name: str) -> Iterator[None]:
        yield

    def to_device(self, arr: np.ndarray) -> Array:
        return arr


class CudaDevice:
    """One CUDA device through CuPy. Call `activate()` in every thread that uses it."""

    kind: Literal["gpu"] = "gpu"

    def __init__(self, index: int):
        cupy = cuda.require("a GPU worker")
        self.cp = cupy
        self.index = index
        try:
            self.dev = cupy.cuda.Device(index)
            self.dev.compute_capability  # noqa: B018  (raises for a bad index)
        except Exception as e:
            raise UsageError(f"GPU {index} is not available to CUDA: {e}",
                             hint="check --gpus against `gpuscope info`") from None
        self._nvtx = getattr(cupy.cuda, "nvtx", None)

    def activate(self) -> None:
        self.dev.use()

    def _oom(self, nbytes: int, what: str, e: Exception) -> ResourceError:
        return ResourceError(
            f"GPU {self.index} ran out of device memory allocating {fmt_bytes(nbytes)} for {what} "
            f"({' '.join(str(e).split())[:120]})",
            hint="lower --log-n or --workers, or drop --srs-resident",
        )

    def alloc_like(self, arrays: list[np.ndarray]) -> list[Array]:
        out = []
        for a in arrays:
            try:
                out.append(self.cp.empty(a.shape, a.dtype))
            except self.cp.cuda.memory.OutOfMemoryError as e:
                raise self._oom(a.nbytes, "the a/b/c upload buffers", e) from None
        return out

    def upload_into(self, dst: list[Array], src: list[np.ndarray]) -> int:
        """Host -> device copies on the current stream, then wait for them. Returns bytes."""
        n = 0
        for d, s in zip(dst, src, strict=True):
            d.set(s)
            n += s.nbytes
        self.synchronize()
        return n

    def upload(self, arrays: list[np.ndarray]) -> tuple[list[Array], int]:
        dst = self.alloc_like(arrays)
        return dst, self.upload_into(dst, arrays)

    def synchronize(self) -> None:
        self.cp.cuda.get_current_stream().synchronize()

    def free(self, *arrays: Array) -> None:
        # CuPy's pool takes the memory back when the last reference goes; nothing to call.
        return None

    @contextlib.contextmanager
    def nvtx(self, name: str) -> Iterator[None]:
        if self._nvtx is None:
            yield
            return
        self._nvtx.RangePush(name)
        try:
            yield
        finally:
            self._nvtx.RangePop()

    def to_device(self, arr: np.ndarray) -> Array:
        try:
            return self.cp.asarray(arr)
        except self.cp.cuda.memory.OutOfMemoryError as e:
            raise self._oom(arr.nbytes, "an array", e) from None


class PinnedHostArray:
    """A numpy array in cudaHostAlloc memory (the SRS points' home when streamed)."""

    def __init__(self, allocator: HostAllocator, shape: tuple[int, ...], dtype):
        dt = np.dtype(dtype)
        self.nbytes = int(np.prod(shape)) * dt.itemsize
        self._alloc = allocator
        try:
            self.ptr = allocator.host_alloc(self.nbytes)
        except AllocationFailed as e:
            raise ResourceError(
                f"could not pin {fmt_bytes(self.nbytes)} of host memory for the SRS points: {e}",
                hint="lower --log-n, or use --srs-resident to keep the points on the GPU",
            ) from None
        self.array = allocator.view(self.ptr, self.nbytes).view(dt).reshape(shape)

    def free(self) -> None:
        if self.ptr:
            self.array = np.empty(0, np.uint8)
            self._alloc.free_host(self.ptr)
            self.ptr = 0


#: Where a pipeline worker's GPU work runs (CudaDevice also has upload_into and cp); `kind`
#: tells them apart ("gpu" narrows a Device to a CudaDevice).
Device = HostDevice | CudaDevice

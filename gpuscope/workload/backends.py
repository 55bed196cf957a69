"""The workload's backends and its public calls: H = (a*b - c)/Z by NTTs, G1 MSM, batch_add,
tail MSM.

Layouts (layout.py, field.py, curve.py): Fr vectors are uint32 (n, 8) limbs, Montgomery form for
field data (a, b, c, h), standard form for MSM scalars; G1 points are uint32 (n, 2, 12) affine
Montgomery limbs with all-zero = infinity. A result point is a uint32 (2, 12) numpy array.

Two backends answer the same calls (the `Backend` protocol):

- "gpu": CUDA kernels through CuPy (gpuscope.workload.gpu); inputs may be numpy (copied up) or
  CuPy arrays (used in place); vector results are CuPy arrays on the device;
- "cpu": the Python-integer reference (gpuscope.workload.cpu); numpy in, numpy out; meant
  for n <= 2^14 (H of 2^10 takes ~0.05 s, an MSM of 2^10 ~0.2 s with py-arkworks).

get_backend("auto") picks the GPU when CuPy sees a device, else the CPU. The GPU backend is
imported only when it is asked for (it never imports this module: no cycle).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

import numpy as np

from gpuscope import cuda
from gpuscope.errors import NoGpuError, UsageError
from gpuscope.workload.cpu import CpuBackend

if TYPE_CHECKING:
    from gpuscope.workload.layout import Array


class Backend(Protocol):
    name: str

    def compute_h(self, a: Array, b: Array, c: Array) -> Array: ...
    def ntt(self, values: Array, *, inverse: bool = False) -> Array: ...
    def fr_mul(self, a: Array, b: Array) -> Array: ...
    def to_standard(self, values: Array) -> Array: ...
    def msm(self, points: Array, scalars: Array) -> np.ndarray: ...
    def batch_add(self, points: Array, bitmap: Array) -> np.ndarray: ...
    def tail_msm(self, points: Array, scalars: Array, bitmap: Array) -> np.ndarray: ...
    def generate_points(self, n: int, seed: int) -> Array: ...
    def synchronize(self) -> None: ...


# ---- selection ------------------------------------------------------------------------------
_BACKENDS: dict[str, Backend] = {}


def gpu_present() -> bool:
    return cuda.available()[0]


def get_backend(kind: str = "auto") -> Backend:
    """"gpu", "cpu" or "auto" (the GPU when CuPy sees one). Backends are created once."""
    if kind not in ("auto", "gpu", "cpu"):
        raise UsageError(f"unknown backend {kind!r} (expected auto, gpu or cpu)")
    if kind == "auto":
        kind = "gpu" if gpu_present() else "cpu"
    if kind not in _BACKENDS:
        if kind == "cpu":
            _BACKENDS[kind] = CpuBackend()
        else:
            if not gpu_present():
                raise NoGpuError("the gpu backend needs CuPy and a CUDA device", hint="use --backend cpu")
            from gpuscope.workload.gpu import GpuBackend

            _BACKENDS[kind] = GpuBackend()
    return _BACKENDS[kind]


def _pick(backend: Backend | str | None) -> Backend:
    if backend is None or isinstance(backend, str):
        return get_backend(backend or "auto")
    return backend


def compute_h(a: Array, b: Array, c: Array, *, backend: Backend | str | None = None) -> Array:
    """h (Montgomery (n, 8)) with a*b - c = h*Z, a, b, c Montgomery evaluations on the domain."""
    return _pick(backend).compute_h(a, b, c)


def msm(points: Array, scalars: Array, *, backend: Backend | str | None = None) -> np.ndarray:
    """sum_i scalars[i] * points[i]; scalars standard form (n, 8) below r."""
    return _pick(backend).msm(points, scalars)


def batch_add(points: Array, bitmap: Array, *, backend: Backend | str | None = None) -> np.ndarray:
    """Sum of the points whose bitmap entry is set (bool/uint8 (n,))."""
    return _pick(backend).batch_add(points, bitmap)


def tail_msm(points: Array, scalars: Array, bitmap: Array, *, backend: Backend | str | None = None) -> np.ndarray:
    """MSM over the points whose bitmap entry is clear."""
    return _pick(backend).tail_msm(points, scalars, bitmap)


def generate_points(n: int, seed: int, *, backend: Backend | str | None = None) -> Array:
    """n points P_i = k_i*G, k_i from splitmix64(seed) (curve.point_scalars); same on both backends."""
    return _pick(backend).generate_points(n, seed)

"""The workload's Python API: H = (a*b - c)/Z by NTTs, G1 MSM, batch_add, tail MSM.

Layouts (see field.py / curve.py): Fr vectors are uint32 (n, 8) limbs, Montgomery form for
field data (a, b, c, h), standard form for MSM scalars; G1 points are uint32 (n, 2, 12) affine
Montgomery limbs with all-zero = infinity. A result point is a uint32 (2, 12) numpy array.

Two backends answer the same calls:

- "gpu": CUDA kernels through CuPy (gpuscope.workload.gpu); inputs may be numpy (copied up) or
  CuPy arrays (used in place); vector results are CuPy arrays on the device;
- "cpu": the Python-integer reference (gpuscope.workload.reference); numpy in, numpy out; meant
  for n <= 2^14 (H of 2^10 takes ~0.05 s, an MSM of 2^10 ~0.2 s with py-arkworks).

get_backend("auto") picks the GPU when CuPy sees a device, else the CPU.
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

from gpuscope import cuda
from gpuscope.errors import NoGpuError, UsageError
from gpuscope.workload import curve, reference
from gpuscope.workload.field import FR, R_MOD

FR_TOP_LIMB = R_MOD >> 224  # a limb vector whose top limb is below this is < r


class Backend(Protocol):
    name: str

    def compute_h(self, a: Any, b: Any, c: Any) -> Any: ...
    def ntt(self, values: Any, *, inverse: bool = False) -> Any: ...
    def fr_mul(self, a: Any, b: Any) -> Any: ...
    def to_standard(self, values: Any) -> Any: ...
    def msm(self, points: Any, scalars: Any) -> np.ndarray: ...
    def batch_add(self, points: Any, bitmap: Any) -> np.ndarray: ...
    def tail_msm(self, points: Any, scalars: Any, bitmap: Any) -> np.ndarray: ...
    def generate_points(self, n: int, seed: int) -> Any: ...
    def synchronize(self) -> None: ...


# ---- input checks (shared by both backends) --------------------------------------------------
def _shape(x: Any) -> tuple[int, ...]:
    return tuple(getattr(x, "shape", ()))


def check_fr_vector(x: Any, name: str, *, pow2: bool = True) -> int:
    shp = _shape(x)
    if len(shp) != 2 or shp[1] != 8 or str(getattr(x, "dtype", "")) != "uint32":
        raise UsageError(f"{name} must be a uint32 array of shape (n, 8), got {shp} {getattr(x, 'dtype', type(x).__name__)}")
    n = shp[0]
    if pow2 and (n < 2 or n & (n - 1)):
        raise UsageError(f"{name} must hold a power-of-two number of elements (>= 2), got {n}")
    return n


def check_points(x: Any, name: str = "points") -> int:
    shp = _shape(x)
    if len(shp) != 3 or shp[1:] != (2, 12) or str(getattr(x, "dtype", "")) != "uint32":
        raise UsageError(f"{name} must be a uint32 array of shape (n, 2, 12), got {shp}")
    return shp[0]


def check_bitmap(bitmap: Any, n: int) -> None:
    shp = _shape(bitmap)
    if shp != (n,) or str(getattr(bitmap, "dtype", "")) not in ("bool", "uint8"):
        raise UsageError(f"bitmap must be a bool or uint8 array of shape ({n},), got {shp}")


# ---- data helpers -------------------------------------------------------------------------------
def random_fr(n: int, rng: np.random.Generator) -> np.ndarray:
    """n uniformly random-looking Fr limb vectors below r (top limb < r's): valid in either form."""
    out = rng.integers(0, 1 << 32, size=(n, 8), dtype=np.uint64).astype(np.uint32)
    out[:, 7] = rng.integers(0, FR_TOP_LIMB, size=n, dtype=np.uint64).astype(np.uint32)
    return out


# ---- CPU backend ------------------------------------------------------------------------------
def _host(x: Any) -> np.ndarray:
    get = getattr(x, "get", None)  # a CuPy array
    return np.asarray(get() if callable(get) else x)


class CpuBackend:
    """The Python-integer reference behind the API (small sizes)."""

    name = "cpu"
    max_log_n = 16

    def _fr_in(self, x: Any, name: str, *, pow2: bool = True) -> list[int]:
        x = _host(x)
        n = check_fr_vector(x, name, pow2=pow2)
        if n > (1 << self.max_log_n):
            raise UsageError(f"the CPU backend handles at most 2^{self.max_log_n} elements, got {n}")
        vals = FR.limbs_to_ints(x, mont=False)
        if any(v >= R_MOD for v in vals):
            raise UsageError(f"{name} holds values >= r (not reduced)")
        return FR.limbs_to_ints(x, mont=True)

    def compute_h(self, a: Any, b: Any, c: Any) -> np.ndarray:
        ai, bi, ci = self._fr_in(a, "a"), self._fr_in(b, "b"), self._fr_in(c, "c")
        if not (len(ai) == len(bi) == len(ci)):
            raise UsageError("a, b and c must have the same length")
        return FR.ints_to_limbs(reference.compute_h(ai, bi, ci), mont=True)

    def ntt(self, values: Any, *, inverse: bool = False) -> np.ndarray:
        return FR.ints_to_limbs(reference.ntt(self._fr_in(values, "values"), inverse=inverse), mont=True)

    def fr_mul(self, a: Any, b: Any) -> np.ndarray:
        ai, bi = self._fr_in(a, "a", pow2=False), self._fr_in(b, "b", pow2=False)
        if len(ai) != len(bi):
            raise UsageError("a and b must have the same length")
        return FR.ints_to_limbs([x * y for x, y in zip(ai, bi, strict=True)], mont=True)

    def to_standard(self, values: Any) -> np.ndarray:
        return FR.ints_to_limbs(self._fr_in(values, "values", pow2=False), mont=False)

    def _points_scalars(self, points: Any, scalars: Any):
        points, scalars = _host(points), _host(scalars)
        n = check_points(points)
        if check_fr_vector(scalars, "scalars", pow2=False) != n:
            raise UsageError("points and scalars must have the same length")
        ints = curve.scalar_ints(scalars)
        if any(s >= R_MOD for s in ints):
            raise UsageError("scalars must be below r (standard form, reduced)")
        return curve.limbs_to_points(points), ints

    def msm(self, points: Any, scalars: Any) -> np.ndarray:
        pts, ints = self._points_scalars(points, scalars)
        return curve.point_to_limbs(reference.msm(pts, ints))

    def batch_add(self, points: Any, bitmap: Any) -> np.ndarray:
        points, bitmap = _host(points), _host(bitmap)
        n = check_points(points)
        check_bitmap(bitmap, n)
        return curve.point_to_limbs(reference.batch_add(curve.limbs_to_points(points), [bool(b) for b in bitmap]))

    def tail_msm(self, points: Any, scalars: Any, bitmap: Any) -> np.ndarray:
        pts, ints = self._points_scalars(points, scalars)
        bitmap = _host(bitmap)
        check_bitmap(bitmap, len(pts))
        return curve.point_to_limbs(reference.tail_msm(pts, ints, [bool(b) for b in bitmap]))

    def generate_points(self, n: int, seed: int) -> np.ndarray:
        if n < 1:
            raise UsageError(f"number of points must be >= 1, got {n}")
        return curve.points_to_limbs(reference.generate_points(n, seed))

    def synchronize(self) -> None:
        return None


# ---- selection --------------------------------------------------------------------------------
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


def compute_h(a: Any, b: Any, c: Any, *, backend: Backend | str | None = None) -> Any:
    """h (Montgomery (n, 8)) with a*b - c = h*Z, a, b, c Montgomery evaluations on the domain."""
    return _pick(backend).compute_h(a, b, c)


def msm(points: Any, scalars: Any, *, backend: Backend | str | None = None) -> np.ndarray:
    """sum_i scalars[i] * points[i]; scalars standard form (n, 8) below r."""
    return _pick(backend).msm(points, scalars)


def batch_add(points: Any, bitmap: Any, *, backend: Backend | str | None = None) -> np.ndarray:
    """Sum of the points whose bitmap entry is set (bool/uint8 (n,))."""
    return _pick(backend).batch_add(points, bitmap)


def tail_msm(points: Any, scalars: Any, bitmap: Any, *, backend: Backend | str | None = None) -> np.ndarray:
    """MSM over the points whose bitmap entry is clear."""
    return _pick(backend).tail_msm(points, scalars, bitmap)


def generate_points(n: int, seed: int, *, backend: Backend | str | None = None) -> Any:
    """n points P_i = k_i*G, k_i from splitmix64(seed) (curve.point_scalars); same on both backends."""
    return _pick(backend).generate_points(n, seed)

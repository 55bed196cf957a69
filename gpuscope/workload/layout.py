"""The array layouts of the workload's data, shared by both backends: input checks, host copies
and random valid field data.

Fr vectors are uint32 (n, 8) little-endian limbs (Montgomery form for field data, standard form
for MSM scalars); G1 points are uint32 (n, 2, 12) affine limbs; a bitmap is bool/uint8 (n,).
"""

from __future__ import annotations

from typing import Any, TypeAlias

import numpy as np

from gpuscope.errors import UsageError
from gpuscope.workload.field import R_MOD

FR_TOP_LIMB = R_MOD >> 224  # a limb vector whose top limb is below this is < r

#: A vector, point set or bitmap as the backends take and give it: a numpy array, or a
#: cupy.ndarray on the GPU backend (named, not imported: typing must not need CuPy).
Array: TypeAlias = Any


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


def to_host(x: Any) -> np.ndarray:
    """A numpy array of `x`: a CuPy array is copied down (`.get()`), anything else wrapped."""
    get = getattr(x, "get", None)
    return np.asarray(get() if callable(get) else x)


def random_fr(n: int, rng: np.random.Generator) -> np.ndarray:
    """n uniformly random-looking Fr limb vectors below r (top limb < r's): valid in either form."""
    out = rng.integers(0, 1 << 32, size=(n, 8), dtype=np.uint64).astype(np.uint32)
    out[:, 7] = rng.integers(0, FR_TOP_LIMB, size=n, dtype=np.uint64).astype(np.uint32)
    return out

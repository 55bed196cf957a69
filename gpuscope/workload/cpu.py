"""The CPU backend: the Python-integer reference (gpuscope.workload.reference) behind the
workload API. numpy in, numpy out; meant for n <= 2^14 (H of 2^10 takes ~0.05 s, an MSM of
2^10 ~0.2 s with py-arkworks). Inputs are checked as the GPU backend checks them (layout.py).
"""

from __future__ import annotations

import numpy as np

from gpuscope.errors import UsageError
from gpuscope.workload import curve, reference
from gpuscope.workload.field import FR, R_MOD
from gpuscope.workload.layout import Array, check_bitmap, check_fr_vector, check_points, to_host


class CpuBackend:
    """The Python-integer reference behind the API (small sizes)."""

    name = "cpu"
    max_log_n = 16

    def _fr_in(self, x: Array, name: str, *, pow2: bool = True) -> list[int]:
        x = to_host(x)
        n = check_fr_vector(x, name, pow2=pow2)
        if n > (1 << self.max_log_n):
            raise UsageError(f"the CPU backend handles at most 2^{self.max_log_n} elements, got {n}")
        vals = FR.limbs_to_ints(x, mont=False)
        if any(v >= R_MOD for v in vals):
            raise UsageError(f"{name} holds values >= r (not reduced)")
        return FR.limbs_to_ints(x, mont=True)

    def compute_h(self, a: Array, b: Array, c: Array) -> np.ndarray:
        ai, bi, ci = self._fr_in(a, "a"), self._fr_in(b, "b"), self._fr_in(c, "c")
        if not (len(ai) == len(bi) == len(ci)):
            raise UsageError("a, b and c must have the same length")
        return FR.ints_to_limbs(reference.compute_h(ai, bi, ci), mont=True)

    def ntt(self, values: Array, *, inverse: bool = False) -> np.ndarray:
        return FR.ints_to_limbs(reference.ntt(self._fr_in(values, "values"), inverse=inverse), mont=True)

    def fr_mul(self, a: Array, b: Array) -> np.ndarray:
        ai, bi = self._fr_in(a, "a", pow2=False), self._fr_in(b, "b", pow2=False)
        if len(ai) != len(bi):
            raise UsageError("a and b must have the same length")
        return FR.ints_to_limbs([x * y for x, y in zip(ai, bi, strict=True)], mont=True)

    def to_standard(self, values: Array) -> np.ndarray:
        return FR.ints_to_limbs(self._fr_in(values, "values", pow2=False), mont=False)

    def _points_scalars(self, points: Array, scalars: Array):
        points, scalars = to_host(points), to_host(scalars)
        n = check_points(points)
        if check_fr_vector(scalars, "scalars", pow2=False) != n:
            raise UsageError("points and scalars must have the same length")
        ints = curve.scalar_ints(scalars)
        if any(s >= R_MOD for s in ints):
            raise UsageError("scalars must be below r (standard form, reduced)")
        return curve.limbs_to_points(points), ints

    def msm(self, points: Array, scalars: Array) -> np.ndarray:
        pts, ints = self._points_scalars(points, scalars)
        return curve.point_to_limbs(reference.msm(pts, ints))

    def batch_add(self, points: Array, bitmap: Array) -> np.ndarray:
        points, bitmap = to_host(points), to_host(bitmap)
        n = check_points(points)
        check_bitmap(bitmap, n)
        return curve.point_to_limbs(reference.batch_add(curve.limbs_to_points(points), [bool(b) for b in bitmap]))

    def tail_msm(self, points: Array, scalars: Array, bitmap: Array) -> np.ndarray:
        pts, ints = self._points_scalars(points, scalars)
        bitmap = to_host(bitmap)
        check_bitmap(bitmap, len(pts))
        return curve.point_to_limbs(reference.tail_msm(pts, ints, [bool(b) for b in bitmap]))

    def generate_points(self, n: int, seed: int) -> np.ndarray:
        if n < 1:
            raise UsageError(f"number of points must be >= 1, got {n}")
        return curve.points_to_limbs(reference.generate_points(n, seed))

    def synchronize(self) -> None:
        return None

"""Cheap checks of the workload's results that a run can afford on every partition.

- check_h: h against a, b, c at a random point z: A(z)B(z) - C(z) == h(z)(z^n - 1), where
  A = iNTT(a) etc. are recomputed (3 NTTs), and A(w^k) == a[k] at a random k ties the
  coefficients back to the inputs. A wrong h passes with probability about 2n/r.
- check_point: the result is on the curve and in the prime-order subgroup (Python ints).
- check_msm / check_batch_add: the result point checks plus the same computation on a random
  subset of the inputs, compared with the CPU reference (py-arkworks). The subset MSM is a
  different problem from the full one, so this spot-checks the kernels, it does not prove the
  full result.

Every function returns a CheckResult; `require` turns a failure into VerificationError.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from gpuscope import cuda
from gpuscope.errors import VerificationError
from gpuscope.workload import curve, reference
from gpuscope.workload.field import FR, R_MOD, root_of_unity
from gpuscope.workload.layout import Array, to_host

if TYPE_CHECKING:
    from gpuscope.workload.backends import Backend


@dataclass
class CheckResult:
    name: str
    ok: bool
    checks: dict[str, bool] = field(default_factory=dict)
    elapsed_ms: float = 0.0

    def failed(self) -> list[str]:
        return [k for k, v in self.checks.items() if not v]


def require(result: CheckResult) -> CheckResult:
    if not result.ok:
        raise VerificationError(f"self-check {result.name} failed: {', '.join(result.failed())}")
    return result


def _eval(backend: Backend, coeffs: Array, z: int) -> int:
    if hasattr(backend, "eval_poly"):
        return backend.eval_poly(coeffs, z)
    return reference.poly_eval(FR.limbs_to_ints(to_host(coeffs), mont=True), z)


def _fr_at(x: Array, k: int) -> int:
    return FR.limbs_to_ints(to_host(x[k : k + 1]), mont=True)[0]


def check_h(backend: Backend, a: Array, b: Array, c: Array, h: Array, rng: np.random.Generator) -> CheckResult:
    t0 = time.perf_counter()
    n = a.shape[0]
    A = backend.ntt(a, inverse=True)
    B = backend.ntt(b, inverse=True)
    C = backend.ntt(c, inverse=True)
    z = int(rng.integers(1, 2**63)) * int(rng.integers(1, 2**63)) % R_MOD
    lhs = (_eval(backend, A, z) * _eval(backend, B, z) - _eval(backend, C, z)) % R_MOD
    rhs = _eval(backend, h, z) * (pow(z, n, R_MOD) - 1) % R_MOD
    k = int(rng.integers(0, n))
    wk = pow(root_of_unity(n.bit_length() - 1), k, R_MOD)
    checks = {
        "h_identity_at_random_point": lhs == rhs,
        "coefficients_match_inputs": _eval(backend, A, wk) == _fr_at(a, k) and _eval(backend, C, wk) == _fr_at(c, k),
    }
    return CheckResult("h", all(checks.values()), checks, (time.perf_counter() - t0) * 1e3)


def check_point(pt_limbs: Array) -> dict[str, bool]:
    pt = curve.limbs_to_point(to_host(pt_limbs))
    on = curve.is_on_curve(pt)
    return {"on_curve": on, "in_subgroup": on and curve.in_subgroup(pt)}


def _subset(n: int, sample: int, rng: np.random.Generator) -> np.ndarray:
    return np.sort(rng.choice(n, size=min(sample, n), replace=False))


def check_msm(
    backend: Backend, points: Array, scalars: Array, result: Array, rng: np.random.Generator, *, sample: int = 1024
) -> CheckResult:
    t0 = time.perf_counter()
    checks = check_point(result)
    idx = _subset(points.shape[0], sample, rng)
    sub_p, sub_s = _take(points, idx), _take(scalars, idx)
    got = curve.limbs_to_point(backend.msm(sub_p, sub_s))
    want = reference.msm(curve.limbs_to_points(sub_p), FR.limbs_to_ints(sub_s, mont=False))
    checks["sub_msm_matches_reference"] = got == want
    return CheckResult("msm", all(checks.values()), checks, (time.perf_counter() - t0) * 1e3)


def check_batch_add(
    backend: Backend, points: Array, bitmap: Array, result: Array, rng: np.random.Generator, *, sample: int = 1024
) -> CheckResult:
    t0 = time.perf_counter()
    checks = check_point(result)
    idx = _subset(points.shape[0], sample, rng)
    sub_p, sub_b = _take(points, idx), _take(bitmap, idx)
    got = curve.limbs_to_point(backend.batch_add(sub_p, sub_b))
    want = reference.batch_add(curve.limbs_to_points(sub_p), [bool(v) for v in sub_b])
    checks["sub_batch_add_matches_reference"] = got == want
    return CheckResult("batch_add", all(checks.values()), checks, (time.perf_counter() - t0) * 1e3)


def _take(arr: Array, idx: np.ndarray) -> np.ndarray:
    """arr[idx] as a host array (CuPy arrays are indexed on the device, then copied)."""
    if isinstance(arr, np.ndarray):
        return arr[idx]
    cupy = cuda.require("a self-check of device arrays")
    return cupy.asnumpy(arr[cupy.asarray(idx)])

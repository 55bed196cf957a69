"""`gpuscope run --verify`: check every partition's results by a route the kernels do not take.

- a*b = c on the domain (synthesis), with Python integers on a sample of rows;
- H: Schwartz-Zippel at a random tau: A(tau)*B(tau) - C(tau) == H(tau)*(tau^n - 1), with A, B, C
  evaluated from their values on the domain by the barycentric Lagrange formula and H from
  its coefficients (Python integers; no NTT involved) up to `H_CHECK_MAX_LOG_N`; above it,
  the kernels' self-check (selfcheck.check_h: the same identity with A, B, C recomputed by
  inverse NTTs and evaluated on the GPU, tied back to the inputs at a random domain point).
- MSMs: the SRS points are P_i = k_i*G with known k_i (curve.point_scalars), so
  sum_i s_i*P_i == (sum_i s_i*k_i mod r)*G. The scalar sum uses Python integers for small
  sizes; for large sizes it is computed on the GPU with the backend's Fr multiplication and
  exact limb sums (every product counted), so no MSM/bucket code is shared with the check.

A mismatch raises VerificationError (exit 1) naming the partition and what differed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from gpuscope import cuda
from gpuscope.errors import VerificationError
from gpuscope.workload import curve, selfcheck
from gpuscope.workload.field import FR, R_MOD, root_of_unity
from gpuscope.workload.layout import Array, to_host
from gpuscope.workload.synth import check_abc

if TYPE_CHECKING:
    from gpuscope.workload.backends import Backend
    from gpuscope.workload.synth import Partition

H_CHECK_MAX_LOG_N = 16  # Python-integer H check above this would take seconds per partition
PY_DOT_MAX_LOG_N = 16  # Python-integer scalar dot products up to here, GPU limb sums above
ABC_SAMPLE = 4096


def lagrange_eval(values: list[int], tau: int, log_n: int) -> int:
    """P(tau) for the polynomial of degree < n with P(w^i) = values[i] (w = root_of_unity(log_n))."""
    n = 1 << log_n
    r = R_MOD
    w = root_of_unity(log_n)
    zt = (pow(tau, n, r) - 1) % r
    if zt == 0:
        raise ValueError("tau lies on the domain")
    # weights w^i / (tau - w^i), one batch inversion
    dens = []
    wi = 1
    wis = []
    for _ in range(n):
        wis.append(wi)
        dens.append((tau - wi) % r)
        wi = wi * w % r
    prefix = [1] * (n + 1)
    for i, d in enumerate(dens):
        prefix[i + 1] = prefix[i] * d % r
    inv = pow(prefix[n], -1, r)
    acc = 0
    for i in range(n - 1, -1, -1):
        inv_i = inv * prefix[i] % r
        inv = inv * dens[i] % r
        acc = (acc + values[i] * wis[i] % r * inv_i) % r
    return acc * zt % r * pow(n, -1, r) % r


def poly_eval(coeffs: list[int], x: int) -> int:
    acc = 0
    for c in reversed(coeffs):
        acc = (acc * x + c) % R_MOD
    return acc


def check_h(a: np.ndarray, b: np.ndarray, c: np.ndarray, h: np.ndarray, log_n: int,
            rng: np.random.Generator) -> bool:
    """Schwartz-Zippel check of H (all Montgomery-form limb arrays on the host)."""
    ai, bi, ci = (FR.limbs_to_ints(x, mont=True) for x in (a, b, c))
    hi = FR.limbs_to_ints(h, mont=True)
    n = 1 << log_n
    tau = int.from_bytes(rng.bytes(32), "little") % R_MOD
    while (pow(tau, n, R_MOD) - 1) % R_MOD == 0:
        tau = (tau + 1) % R_MOD
    lhs = (lagrange_eval(ai, tau, log_n) * lagrange_eval(bi, tau, log_n)
           - lagrange_eval(ci, tau, log_n)) % R_MOD
    rhs = poly_eval(hi, tau) * (pow(tau, n, R_MOD) - 1) % R_MOD
    return lhs == rhs


def k_limbs(seed: int, count: int) -> np.ndarray:
    """The k_i of curve.point_scalars(seed, 0, count) as (count, 8) uint32 standard-form limbs."""
    idx = np.arange(count, dtype=np.uint64)
    words = [curve.splitmix64(seed, idx * np.uint64(4) + np.uint64(j)) for j in range(4)]
    w = np.stack(words, axis=1)  # (count, 4) uint64, little-endian 64-bit words
    w[:, 3] &= np.uint64((1 << 62) - 1)  # keep 254 bits
    zero = ~w.any(axis=1)
    w[zero, 0] = 1
    return np.ascontiguousarray(w).view(np.uint32).reshape(count, 8)


class Verifier:
    """Per-run state of the checks (cached k_i); `check()` is called once per partition."""

    def __init__(self, backend: Backend | dict[int, Backend], *, log_n: int, m: int, h_seed: int, w_seed: int,
                 seed: int = 0):
        self.backends = backend if isinstance(backend, dict) else None
        self.backend = backend if not isinstance(backend, dict) else next(iter(backend.values()))
        self.log_n = log_n
        self.n = 1 << log_n
        self.m = m
        self.h_seed = h_seed
        self.w_seed = w_seed
        self.seed = seed
        self.py_dots = self.n <= (1 << PY_DOT_MAX_LOG_N) and m <= (1 << PY_DOT_MAX_LOG_N)
        self.h_by_python = log_n <= H_CHECK_MAX_LOG_N
        self._k_py: dict[int, list[int]] = {}
        self._k_dev: dict[tuple[int, int], Array] = {}
        self.checked = 0

    def _be(self, device_index: int):
        return self.backends[device_index] if self.backends else self.backend

    def describe(self) -> str:
        parts = ["a*b=c (sampled rows)"]
        parts.append("H by Schwartz-Zippel (Python integers)" if self.h_by_python
                     else "H by the kernels' self-check (iNTT + evaluation on the GPU)")
        parts.append("MSMs by the k_i*G identity" + ("" if self.py_dots else " (GPU limb sums)"))
        return ", ".join(parts)

    # -- scalar dot products sum_i s_i*k_i mod r ---------------------------------------
    def _k_ints(self, seed: int, count: int) -> list[int]:
        if seed not in self._k_py:
            self._k_py[seed] = curve.point_scalars(seed, 0, count)
        return self._k_py[seed]

    def _dot_py(self, scalars: np.ndarray, seed: int, select: np.ndarray | None) -> int:
        ks = self._k_ints(seed, len(scalars))
        ss = FR.limbs_to_ints(scalars, mont=False)
        if select is None:
            return sum(s * k for s, k in zip(ss, ks, strict=True)) % R_MOD
        return sum(s * k for s, k, keep in zip(ss, ks, select, strict=True) if keep) % R_MOD

    def _dot_gpu(self, scalars: Array, seed: int, select: Array | None, device_index: int) -> int:
        cp = cuda.require("verifying on the GPU")
        key = (seed, device_index)
        if key not in self._k_dev:
            self._k_dev[key] = cp.asarray(k_limbs(seed, scalars.shape[0]))
        s = cp.asarray(scalars)
        if select is not None:
            s = s * cp.asarray(select, dtype=cp.uint32)[:, None]
        prod = self._be(device_index).fr_mul(s, self._k_dev[key])  # s*k*R^-1 per element
        sums = cp.asarray(prod).astype(cp.uint64).sum(axis=0).get()  # exact: n < 2^32
        total = sum(int(v) << (32 * j) for j, v in enumerate(sums))
        return total * FR.R % R_MOD

    def _dot(self, scalars: Array, seed: int, select: Array | None, device_index: int) -> int:
        if self.py_dots:
            sel = None if select is None else to_host(select).astype(bool)
            return self._dot_py(to_host(scalars), seed, sel)
        return self._dot_gpu(scalars, seed, select, device_index)

    # -- one partition -----------------------------------------------------------------
    def check(self, part: Partition, *, h: Array, h_scalars: Array, h_msm: np.ndarray, ones: np.ndarray,
              batch: np.ndarray, tail: np.ndarray, device_index: int = 0) -> None:
        problems = []
        rng = np.random.default_rng([self.seed, part.index, 7])
        bad = check_abc(part.a, part.b, part.c, sample=ABC_SAMPLE, rng=rng)
        if bad:
            problems.append(f"{bad} sampled rows with a*b != c")
        if self.h_by_python:
            if not check_h(part.a, part.b, part.c, to_host(h), self.log_n, rng):
                problems.append("H fails A(t)B(t)-C(t) = H(t)Z(t) at a random t")
        else:
            res = selfcheck.check_h(self._be(device_index), part.a, part.b, part.c, h, rng)
            if not res.ok:
                problems.append(f"H self-check failed ({', '.join(res.failed())})")
        g = curve.G1_GEN
        want_h = curve.mul(g, self._dot(h_scalars, self.h_seed, None, device_index))
        if curve.limbs_to_point(to_host(h_msm)) != want_h:
            problems.append("H MSM differs from (sum h_i k_i)*G")
        ones_h = to_host(ones).astype(bool)
        s_w = part.scalars
        want_b = curve.mul(g, sum(k for k, o in zip(self._k_ints(self.w_seed, self.m), ones_h,
                                                      strict=True) if o) % R_MOD) \
            if self.py_dots else curve.mul(g, self._dot(s_w, self.w_seed, ones_h, device_index))
        if curve.limbs_to_point(to_host(batch)) != want_b:
            problems.append("batch_add differs from (sum of k_i over scalar-1 rows)*G")
        want_t = curve.mul(g, self._dot(s_w, self.w_seed, ~ones_h, device_index))
        if curve.limbs_to_point(to_host(tail)) != want_t:
            problems.append("tail MSM differs from (sum s_i k_i over the other rows)*G")
        if problems:
            raise VerificationError(f"partition {part.index} failed verification: "
                                    + "; ".join(problems))
        self.checked += 1

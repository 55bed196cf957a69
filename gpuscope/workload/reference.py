"""CPU reference for the workload: Fr NTTs and H in Python integers, G1 MSM via py-arkworks.

Values are Python ints in standard form (0 <= v < r). Sizes are powers of two; this is meant
for n <= 2^14 or so (an NTT of 2^14 takes ~0.2 s). The GPU kernels must match these bit for bit.

H is composed exactly as the production prover (bellperson / supraseal) does:

    A = iNTT(a); B = iNTT(b); C = iNTT(c)                 (coefficients)
    A', B', C' = coset_NTT(A), coset_NTT(B), coset_NTT(C)  (evaluations on g*<w>, g = 7)
    H' = (A' * B' - C') / (g^n - 1)                        (Z(x) = x^n - 1 is constant on the coset)
    h  = coset_iNTT(H')
"""

from __future__ import annotations

from gpuscope.workload import curve
from gpuscope.workload.field import FR_GENERATOR, R_MOD, root_of_unity

r = R_MOD


def log2_exact(n: int) -> int:
    if n < 1 or n & (n - 1):
        raise ValueError(f"size must be a power of two, got {n}")
    return n.bit_length() - 1


def bit_reverse(values: list[int]) -> list[int]:
    n = len(values)
    k = log2_exact(n)
    out = [0] * n
    for i, v in enumerate(values):
        out[int(format(i, f"0{k}b")[::-1], 2) if k else 0] = v
    return out


def ntt(values: list[int], *, inverse: bool = False) -> list[int]:
    """Natural order in, natural order out: X[k] = sum_i x[i] w^(ik) (w^-1 and /n when inverse)."""
    n = len(values)
    k = log2_exact(n)
    a = bit_reverse([v % r for v in values])
    for s in range(k):
        h = 1 << s
        w_m = root_of_unity(s + 1)
        if inverse:
            w_m = pow(w_m, -1, r)
        tw = [1] * h
        for j in range(1, h):
            tw[j] = tw[j - 1] * w_m % r
        for start in range(0, n, 2 * h):
            for j in range(h):
                u = a[start + j]
                v = a[start + j + h] * tw[j] % r
                a[start + j] = (u + v) % r
                a[start + j + h] = (u - v) % r
    if inverse:
        n_inv = pow(n, -1, r)
        a = [v * n_inv % r for v in a]
    return a


def intt(values: list[int]) -> list[int]:
    return ntt(values, inverse=True)


def coset_ntt(coeffs: list[int], shift: int = FR_GENERATOR) -> list[int]:
    """Evaluations of the polynomial on shift * <w>."""
    g = 1
    scaled = []
    for c in coeffs:
        scaled.append(c * g % r)
        g = g * shift % r
    return ntt(scaled)


def coset_intt(evals: list[int], shift: int = FR_GENERATOR) -> list[int]:
    coeffs = intt(evals)
    g_inv = pow(shift, -1, r)
    g = 1
    out = []
    for c in coeffs:
        out.append(c * g % r)
        g = g * g_inv % r
    return out


def compute_h(a: list[int], b: list[int], c: list[int]) -> list[int]:
    """The H polynomial's coefficients (length n) from the evaluations a, b, c on <w>."""
    n = len(a)
    if not (len(b) == len(c) == n):
        raise ValueError("a, b and c must have the same length")
    A = coset_ntt(intt(a))
    B = coset_ntt(intt(b))
    C = coset_ntt(intt(c))
    z_inv = pow((pow(FR_GENERATOR, n, r) - 1) % r, -1, r)
    Hc = [(x * y - z) * z_inv % r for x, y, z in zip(A, B, C, strict=True)]
    return coset_intt(Hc)


def poly_eval(coeffs: list[int], x: int) -> int:
    acc = 0
    for c in reversed(coeffs):
        acc = (acc * x + c) % r
    return acc


# ---- G1 ----------------------------------------------------------------------------------------
def generate_points(n: int, seed: int, start: int = 0) -> list[curve.Point]:
    """P_i = k_i * G for the deterministic k_i of `curve.point_scalars` (arkworks when present)."""
    ks = curve.point_scalars(seed, start, n)
    ark = curve.arkworks()
    if ark is None:
        return [curve.mul(curve.G1_GEN, k) for k in ks]
    g = ark.G1Point()
    return [curve.from_ark(g * ark.Scalar(k)) for k in ks]


def msm(points: list[curve.Point], scalars: list[int]) -> curve.Point:
    """sum_i scalars[i] * points[i] (py-arkworks multiexp when installed, else Python ints)."""
    if len(points) != len(scalars):
        raise ValueError("points and scalars must have the same length")
    ark = curve.arkworks()
    if ark is None:
        return curve.sum_points(curve.mul(p, s % r) for p, s in zip(points, scalars, strict=True))
    res = ark.G1Point.multiexp_unchecked(
        [curve.to_ark(p) for p in points], [ark.Scalar(s % r) for s in scalars]
    )
    return curve.from_ark(res)


def batch_add(points: list[curve.Point], bits: list[bool]) -> curve.Point:
    """The sum of the points whose bit is set (the scalar-1 points of a Groth16 witness)."""
    if len(points) != len(bits):
        raise ValueError("points and bitmap must have the same length")
    ark = curve.arkworks()
    chosen = [p for p, b in zip(points, bits, strict=True) if b]
    if ark is None:
        return curve.sum_points(chosen)
    acc = ark.G1Point.identity()
    for p in chosen:
        acc = acc + curve.to_ark(p)
    return curve.from_ark(acc)


def tail_msm(points: list[curve.Point], scalars: list[int], bits: list[bool]) -> curve.Point:
    """The MSM over the points whose bit is clear (the others are batch_add's)."""
    keep = [i for i, b in enumerate(bits) if not b]
    return msm([points[i] for i in keep], [scalars[i] for i in keep])

"""BLS12-381 G1 in Python integers: y^2 = x^3 + 4 over Fq, the prime-order subgroup of order r.

Point layouts shared with the CUDA kernels (gpuscope/workload/cuda/curve.cuh):

- an affine point is (x, y), each 12 uint32 limbs in Montgomery form: a point set is a uint32
  array of shape (n, 2, 12); the point at infinity is all-zero limbs ((0, 0) is not on the curve);
- in Python a point is a tuple (x, y) of ints in standard form, or None for infinity.

Also here: the deterministic scalars k_i behind generated point sets (P_i = k_i * G), the same
splitmix64 stream the GPU generator uses, and conversions to py-arkworks-bls12381 points.
Slow by design (Python ints): for references and checks at small sizes.
"""

from __future__ import annotations

import numpy as np

from gpuscope.workload.field import FQ, FR, R_MOD

P = FQ.p
B = 4
G1_X = 0x17F1D3A73197D7942695638C4FA9AC0FC3688C4F9774B905A14E3A3F171BAC586C55E83FF97A1AEFFB3AF00ADB22C6BB
G1_Y = 0x08B3F481E3AAA0F1A09E30ED741D8AE4FCF5E095D5D00AF600DB18CB2C04B3EDD03CC744A2888AE40CAA232946C5E7E1
G1_GEN = (G1_X, G1_Y)

Point = tuple[int, int] | None


def is_on_curve(pt: Point) -> bool:
    if pt is None:
        return True
    x, y = pt
    if not (0 <= x < P and 0 <= y < P):
        return False
    return (y * y - x * x * x - B) % P == 0


def neg(pt: Point) -> Point:
    return None if pt is None else (pt[0], (-pt[1]) % P)


# ---- Jacobian arithmetic (X, Y, Z), x = X/Z^2, y = Y/Z^3; Z == 0 is infinity ------------------
def _to_jac(pt: Point) -> tuple[int, int, int]:
    return (1, 1, 0) if pt is None else (pt[0], pt[1], 1)


def _from_jac(j: tuple[int, int, int]) -> Point:
    X, Y, Z = j
    if Z % P == 0:
        return None
    zi = pow(Z, -1, P)
    zi2 = zi * zi % P
    return (X * zi2 % P, Y * zi2 * zi % P)


def _jdbl(j):
    X, Y, Z = j
    if Z == 0 or Y == 0:
        return (1, 1, 0)
    A = X * X % P
    Bv = Y * Y % P
    C = Bv * Bv % P
    D = 2 * ((X + Bv) * (X + Bv) - A - C) % P
    E = 3 * A % P
    X3 = (E * E - 2 * D) % P
    Y3 = (E * (D - X3) - 8 * C) % P
    Z3 = 2 * Y * Z % P
    return (X3, Y3, Z3)


def _jadd(j1, j2):
    X1, Y1, Z1 = j1
    X2, Y2, Z2 = j2
    if Z1 == 0:
        return j2
    if Z2 == 0:
        return j1
    Z1Z1 = Z1 * Z1 % P
    Z2Z2 = Z2 * Z2 % P
    U1 = X1 * Z2Z2 % P
    U2 = X2 * Z1Z1 % P
    S1 = Y1 * Z2 * Z2Z2 % P
    S2 = Y2 * Z1 * Z1Z1 % P
    H = (U2 - U1) % P
    Rr = (S2 - S1) % P
    if H == 0:
        return _jdbl(j1) if Rr == 0 else (1, 1, 0)
    HH = H * H % P
    HHH = H * HH % P
    V = U1 * HH % P
    X3 = (Rr * Rr - HHH - 2 * V) % P
    Y3 = (Rr * (V - X3) - S1 * HHH) % P
    Z3 = Z1 * Z2 * H % P
    return (X3, Y3, Z3)


def add(p1: Point, p2: Point) -> Point:
    return _from_jac(_jadd(_to_jac(p1), _to_jac(p2)))


def mul(pt: Point, k: int) -> Point:
    """k * pt by double-and-add (k any integer; negative k negates)."""
    if k < 0:
        return mul(neg(pt), -k)
    acc = (1, 1, 0)
    base = _to_jac(pt)
    for bit in bin(k)[2:] if k else "":
        acc = _jdbl(acc)
        if bit == "1":
            acc = _jadd(acc, base)
    return _from_jac(acc)


def sum_points(points) -> Point:
    acc = (1, 1, 0)
    for pt in points:
        acc = _jadd(acc, _to_jac(pt))
    return _from_jac(acc)


def in_subgroup(pt: Point) -> bool:
    """r * pt == infinity (the slow, obviously-right check)."""
    return is_on_curve(pt) and mul(pt, R_MOD) is None


# ---- limb arrays <-> Python points -------------------------------------------------------------
def points_to_limbs(points) -> np.ndarray:
    """Python points -> uint32 (n, 2, 12), Montgomery form, infinity = zeros."""
    pts = list(points)
    out = np.zeros((len(pts), 2, 12), dtype=np.uint32)
    for i, pt in enumerate(pts):
        if pt is not None:
            out[i] = FQ.ints_to_limbs([pt[0], pt[1]], mont=True)
    return out


def limbs_to_points(arr) -> list[Point]:
    a = np.asarray(arr, dtype=np.uint32).reshape(-1, 2, 12)
    coords = FQ.limbs_to_ints(a.reshape(-1, 12), mont=True)
    zero = np.logical_not(a.reshape(len(a), -1).any(axis=1))
    return [None if zero[i] else (coords[2 * i], coords[2 * i + 1]) for i in range(len(a))]


def point_to_limbs(pt: Point) -> np.ndarray:
    return points_to_limbs([pt])[0]


def limbs_to_point(arr) -> Point:
    return limbs_to_points(np.asarray(arr).reshape(1, 2, 12))[0]


# ---- deterministic scalars of generated point sets -------------------------------------------
_M64 = (1 << 64) - 1
_GOLDEN = 0x9E3779B97F4A7C15


def splitmix64(seed: int, ctr: np.ndarray) -> np.ndarray:
    """splitmix64 output number ctr+1 of the stream started at `seed` (vectorised, uint64)."""
    with np.errstate(over="ignore"):
        z = np.uint64(seed & _M64) + (ctr.astype(np.uint64) + np.uint64(1)) * np.uint64(_GOLDEN)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def point_scalars(seed: int, start: int, count: int) -> list[int]:
    """k_i for i in [start, start+count): 254 random bits from splitmix64 words 4i..4i+3, 0 -> 1.

    The GPU generator (gen_points in msm.cu) computes the same k_i, so P_i = k_i * G match.
    """
    idx = np.arange(start, start + count, dtype=np.uint64)
    words = [splitmix64(seed, idx * np.uint64(4) + np.uint64(j)) for j in range(4)]
    mask = (1 << 254) - 1
    out = []
    for i in range(count):
        k = (
            int(words[0][i])
            | (int(words[1][i]) << 64)
            | (int(words[2][i]) << 128)
            | (int(words[3][i]) << 192)
        ) & mask
        out.append(k or 1)
    return out


# ---- py-arkworks-bls12381 bridge ---------------------------------------------------------------
def arkworks():
    """The py_arkworks_bls12381 module, or None when it is not installed."""
    try:
        import py_arkworks_bls12381 as ark
    except ImportError:
        return None
    return ark


def to_ark(pt: Point):
    ark = arkworks()
    if pt is None:
        return ark.G1Point.identity()
    return ark.G1Point.from_xy_bytes_unchecked_le(pt[0].to_bytes(48, "little") + pt[1].to_bytes(48, "little"))


def from_ark(g) -> Point:
    raw = g.to_xy_bytes_le()
    x = int.from_bytes(raw[:48], "little")
    y = int.from_bytes(raw[48:], "little")
    if x == 0 and y == 0:
        return None
    return (x, y)


def scalar_ints(scalars) -> list[int]:
    """Scalars as uint32 (n, 8) limbs in standard form -> ints (not reduced)."""
    return FR.limbs_to_ints(scalars, mont=False)

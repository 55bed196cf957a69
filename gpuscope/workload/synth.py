"""Synthesis of one partition: a, b, c on the domain (a*b = c elementwise) and a witness.

Models the CPU side of a Groth16 prover. Field elements are BLS12-381 scalars (Fr), eight
little-endian u32 limbs each. a/b/c are in Montgomery form (x*R mod r, R = 2^256), as the
GPU NTT consumes them; the witness scalars are in standard form, as the MSM consumes them.

Like real circuits, most constraints are cheap: b is 0 or 1 for most rows, so c is 0 or a
copy of a; a configurable share of rows (`general_share`) are general products, computed
with a vectorised numpy Montgomery multiplication (CIOS, 32-bit limbs in uint64 lanes).
The witness is largely 0/1 (`bool_share`), the rest uniform field elements.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

import numpy as np

from gpuscope.errors import UsageError
from gpuscope.workload.hostmem import HostBlock, HostMemory

# BLS12-381 scalar field
R_MODULUS = 0x73EDA753299D7D483339D80809A1D80553BDA402FFFE5BFEFFFFFFFF00000001
LIMBS = 8
MONT_R = (1 << 256) % R_MODULUS  # Montgomery form of 1
_M32 = 0xFFFFFFFF
N_PRIME = (-pow(R_MODULUS, -1, 1 << 32)) % (1 << 32)  # -r^-1 mod 2^32
TOP_LIMB = R_MODULUS >> 224  # values whose top limb is below this are < r

_R_LIMBS = np.array([(R_MODULUS >> (32 * i)) & _M32 for i in range(LIMBS)], dtype=np.uint64)
_MONT_ONE_LIMBS = np.array([(MONT_R >> (32 * i)) & _M32 for i in range(LIMBS)], dtype=np.uint32)


# -- limbs -> Python ints (check_abc) ------------------------------------------------------
def from_limbs(limbs: np.ndarray) -> list[int]:
    """(n, 8) uint32 limbs -> Python ints."""
    raw = np.ascontiguousarray(limbs, dtype="<u4").tobytes()
    return [int.from_bytes(raw[i: i + 32], "little") for i in range(0, len(raw), 32)]


# -- vectorised Montgomery multiplication ------------------------------------------------
def mont_mul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Elementwise a*b*R^-1 mod r for (m, 8) uint32 limb arrays with values < r.

    CIOS with 32-bit limbs held in uint64 lanes: every t + x*y + carry stays below 2^64.
    """
    if a.shape != b.shape or a.ndim != 2 or a.shape[1] != LIMBS:
        raise ValueError(f"mont_mul needs two (m, 8) arrays, got {a.shape} and {b.shape}")
    m = a.shape[0]
    if m == 0:
        return np.empty((0, LIMBS), dtype=np.uint32)
    A = a.T.astype(np.uint64)  # (8, m): row j = limb j of every element
    B = b.T.astype(np.uint64)
    t = np.zeros((LIMBS + 2, m), dtype=np.uint64)
    s = np.empty(m, dtype=np.uint64)
    carry = np.empty(m, dtype=np.uint64)
    mm = np.empty(m, dtype=np.uint64)
    shift = np.uint64(32)
    mask = np.uint64(_M32)
    nprime = np.uint64(N_PRIME)
    for i in range(LIMBS):
        bi = B[i]
        carry.fill(0)
        for j in range(LIMBS):
            np.multiply(A[j], bi, out=s)
            s += t[j]
            s += carry
            np.right_shift(s, shift, out=carry)
            np.bitwise_and(s, mask, out=t[j])
        s[:] = t[LIMBS]
        s += carry
        np.bitwise_and(s, mask, out=t[LIMBS])
        np.right_shift(s, shift, out=t[LIMBS + 1])
        # reduce: add mm*r so that the lowest limb becomes zero, shift down one limb
        np.multiply(t[0], nprime, out=mm)
        mm &= mask
        np.multiply(mm, _R_LIMBS[0], out=s)
        s += t[0]
        np.right_shift(s, shift, out=carry)
        for j in range(1, LIMBS):
            np.multiply(mm, _R_LIMBS[j], out=s)
            s += t[j]
            s += carry
            np.right_shift(s, shift, out=carry)
            np.bitwise_and(s, mask, out=t[j - 1])
        s[:] = t[LIMBS]
        s += carry
        np.bitwise_and(s, mask, out=t[LIMBS - 1])
        np.right_shift(s, shift, out=carry)
        np.add(t[LIMBS + 1], carry, out=t[LIMBS])
    res = t[:LIMBS + 1]  # value < 2r: subtract r once where res >= r
    ge = _geq_r(res)
    if ge.any():
        _sub_r_inplace(res, ge)
    return np.ascontiguousarray(res[:LIMBS].T).astype(np.uint32)


def _geq_r(res: np.ndarray) -> np.ndarray:
    """res: (9, m) uint64 limbs (lowest first). Boolean mask res >= r."""
    ge = res[LIMBS] > 0
    decided = ge.copy()
    for j in range(LIMBS - 1, -1, -1):
        gt = (res[j] > _R_LIMBS[j]) & ~decided
        lt = (res[j] < _R_LIMBS[j]) & ~decided
        ge |= gt
        decided |= gt | lt
    ge |= ~decided  # equal to r
    return ge


def _sub_r_inplace(res: np.ndarray, where: np.ndarray) -> None:
    sub = res[:, where].astype(np.int64)
    borrow = np.zeros(sub.shape[1], dtype=np.int64)
    for j in range(LIMBS):
        d = sub[j] - int(_R_LIMBS[j]) - borrow
        borrow = (d < 0).astype(np.int64)
        sub[j] = d + (borrow << 32)
    sub[LIMBS] -= borrow
    res[:, where] = sub.astype(np.uint64)


# -- random field elements ---------------------------------------------------------------
def random_fr(rng: np.random.Generator, n: int, out: np.ndarray | None = None) -> np.ndarray:
    """n uniform-ish field elements < r as (n, 8) uint32 limbs (top limb reduced mod r's)."""
    if out is None:
        out = np.empty((n, LIMBS), dtype=np.uint32)
    if n:
        out.reshape(-1).view(np.uint64)[:] = rng.bit_generator.random_raw(n * LIMBS // 2)
        np.remainder(out[:, LIMBS - 1], np.uint32(TOP_LIMB), out=out[:, LIMBS - 1])
    return out


# -- one partition -------------------------------------------------------------------------
@dataclass
class SynthConfig:
    log_n: int = 10
    witness_log_n: int | None = None  # default: same as log_n
    general_share: float = 0.02  # rows of a*b=c that are general products
    zero_b_share: float = 0.45  # rows with b = 0 (c = 0); the rest of the cheap rows have b = 1
    bool_share: float = 0.9  # witness scalars that are 0 or 1 (half each)
    seed: int = 1

    @property
    def n(self) -> int:
        return 1 << self.log_n

    @property
    def m(self) -> int:
        return 1 << (self.witness_log_n if self.witness_log_n is not None else self.log_n)

    def validate(self) -> None:
        for name in ("general_share", "zero_b_share", "bool_share"):
            v = getattr(self, name)
            if not 0.0 <= v <= 1.0:
                raise UsageError(f"{name.replace('_', '-')} must be within 0..1, got {v}")
        if self.general_share + self.zero_b_share > 1.0:
            raise UsageError("general-share + zero-b-share must not exceed 1")
        if not 1 <= self.log_n <= 28:
            raise UsageError(f"--log-n must be within 1..28, got {self.log_n}")


@dataclass(eq=False)
class Partition:
    index: int
    block: HostBlock  # arrays: a, b, c ((n, 8) uint32, Montgomery) and the witness scalars
    synth_start: float = 0.0  # gpuscope clock (perf_counter)
    synth_end: float = 0.0
    general_rows: int = 0
    meta: dict = field(default_factory=dict)

    @property
    def a(self) -> np.ndarray:
        return self.block.arrays[0]

    @property
    def b(self) -> np.ndarray:
        return self.block.arrays[1]

    @property
    def c(self) -> np.ndarray:
        return self.block.arrays[2]

    @property
    def scalars(self) -> np.ndarray:
        """The witness: (m, 8) uint32, standard form."""
        return self.block.arrays[3]

    @property
    def abc_bytes(self) -> int:
        return sum(a.nbytes for a in self.block.arrays[:3])

    @property
    def synth_ms(self) -> float:
        return (self.synth_end - self.synth_start) * 1e3


def partition_bytes(cfg: SynthConfig) -> int:
    """Host bytes one synthesized partition holds (a, b, c and the witness)."""
    return 3 * cfg.n * LIMBS * 4 + cfg.m * LIMBS * 4


def synthesize(index: int, cfg: SynthConfig, mem: HostMemory, *,
               stop: threading.Event | None = None) -> Partition:
    """Synthesize partition `index` into host memory of `mem`'s mode. Deterministic per seed."""
    t0 = time.perf_counter()
    rng = np.random.Generator(np.random.PCG64([cfg.seed, index]))
    n, m = cfg.n, cfg.m
    block = mem.new_block([(n, LIMBS)] * 3 + [(m, LIMBS)], np.uint32, stop=stop)
    try:
        a, b, c, scalars = block.arrays
        random_fr(rng, n, out=a)
        # row kinds: b = 0 (c = 0), b = 1 (c = a), or a general product
        u = rng.random(n)
        general = u < cfg.general_share
        one = u >= cfg.general_share + cfg.zero_b_share
        one_col = one.astype(np.uint32)[:, None]
        np.multiply(_MONT_ONE_LIMBS[None, :], one_col, out=b)  # Montgomery 1 where b = 1, else 0
        np.multiply(a, one_col, out=c)  # c = a where b = 1, else 0
        gidx = np.flatnonzero(general)
        if gidx.size:
            bg = random_fr(rng, gidx.size)
            b[gidx] = bg
            c[gidx] = mont_mul(a[gidx], bg)
        witness_scalars(rng, m, cfg.bool_share, out=scalars)
    except BaseException:
        mem.release(block)
        raise
    p = Partition(index=index, block=block, synth_start=t0,
                  synth_end=time.perf_counter(), general_rows=int(gidx.size))
    return p


def witness_scalars(rng: np.random.Generator, m: int, bool_share: float,
                    out: np.ndarray | None = None) -> np.ndarray:
    """m witness scalars in standard form: a `bool_share` of 0/1 (half each), the rest uniform."""
    if out is None:
        out = np.empty((m, LIMBS), dtype=np.uint32)
    u = rng.random(m)
    general = u >= bool_share
    out.fill(0)
    out[:, 0] = u < bool_share / 2  # the ones; the rest of the bool share stays 0
    gidx = np.flatnonzero(general)
    if gidx.size:
        out[gidx] = random_fr(rng, gidx.size)
    return out


def check_abc(a: np.ndarray, b: np.ndarray, c: np.ndarray, *, sample: int | None = None,
              rng: np.random.Generator | None = None) -> int:
    """Count rows where a*b != c (all rows, or a random sample). Independent of mont_mul:
    uses Python integers."""
    n = a.shape[0]
    idx = np.arange(n) if sample is None or sample >= n else \
        (rng or np.random.default_rng()).choice(n, size=sample, replace=False)
    av, bv, cv = from_limbs(a[idx]), from_limbs(b[idx]), from_limbs(c[idx])
    bad = 0
    for x, y, z in zip(av, bv, cv, strict=True):
        # Montgomery: x = aR, y = bR, z = cR; a*b = c  <=>  x*y = z*R (mod r)
        if (x * y - z * MONT_R) % R_MODULUS:
            bad += 1
    return bad

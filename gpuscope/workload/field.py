"""BLS12-381 fields Fr (scalars) and Fq (base field) as Python integers, and the limb layouts.

Layouts shared with the CUDA kernels (gpuscope/workload/cuda/field.cuh):

- an Fr element is 8 little-endian uint32 limbs, an Fq element 12; a vector of n elements is a
  C-contiguous uint32 array of shape (n, 8) or (n, 12);
- "Montgomery form" means the limbs hold x * 2^(32*limbs) mod p (R = 2^256 for Fr, 2^384 for Fq);
  every stored value is fully reduced (0 <= value < p), so equal field elements have equal limbs.

Pure Python + numpy: no CuPy here.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class PrimeField:
    name: str
    p: int
    limbs: int  # 32-bit limbs

    @property
    def R(self) -> int:  # noqa: N802 - the conventional name
        return (1 << (32 * self.limbs)) % self.p

    @property
    def R_inv(self) -> int:  # noqa: N802
        return pow(1 << (32 * self.limbs), -1, self.p)

    def to_mont(self, x: int) -> int:
        return (x % self.p) * self.R % self.p

    # ---- limb arrays <-> Python ints -------------------------------------------------------
    def ints_to_limbs(self, values, *, mont: bool) -> np.ndarray:
        """A sequence of ints -> uint32 array (n, limbs), Montgomery form when `mont`."""
        vals = [self.to_mont(v) if mont else v % self.p for v in values]
        out = np.empty((len(vals), self.limbs), dtype=np.uint32)
        nbytes = 4 * self.limbs
        buf = b"".join(v.to_bytes(nbytes, "little") for v in vals)
        if vals:
            out[:] = np.frombuffer(buf, dtype="<u4").reshape(len(vals), self.limbs)
        return out

    def limbs_to_ints(self, arr, *, mont: bool) -> list[int]:
        """uint32 array (n, limbs) -> list of ints (out of Montgomery form when `mont`)."""
        a = np.ascontiguousarray(np.asarray(arr, dtype=np.uint32)).reshape(-1, self.limbs)
        raw = a.astype("<u4").tobytes()
        nbytes = 4 * self.limbs
        ints = [int.from_bytes(raw[i : i + nbytes], "little") for i in range(0, len(raw), nbytes)]
        if mont:
            rinv = self.R_inv
            return [v * rinv % self.p for v in ints]
        return ints


FR = PrimeField(
    "Fr", 0x73EDA753299D7D483339D80809A1D80553BDA402FFFE5BFEFFFFFFFF00000001, 8
)
FQ = PrimeField(
    "Fq",
    0x1A0111EA397FE69A4B1BA7B6434BACD764774B84F38512BF6730D2A0F6B0F6241EABFFFEB153FFFFB9FEFFFFFFFFAAAB,
    12,
)

R_MOD = FR.p  # the group order r
FR_TWO_ADICITY = 32
FR_GENERATOR = 7  # multiplicative generator of Fr*; also the coset shift (as in bellperson/ec-gpu)


def root_of_unity(log_n: int) -> int:
    """The canonical primitive 2^log_n-th root of unity: 7^((r-1)/2^log_n).

    The roots form one chain (root_of_unity(k+1)^2 == root_of_unity(k)), so twiddle tables
    built for the largest size serve every smaller one.
    """
    if not 0 <= log_n <= FR_TWO_ADICITY:
        raise ValueError(f"log_n must be in 0..{FR_TWO_ADICITY}, got {log_n}")
    return pow(FR_GENERATOR, (R_MOD - 1) >> log_n, R_MOD)


def mont_inv32(p: int) -> int:
    """-p^-1 mod 2^32, the Montgomery reduction constant."""
    return (-pow(p, -1, 1 << 32)) % (1 << 32)

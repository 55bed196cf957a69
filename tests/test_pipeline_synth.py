"""Synthesis: the vectorised Montgomery multiplication and the a*b = c invariant."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuscope.workload import synth as S
from gpuscope.workload.hostmem import HostMemory

fr = st.integers(min_value=0, max_value=S.R_MODULUS - 1)
MONT_R_INV = pow(1 << 256, -1, S.R_MODULUS)


def to_limbs(values) -> np.ndarray:
    """Python ints -> (n, 8) uint32 little-endian limbs (the inverse of S.from_limbs)."""
    return np.array([np.frombuffer(int(v).to_bytes(32, "little"), dtype="<u4") for v in values],
                    dtype=np.uint32).reshape(-1, S.LIMBS)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(fr, fr), min_size=1, max_size=20))
def test_mont_mul_matches_python_integers(pairs):
    a = to_limbs([x for x, _ in pairs])
    b = to_limbs([y for _, y in pairs])
    got = S.from_limbs(S.mont_mul(a, b))
    want = [x * y * MONT_R_INV % S.R_MODULUS for x, y in pairs]
    assert got == want


def test_mont_mul_edge_values():
    r = S.R_MODULUS
    vals = [0, 1, 2, r - 1, r - 2, S.MONT_R, (1 << 255) % r, (1 << 254) - 1]
    a = to_limbs([x for x in vals for _ in vals])
    b = to_limbs([y for _ in vals for y in vals])
    got = S.from_limbs(S.mont_mul(a, b))
    want = [x * y * MONT_R_INV % r for x in vals for y in vals]
    assert got == want
    # Montgomery one is the identity
    assert S.from_limbs(S.mont_mul(a, to_limbs([S.MONT_R] * len(a)))) == S.from_limbs(a)


def test_random_fr_below_r_and_not_constant():
    rng = np.random.default_rng(5)
    x = S.random_fr(rng, 5000)
    ints = S.from_limbs(x)
    assert max(ints) < S.R_MODULUS
    assert len(set(ints)) == 5000


def test_synthesized_partition_satisfies_a_times_b_equals_c_on_every_row():
    cfg = S.SynthConfig(log_n=9, general_share=0.2, zero_b_share=0.3, seed=3)
    mem = HostMemory("pageable")
    p = S.synthesize(4, cfg, mem)
    assert p.a.shape == p.b.shape == p.c.shape == (512, 8)
    assert S.check_abc(p.a, p.b, p.c) == 0
    # the row kinds are all there
    bi = S.from_limbs(p.b)
    assert bi.count(0) > 50 and bi.count(S.MONT_R) > 50
    assert p.general_rows == sum(1 for v in bi if v not in (0, S.MONT_R)) > 50
    # a broken row is caught
    p.c[p.general_rows and np.flatnonzero([v not in (0, S.MONT_R) for v in bi])[0]] ^= 1
    assert S.check_abc(p.a, p.b, p.c) == 1


def test_witness_shares_and_determinism():
    cfg = S.SynthConfig(log_n=12, bool_share=0.8, seed=9)
    mem = HostMemory("pageable")
    p1 = S.synthesize(2, cfg, mem)
    p2 = S.synthesize(2, cfg, mem)
    p3 = S.synthesize(3, cfg, mem)
    assert np.array_equal(p1.scalars, p2.scalars) and np.array_equal(p1.a, p2.a)
    assert not np.array_equal(p1.a, p3.a)
    s = S.from_limbs(p1.scalars)
    boolish = sum(1 for v in s if v in (0, 1)) / len(s)
    assert 0.75 < boolish < 0.85
    assert max(s) < S.R_MODULUS


def test_synthesis_into_pinned_pool_buffers():
    from tests.test_hostmem import FakeAllocator

    fa = FakeAllocator()
    cfg = S.SynthConfig(log_n=6, seed=1)
    mem = HostMemory("pinned", allocator=fa, pinned_budget_bytes=S.partition_bytes(cfg))
    p = S.synthesize(0, cfg, mem)
    assert p.block.pinned is not None
    base = fa.live[p.block.pinned.ptr]
    assert np.shares_memory(p.a, base) and np.shares_memory(p.c, base)
    assert S.check_abc(p.a, p.b, p.c) == 0
    mem.release(p.block)
    mem.close()
    assert fa.live == {}

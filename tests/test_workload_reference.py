"""The CPU reference: Fr NTTs and H in Python ints, G1 arithmetic, MSM against independent math."""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuscope.workload import curve, reference
from gpuscope.workload.field import FQ, FR, R_MOD, mont_inv32, root_of_unity

r = R_MOD


def naive_dft(x, inverse=False):
    n = len(x)
    w = root_of_unity(n.bit_length() - 1)
    if inverse:
        w = pow(w, -1, r)
    out = [sum(x[i] * pow(w, i * k, r) for i in range(n)) % r for k in range(n)]
    if inverse:
        ninv = pow(n, -1, r)
        out = [v * ninv % r for v in out]
    return out


def test_field_constants():
    assert FR.p.bit_length() == 255 and FQ.p.bit_length() == 381
    assert mont_inv32(FR.p) * FR.p % (1 << 32) == (1 << 32) - 1
    w = root_of_unity(32)
    assert pow(w, 1 << 32, r) == 1 and pow(w, 1 << 31, r) != 1
    assert root_of_unity(5) == pow(root_of_unity(6), 2, r)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=FQ.p - 1), min_size=1, max_size=5))
def test_limb_round_trip(values):
    for field in (FQ,):
        for mont in (False, True):
            limbs = field.ints_to_limbs(values, mont=mont)
            assert limbs.shape == (len(values), field.limbs) and limbs.dtype == np.uint32
            assert field.limbs_to_ints(limbs, mont=mont) == values


def test_montgomery_limbs_are_x_times_R():
    limbs = FR.ints_to_limbs([1], mont=True)
    assert FR.limbs_to_ints(limbs, mont=False) == [(1 << 256) % r]


@pytest.mark.parametrize("log_n", [1, 2, 3, 5])
def test_ntt_matches_naive_dft(log_n):
    rng = random.Random(log_n)
    x = [rng.randrange(r) for _ in range(1 << log_n)]
    assert reference.ntt(x) == naive_dft(x)
    assert reference.intt(x) == naive_dft(x, inverse=True)


def test_ntt_round_trip_and_coset():
    rng = random.Random(1)
    x = [rng.randrange(r) for _ in range(256)]
    assert reference.intt(reference.ntt(x)) == x
    assert reference.coset_intt(reference.coset_ntt(x)) == x
    ev = reference.coset_ntt(x)
    w = root_of_unity(8)
    for k in (0, 1, 77):
        assert ev[k] == reference.poly_eval(x, 7 * pow(w, k, r) % r)


def test_h_satisfies_divisibility_for_a_satisfied_system():
    rng = random.Random(2)
    n = 64
    a = [rng.randrange(r) for _ in range(n)]
    b = [rng.randrange(r) for _ in range(n)]
    c = [x * y % r for x, y in zip(a, b, strict=True)]
    h = reference.compute_h(a, b, c)
    A, B, C = reference.intt(a), reference.intt(b), reference.intt(c)
    for _ in range(5):
        z = rng.randrange(r)
        lhs = (reference.poly_eval(A, z) * reference.poly_eval(B, z) - reference.poly_eval(C, z)) % r
        assert lhs == reference.poly_eval(h, z) * (pow(z, n, r) - 1) % r
    # an unsatisfied system does not divide: the identity fails at a random point
    c[3] = (c[3] + 1) % r
    h2 = reference.compute_h(a, b, c)
    C2 = reference.intt(c)
    z = rng.randrange(r)
    lhs = (reference.poly_eval(A, z) * reference.poly_eval(B, z) - reference.poly_eval(C2, z)) % r
    assert lhs != reference.poly_eval(h2, z) * (pow(z, n, r) - 1) % r


def test_curve_group_law():
    g = curve.G1_GEN
    assert curve.is_on_curve(g) and curve.in_subgroup(g)
    assert curve.add(g, curve.neg(g)) is None
    assert curve.mul(g, 5) == curve.add(curve.mul(g, 2), curve.mul(g, 3))
    assert curve.add(g, g) == curve.mul(g, 2)
    assert curve.mul(g, r) is None and curve.mul(g, r - 1) == curve.neg(g)
    assert not curve.is_on_curve((g[0], (g[1] + 1) % curve.P))


def test_point_limbs_round_trip_and_infinity_is_zero():
    pts = [curve.G1_GEN, None, curve.mul(curve.G1_GEN, 9)]
    limbs = curve.points_to_limbs(pts)
    assert limbs.shape == (3, 2, 12) and not limbs[1].any()
    assert curve.limbs_to_points(limbs) == pts


def test_point_scalars_deterministic_and_in_range():
    a = curve.point_scalars(5, 0, 8)
    assert a == curve.point_scalars(5, 0, 8)
    assert a[3:] == curve.point_scalars(5, 3, 5)
    assert a != curve.point_scalars(6, 0, 8)
    assert all(0 < k < (1 << 254) for k in a)


def test_msm_batch_add_tail_against_plain_sums():
    rng = random.Random(3)
    pts = reference.generate_points(24, seed=11)
    assert pts[0] == curve.mul(curve.G1_GEN, curve.point_scalars(11, 0, 1)[0])
    scalars = [rng.randrange(r) for _ in pts]
    scalars[:3] = [0, 1, r - 1]
    expect = curve.sum_points(curve.mul(p, s) for p, s in zip(pts, scalars, strict=True))
    assert reference.msm(pts, scalars) == expect
    bits = [i % 3 == 0 for i in range(len(pts))]
    assert reference.batch_add(pts, bits) == curve.sum_points(p for p, b in zip(pts, bits, strict=True) if b)
    tail = reference.tail_msm(pts, scalars, bits)
    ones = reference.batch_add(pts, bits)
    full = reference.msm(pts, [1 if b else s for s, b in zip(scalars, bits, strict=True)])
    assert curve.add(tail, ones) == full

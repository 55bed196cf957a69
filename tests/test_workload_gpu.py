"""GPU kernels against the CPU reference (marker gpu: skipped without CuPy + a CUDA device).

Inputs are fresh random draws each run (the seed is in the test's output on failure).
MSM comparisons need py-arkworks-bls12381 (the `test` extra).
"""

from __future__ import annotations

import secrets

import numpy as np
import pytest

from gpuscope.workload import backends, curve, layout, reference, selfcheck
from gpuscope.workload.field import FR, R_MOD

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def gpu():
    return backends.get_backend("gpu")


@pytest.fixture
def rng():
    seed = secrets.randbits(32)
    print(f"rng seed {seed}")
    return np.random.default_rng(seed)


def ints(x) -> list[int]:
    return FR.limbs_to_ints(x.get() if hasattr(x, "get") else x, mont=True)


@pytest.mark.parametrize("log_n", range(8, 15))
def test_ntt_bit_for_bit(gpu, rng, log_n):
    x = layout.random_fr(1 << log_n, rng)
    xi = ints(x)
    assert ints(gpu.ntt(x)) == reference.ntt(xi)
    assert ints(gpu.ntt(x, inverse=True)) == reference.intt(xi)


def test_ntt_round_trip_2_20(gpu, rng):
    cp = gpu.cp
    x = cp.asarray(layout.random_fr(1 << 20, rng))
    assert bool(cp.array_equal(gpu.ntt(gpu.ntt(x), inverse=True), x))


def test_warm_up_builds_the_tables_and_changes_no_result(rng):
    from gpuscope.workload.gpu import GpuBackend

    be = GpuBackend()  # a fresh backend: no tables yet
    n = 1 << 13
    a, b = layout.random_fr(n, rng), layout.random_fr(n, rng)
    c = be.fr_mul(a, b).get()
    be.warm_up(13, seed=int(rng.integers(1 << 30)))
    assert be._twiddles[False][0] >= 13 and be._twiddles[True][0] >= 13
    cached = len(be._powers)
    h = be.compute_h(a, b, c)
    assert len(be._powers) == cached  # compute_h at 2^13 found every table built
    assert ints(h) == reference.compute_h(ints(a), ints(b), ints(c))


@pytest.mark.parametrize("log_n", [10, 12])
def test_compute_h_bit_for_bit(gpu, rng, log_n):
    n = 1 << log_n
    a, b = layout.random_fr(n, rng), layout.random_fr(n, rng)
    c = gpu.fr_mul(a, b).get()
    assert ints(c) == [x * y % R_MOD for x, y in zip(ints(a), ints(b), strict=True)]
    h = gpu.compute_h(a, b, c)
    assert ints(h) == reference.compute_h(ints(a), ints(b), ints(c))
    assert selfcheck.check_h(gpu, a, b, c, h, rng).ok


def test_to_standard(gpu):
    x = FR.ints_to_limbs([0, 1, 12345, R_MOD - 1], mont=True)
    assert FR.limbs_to_ints(gpu.to_standard(x).get(), mont=False) == [0, 1, 12345, R_MOD - 1]


def test_generated_points_match_cpu(gpu):
    seed = secrets.randbits(63)
    pts = gpu.generate_points(256, seed).get()
    assert np.array_equal(pts, backends.get_backend("cpu").generate_points(256, seed))
    assert bool(gpu.on_curve(pts).all())
    assert bool(gpu.in_subgroup(pts[:16]).all())
    # the GPU checks reject a point off the curve
    bad = pts[:1].copy()
    bad[0, 1, 0] ^= 1
    assert not bool(gpu.on_curve(bad).any())


@pytest.fixture(scope="module")
def points14(gpu):
    return gpu.generate_points(1 << 14, 7)


@pytest.mark.parametrize("log_n", [10, 12, 14])
def test_msm_matches_arkworks(gpu, rng, points14, log_n):
    pytest.importorskip("py_arkworks_bls12381")
    n = 1 << log_n
    pts = points14[:n]
    sc = layout.random_fr(n, rng)
    sc[:3] = FR.ints_to_limbs([0, 1, R_MOD - 1], mont=False)
    got = curve.limbs_to_point(gpu.msm(pts, sc))
    want = reference.msm(curve.limbs_to_points(pts.get()), FR.limbs_to_ints(sc, mont=False))
    assert got == want
    assert curve.in_subgroup(got)


def test_msm_edge_cases(gpu, points14):
    pytest.importorskip("py_arkworks_bls12381")
    pts = points14[:64].get()
    pl = curve.limbs_to_points(pts)
    zero = np.zeros((64, 8), np.uint32)
    assert not gpu.msm(pts, zero).any()  # all-zero scalars: infinity
    same = FR.ints_to_limbs([R_MOD - 2] * 64, mont=False)  # one bucket per window gets everything
    assert curve.limbs_to_point(gpu.msm(pts, same)) == reference.msm(pl, [R_MOD - 2] * 64)
    dup = np.repeat(pts[:1], 64, axis=0)  # the same point in one bucket: the doubling branch
    sc = FR.ints_to_limbs([3] * 64, mont=False)
    assert curve.limbs_to_point(gpu.msm(dup, sc)) == curve.mul(pl[0], 192)
    neg = pts[:2].copy()
    neg[1] = curve.point_to_limbs(curve.neg(pl[0]))  # P + (-P)
    one = FR.ints_to_limbs([1, 1], mont=False)
    assert not gpu.msm(neg, one).any()


def test_batch_add_and_tail(gpu, rng, points14):
    pytest.importorskip("py_arkworks_bls12381")
    n = 1 << 12
    pts = points14[:n]
    pl = curve.limbs_to_points(pts.get())
    sc = layout.random_fr(n, rng)
    bits = rng.random(n) < 0.3
    si = FR.limbs_to_ints(sc, mont=False)
    ba = curve.limbs_to_point(gpu.batch_add(pts, bits))
    assert ba == reference.batch_add(pl, list(bits))
    tail = curve.limbs_to_point(gpu.tail_msm(pts, sc, bits))
    assert tail == reference.tail_msm(pl, si, list(bits))
    assert selfcheck.check_batch_add(gpu, pts, bits, gpu.batch_add(pts, bits), rng, sample=256).ok
    assert selfcheck.check_msm(gpu, pts, sc, gpu.msm(pts, sc), rng, sample=256).ok


def test_gpu_rejects_unreduced_scalars(gpu, points14):
    from gpuscope.errors import UsageError

    with pytest.raises(UsageError):
        gpu.msm(points14[:4], np.full((4, 8), 0xFFFFFFFF, np.uint32))

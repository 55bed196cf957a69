"""The workload API on the CPU backend: layouts, input checks, agreement with the reference."""

from __future__ import annotations

import numpy as np
import pytest

from gpuscope.errors import UsageError
from gpuscope.workload import backends, curve, layout, reference
from gpuscope.workload.field import FR, R_MOD


@pytest.fixture(scope="module")
def cpu():
    return backends.get_backend("cpu")


def test_random_fr_below_r():
    x = layout.random_fr(1000, np.random.default_rng(0))
    assert x.shape == (1000, 8) and x.dtype == np.uint32
    assert all(v < R_MOD for v in FR.limbs_to_ints(x, mont=False))


def test_compute_h_cpu_matches_reference(cpu):
    rng = np.random.default_rng(1)
    n = 1 << 6
    a, b = layout.random_fr(n, rng), layout.random_fr(n, rng)
    c = cpu.fr_mul(a, b)
    h = backends.compute_h(a, b, c, backend=cpu)
    assert h.shape == (n, 8) and h.dtype == np.uint32
    ai, bi, ci = (FR.limbs_to_ints(x, mont=True) for x in (a, b, c))
    assert FR.limbs_to_ints(h, mont=True) == reference.compute_h(ai, bi, ci)


def test_to_standard(cpu):
    x = FR.ints_to_limbs([5, R_MOD - 1], mont=True)
    assert FR.limbs_to_ints(cpu.to_standard(x), mont=False) == [5, R_MOD - 1]


def test_msm_batch_add_tail_cpu(cpu):
    n = 32
    pts = backends.generate_points(n, 3, backend=cpu)
    assert pts.shape == (n, 2, 12)
    rng = np.random.default_rng(2)
    sc = layout.random_fr(n, rng)
    sc[0] = 0
    sc[1] = FR.ints_to_limbs([1], mont=False)[0]
    sc[2] = FR.ints_to_limbs([R_MOD - 1], mont=False)[0]
    pl = curve.limbs_to_points(pts)
    si = FR.limbs_to_ints(sc, mont=False)
    got = curve.limbs_to_point(backends.msm(pts, sc, backend=cpu))
    assert got == reference.msm(pl, si) and curve.in_subgroup(got)
    bits = np.zeros(n, dtype=bool)
    bits[::4] = True
    assert curve.limbs_to_point(backends.batch_add(pts, bits, backend=cpu)) == reference.batch_add(pl, list(bits))
    assert curve.limbs_to_point(backends.tail_msm(pts, sc, bits, backend=cpu)) == reference.tail_msm(pl, si, list(bits))


def test_empty_bitmap_gives_infinity(cpu):
    pts = backends.generate_points(4, 1, backend=cpu)
    assert not backends.batch_add(pts, np.zeros(4, dtype=bool), backend=cpu).any()


@pytest.mark.parametrize(
    "call",
    [
        lambda b: b.compute_h(np.zeros((3, 8), np.uint32), np.zeros((3, 8), np.uint32), np.zeros((3, 8), np.uint32)),
        lambda b: b.compute_h(np.zeros((4, 7), np.uint32), np.zeros((4, 7), np.uint32), np.zeros((4, 7), np.uint32)),
        lambda b: b.compute_h(np.zeros((4, 8), np.uint32), np.zeros((8, 8), np.uint32), np.zeros((4, 8), np.uint32)),
        lambda b: b.msm(np.zeros((4, 2, 12), np.uint32), np.zeros((5, 8), np.uint32)),
        lambda b: b.msm(np.zeros((4, 2, 12), np.uint32), np.full((4, 8), 0xFFFFFFFF, np.uint32)),
        lambda b: b.batch_add(np.zeros((4, 2, 12), np.uint32), np.zeros(3, bool)),
        lambda b: b.generate_points(0, 1),
    ],
)
def test_bad_input_is_a_usage_error(cpu, call):
    with pytest.raises(UsageError):
        call(cpu)


def test_unknown_backend():
    with pytest.raises(UsageError):
        backends.get_backend("tpu")


def test_auto_is_cpu_without_gpu():
    if backends.gpu_present():
        pytest.skip("a GPU is present")
    assert backends.get_backend("auto").name == "cpu"

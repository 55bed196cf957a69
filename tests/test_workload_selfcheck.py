"""Self-checks on the CPU backend: they pass on right results and catch wrong ones."""

from __future__ import annotations

import numpy as np
import pytest

from gpuscope.errors import VerificationError
from gpuscope.workload import backends, curve, layout, selfcheck
from gpuscope.workload.field import FR


@pytest.fixture(scope="module")
def cpu():
    return backends.get_backend("cpu")


def test_check_h_passes_and_catches_a_wrong_h(cpu):
    rng = np.random.default_rng(0)
    n = 64
    a, b = layout.random_fr(n, rng), layout.random_fr(n, rng)
    c = cpu.fr_mul(a, b)
    h = cpu.compute_h(a, b, c)
    res = selfcheck.require(selfcheck.check_h(cpu, a, b, c, h, rng))
    assert res.ok and res.checks["h_identity_at_random_point"]
    bad = h.copy()
    bad[5] = FR.ints_to_limbs([FR.limbs_to_ints(bad[5:6], mont=True)[0] + 1], mont=True)[0]
    res = selfcheck.check_h(cpu, a, b, c, bad, rng)
    assert not res.ok and res.failed() == ["h_identity_at_random_point"]
    with pytest.raises(VerificationError):
        selfcheck.require(res)


def test_check_msm_and_batch_add(cpu):
    rng = np.random.default_rng(1)
    n = 40
    pts = cpu.generate_points(n, 9)
    sc = layout.random_fr(n, rng)
    res = selfcheck.check_msm(cpu, pts, sc, cpu.msm(pts, sc), rng, sample=16)
    assert res.ok, res.checks
    bits = rng.integers(0, 2, n).astype(bool)
    assert selfcheck.check_batch_add(cpu, pts, bits, cpu.batch_add(pts, bits), rng, sample=16).ok


def test_check_point_rejects_off_curve_point():
    g = curve.G1_GEN
    bad = curve.points_to_limbs([(g[0], (g[1] + 1) % curve.P)])[0]
    assert selfcheck.check_point(bad) == {"on_curve": False, "in_subgroup": False}
    assert selfcheck.check_point(curve.point_to_limbs(g)) == {"on_curve": True, "in_subgroup": True}

"""--verify's checks are independent of the kernels and do catch wrong results."""

from __future__ import annotations

import numpy as np
import pytest

from gpuscope.errors import VerificationError
from gpuscope.workload import curve
from gpuscope.workload.backends import get_backend
from gpuscope.workload.hostmem import HostMemory
from gpuscope.workload.synth import SynthConfig, synthesize
from gpuscope.workload.verify import Verifier, check_h, k_limbs, lagrange_eval

LOG_N = 6


def test_k_limbs_match_the_point_generator_scalars():
    ks = curve.point_scalars(77, 0, 50)
    limbs = k_limbs(77, 50)
    got = [int.from_bytes(limbs[i].astype("<u4").tobytes(), "little") for i in range(50)]
    assert got == ks


def test_lagrange_eval_interpolates():
    from gpuscope.workload.field import R_MOD
    from gpuscope.workload.reference import intt, poly_eval

    vals = [3, 1, 4, 1, 5, 9, 2, 6]
    coeffs = intt(vals)
    tau = 123456789
    assert lagrange_eval(vals, tau, 3) == poly_eval(coeffs, tau) % R_MOD


def _partition():
    cfg = SynthConfig(log_n=LOG_N, general_share=0.3, seed=11)
    return synthesize(0, cfg, HostMemory("pageable"))


def test_check_h_accepts_the_reference_and_rejects_a_wrong_h():
    be = get_backend("cpu")
    p = _partition()
    h = be.compute_h(p.a, p.b, p.c)
    rng = np.random.default_rng(1)
    assert check_h(p.a, p.b, p.c, h, LOG_N, rng)
    bad = h.copy()
    bad[3, 0] ^= 1
    assert not check_h(p.a, p.b, p.c, bad, LOG_N, rng)


def _results(be, p):
    from gpuscope.workload.srs import SRS_SEED_H, SRS_SEED_W

    n = 1 << LOG_N
    hp, wp = be.generate_points(n, SRS_SEED_H), be.generate_points(n, SRS_SEED_W)
    h = be.compute_h(p.a, p.b, p.c)
    hs = be.to_standard(h)
    ones = ((p.scalars[:, 0] == 1) & ~p.scalars[:, 1:].any(axis=1)).astype(np.uint8)
    return dict(h=h, h_scalars=hs, h_msm=be.msm(hp, hs), ones=ones,
                batch=be.batch_add(wp, ones), tail=be.tail_msm(wp, p.scalars, ones))


def test_verifier_passes_correct_results_and_names_a_wrong_msm():
    from gpuscope.workload.srs import SRS_SEED_H, SRS_SEED_W

    be = get_backend("cpu")
    p = _partition()
    v = Verifier(be, log_n=LOG_N, m=1 << LOG_N, h_seed=SRS_SEED_H, w_seed=SRS_SEED_W)
    r = _results(be, p)
    v.check(p, **r)
    assert v.checked == 1
    wrong = dict(r)
    wrong["tail"] = curve.point_to_limbs(curve.add(curve.limbs_to_point(r["tail"]), curve.G1_GEN))
    with pytest.raises(VerificationError, match="partition 0 .*tail MSM"):
        v.check(p, **wrong)
    wrong = dict(r)
    wrong["batch"] = r["h_msm"]
    with pytest.raises(VerificationError, match="batch_add"):
        v.check(p, **wrong)


def test_above_the_python_size_h_goes_through_the_kernels_self_check(monkeypatch):
    from gpuscope.workload import verify
    from gpuscope.workload.srs import SRS_SEED_H, SRS_SEED_W

    monkeypatch.setattr(verify, "H_CHECK_MAX_LOG_N", LOG_N - 1)
    be = get_backend("cpu")
    p = _partition()
    v = Verifier(be, log_n=LOG_N, m=1 << LOG_N, h_seed=SRS_SEED_H, w_seed=SRS_SEED_W)
    assert "self-check" in v.describe()
    r = _results(be, p)
    v.check(p, **r)
    bad = dict(r)
    bad["h"] = r["h"].copy()
    bad["h"][0, 0] ^= 2
    with pytest.raises(VerificationError, match="H self-check failed"):
        v.check(p, **bad)

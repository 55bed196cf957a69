from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuscope.analysis import analyze
from gpuscope.analysis.evidence.log.split import split_records, split_totals
from gpuscope.rolemodel import load_model
from tests.analysis_builders import LogBuilder, article_log, src

MODEL = load_model()


def test_article_acceptance():
    a = analyze(src(article_log()))
    assert a.log.records == 4
    rs = a.log.record_split
    assert list(rs["inconsistent"]) == [False, True, False, False]
    assert a.log.split["inconsistent_records"] == 1
    assert a.log.components.at["ntt_kernels", "median_ms"] == 1354.5
    assert a.log.split["h2d_ms"] == 8613 and a.log.split["held_ms"] == 14460
    assert a.log.split["h2d_share"] == pytest.approx(8613 / 14460)
    # record 2 (index 1): parts 1673+631+405+197 = 2906 > 2385 -> other 0, excess 521, still summed
    r1 = rs.iloc[1]
    assert r1["other_ms"] == 0 and r1["excess_ms"] == 521 and r1["parts_ms"] == 2906
    # other = held - parts elsewhere: 1634 - (287+634+401+198) = 114
    assert rs.iloc[0]["other_ms"] == 114
    assert a.log.split["other_ms"] == 114 + 0 + 113 + 113
    assert a.log.split["cpu_stall_ms"] == 1105
    assert a.log.split["gpu_compute_ms"] == (634 + 401 + 198) + (631 + 405 + 197) + (630 + 404 + 196) + (631 + 400 + 196)


def test_contains_rule_explicit_h2d_inside_ntt_kernels():
    b = LogBuilder()
    b.tenure(1000, ntt_kernels=600, h2d=450, msm_invoke=300)   # both: h2d 450, remainder 150 -> gpu_compute
    b.tenure(1000, ntt_kernels=600, msm_invoke=300)            # outer alone: all h2d
    rs = split_records(*_frames(b), MODEL)
    assert list(rs["h2d_ms"]) == [450, 600]
    assert list(rs["gpu_compute_ms"]) == [450, 300]
    assert list(rs["other_ms"]) == [100, 100]


def _frames(b):
    p = b.build()
    return p.components, p.records


def test_multi_gpu_tenure_averages_per_gpu_parts():
    b = LogBuilder()
    b.tenure(
        2000,
        mutex_wait=50,  # per tenure: not in held, not averaged
        gpus=[dict(ntt_kernels=800, msm_invoke=600, barrier_wait=100),
              dict(ntt_kernels=1200, msm_invoke=640, barrier_wait=0)],
    )
    rs = split_records(*_frames(b), MODEL)
    r = rs.iloc[0]
    assert r["n_gpus"] == 2
    assert r["h2d_ms"] == 1000 and r["gpu_compute_ms"] == 620 and r["cpu_stall_ms"] == 50
    assert r["other_ms"] == 330 and not r["inconsistent"]
    assert r["contention_ms"] == 50
    # statistics count per-GPU values once per GPU
    a = analyze(src(b.build()))
    assert a.log.components.at["ntt_kernels", "count"] == 2
    assert a.log.components.at["ntt_kernels", "sum_ms"] == 2000


def test_incomplete_tenure_and_cpu_lines():
    b = LogBuilder()
    b.tenure(500, ntt_kernels=100, msm=200)
    b.value("prep_msm", 1800)          # CPU side, no record
    b.value("b_g2_msm", 430)
    b.tenure(None, ntt_kernels=300)    # cut off: no held line
    a = analyze(src(b.build()))
    assert a.log.records == 1 and a.log.incomplete_records == 1
    assert len(a.log.record_split) == 1
    assert a.log.components.at["prep_msm", "count"] == 1 and a.log.components.at["prep_msm", "role"] == "cpu"
    assert a.log.components.at["ntt_kernels", "count"] == 2  # values of the cut-off tenure still counted
    assert a.log.split["h2d_ms"] == 100


def test_empty_split_has_nan_shares():
    b = LogBuilder()
    b.value("prep_msm", 10)
    a = analyze(src(b.build()))
    assert a.log.records == 0 and a.log.split["held_ms"] == 0
    assert math.isnan(a.log.split["h2d_share"])
    assert a.document()["log"]["split"]["h2d_share"] is None


part = st.integers(min_value=0, max_value=5000)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(part, part, part, st.integers(0, 20000)), min_size=1, max_size=8))
def test_split_invariants(rows):
    b = LogBuilder()
    for h2d, gpu, stall, held in rows:
        b.tenure(held, ntt_kernels=h2d, msm=gpu, barrier_wait=stall)
    rs = split_records(*_frames(b), MODEL)
    tot = split_totals(rs)
    assert (rs["other_ms"] >= 0).all()
    ok = ~rs["inconsistent"]
    lhs = rs["h2d_ms"] + rs["gpu_compute_ms"] + rs["cpu_stall_ms"] + rs["other_ms"]
    assert np.allclose(lhs[ok], rs["held_ms"][ok])
    assert (rs.loc[~ok, "parts_ms"] > rs.loc[~ok, "held_ms"]).all()
    assert tot["inconsistent_records"] == sum(h + g + s > hd for h, g, s, hd in rows)
    assert tot["h2d_ms"] == sum(r[0] for r in rows) and tot["held_ms"] == sum(r[3] for r in rows)

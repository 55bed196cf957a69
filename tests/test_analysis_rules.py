from __future__ import annotations

import pandas as pd
import pytest

from gpuscope.analysis import AnalyzeOptions, analyze
from gpuscope.analysis import rules as R
from gpuscope.rolemodel import load_model
from tests.analysis_builders import LogBuilder, article_log, src

GIB = 2**30


def _by_id(a):
    return {d.id: d for d in a.diagnoses}


def test_article_diagnoses():
    a = analyze(src(article_log()))
    d = _by_id(a)
    assert set(d) == {"h2d_bound", "unstable_component", "cpu_stall_at_barrier", "lock_convoy",
                      "inconsistent_records"}
    h = d["h2d_bound"]
    assert h.severity == "high"
    assert h.evidence["h2d_share"] == pytest.approx(8613 / 14460, abs=1e-4)
    assert h.evidence["bytes_source"] == "unknown" and "--abc-bytes" in h.recommendation
    assert h.evidence["gpu_compute_cv"] < 0.01 < 1 < h.evidence["h2d_cv"]
    u = d["unstable_component"]
    assert u.evidence["component"] == "ntt_kernels" and u.severity == "high"
    assert set(u.evidence["stable_components_cv"]) == {"msm", "batch_add", "tail_msm"}
    s = d["cpu_stall_at_barrier"]
    assert s.evidence["stalled_records"] == 1 and s.evidence["stall_max_ms"] == 1105
    assert s.severity == "medium"  # 7.6% of held
    c = d["lock_convoy"]
    assert c.evidence["wait_median_ms"] == 2464 and c.evidence["held_median_ms"] == 2933
    assert c.severity == "medium"
    i = d["inconsistent_records"]
    assert i.evidence["inconsistent_records"] == 1 and i.evidence["examples"][0]["record"] == 1
    # sorted by severity
    sev = [x.severity for x in a.diagnoses]
    assert sev == sorted(sev, key=lambda s: {"high": 0, "medium": 1, "low": 2, "info": 3}[s])


def test_h2d_projection_with_abc_bytes():
    a = analyze(src(article_log(), line_rate_gbs=50), AnalyzeOptions(abc_bytes=int(1.5 * GIB)))
    ev = _by_id(a)["h2d_bound"].evidence
    up = 1.5 * GIB / 50e9 * 1000  # 32.2 ms
    assert ev["upload_ms_at_line_rate"] == pytest.approx(up, abs=0.05)
    projected = [1634 - 287 + up, 2385 - 1673 + up, 6960 - 5617 + up, 3481 - 1036 + up]
    assert ev["projected_held_ms"] == pytest.approx(sum(projected), abs=0.1)
    assert ev["projected_held_median_ms"] == pytest.approx(sorted(projected)[1] / 2 + sorted(projected)[2] / 2, abs=0.1)
    assert ev["bytes_source"] == "--abc-bytes"
    # 1.5 GiB in 287 ms = 5.6 GB/s, in 5617 ms = 0.29 GB/s: the median of the four
    rates = sorted(1.5 * GIB / (h / 1000) / 1e9 for h in (287, 1673, 5617, 1036))
    assert ev["implied_upload_gbs_median"] == pytest.approx((rates[1] + rates[2]) / 2, abs=0.01)


def test_h2d_bytes_from_log_field():
    b = LogBuilder("kv")
    for h in (400, 800, 1200):
        b.tenure(h + 1000, h2d=h, h2d_bytes=2 * 10**9, msm_invoke=900)
    ev = _by_id(analyze(src(b.build())))["h2d_bound"].evidence
    assert ev["bytes_source"] == "the log's h2d_bytes field"
    assert ev["upload_ms_at_line_rate"] == pytest.approx(40.0)


def test_quiet_pipeline_fires_nothing():
    b = LogBuilder()
    for i in range(6):
        b.tenure(1000 + i, ntt_kernels=40 + i % 2, msm_invoke=600, batch_add=300, tail_msm=50,
                 barrier_wait=0, mutex_wait=100)
    assert analyze(src(b.build())).diagnoses == []


def test_severity_thresholds_for_stall():
    b = LogBuilder()
    b.tenure(1000, ntt_kernels=40, msm_invoke=700, barrier_wait=200)   # 200 of 2000 = 10% -> high
    b.tenure(1000, ntt_kernels=40, msm_invoke=700, barrier_wait=0)
    d = _by_id(analyze(src(b.build())))["cpu_stall_at_barrier"]
    assert d.severity == "high" and d.evidence["stalled_fraction"] == 0.5


def test_first_partition_warmup():
    b = LogBuilder()
    for dba in (700, 2, 3, 2, 1):
        b.tenure(1500, ntt_kernels=40, msm_invoke=700, d_b_alloc=dba)
    d = _by_id(analyze(src(b.build())))["first_partition_warmup"]
    assert d.evidence["first_ms"] == 700 and d.evidence["rest_median_ms"] == 2
    b2 = LogBuilder()
    for dba in (5, 2, 3):
        b2.tenure(1500, ntt_kernels=40, msm_invoke=700, d_b_alloc=dba)
    assert "first_partition_warmup" not in _by_id(analyze(src(b2.build())))


def test_lock_convoy_high_when_wait_exceeds_tenure():
    b = LogBuilder()
    for w in (3000, 2500, 4000):
        b.tenure(2000, ntt_kernels=40, msm_invoke=1800, mutex_wait=w)
    d = _by_id(analyze(src(b.build())))["lock_convoy"]
    assert d.severity == "high" and d.evidence["wait_over_held"] == 1.5


def test_pcie_underused_rule():
    b = LogBuilder()
    for h in (1000, 2000, 1500):
        b.tenure(h + 1300, ntt_kernels=h, msm_invoke=1200)
    a = analyze(src(b.build()))
    pcie = pd.DataFrame([
        {"phase": "h2d", "samples": 20, "rx_gbs_median": 3.0, "tx_gbs_median": 0.1, "rx_gbs_p90": 4.0,
         "rx_share_of_line_rate": 0.06, "sm_active_median": 0.05},
        {"phase": "msm", "samples": 30, "rx_gbs_median": 48.0, "tx_gbs_median": 0.1, "rx_gbs_p90": 52.0,
         "rx_share_of_line_rate": 0.96, "sm_active_median": 0.9},
    ])
    inp = R.RuleInput(split=a.record_split, wide=a.record_components, stats=a.components, totals=a.split,
                      timeline=a.timeline, bounds=a.bounds, options=a.options, model=load_model(), pcie=pcie)
    d = R.pcie_underused(inp)
    assert len(d) == 1 and d[0].severity == "high"
    assert d[0].evidence["rx_gbs_median_by_phase"] == {"h2d": 3.0, "msm": 48.0}
    h = R.h2d_bound(inp)[0]
    assert h.evidence["pcie_rx_gbs_during_h2d"] == 3.0

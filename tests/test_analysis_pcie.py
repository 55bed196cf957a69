from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from gpuscope.analysis import analyze
from gpuscope.analysis.evidence.log.phases import (
    build_phases,
    from_log_lines,
    from_spans,
    from_timeline,
)
from gpuscope.analysis.evidence.samples.pcie import NO_PHASE, pcie_by_phase
from gpuscope.rolemodel import load_model
from tests.analysis_builders import LogBuilder, src

MODEL = load_model()


def _ntt_h_line(b: LogBuilder, ts: float, r: int):
    """One CUZK_NTT_H line stamped at ts (the end of its last phase)."""
    ln = b._next()
    for name, v in (("d_b_alloc", 100), ("ntt_kernels", 1000), ("coset_intt_sync", 100),
                    ("msm_init", 0), ("msm_invoke", 600), ("msm_dtor", 0), ("total", 1800)):
        b.value(name, v, record=r, gpu=0, line=ln, ts=ts, worker=1, source="CUZK_NTT_H")


def test_phases_from_timestamped_lines_stack_backwards():
    b = LogBuilder()
    _ntt_h_line(b, 10.0, 0)
    ph = from_log_lines(b.build().components, MODEL)
    by = {r.phase: (r.t_start, r.t_end) for r in ph.itertuples()}
    assert "total" not in set(ph["phase"])  # aggregates are not phases
    assert by["h2d"] == pytest.approx((8.3, 9.3))     # ntt_kernels: later phases 100+0+600+0 ms
    assert by["ntt"] == pytest.approx((9.3, 9.4))
    assert by["msm"][1] == pytest.approx(10.0)
    assert by["d_b_alloc"] == pytest.approx((8.2, 8.3))
    assert set(ph["worker"]) == {1} and set(ph["gpu"]) == {0}


def _samples(rows):
    cols = ["t_wall", "gpu", "rx_gbs", "tx_gbs", "sm_active", "wrap_suspect"]
    return pd.DataFrame(rows, columns=cols)


def test_pcie_by_phase_medians_and_none_bucket():
    phases = pd.DataFrame({
        "worker": [0, 0], "gpu": [0, 0], "partition": [0, 0], "phase": ["h2d", "msm"],
        "t_start": [0.0, 1.0], "t_end": [1.0, 2.0],
    })
    s = _samples([
        (0.1, 0, 2.0, 0.1, 0.05, 0), (0.5, 0, 4.0, 0.1, 0.05, 0), (0.9, 0, 3.0, 0.1, 0.05, 0),
        (0.95, 0, 999.0, 0.1, 0.05, 1),            # wrap suspect: no RX figure
        (1.5, 0, 50.0, 1.0, 0.9, 0), (1.6, 0, 48.0, 1.0, 0.95, 0),
        (1.5, 1, 7.0, 0.0, 0.0, 0),                 # other GPU: not in gpu 0's msm phase
        (3.0, 0, 0.1, 0.0, 0.0, 0),
    ])
    out = pcie_by_phase(s, phases, 50.0).set_index("phase")
    assert out.at["h2d", "samples"] == 4 and out.at["h2d", "rx_gbs_median"] == 3.0
    assert out.at["h2d", "rx_share_of_line_rate"] == pytest.approx(0.06)
    assert out.at["msm", "samples"] == 2 and out.at["msm", "rx_gbs_median"] == 49.0
    assert out.at["msm", "sm_active_median"] == pytest.approx(0.925)
    assert out.at[NO_PHASE, "samples"] == 2


def test_phase_with_unknown_gpu_matches_every_gpu():
    phases = pd.DataFrame({"worker": [0], "gpu": [-1], "partition": [0], "phase": ["gpu"],
                           "t_start": [0.0], "t_end": [1.0]})
    s = _samples([(0.5, 0, 1.0, 0, 0, 0), (0.5, 1, 3.0, 0, 0, 0)])
    out = pcie_by_phase(s, phases, 50.0).set_index("phase")
    assert out.at["gpu", "samples"] == 2 and out.at["gpu", "rx_gbs_median"] == 2.0


def test_spans_preferred_then_lines_then_timeline():
    spans = pd.DataFrame({"t_start": [1.0], "t_end": [2.0], "gpu": [0], "worker": [0], "partition": [3],
                          "phase": ["h2d"]})
    b = LogBuilder()
    _ntt_h_line(b, 10.0, 0)
    p = b.build()
    ph, basis = build_phases(spans, p.components, p.timeline, MODEL)
    assert basis == "spans.csv" and len(ph) == 1 and ph.iloc[0]["partition"] == 3
    ph, basis = build_phases(None, p.components, p.timeline, MODEL)
    assert basis.startswith("timestamped") and len(ph) == 6  # 7 fields minus the aggregate total
    assert list(from_spans(spans).columns) == ["worker", "gpu", "partition", "phase", "t_start", "t_end"]


def test_phases_from_timeline_anchor():
    b = LogBuilder()
    b.event(0, "SYNTH_START", partition=0, ts=1000.0)
    b.event(2000, "SYNTH_END", partition=0, synth_ms=2000, ts=1002.0)
    b.event(2000, "GPU_START", partition=0, worker=1, ts=1002.0)
    b.event(3500, "GPU_END", partition=0, worker=1, gpu_ms=1500, ts=1003.5)
    ph = from_timeline(b.build().timeline).set_index("phase")
    assert ph.at["synth", "t_start"] == pytest.approx(1000.0)
    assert ph.at["gpu", "t_end"] == pytest.approx(1003.5) and ph.at["gpu", "worker"] == 1
    b2 = LogBuilder()
    b2.event(0, "GPU_START", worker=0)   # no absolute anchor
    b2.event(10, "GPU_END", worker=0)
    assert from_timeline(b2.build().timeline).empty


def test_analyze_with_samples_reports_pcie_and_json():
    b = LogBuilder()
    for r, t in enumerate((10.0, 12.0, 14.0)):
        _ntt_h_line(b, t, r)
        b.value("mutex_held", 1900, record=r, ts=t + 0.05)
        b.recs.append(dict(record=r, first_line=1, last_line=2, ts_start=np.nan, ts_end=t + 0.05, n_gpus=1,
                           held_ms=1900.0, complete=True))
    t = np.arange(8.0, 14.0, 0.05)
    rx = np.where((t % 2 >= 0.3) & (t % 2 < 1.3), 2.0, 45.0)   # 2 GB/s during ntt_kernels
    s = pd.DataFrame({"t_wall": t, "gpu": 0, "rx_gbs": rx, "tx_gbs": 0.1, "sm_active": 0.5, "wrap_suspect": 0})
    a = analyze(src(b.build(), samples=s))
    assert a.log.pcie is not None
    h2d = a.log.pcie.set_index("phase").loc["h2d"]
    assert h2d["rx_gbs_median"] == 2.0
    d = {x.id: x for x in a.findings}
    assert d["pcie_underused"].severity == "high"
    j = a.document()
    assert j["log"]["pcie"]["phases"]["h2d"]["rx_gbs_median"] == 2.0 and j["log"]["pcie"]["samples"] == len(s)

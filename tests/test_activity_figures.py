"""activity_from_samples: the grid's resampling rules, the classes, the JSON figures and the
classed intervals, on synthetic frames (tests/activity_builders.py) and an H200 capture."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from gpuscope import rundir
from gpuscope.analysis.evidence.samples import samplegrid as sg
from gpuscope.analysis.evidence.samples.activity import activity_from_samples
from gpuscope.schemas import ACTIVITY_INTERVAL_SCHEMA, empty_samples
from tests.activity_builders import T0, periodic, segments, synth

LINE = 55.5
RUNS = Path(__file__).parent / "data" / "h200_foreign" / "runs"


def _act(s, m=None, **kw):
    return activity_from_samples(s, meta=m, line_rate_gbs=LINE, line_rate_source="test", **kw)


def _activity(name: str):
    d = RUNS / name
    meta = rundir.read_meta(d)
    return activity_from_samples(rundir.read_samples(d), meta=meta, line_rate_gbs=meta["line_rate_gbs"],
                                 line_rate_source="meta")


def test_window_readings_fill_backwards_and_counters_stay_per_tick():
    # SM busy for the first 100 ms only: the GPM row at 0.1 s covers (0, 0.1]
    s = synth(1.02, sm=segments((0, 0.1, 1.0)), rx=segments((0.5, 0.52, 30.0)))
    g = sg.build_grid(s, 0, LINE)
    assert g.source == "gpm_sm_active" and g.resolution_s == pytest.approx(0.1)
    assert np.allclose(g.activity[:5], 1.0) and np.allclose(g.activity[5:45], 0.0)
    assert np.isnan(g.activity[-1])  # after the last GPM reading: no window covers it
    assert (g.cls[-1], g.cls[0]) == ("unknown", "computing")
    assert np.nansum(g.rx * g.dt) == pytest.approx(30.0 * 0.02, rel=0.01)  # the bytes of that one copy
    assert (g.rx > 1).sum() <= 2 and np.nanmax(g.rx) >= 15.0
    assert g.pcie_source == "counter" and g.pcie_resolution_s == pytest.approx(0.02)


def test_wrap_suspect_readings_left_out():
    s = synth(1.0, rx=1.0)
    s.loc[10, ["rx_gbs", "wrap_suspect"]] = [999.0, 1]
    j = _act(s).to_json()
    assert j["pcie"]["rx"]["max_gbs"] == pytest.approx(1.0)


def test_four_classes():
    s = synth(8.0, sm=segments((0, 2, 0.9), (4, 6, 0.8)), rx=segments((2, 4, 10.0), (4, 6, 20.0), (6, 8, 0.001)))
    c = _act(s).to_json()["classes"]
    assert c["computing"] == pytest.approx(0.25, abs=0.02) and c["transferring"] == pytest.approx(0.25, abs=0.02)
    assert c["both"] == pytest.approx(0.25, abs=0.02) and c["idle_quiet"] == pytest.approx(0.25, abs=0.03)


def test_span_keeps_the_rows_inside_it():
    s = synth(10.0, sm=segments((0, 5, 0.9)))
    j = _act(s, span=(T0 + 5.0, T0 + 10.0)).to_json()
    assert j["wall_s"] == pytest.approx(5.0) and j["busy_fraction"] < 0.02


def test_json_contract_and_intervals():
    a = _activity("copy_pageable")
    j = a.to_json()
    for k in ("source", "resolution_s", "busy_fraction", "idle_fraction", "idle_gaps", "wall_s", "classes",
              "active", "pcie", "memory", "power", "clocks", "throttle", "link", "gpus"):
        assert k in j, k
    assert {"count", "total_s", "longest_s", "distribution"} <= set(j["idle_gaps"])
    assert {"p50_gbs", "p90_gbs", "max_gbs"} <= set(j["pcie"]["rx"])
    assert j["pcie"]["time_near_line_rate_s"] == 0.0 and j["pcie"]["source"] == "counter"
    assert j["memory"]["total_mib"] == 143771.0 and j["memory"]["fraction"] < 0.05
    assert j["link"]["downgraded"] is False and j["throttle"] == {"recorded": False}
    assert sum(v for v in j["classes"].values()) == pytest.approx(1.0)
    iv = a.intervals
    assert list(iv.columns) == list(ACTIVITY_INTERVAL_SCHEMA)
    assert {str(t) for t in iv.dtypes} == {"int64", "object", "float64"}
    assert (iv["t_end"] > iv["t_start"]).all() and (iv["t_start"].iloc[1:].to_numpy() == iv["t_end"].iloc[:-1].to_numpy()).all()
    assert set(iv["class"]) <= {"computing", "both", "transferring", "idle_quiet", "idle", "unknown"}
    assert iv["t_start"].iloc[0] == j["t_start"] and iv["t_end"].iloc[-1] == j["t_end"]


def test_empty_and_one_sample_figures():
    a = _act(empty_samples())
    assert a.gpus == []
    j = a.to_json()
    assert j["busy_fraction"] is None and j["idle_gaps"] == {"count": 0, "total_s": 0.0, "longest_s": 0.0}
    assert list(a.intervals.columns) == list(ACTIVITY_INTERVAL_SCHEMA) and a.intervals.empty
    one = synth(0.0, sm=0.5)
    assert len(one) == 1
    j = _act(one).to_json()
    assert j["wall_s"] == 0.0 and j["readings"] == 1 and j["active"] is None and j["busy_fraction"] is None


def test_no_gpm_falls_back_to_utilization():
    j = _act(synth(10.0, util=98.0, gpm=False)).to_json()
    assert j["source"] == "utilization" and j["resolution_s"] == pytest.approx(0.2)
    assert j["busy_fraction"] == pytest.approx(0.98, abs=0.01)


def test_train_slow_figures():
    j = _activity("train_slow").to_json()
    assert j["source"] == "gpm_sm_active" and j["resolution_s"] == pytest.approx(0.12, abs=0.01)
    assert j["wall_s"] == pytest.approx(13.72, abs=0.01)
    assert j["busy_fraction"] < 0.01 and j["idle_fraction"] > 0.98
    # the model's upload at ~0.5-1 GB/s at 8.1 s is work (PCIe above the 1% trickle), not start-up quiet
    assert j["idle_gaps"]["leading_s"] == pytest.approx(8.08, abs=0.2)
    act = j["active"]
    # one pause: between the model's upload and the loop's first step
    assert act["working_s"] == pytest.approx(3.9, abs=0.2) and act["pauses"]["count"] == 1
    assert act["busy_fraction"] == pytest.approx(0.024, abs=0.004)
    assert act["classes"]["idle_quiet"] > 0.98 and act["pcie_quiet_share"] > 0.98


def test_several_gpus_pooled_and_per_gpu():
    busy = synth(10.0, sm=0.9, gpu=0)
    starved = synth(10.0, sm=periodic(0.1, 0.005, 0.9), gpu=1)
    a = _act(pd.concat([busy, starved], ignore_index=True))
    j = a.to_json()
    assert j["gpus"] == [0, 1] and set(j["per_gpu"]) == {"0", "1"}
    assert j["busy_fraction"] == pytest.approx((0.9 + 0.045) / 2, abs=0.02)
    assert set(a.intervals["gpu"]) == {0, 1}

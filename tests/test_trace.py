"""Perfetto / Chrome trace export: schema checks and a golden file.

The `perfetto` Python package's trace processor downloads its binary at first use, which
is not possible offline here, so the trace is checked by schema (docs/COMPARE.md)."""

from __future__ import annotations

import json
import os
from collections import defaultdict
from pathlib import Path

import pytest

from gpuscope.reports.trace import build_trace
from tests.timeline_fixture import T0, phases, samples

GOLDEN = Path(__file__).parent / "data" / "timeline" / "trace_golden.json"


def _check_schema(tr: dict) -> None:
    assert tr["displayTimeUnit"] == "ms"
    evs = tr["traceEvents"]
    names = {(e["pid"], e.get("tid")) for e in evs if e["ph"] == "M" and e["name"] in ("process_name", "thread_name")}
    per_thread = defaultdict(list)
    for e in evs:
        assert e["ph"] in ("X", "C", "M")
        if e["ph"] == "X":
            for k in ("ph", "ts", "dur", "pid", "tid", "name"):
                assert k in e, (k, e)
            assert e["dur"] >= 0 and e["ts"] >= 0
            assert (e["pid"], e["tid"]) in names and (e["pid"], None) in names
            per_thread[(e["pid"], e["tid"])].append((e["ts"], e["ts"] + e["dur"]))
        elif e["ph"] == "C":
            assert e["args"] and all(isinstance(v, float | int) for v in e["args"].values())
            assert (e["pid"], None) in names
    for spans in per_thread.values():  # slices on one thread must not overlap
        spans.sort()
        for (_a0, a1), (b0, _) in zip(spans, spans[1:], strict=False):
            assert b0 >= a1 - 1e-6


def test_a_slice_per_phase_per_worker_and_counters():
    tr = build_trace(phases(), samples(), title="unit")
    _check_schema(tr)
    xs = [e for e in tr["traceEvents"] if e["ph"] == "X"]
    assert len(xs) == len(phases())
    thread_names = {e["args"]["name"] for e in tr["traceEvents"] if e["name"] == "thread_name"}
    assert {"worker 0", "worker 1", "worker 0 prep", "worker 1 prep", "synthesis 0", "synthesis 1"} <= thread_names
    procs = {e["args"]["name"] for e in tr["traceEvents"] if e["name"] == "process_name"}
    assert procs == {"GPU 0", "CPU synthesis"}
    up = [e for e in xs if e["args"]["phase"] == "h2d"]
    assert [(e["ts"], e["dur"]) for e in up] == [(1.0e6, 0.6e6), (2.4e6, 0.6e6)]
    assert up[0]["name"] == "upload H2D" and up[0]["args"]["partition"] == 0
    cs = [e for e in tr["traceEvents"] if e["ph"] == "C"]
    pcie = [e for e in cs if e["name"] == "PCIe GB/s"]
    # one event per change of the figures (a counter holds its value), and the last row
    s = samples()
    moved = (s[["rx_gbs", "tx_gbs"]].diff().abs().sum(axis=1) > 0).to_numpy()[1:]
    assert len(pcie) == 1 + int(moved.sum()) + int(not moved[-1]) and set(pcie[0]["args"]) == {"rx_gbs", "tx_gbs"}
    assert pcie[-1]["ts"] == round((s["t_wall"].max() - T0) * 1e6)
    sm = [e for e in cs if e["name"] == "SM active %"]
    assert max(e["args"]["sm_active_pct"] for e in sm) == 90.0
    assert tr["metadata"]["t0_epoch_s"] == T0


def test_golden_trace():
    got = json.loads(json.dumps(build_trace(phases(), samples(), title="golden"), allow_nan=False))  # as export writes it
    if os.environ.get("GPUSCOPE_REGEN_GOLDEN"):  # pragma: no cover - deliberate regeneration
        GOLDEN.write_text(json.dumps(got, indent=1, sort_keys=True) + "\n")
    assert got == json.loads(GOLDEN.read_text())


def test_phases_only_and_samples_only_and_nothing():
    _check_schema(build_trace(phases(), None))
    only = build_trace(None, samples())
    _check_schema(only)
    assert not [e for e in only["traceEvents"] if e["ph"] == "X"]
    with pytest.raises(ValueError, match="nothing to export"):
        build_trace(phases().iloc[:0], None)


def test_overlapping_phases_on_one_worker_spill_to_another_thread():
    p = phases()
    extra = p.iloc[[3]].copy()
    extra["phase"] = "held"  # a coarse tenure interval overlapping the fine ones
    extra["t_end"] = T0 + 2.45
    tr = build_trace(__import__("pandas").concat([p, extra]), None)
    _check_schema(tr)

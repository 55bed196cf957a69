"""analysis.trace_analysis over the H200 captures and synthetic traces: the right cause first,
with its numbers; copy rows that match what the programs copied."""

from __future__ import annotations

import json

import numpy as np
import pytest

from gpuscope.analysis.document import trace_doc
from gpuscope.analysis.evidence import collect
from gpuscope.analysis.rules.registry import run_rules
from gpuscope.analysis.trace_analysis import analyze_trace
from gpuscope.errors import NoDataError
from gpuscope.parsers.trace.kineto import read_trace
from gpuscope.schemas import PHASE_SCHEMA, TRACE_COUNTER_SCHEMA
from tests.conftest import DATA
from tools.gen_trace import TraceBuilder

TRACES = DATA / "h200_foreign" / "traces"
LINE = 55.5  # tests/data/h200_foreign/bandwidth.json: the H200's pinned H2D line rate


def _traced(fr, **kw):
    """The trace's figures and its diagnoses (the trace rules through the one engine)."""
    a = analyze_trace(fr, **kw)
    a.findings = run_rules(collect(trace=a))
    return a


def _analyze(src, **kw):
    fr = read_trace(src)
    return fr, _traced(fr, line_rate_gbs=LINE, line_rate_source="option", **kw)


@pytest.fixture(scope="module")
def pageable():
    return _analyze(TRACES / "copy_pageable.json.gz")


@pytest.fixture(scope="module")
def pinned():
    return _analyze(TRACES / "copy_pinned.json.gz")


def _ids(a):
    return [d.id for d in a.findings]


def test_pageable_copies_rank_first_with_their_numbers(pageable):
    fr, a = pageable
    j = trace_doc(a)
    json.dumps(j, allow_nan=False)
    (row,) = j["memcpy"]
    assert (row["direction"], row["host_memory"], row["count"], row["bytes"]) == ("HtoD", "pageable", 12, 6_442_450_944)
    m = fr.gpu[fr.gpu["kind"] == "memcpy"]
    # the trace's own per-event figures: bytes / dur = its "memory bandwidth (GB/s)"
    own = m["bytes"].sum() / (m["bytes"] / m["trace_gbs"]).sum()
    assert row["gbs"] == pytest.approx(own, rel=1e-6)
    assert row["gbs"] == pytest.approx(row["trace_gbs_median"], rel=0.05)
    assert 7.0 < row["gbs"] < 9.5 and row["line_rate_share"] == pytest.approx(row["gbs"] / LINE)
    d = a.findings[0]
    assert d.id == "pageable_memcpy" and d.severity == "high"
    ev = d.evidence
    assert ev["count"] == 12 and ev["bytes"] == 6_442_450_944
    assert ev["ms_at_line_rate"] == pytest.approx(6_442_450_944 / (LINE * 1e6), rel=1e-3)
    assert ev["time_at_stake_ms"] == pytest.approx(row["ms"] - ev["ms_at_line_rate"], abs=0.01)
    assert ev["blocks_host"] is True and ev["same_stream_as_kernels"] is True
    assert 0.4 < ev["share_of_span"] < 0.7
    assert "Pin the host buffers" in d.recommendation


def test_pinned_copies_get_no_pinning_advice(pinned):
    _, a = pinned
    j = trace_doc(a)
    assert [(r["host_memory"], r["count"], r["bytes"]) for r in j["memcpy"]] == [("pinned", 12, 6_442_450_944)]
    assert j["memcpy"][0]["gbs"] == pytest.approx(j["memcpy"][0]["trace_gbs_median"], rel=0.05)
    assert "pageable_memcpy" not in _ids(a)
    for d in a.findings:
        assert "pin" not in d.recommendation.lower()
    assert _ids(a)[0] == "copies_not_overlapped"
    ev = a.findings[0].evidence
    assert ev["overlapped_fraction"] == 0 and ev["same_stream_as_kernels"] and ev["count"] == 12


def test_starved_loader_vs_fed_loop():
    _, slow = _analyze(TRACES / "train_slow.json.gz")
    d = slow.findings[0]
    assert d.id == "host_starved" and d.severity == "high"
    assert d.evidence["dominant_cause"] == "data_loading" and d.evidence["gaps"] == 3
    assert d.evidence["share_of_span"] > 0.7 and d.evidence["longest_ms"] > 80
    assert "DataLoader" in d.evidence["host_annotation"]
    assert "pin_memory=True" in d.recommendation  # the batches arrive as pageable copies
    split = {p["phase"]: p for p in trace_doc(slow)["phases"]}
    assert split["data"]["role"] == "cpu_stall" and split["data"]["gpu_busy_fraction"] < 0.05  # as for timing lines
    assert split["forward_backward"]["role"] == "gpu_compute"
    # its six pageable copies cost 0.5% of the span: below MIN_SHARE (1%), no finding of their own
    assert "pageable_memcpy" not in _ids(slow) and trace_doc(slow)["memcpy"]
    _, fast = _analyze(TRACES / "train_fast_tb")
    assert "host_starved" not in _ids(fast)
    assert _ids(fast)[0] == "launch_bound"  # ResNet-18 at batch 64 on an H200: 4 us kernels
    assert fast.activity["busy_fraction"] > 5 * slow.activity["busy_fraction"]


def test_sync_bound_loop():
    _, a = _analyze(TRACES / "sync_bound.json.gz")
    assert _ids(a) == ["sync_bound"]
    ev = a.findings[0].evidence
    assert ev["readback_copies"] == 400 and ev["sync_calls"]["cudaStreamSynchronize"] == 400
    assert ev["gaps_after_sync"] >= 390 and ev["share_of_span"] > 0.5
    assert "launch-bound" in a.findings[0].recommendation
    (row,) = a.memcpy
    assert (row["direction"], row["host_memory"], row["count"], row["bytes"]) == ("DtoH", "pinned", 400, 1600)


def _launch_bound_trace(kernels=2000, every=12.0, kdur=2.0):
    b = TraceBuilder()
    b.annotation("tiny_ops", 0.0, kernels * every + 20)
    for i in range(kernels):
        t = 5.0 + i * every
        b.launch(t, t + 6.0, kdur, op="aten::mul")
    return b


def test_synthetic_launch_bound_loop():
    _, a = _analyze(json.dumps(_launch_bound_trace().document()))
    assert _ids(a)[0] == "launch_bound" and a.findings[0].severity == "high"
    ev = a.findings[0].evidence
    assert ev["kernels"] == 2000 and ev["kernel_median_us"] == pytest.approx(2.0)
    assert ev["launch_interval_median_us"] == pytest.approx(12.0)
    assert ev["phases"][0]["phase"] == "tiny_ops"
    assert a.activity["busy_fraction"] == pytest.approx(2.0 / 12.0, rel=0.02)


def test_gap_spanned_by_an_allocation():
    b = TraceBuilder()
    b.launch(0.0, 5.0, 1000.0)
    b.runtime("cudaHostAlloc", 1010.0, 50_000.0)
    b.launch(51_020.0, 51_025.0, 1000.0)
    _, a = _analyze(json.dumps(b.document()))
    d = a.findings[0]
    assert d.id == "host_starved" and d.evidence["dominant_cause"] == "allocation"
    top = a.idle_gaps[0]
    assert top["cause"] == "allocation" and top["host_op"]["name"] == "cudaHostAlloc"
    assert top["ms"] == pytest.approx(50.02, abs=0.01) and top["launched_late"] is True


def test_activity_phases_counters_contract(pageable):
    fr, a = pageable
    act = trace_doc(a)["activity"]
    assert act["source"] == "trace" and act["resolution"] == "exact (profiler events)"
    # busy = computing (kernels, memsets, DtoD); host copies beside it; idle = nothing running
    assert act["idle_fraction"] == pytest.approx(
        1 - sum(d["active_s"] for d in act["devices"]) / act["device_span_s"])
    assert act["busy_fraction"] + act["copy_fraction"] >= 1 - act["idle_fraction"] - 1e-9
    assert act["busy_fraction"] == pytest.approx(sum(d["busy_s"] for d in act["devices"]) / act["device_span_s"])
    assert set(act["idle_gaps"]) >= {"count", "total_s", "longest_s"}
    assert act["t_start"] > 1.79e9 and act["epoch"] is True
    assert dict(a.phases.dtypes.astype(str)) == PHASE_SCHEMA
    h2d = a.phases[a.phases["phase"] == "h2d"]
    assert len(h2d) == 12 and (h2d["worker"] == 7).all() and (h2d["gpu"] == 0).all()
    assert a.phases["t_start"].min() >= act["t_start"] - 1e-3
    assert dict(a.counters.dtypes.astype(str)) == TRACE_COUNTER_SCHEMA
    moved = float((a.counters["htod_gbs"] * a.counters["bin_s"]).sum() * 1e9)
    assert moved == pytest.approx(6_442_450_944, rel=1e-6)
    assert a.counters["busy_fraction"].between(0, 1 + 1e-9).all()
    k = trace_doc(a)["kernels"]
    assert [(r["device"], r["stream"], r["memcpy_count"]) for r in k] == [(0, 7, 12)]
    t = trace_doc(a)["trace"]
    assert t["ranks"] == [0] and t["skipped_events"] == 0 and t["devices"][0]["name"] == "NVIDIA H200"


def test_relative_times_without_base_and_two_ranks(tmp_path):
    for rank in (0, 1):
        b = _launch_bound_trace(kernels=600)
        b.base_ns, b.rank = None, rank
        b.write(tmp_path / f"r{rank}.pt.trace.json")
    fr, a = _analyze(tmp_path)
    j = trace_doc(a)
    assert j["trace"]["ranks"] == [0, 1] and len(j["activity"]["devices"]) == 2
    assert j["activity"]["epoch"] is False and j["activity"]["t_start"] < 1e8
    assert _ids(a)[0] == "launch_bound" and a.findings[0].evidence["kernels"] == 1200


def test_trace_without_gpu_events_is_no_data():
    b = TraceBuilder()
    b.cpu("aten::add", 0.0, 5.0)
    with pytest.raises(NoDataError, match="ProfilerActivity.CUDA"):
        analyze_trace(read_trace(json.dumps(b.document())), line_rate_gbs=LINE, line_rate_source="option")


def test_gpu_only_trace_still_analyzed():
    b = _launch_bound_trace(kernels=50)
    b.events = [e for e in b.events if e["pid"] == b.device]
    _, a = _analyze(json.dumps(b.document()))
    assert any("ProfilerActivity.CPU" in n for n in a.trace["notes"])
    assert a.activity["busy_fraction"] > 0 and a.idle_gaps and a.idle_gaps[0]["cause"] == "untraced"


def test_diagnoses_ordered_by_time_at_stake():
    _, a = _analyze(TRACES / "train_slow.json.gz")
    stakes = [d.evidence["time_at_stake_ms"] for d in a.findings]
    assert stakes == sorted(stakes, reverse=True) and len(stakes) >= 2
    assert np.isfinite(stakes).all()


# -- the line rate a trace's own copies show (a floor of the link's rate) -----------------------

def test_default_line_rate_gives_way_to_faster_traced_copies():
    """H200 pinned uploads at 55.4 GB/s: the default 50 GB/s cannot be the line rate (they would
    run at 111% of it); the trace's fastest host copies are the floor, and every figure and
    the rules' `unseen` say so."""
    fr = read_trace(TRACES / "copy_pinned.json.gz")
    # (without the GPU's name in the trace: the H200's name now gives its Gen5 link, 55.4 GB/s)
    fr.devices = fr.devices.iloc[0:0]
    a = analyze_trace(fr, line_rate_gbs=50.0, line_rate_source="default")
    assert a.options["line_rate_source"] == "trace"
    assert a.options["line_rate_gbs"] == pytest.approx(55.36, abs=0.01)
    # pinned read-backs at 55.2809 GB/s: a floor rounded to 55.28 had them at 100.002% of it
    rbf = read_trace(DATA / "h200_bounds" / "traces" / "readback_pinned.json.gz")
    rbf.devices = rbf.devices.iloc[0:0]
    rb = _traced(rbf, line_rate_gbs=50.0, line_rate_source="default")
    for r in (*a.memcpy, *rb.memcpy):
        assert r.get("line_rate_share", 0.0) <= 1.0
    assert {x.id: x for x in rb.findings}["link_bound"].evidence["line_rate_source"] == "trace"


def test_measured_or_given_line_rates_are_kept_and_slow_copies_keep_the_default(pageable):
    fr = read_trace(TRACES / "copy_pinned.json.gz")
    for key in ("option", "meta", "cache", "link"):
        a = analyze_trace(fr, line_rate_gbs=50.0, line_rate_source=key)
        assert (a.options["line_rate_gbs"], a.options["line_rate_source"]) == (50.0, key)
    slow = _traced(pageable[0], line_rate_gbs=50.0, line_rate_source="default")
    # the trace names an H200: its usual Gen5 x16 link, said to be assumed (issue 33 class 14)
    assert (slow.options["line_rate_gbs"], slow.options["line_rate_source"]) == (55.4, "gpu_name")
    d = {x.id: x for x in slow.findings}["pageable_memcpy"]
    assert any("assumed from the GPU's model" in u for u in d.evidence["unseen"])


def test_a_few_small_fast_copies_say_nothing_of_the_link():
    from gpuscope.analysis.evidence.trace.trace_activity import FLOOR_MIN_BYTES

    b = TraceBuilder()
    b.kernel(0.0, 500.0)
    b.memcpy(600.0, 10.0, FLOOR_MIN_BYTES // 4, kind="HtoD", src="Pinned")  # (6.7 TB/s "rate": timer granularity)
    a = analyze_trace(read_trace(json.dumps(b.document())), line_rate_gbs=50.0, line_rate_source="default")
    # (the builder's trace names an H200: its usual link, 55.4 GB/s, assumed; not the copy's "rate")
    assert (a.options["line_rate_gbs"], a.options["line_rate_source"]) == (55.4, "gpu_name")


# -- a trace's own document keeps every finding the engine made of the trace -------------------

@pytest.mark.parametrize("name, finding", [("hbm_bound", "memory_bound"), ("tensor_bound", "compute_bound"),
                                           ("readback_pinned", "link_bound")])
def test_the_trace_document_keeps_findings_whose_id_is_not_their_rules(name, finding):
    """kernel_mix emits memory_bound / compute_bound and trace_link_bound emits link_bound: the
    trace part once kept its findings by *rule* id, so these vanished from the trace's own findings
    (no diagnosis, no first cause) while the analysis named them. The engine's part tag keeps them."""
    from gpuscope.analysis import analyze
    from gpuscope.sources import open_source

    a = analyze(open_source(DATA / "h200_bounds" / "traces" / f"{name}.json.gz"))
    assert finding in [d.id for d in a.findings]
    from gpuscope.analysis.causes import first_cause

    assert finding in [d.id for d in a.trace.findings]
    assert first_cause(a.trace.findings) == a.document()["first_cause"] is not None
    assert {d.part for d in a.findings} == {"trace"}

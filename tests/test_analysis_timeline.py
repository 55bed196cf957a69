from __future__ import annotations

import math

import pytest

from gpuscope.analysis import analyze
from gpuscope.analysis.evidence.log.bounds import compute_bounds
from gpuscope.analysis.evidence.log.timeline_summary import timeline_summary
from gpuscope.rolemodel import load_model
from tests.analysis_builders import LogBuilder, article_log, src


def _timeline_log() -> LogBuilder:
    """Hand-worked: GPU [1000,3000] w0 p0, [3500,5000] w1 p1, [4500,6000] w0 p2;
    synthesis [0,1000] p0, [0,1500] p1, [1500,4000] p2 (ms)."""
    b = LogBuilder()
    e = b.event
    e(0, "SYNTH_START", partition=0)
    e(0, "SYNTH_START", partition=1)
    e(1000, "SYNTH_END", partition=0, synth_ms=1000)
    e(1000, "GPU_START", partition=0, worker=0)
    e(1500, "SYNTH_END", partition=1, synth_ms=1500)
    e(1500, "SYNTH_START", partition=2)
    e(3000, "GPU_END", partition=0, worker=0, gpu_ms=2000)
    e(3500, "GPU_START", partition=1, worker=1)
    e(4000, "SYNTH_END", partition=2, synth_ms=2500)
    e(4500, "GPU_START", partition=2, worker=0)
    e(5000, "GPU_END", partition=1, worker=1, gpu_ms=1500)
    e(6000, "GPU_END", partition=2, worker=0, gpu_ms=1500)
    return b


def test_timeline_events_hand_worked():
    p = _timeline_log().build()
    a = analyze(src(p))
    tl = a.log.timeline
    assert tl["source"] == "TIMELINE"
    assert tl["wall_s"] == pytest.approx(6.0)
    assert tl["gpu_span_s"] == pytest.approx(5.0)
    assert tl["gpu_busy_s"] == pytest.approx(4.5)
    assert tl["gpu_busy_fraction"] == pytest.approx(0.9)
    assert tl["idle_gaps"] == 1 and tl["idle_total_s"] == pytest.approx(0.5)
    assert tl["idle_largest_s"] == pytest.approx(0.5)
    assert tl["partitions"] == 3
    assert tl["synth_s"] == pytest.approx(4.0)
    assert tl["synth_gpu_overlap_s"] == pytest.approx(2.5)
    assert tl["synth_overlap_fraction"] == pytest.approx(0.625)
    assert tl["synth_parallelism"] == 2
    assert tl["workers"]["0"]["busy_s"] == pytest.approx(3.5)
    assert tl["workers"]["0"]["busy_fraction"] == pytest.approx(0.7)
    assert tl["workers"]["1"]["busy_fraction"] == pytest.approx(0.3)
    assert tl["gpu_ms_median"] == 1500
    # bounds without tenures: GPU floor from gpu_ms, CPU floor from synthesis / parallelism
    b = a.log.bounds
    assert b["partitions"] == 3
    assert b["gpu_floor_s"] == pytest.approx(4.5)
    assert b["cpu_floor_s"] == pytest.approx(3 * 1500 / 2 / 1000)
    assert b["observed_s"] == pytest.approx(6.0)
    assert b["binding"] == "gpu" and b["observed_over_gpu_floor"] == pytest.approx(6 / 4.5)


def test_unpaired_events_are_counted_not_fatal():
    b = _timeline_log()
    b.event(7000, "GPU_START", partition=3, worker=1)  # cut off
    tl = analyze(src(b.build())).log.timeline
    assert tl["partitions"] == 3 and tl["unpaired_events"] == 1


def test_timeline_from_timestamped_tenures():
    b = LogBuilder()
    b.tenure(1000, ts_end=101.0, ntt_kernels=100, msm=400)
    b.tenure(500, ts_end=102.0, ntt_kernels=100, msm=200)
    a = analyze(src(b.build()))
    tl = a.log.timeline
    assert tl["source"] == "tenures"
    assert tl["gpu_busy_fraction"] == pytest.approx(0.75)
    assert tl["idle_gaps"] == 1 and tl["idle_total_s"] == pytest.approx(0.5)
    assert tl["wall_s"] == pytest.approx(2.0)
    assert tl["gpu_compute_fraction"] == pytest.approx(0.6 / 2.0)


def test_no_timestamps_no_timeline():
    a = analyze(src(article_log()))
    assert a.log.timeline["source"] is None and math.isnan(a.log.timeline["gpu_busy_fraction"])
    j = a.document()["log"]["timeline"]
    assert "wall_s" in j and j["wall_s"] is None and j["gpu_busy_fraction"] is None


def test_article_bounds():
    a = analyze(src(article_log()))
    b = a.log.bounds
    # median per-partition GPU compute: 1233, 1233, 1230, 1227 -> 1231.5 ms; x 4 partitions
    assert b["gpu_per_partition_ms"] == 1231.5
    assert b["gpu_floor_s"] == pytest.approx(4.926)
    assert b["observed_s"] == pytest.approx(14.46)
    assert "lower bound" in b["observed_basis"]
    assert b["binding"] == "gpu" and math.isnan(b["cpu_floor_s"])
    assert any("CPU floor unknown" in s for s in b["assumptions"])


def test_cpu_floor_states_assumptions():
    b = LogBuilder()
    for _ in range(4):
        b.tenure(2000, ntt_kernels=500, msm_invoke=1000)
    for _ in range(4):
        b.value("prep_msm", 1800)
        b.value("b_g2_msm", 400)
    p = b.build()
    a = analyze(src(p))
    bd = compute_bounds(a.log.record_split, timeline_summary(p.timeline, a.log.record_split, p.components),
                        a.log.components, load_model(), p.timeline)
    # 2200 ms of prep x 4 outside the held time is above the 8 s observed (the held time's sum):
    # a floor is never above what was observed (issue 34 class 16), and the assumption says so
    assert bd["cpu_per_partition_ms"] == pytest.approx(2000)
    assert bd["cpu_floor_s"] == pytest.approx(8.0) and bd["gpu_floor_s"] == pytest.approx(4.0)
    assert any("(8.8 s) exceeds the observed time" in s for s in bd["assumptions"])
    assert bd["binding"] == "cpu"
    assert any("assumed 1" in s for s in bd["assumptions"])


def test_cpu_floor_is_the_slower_concurrent_stream():
    b = _timeline_log()   # synth medians 1500 ms, parallelism 2 -> 750 ms per partition
    b.tenure(2000, ntt_kernels=800, msm_invoke=1000)
    b.value("prep_msm", 1800)   # 2 workers in TIMELINE -> 900 ms per partition
    bd = analyze(src(b.build())).log.bounds
    assert bd["synth_floor_s"] == pytest.approx(3 * 0.75)
    assert bd["cpu_work_floor_s"] == pytest.approx(3 * 0.9)
    assert bd["cpu_floor_s"] == pytest.approx(2.7)
    assert any("slower of the two streams" in s for s in bd["assumptions"])

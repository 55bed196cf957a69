"""The mutex-pipeline simulation on hand-worked cases, and the pinned what-if on synthetic logs."""

from __future__ import annotations

import numpy as np
import pytest

from gpuscope.analysis.whatif.pipeline_sim import PartitionTimes, simulate, synthesis_ready_times
from gpuscope.analysis.whatif.predict import WhatIfUnavailable, predict_pinned
from tests.synthetic_parsed import make_parsed


def _times(n, **kw):
    base = {"upload_ms": np.ones(n), "gpu_pre_ms": np.full(n, 2.0), "gpu_post_ms": np.ones(n)}
    base.update({k: np.asarray(v, dtype=float) for k, v in kw.items()})
    return PartitionTimes(**base)


# --- the simulation, worked by hand ------------------------------------------------------

def test_two_workers_gpu_bound_makespan_is_sum_of_tenures():
    # Tenure = 1 + 2 + 1 = 4 ms; no CPU work: the lock serialises everything: 3 x 4 = 12.
    r = simulate(_times(3), workers=2)
    assert r.makespan_ms == 12.0
    assert list(r.grant) == [0.0, 4.0, 8.0]
    assert list(r.lock_wait_ms) == [0.0, 4.0, 4.0]
    assert list(r.worker) == [0, 1, 0]
    assert r.held_fraction == 1.0
    assert r.compute_fraction == pytest.approx(9 / 12)


def test_post_lock_cpu_delays_next_pick_but_not_the_other_worker():
    # w0: p0 [0,4], CPU until 5, picks p2 at 5, waits for p1 (released at 8): p2 [8,12], done 13.
    r = simulate(_times(3, post_ms=[1, 1, 1]), workers=2)
    assert list(r.pick) == [0.0, 0.0, 5.0]
    assert list(r.release) == [4.0, 8.0, 12.0]
    assert r.makespan_ms == 13.0


def test_cpu_floor_binds_with_slow_synthesis():
    # One synthesis thread, 5 ms per partition: ready at 5, 10, 15; each tenure 4 ms after.
    r = simulate(_times(3, synth_ms=[5, 5, 5]), workers=2, synth_threads=1)
    assert list(r.ready) == [5.0, 10.0, 15.0]
    assert list(r.grant) == [5.0, 10.0, 15.0]
    assert r.makespan_ms == 19.0  # CPU floor 15 + last tenure 4
    assert (r.lock_wait_ms == 0).all()


def test_host_budget_slots_throttle_synthesis():
    # Tenure 5 ms (upload 0, gpu_pre 5, post 0), synthesis 10 ms, 2 threads, 2 workers.
    # Unbounded: ready 10, 10, 20, 20; grants 10, 15, 20, 25 -> makespan 30.
    t = _times(4, upload_ms=[0] * 4, gpu_pre_ms=[5] * 4, gpu_post_ms=[0] * 4, synth_ms=[10] * 4)
    free = simulate(t, workers=2, synth_threads=2)
    assert list(free.grant) == [10.0, 15.0, 20.0, 25.0] and free.makespan_ms == 30.0
    # Two slots: p2 starts only when the worker is done with p0 (15), p3 when p1 is done (20):
    # ready 10, 10, 25, 30; grants 10, 15, 25, 30 -> makespan 35.
    r = simulate(t, workers=2, synth_threads=2, slots=2)
    assert list(r.ready) == [10.0, 10.0, 25.0, 30.0]
    assert list(r.grant) == [10.0, 15.0, 25.0, 30.0]
    assert r.makespan_ms == 35.0
    # Slots beyond what supply needs change nothing.
    big = simulate(t, workers=2, synth_threads=2, slots=8)
    assert list(big.grant) == list(free.grant) and big.makespan_ms == free.makespan_ms
    with pytest.raises(ValueError):
        simulate(t, workers=2, synth_threads=2, slots=0)


def test_barrier_waits_for_prep_started_at_pick():
    # prep 4 ms from pick; barrier reached 3 ms after grant -> 1 ms stall each time.
    r = simulate(_times(3, synth_ms=[5, 5, 5], prep_ms=[4, 4, 4]), workers=2, synth_threads=1)
    assert list(r.barrier_ms) == [1.0, 1.0, 1.0]
    assert list(r.held_ms) == [5.0, 5.0, 5.0]
    assert r.makespan_ms == 20.0


def test_lock_wait_gives_prep_time_so_queued_partition_has_no_barrier():
    # Two workers, prep 6: p0 stalls 3 at its barrier (at 3, prep ends 6); p1 waited 7 for the lock.
    r = simulate(_times(2, prep_ms=[6, 6]), workers=2)
    assert list(r.barrier_ms) == [3.0, 0.0]
    assert list(r.grant) == [0.0, 7.0]
    assert r.makespan_ms == 11.0


def test_two_gpus_have_a_mutex_each():
    # 1 worker per GPU, 4 tenures of 4 ms: two at a time -> makespan 8, no lock waits.
    r = simulate(_times(4), workers=1, gpus=2)
    assert r.makespan_ms == 8.0
    assert list(r.worker) == [0, 1, 0, 1] and (r.lock_wait_ms == 0).all()
    assert r.held_fraction == 1.0
    # 2 workers per GPU: workers 0,1 share GPU 0; 2,3 share GPU 1.
    r = simulate(_times(4), workers=2, gpus=2)
    assert list(r.grant) == [0.0, 4.0, 0.0, 4.0] and r.makespan_ms == 8.0


def test_synthesis_threads_round_robin_by_earliest_free():
    ready = synthesis_ready_times(np.array([4.0, 1.0, 1.0, 1.0]), 2)
    assert list(ready) == [4.0, 1.0, 2.0, 3.0]


def test_simulation_never_beats_either_floor():
    rng = np.random.default_rng(3)
    for _ in range(30):
        n = int(rng.integers(1, 12))
        t = _times(n, upload_ms=rng.uniform(0, 5, n), synth_ms=rng.uniform(0, 20, n),
                   prep_ms=rng.uniform(0, 8, n), pre_ms=rng.uniform(0, 2, n), post_ms=rng.uniform(0, 2, n))
        threads = int(rng.integers(1, 4))
        r = simulate(t, workers=int(rng.integers(1, 4)), synth_threads=threads)
        assert r.makespan_ms >= r.held_ms.sum() - 1e-9
        assert r.makespan_ms >= t.synth_ms.sum() / threads - 1e-9
        # the mutex is exclusive: tenures never overlap
        order = np.argsort(r.grant)
        assert (r.grant[order][1:] >= r.release[order][:-1] - 1e-9).all()


def test_bad_durations_are_refused():
    with pytest.raises(ValueError):
        _times(2, prep_ms=[1.0, -1.0])
    with pytest.raises(ValueError):
        simulate(_times(2), workers=0)


# --- the what-if --------------------------------------------------------------------------

GIB = 1024**3


def _pageable(n=4, t0=1_000_000.0, gap_s=0.0, **over):
    ten = []
    t = t0
    for _ in range(n):
        d = {"h2d": 1000.0, "ntt_kernels": 1050.0, "msm_invoke": 600.0, "barrier_wait": 0.0,
             "batch_add": 400.0, "tail_msm": 200.0, "h2d_bytes": 1.5e9, "held": 2300.0, "t_start": t}
        d.update(over)
        ten.append(d)
        t += d["held"] / 1e3 + gap_s
    return ten


def test_pinned_held_is_measured_held_minus_upload_plus_bytes_over_line_rate():
    w = predict_pinned(make_parsed(_pageable()), line_rate_gbs=50.0)
    # 1.5e9 B at 50 GB/s = 30 ms; held 2300 - 1000 + 30 = 1330 (other 50 ms and NTT 50 ms kept)
    assert w.predicted["upload_ms"] == pytest.approx(30.0)
    assert w.predicted["held_ms_median"] == pytest.approx(1330.0)
    assert w.bytes_source == "log (h2d_bytes)"
    assert w.upload_field == "h2d"
    assert w.measured["upload_gbs"] == pytest.approx(1.5)
    assert list(w.per_partition["held_pred_ms"]) == pytest.approx([1330.0] * 4)


def test_throughput_calibrated_by_replaying_the_measured_run():
    # Back-to-back tenures: the replay of the measured run matches it exactly, so the
    # prediction is measured throughput x 2300/1330.
    w = predict_pinned(make_parsed(_pageable()), line_rate_gbs=50.0, workers=2)
    assert w.model_check["throughput_error"] == pytest.approx(0.0, abs=1e-9)
    assert w.measured["throughput_ppm"] == pytest.approx(4 / 9.2 * 60)
    assert w.predicted["throughput_speedup"] == pytest.approx(2300 / 1330)
    assert w.floors["binding"] == "gpu"
    assert w.floors["gpu_floor_s"] == pytest.approx(4 * 1.330)


def test_faster_upload_exposes_the_barrier():
    # prep 1500 ms: pageable uploads hid it; pinned, the first tenure stalls 770 ms at its barrier
    # (worked in docs/COMPARE.md); later ones waited for the lock long enough.
    p = make_parsed(_pageable(), side={"prep_msm": [1500.0] * 4})
    w = predict_pinned(p, line_rate_gbs=50.0, workers=2)
    assert list(w.per_partition["barrier_pred_ms"]) == pytest.approx([770.0, 0.0, 0.0, 0.0])
    assert list(w.per_partition["held_pred_ms"]) == pytest.approx([2100.0, 1330.0, 1330.0, 1330.0])


def test_cpu_floor_binds_when_synthesis_is_slow():
    p = make_parsed(_pageable(), side={"synth": [5000.0] * 4})
    w = predict_pinned(p, line_rate_gbs=50.0, workers=2, synth_threads=1)
    assert w.floors["binding"] == "cpu"
    assert w.floors["cpu_floor_s"] == pytest.approx(20.0)
    assert w.floors["predicted_makespan_s"] >= 20.0


def test_without_explicit_upload_ntt_kernels_is_the_upload_and_bytes_are_required():
    ten = [{"ntt_kernels": 287.0, "msm": 634.0, "batch_add": 401.0, "tail_msm": 198.0, "barrier_wait": 0.0,
            "held": 1634.0}]
    p = make_parsed(ten)
    with pytest.raises(WhatIfUnavailable, match="abc-bytes"):
        predict_pinned(p)
    w = predict_pinned(p, bytes_per_partition=1.5 * GIB, line_rate_gbs=50.0)
    up = 1.5 * GIB / 50e9 * 1e3
    assert w.upload_field == "ntt_kernels"
    assert w.predicted["held_ms_median"] == pytest.approx(1634.0 - 287.0 + up)
    assert any("lower bound" in n for n in w.notes)
    assert w.to_json()["measured"]["throughput_ppm"] is None  # no timestamps -> null, not NaN


def test_no_tenure_is_unavailable_and_bad_rate_refused():
    p = make_parsed([])
    with pytest.raises(WhatIfUnavailable, match="no complete"):
        predict_pinned(p, bytes_per_partition=1e9)
    with pytest.raises(WhatIfUnavailable, match="line rate"):
        predict_pinned(make_parsed(_pageable()), line_rate_gbs=0.0)


def test_prediction_error_is_relative():
    from gpuscope.analysis.compare.comparison import prediction_vs_measured

    w = predict_pinned(make_parsed(_pageable()), line_rate_gbs=50.0)
    e = prediction_vs_measured(w, 1400.0, 40.0, "pinned", held_mean_ms=1500.0, stalled=(1, 4))
    assert e["held_error"] == pytest.approx((1330 - 1400) / 1400)
    assert e["throughput_error"] == pytest.approx((w.predicted["throughput_ppm"] - 40) / 40)
    assert e["held_mean_error"] == pytest.approx((w.predicted["held_ms_mean"] - 1500) / 1500)
    assert e["stalled_measured"] == [1, 4] and e["stalled_predicted"][1] == w.partitions


def test_budget_slots_come_from_a_runs_meta():
    from gpuscope.sources import RunMeta

    gib = 1 << 30

    def slots(workload: dict) -> int | None:
        return RunMeta({"workload": workload}).budget_slots

    assert slots({"host_budget_bytes": 12 * gib, "partition_host_bytes": 2 * gib}) == 6
    assert slots({"host_budget_bytes": gib, "partition_host_bytes": 2 * gib}) is None
    assert slots({}) is None

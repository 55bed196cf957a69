"""compare statistics on known distributions, run figures and the verdict (synthetic logs)."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from gpuscope.analysis.compare.comparison import Side, compare
from gpuscope.analysis.compare.figures import pcie_per_phase, run_figures
from gpuscope.analysis.compare.stats import bootstrap_ratio, compare_components, describe
from gpuscope.analysis.whatif.predict import predict_pinned
from tests.synthetic_parsed import make_parsed


def test_scaled_sample_gives_ratio_two_with_ci_covering_two():
    rng = np.random.default_rng(11)
    a = rng.lognormal(mean=6.0, sigma=0.3, size=200)
    r, lo, hi = bootstrap_ratio(a, 2 * a, seed=1)
    assert r == pytest.approx(2.0)
    assert lo < 2.0 < hi
    assert hi - lo < 0.4


def test_independent_samples_with_known_medians():
    rng = np.random.default_rng(5)
    a = rng.normal(1000.0, 50.0, size=400)   # median 1000
    b = rng.normal(2900.0, 100.0, size=400)  # median 2900: ratio 2.9
    r, lo, hi = bootstrap_ratio(a, b, seed=0)
    assert r == pytest.approx(2.9, rel=0.02)
    assert lo < r < hi
    assert lo > 2.8 and hi < 3.0


def test_ci_covers_the_true_ratio_about_95_percent_of_the_time():
    # 200 replications of two samples with true median ratio 1.5; the 95% interval must
    # cover 1.5 in roughly 95% of them (binomial sd ~1.5%; accept 88-99%).
    rng = np.random.default_rng(17)
    covered = 0
    for rep in range(200):
        a = rng.normal(100.0, 10.0, size=80)
        b = rng.normal(150.0, 15.0, size=80)
        _, lo, hi = bootstrap_ratio(a, b, seed=rep, n_boot=400)
        covered += lo <= 1.5 <= hi
    assert 176 <= covered <= 198


def test_ci_is_reproducible_with_a_seed_and_moves_with_another():
    rng = np.random.default_rng(2)
    a, b = rng.exponential(100, 50), rng.exponential(150, 50)
    assert bootstrap_ratio(a, b, seed=7) == bootstrap_ratio(a, b, seed=7)
    assert bootstrap_ratio(a, b, seed=7)[1:] != bootstrap_ratio(a, b, seed=8)[1:]


def test_ci_narrows_with_more_data():
    rng = np.random.default_rng(3)
    small = bootstrap_ratio(rng.normal(100, 20, 20), rng.normal(100, 20, 20), seed=0)
    big = bootstrap_ratio(rng.normal(100, 20, 2000), rng.normal(100, 20, 2000), seed=0)
    assert (big[2] - big[1]) < (small[2] - small[1]) / 3


def test_undefined_ratios_are_nan_not_errors():
    assert all(math.isnan(x) for x in bootstrap_ratio([], [1.0, 2.0]))
    assert all(math.isnan(x) for x in bootstrap_ratio([0.0, 0.0], [1.0]))
    assert describe([np.nan])["count"] == 0


# --- two synthetic runs: pageable (slow upload) and pinned ---------------------------------

def _run(upload_ms, n=12, seed=0, t0=1_700_000_000.0, bytes_=1.5e9):
    rng = np.random.default_rng(seed)
    ten, t = [], t0
    for _ in range(n):
        up = float(upload_ms * rng.uniform(0.8, 1.2))
        msm = float(rng.normal(600, 5))
        held = up + 50 + msm + 400 + 200 + 20
        ten.append({"h2d": up, "ntt_kernels": up + 50, "msm_invoke": msm, "batch_add": 400.0,
                    "tail_msm": 200.0, "barrier_wait": 0.0, "h2d_bytes": bytes_, "held": held, "t_start": t})
        t += held / 1e3
    return make_parsed(ten)


def test_pageable_vs_pinned_medians_ratio_and_verdict():
    pinned = Side("pinned", _run(28.0, seed=1))
    pageable = Side("pageable", _run(1500.0, seed=2))
    cmp = compare(pinned, pageable, seed=3, n_boot=500)
    c = cmp.components
    assert list(c)[0] == "mutex_held"
    assert c["batch_add"]["a_median_ms"] == 400.0 and c["batch_add"]["ratio"] == 1.0
    held_a = np.median(pinned.parsed.records["held_ms"])
    held_b = np.median(pageable.parsed.records["held_ms"])
    assert c["mutex_held"]["a_median_ms"] == pytest.approx(held_a)
    assert c["mutex_held"]["b_median_ms"] == pytest.approx(held_b)
    assert c["mutex_held"]["ratio"] == pytest.approx(held_b / held_a)
    assert c["mutex_held"]["ci_low"] > 1.0
    assert "h2d_bytes" not in c
    assert cmp.winner == "pinned"
    assert cmp.verdict.startswith("pinned cut mutex_held 2.")
    assert "throughput +2." in cmp.verdict
    assert cmp.verdict == "pinned cut mutex_held 2.1x (2.0-2.2), throughput +2.1x, upload now 56 GB/s (was 1.0)"
    # upload: the logged 1.5e9 B over each tenure's own h2d time, median over tenures
    up = pinned.parsed.components.query("component == 'h2d'")["value_ms"].to_numpy()
    assert cmp.a["upload_gbs"] == pytest.approx(np.median(1.5e9 / (up / 1e3) / 1e9))
    assert cmp.a["bytes_source"] == "log (h2d_bytes)"
    # throughput: back-to-back tenures -> n / sum(held) per minute
    assert cmp.a["throughput_ppm"] == pytest.approx(12 / (pinned.parsed.records["held_ms"].sum() / 1e3) * 60)
    assert cmp.a["gpu_busy_fraction"] == pytest.approx(1.0)


def test_order_swapped_names_the_other_side_and_inverts_ratio():
    pinned = Side("pinned", _run(28.0, seed=1))
    pageable = Side("pageable", _run(1500.0, seed=2))
    ab = compare(pinned, pageable, seed=3, n_boot=400)
    ba = compare(pageable, pinned, seed=3, n_boot=400)
    assert ba.winner == "pinned"
    assert ba.components["mutex_held"]["ratio"] == pytest.approx(1 / ab.components["mutex_held"]["ratio"])
    assert ba.verdict.startswith("pinned cut mutex_held")


def test_same_distribution_gives_no_clear_change():
    a = Side("a", _run(500.0, seed=4, n=30))
    b = Side("b", _run(500.0, seed=5, n=30))
    cmp = compare(a, b, seed=0, n_boot=500)
    assert cmp.winner is None
    assert cmp.verdict.startswith("no clear change in mutex_held")


def test_json_contract_and_seed_reproducibility():
    a, b = Side("pinned", _run(28.0, seed=1)), Side("pageable", _run(1500.0, seed=2))
    j1 = compare(a, b, seed=9, n_boot=300).to_json()
    j2 = compare(a, b, seed=9, n_boot=300).to_json()
    assert json.dumps(j1, sort_keys=True) == json.dumps(j2, sort_keys=True)
    for key in ("a", "b", "components", "verdict"):
        assert key in j1
    for row in j1["components"].values():
        assert {"a_median_ms", "b_median_ms", "ratio", "ci_low", "ci_high"} <= set(row)
    json.dumps(j1, allow_nan=False)  # no NaN leaks into the JSON


def test_component_intervals_do_not_depend_on_which_other_components_exist():
    a, b = Side("a", _run(28.0, seed=1)), Side("b", _run(1500.0, seed=2))
    full = compare_components(a, b, seed=4, n_boot=300)
    only = compare_components(a, b, seed=4, n_boot=300, names=["msm_invoke"])
    assert only["msm_invoke"] == full["msm_invoke"]


def test_prediction_against_measured_pinned():
    pinned, pageable = _run(28.0, seed=1), _run(1500.0, seed=2)
    w = predict_pinned(pageable, line_rate_gbs=54.0)
    cmp = compare(Side("pinned", pinned), Side("pageable", pageable), seed=0, n_boot=200,
                  whatif=w, predicted_for="a")
    p = cmp.prediction
    assert p["against"] == "pinned"
    # the synthetic pinned upload is 1.5e9 B in ~28 ms (~54 GB/s): the projection lands close
    assert abs(p["held_error"]) < 0.02
    assert abs(p["throughput_error"]) < 0.05


def test_pcie_per_phase_picks_samples_inside_phase_intervals():
    phases = pd.DataFrame({"worker": [0, 0, 1], "gpu": [0, 0, 0], "partition": [0, 0, 1],
                           "phase": ["h2d", "msm", "h2d"], "t_start": [0.0, 1.0, 2.0], "t_end": [1.0, 2.0, 3.0]})
    t = np.arange(0.05, 3.0, 0.1)
    samples = pd.DataFrame({"t_wall": t, "gpu": 0, "rx_gbs": np.where((t // 1) == 1, 50.0, 2.0),
                            "tx_gbs": 0.1, "sm_active": np.where((t // 1) == 1, 0.95, 0.05)})
    out = pcie_per_phase(samples, phases)
    assert out["h2d"]["samples"] == 20 and out["msm"]["samples"] == 10
    assert out["h2d"]["rx_gbs_median"] == 2.0
    assert out["msm"]["rx_gbs_median"] == 50.0 and out["msm"]["sm_active_median"] == 0.95
    # another GPU's samples do not count
    samples["gpu"] = 1
    assert pcie_per_phase(samples, phases) == {}


def test_run_figures_without_timestamps_have_null_throughput():
    p = make_parsed([{"ntt_kernels": 287.0, "msm": 634.0, "held": 1634.0}])
    f = run_figures(Side("x", p))
    assert math.isnan(f["throughput_ppm"]) and f["upload_field"] == "ntt_kernels"
    assert math.isnan(f["upload_gbs"])


def test_small_but_significant_held_change_defers_to_throughput():
    # 3% slower tenures on B, but B has twice the throughput (two GPUs): B wins, by throughput.
    from gpuscope.analysis.compare.verdict import verdict

    comps = {"mutex_held": {"ratio": 0.97, "ci_low": 0.95, "ci_high": 0.99}}
    a = {"label": "one-gpu", "throughput_ppm": 80.0}
    b = {"label": "two-gpu", "throughput_ppm": 170.0}
    text, winner = verdict(a, b, comps, "mutex_held")
    assert winner == "two-gpu"
    assert text.startswith("no material change in mutex_held")
    assert "throughput two-gpu/one-gpu = 2.12x" in text

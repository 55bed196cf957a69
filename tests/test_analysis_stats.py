from __future__ import annotations

import math

import numpy as np
import pytest

from gpuscope.analysis.evidence.log.stats import STAT_COLUMNS, component_stats
from gpuscope.rolemodel import load_model
from tests.analysis_builders import LogBuilder

MODEL = load_model()


def test_stats_match_numpy():
    vals = [287.0, 1673.0, 5617.0, 1036.0, 90.0]
    b = LogBuilder()
    for v in vals:
        b.value("ntt_kernels", v)
    b.value("prep_msm", 7)
    s = component_stats(b.build().components, MODEL)
    r = s.loc["ntt_kernels"]
    x = np.array(vals)
    assert r["count"] == 5 and r["sum_ms"] == x.sum() and r["mean_ms"] == pytest.approx(x.mean())
    assert r["median_ms"] == np.median(x)
    assert r["p10_ms"] == pytest.approx(np.quantile(x, 0.1))
    assert r["p90_ms"] == pytest.approx(np.quantile(x, 0.9))
    assert r["cv"] == pytest.approx(x.std(ddof=1) / x.mean())
    assert r["role"] == "h2d"
    one = s.loc["prep_msm"]
    assert one["count"] == 1 and math.isnan(one["cv"])  # cv needs 2 values


def test_stats_order_roles_then_log_order_and_unknowns():
    b = LogBuilder()
    b.value("fin_timing.finish", 400)
    b.value("prep_msm", 10)
    b.value("batch_add", 400)
    b.value("msm_invoke", 600)
    b.value("ntt_kernels", 100)
    b.value("mutex_held", 2000)
    s = component_stats(b.build().components, MODEL)
    assert list(s.index) == ["mutex_held", "ntt_kernels", "batch_add", "msm_invoke", "prep_msm", "fin_timing.finish"]
    assert s.loc["fin_timing.finish", "role"] == "-" and s.loc["mutex_held", "role"] == "held"


def test_outer_of_a_contains_rule_takes_the_remainder_role_when_its_inner_is_logged():
    b = LogBuilder()
    b.value("ntt_kernels", 100)
    b.value("mutex_held", 2000)
    assert component_stats(b.build().components, MODEL).loc["ntt_kernels", "role"] == "h2d"
    b.value("h2d", 60)  # the explicit upload: ntt_kernels' rest is NTT compute, as the split counts it
    s = component_stats(b.build().components, MODEL)
    assert s.loc["ntt_kernels", "role"] == "gpu_compute" and s.loc["h2d", "role"] == "h2d"


def test_empty_components_keep_columns():
    s = component_stats(LogBuilder().build().components, MODEL)
    assert list(s.columns) == STAT_COLUMNS and len(s) == 0


def test_zero_mean_cv_is_nan():
    b = LogBuilder()
    b.value("barrier_wait", 0)
    b.value("barrier_wait", 0)
    s = component_stats(b.build().components, MODEL)
    assert math.isnan(s.loc["barrier_wait", "cv"])

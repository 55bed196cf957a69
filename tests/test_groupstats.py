"""gpuscope.analysis.evidence.log.groupstats gives pandas' groupby figures to the last bit (sums, means,
variances, medians, quantiles), with the C loops (gpuscope/_groupstats.c) and without them."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuscope.analysis.evidence.log import groupstats as gs

PATHS = ["native", "pandas"]


@pytest.fixture(params=PATHS)
def path(request, monkeypatch):
    if request.param == "native" and gs._native() is None:
        pytest.skip("gpuscope._groupstats is not built here")
    if request.param == "pandas":
        monkeypatch.setattr(gs, "_native", lambda: None)
    return request.param


def _ref(labels, values):
    g = pd.Series(values).groupby(labels)
    agg = g.agg(["sum", "mean", "std", "median"])
    q = g.quantile([0.1, 0.9]).unstack()
    return agg, q


# The last bit is pandas' own choice of summation order, which changes between releases (3.0
# sums a sorted group another way than 3.1, seen on the GPU machine's pandas 3.0.6): bit for bit
# where the installed pandas is the one groupstats was measured against, within 1e-12 elsewhere.
EXACT = tuple(int(x) for x in pd.__version__.split(".")[:2]) >= (3, 1)


def _same(ours, theirs) -> bool:
    if EXACT:
        return np.array_equal(ours, theirs, equal_nan=True)
    return np.allclose(ours, theirs, rtol=1e-12, atol=0.0, equal_nan=True)


def _check(labels, values):
    k = int(labels.max()) + 1
    agg, q = _ref(labels, values)
    present = np.bincount(labels, minlength=k) > 0
    s, c = gs.sums(labels, values, k)
    assert _same(s[present], agg["sum"].to_numpy())
    assert _same(gs.means(labels, values, k)[present], agg["mean"].to_numpy())
    assert _same(np.sqrt(gs.variances(labels, values, k))[present], agg["std"].to_numpy())
    med, qv = gs.order_stats(labels, values, k)
    assert np.array_equal(med[present], agg["median"].to_numpy())
    assert np.array_equal(qv[present, 0], q[0.1].to_numpy()) and np.array_equal(qv[present, 1], q[0.9].to_numpy())


VALUES = st.sampled_from(["normal", "ints", "tenths", "tiny"])


@settings(max_examples=150, deadline=None)
@given(st.integers(1, 2000), st.integers(1, 12), VALUES, st.booleans(), st.integers(0, 2**32 - 1))
def test_the_figures_are_pandas_figures(n, k, kind, sort, seed):
    for name in PATHS:
        if name == "native" and gs._native() is None:
            continue
        real = gs._native
        if name == "pandas":
            gs._native = lambda: None
        try:
            rng = np.random.default_rng(seed)
            labels = rng.integers(0, k, n).astype(np.int64)
            if sort:
                labels = np.sort(labels)  # (pandas sums sorted labels another way)
            values = {"normal": rng.normal(100, 30, n), "ints": rng.integers(0, 5000, n).astype(float),
                      "tenths": np.round(rng.uniform(0, 500, n), 1), "tiny": rng.exponential(1e-3, n)}[kind]
            _check(labels, values)
        finally:
            gs._native = real


def test_one_group_and_one_value(path):
    _check(np.zeros(1, dtype=np.int64), np.array([3.5]))
    _check(np.zeros(500, dtype=np.int64), np.random.default_rng(1).normal(10, 3, 500))


def test_dense_labels_keep_pandas_order():
    labels, keys = gs.dense(np.array([7, 3, 7, 9, 3]))
    assert labels.tolist() == [1, 0, 1, 2, 0] and keys.tolist() == [3, 7, 9]


def _plain(labels, values, k):
    """describe's figures the plain way: dense labels, then sums, means, variances, order_stats."""
    dl, present = gs.dense(labels)
    kk = len(present)
    s, c = gs.sums(dl, values, kk)
    med, qv = gs.order_stats(dl, values, kk)
    return present, s, c, gs.means(dl, values, kk), gs.variances(dl, values, kk), med, qv


KINDS = st.sampled_from(["normal", "ints", "tenths", "tiny", "zeros", "signed_zeros", "inf", "nan", "one", "wide"])


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 3000), st.integers(1, 40), KINDS, st.sampled_from([np.int8, np.int16, np.int32, np.int64]),
       st.booleans(), st.integers(0, 2**32 - 1))
def test_describe_is_the_plain_path(n, k, kind, width, sort, seed):
    """The C path (moments + select_ranks: histogram bins, gathered bins, quickselect) gives the
    figures of the plain one, bit for bit, on labels of any width, with NaN, infinities,
    repeated values and both signed zeros (those groups take the plain partition)."""
    if gs._native() is None:
        pytest.skip("gpuscope._groupstats is not built here")
    rng = np.random.default_rng(seed)
    k = min(k, 127)
    labels = rng.integers(0, k, n)
    if sort:
        labels = np.sort(labels)
    values = {"normal": rng.normal(100, 30, n), "ints": rng.integers(0, 50, n).astype(float),
              "tenths": np.round(rng.uniform(0, 500, n), 1), "tiny": rng.exponential(1e-300, n),
              "zeros": np.zeros(n), "signed_zeros": rng.choice([0.0, -0.0, 1.0, -1.0], n),
              "inf": rng.choice([np.inf, -np.inf, 1.0, 2.5, np.nan], n), "nan": np.where(rng.random(n) < 0.5, np.nan, 1.0),
              "one": np.full(n, 7.25), "wide": rng.lognormal(0, 20, n) * rng.choice([-1.0, 1.0], n)}[kind]
    labels = labels.astype(width)
    fig = gs.describe(labels, values, k)
    present, s, c, mean, var, med, qv = _plain(labels.astype(np.int64), values, k)
    assert np.array_equal(fig.present, present)
    for ours, theirs in ((fig.sums, s), (fig.counts, c), (fig.means, mean), (fig.variances, var),
                         (fig.medians, med), (fig.quantiles, qv)):
        assert np.array_equal(ours, theirs, equal_nan=True)
        assert np.array_equal(np.signbit(ours), np.signbit(theirs))  # (-0.0 stays -0.0)


def test_describe_bins_with_many_values_and_one_key():
    """Groups of a million values: a histogram bin of one key (many equal values) and wide bins
    both find the ranks the full partition finds."""
    if gs._native() is None:
        pytest.skip("gpuscope._groupstats is not built here")
    rng = np.random.default_rng(7)
    n = 1_000_000
    labels = rng.integers(0, 3, n).astype(np.int32)
    values = np.where(labels == 0, np.round(rng.normal(100, 5, n), 2), rng.exponential(50, n))
    values[labels == 2] = np.where(rng.random(int((labels == 2).sum())) < 0.9, 3.0, 1e6)
    fig = gs.describe(labels, values, 3)
    present, s, c, mean, var, med, qv = _plain(labels, values, 3)
    assert np.array_equal(fig.medians, med) and np.array_equal(fig.quantiles, qv)
    assert np.array_equal(fig.sums, s) and np.array_equal(fig.variances, var)

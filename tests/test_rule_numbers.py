"""The rules' numbers without numpy's copies are numpy's numbers, bit for bit: cov_pair is
np.cov of two columns, correlation_of(cov_pair) is np.corrcoef's, arrays.median is
np.median / np.nanmedian (C selection of the middle values), on fresh random columns,
contiguous or a column of a grid (strided), with repeats, infinities and signed zeros."""

from __future__ import annotations

import numpy as np
import pytest

from gpuscope.analysis.evidence.log.rule_input import correlation, correlation_of, cov_pair
from gpuscope.arrays import median


def _column(rng, n, kind):
    x = {"normal": rng.normal(100, 30, n), "tenths": np.round(rng.uniform(0, 50, n), 1),
         "zeros": rng.choice([0.0, -0.0, 2.0], n), "neg": np.full(n, -0.0),
         "inf": rng.choice([np.inf, -np.inf, 1.0, 3.0], n), "nan": rng.choice([np.nan, 1.0, 2.5, -4.0], n)}[kind]
    if rng.random() < 0.5:  # a column of a records x components grid
        grid = np.full((n, 3), 7.0)
        grid[:, 1] = x
        return grid[:, 1]
    return x


def _same(a, b) -> bool:
    return np.array_equal(a, b, equal_nan=True) and np.array_equal(np.signbit(a), np.signbit(b))


@pytest.mark.parametrize("seed", range(80))
def test_cov_and_correlation_are_numpys(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 3000))
    kinds = ["normal", "tenths", "zeros", "inf"]
    a, b = _column(rng, n, kinds[seed % 4]), _column(rng, n, "normal")
    with np.errstate(all="ignore"):
        c = cov_pair(a, b)
        assert _same(c, np.cov(a, b))
        assert _same(np.float64(correlation_of(c)), np.corrcoef(a, b)[0, 1])
        ref = float(np.corrcoef(a, b)[0, 1]) if a.std() != 0 and b.std() != 0 else float("nan")
        assert _same(np.float64(correlation(a, b)), np.float64(ref))


@pytest.mark.parametrize("seed", range(120))
def test_median_is_numpys(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 5000))
    x = _column(rng, n, ["normal", "tenths", "zeros", "neg", "inf", "nan"][seed % 6])
    with np.errstate(all="ignore"):
        assert _same(median(x), np.median(x))
        kept = x[~np.isnan(x)]
        assert _same(median(x, skip_nan=True), np.median(kept) if kept.size else np.float64(np.nan))

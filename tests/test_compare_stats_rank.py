"""compare's bootstrap of the median by rank (compare.stats._boot_medians_by_rank) draws from
exactly the distribution of resampling whole: checked against the enumerated distribution of
small samples, odd and even, with ties, and against whole resampling near the switch-over."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from gpuscope.analysis.compare import stats as cs


def _exact(values):
    n = len(values)
    dist: dict[float, float] = {}
    for combo in itertools.product(values, repeat=n):
        m = float(np.median(combo))
        dist[m] = dist.get(m, 0.0) + 1.0 / n**n
    return dist


@pytest.mark.parametrize("values", [[1.0, 2.0, 3.0], [1.0, 2.0, 2.0, 5.0], [0.5, 1.0, 4.0, 8.0, 9.0], [3.0, 3.0, 3.0, 7.0]])
def test_rank_method_matches_the_enumerated_distribution(values):
    xs = np.sort(np.asarray(values))
    draws = cs._boot_medians_by_rank(xs, 200_000, np.random.default_rng(11))
    exact = _exact(values)
    got_values, got_counts = np.unique(draws, return_counts=True)
    assert set(got_values.tolist()) <= set(exact)
    for v, p in exact.items():
        freq = float(got_counts[got_values == v].sum()) / len(draws)
        assert freq == pytest.approx(p, abs=4 * (p * (1 - p) / len(draws)) ** 0.5 + 1e-4), v


def test_rank_method_agrees_with_whole_resampling_above_the_switch():
    rng = np.random.default_rng(3)
    v = np.round(rng.lognormal(size=cs.RANK_METHOD_MIN + 1), 3)
    by_rank = cs._boot_medians(v, 3000, np.random.default_rng(1))  # above the switch: by rank
    idx = np.random.default_rng(2).integers(0, len(v), size=(3000, len(v)))
    whole = np.median(v[idx], axis=1)
    assert np.quantile(by_rank, [0.025, 0.5, 0.975]) == pytest.approx(np.quantile(whole, [0.025, 0.5, 0.975]), rel=2e-3)
    assert by_rank.std() == pytest.approx(whole.std(), rel=0.1)


def test_small_samples_keep_whole_resampling_to_the_bit():
    # below the switch the intervals are those every earlier compare printed
    v = np.random.default_rng(4).lognormal(size=500)
    rng_a, rng_b = np.random.default_rng(9), np.random.default_rng(9)
    idx = rng_b.integers(0, len(v), size=(2000, len(v)))
    assert np.array_equal(cs._boot_medians(v, 2000, rng_a), np.median(v[idx], axis=1))

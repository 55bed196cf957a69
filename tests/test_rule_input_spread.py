"""gpuscope/analysis/evidence/log/rule_input.py spread/std_of/cv_of: numpy's mean, std and the coefficient
of variation the rules have always printed, to the bit, from one pass over the deviations
(contiguous and strided columns, sizes about numpy's pairwise blocks, large offsets, zeros)."""

from __future__ import annotations

import numpy as np
import pytest

from gpuscope.analysis.evidence.log.rule_input import coef_var, cv_of, spread, std_of


def columns(rng):
    for n in (2, 3, 7, 8, 9, 127, 128, 129, 1000, 4099, 100_003):
        yield rng.normal(30.0, 5.0, n)
        yield np.round(rng.uniform(0, 0.2, n), 2)
        yield 1e9 + rng.normal(0, 1e-3, n)
    grid = rng.uniform(1, 50, (5000, 3))
    yield grid[:, 1]  # (a wide table's column: a view of the parser's values)
    yield np.zeros(50)
    yield np.full(40, 3.25)


@pytest.mark.parametrize("seed", range(3))
def test_spread_gives_numpys_figures_to_the_bit(seed):
    for x in columns(np.random.default_rng(seed)):
        mean, sq = spread(x)
        assert mean == x.mean()
        assert std_of(sq, x.size) == x.std()
        assert std_of(sq, x.size, 1) == x.std(ddof=1)
        want = np.nan if x.mean() == 0 else float(x.std(ddof=1) / x.mean())
        got = cv_of(mean, sq, x.size)
        assert (np.isnan(want) and np.isnan(got)) or got == want
        assert (np.isnan(want) and np.isnan(coef_var(x))) or coef_var(x) == want

"""parsers/log/lines/records.py `_groups`: the regular layout's comparison (every row printing the
same number of counters, rows in order: an (n, c) table of views) gives the groups the general
gathers give, on fresh random counters (repeats, NaN, other sources' rows)."""

from __future__ import annotations

import numpy as np
import pytest

from gpuscope.parsers.log.codeops import same_regular
from gpuscope.parsers.log.lines import records as lr


def _general(counters, n, mine, monkeypatch):
    with monkeypatch.context() as m:
        m.setattr(lr, "same_regular", lambda *a: None)
        return lr._groups(counters, n, mine)


@pytest.mark.parametrize("seed", range(30))
def test_regular_counters_group_as_the_general_path(seed, monkeypatch):
    rng = np.random.default_rng(seed)
    n, c = int(rng.integers(1, 400)), int(rng.integers(1, 4))
    crow = np.repeat(np.arange(n), c)
    ccode = np.tile(rng.permutation(5)[:c], n).astype(np.int64)
    # values that repeat on runs of lines (the same step printed on several lines), a NaN now and then
    cval = np.repeat(rng.integers(0, 6, size=n), c).astype(float) + np.tile(np.arange(c), n)
    cval[rng.random(len(cval)) < 0.03] = np.nan
    if seed % 3 == 0:  # a code that changes within a run: no longer the same counters
        ccode[rng.integers(0, len(ccode))] = 9
    mine = rng.random(n) < (0.8 if seed % 2 else 1.0)
    got = lr._groups((crow, ccode, cval), n, mine)
    assert same_regular(crow, ccode, cval, np.bincount(crow, minlength=n), n) is not None
    np.testing.assert_array_equal(got, _general((crow, ccode, cval), n, mine, monkeypatch))


def test_irregular_rows_take_the_general_path():
    crow = np.array([0, 0, 1, 2, 2])  # row 1 prints one counter, the others two
    cnt = np.bincount(crow, minlength=3)
    assert same_regular(crow, np.zeros(5, dtype=np.int64), np.zeros(5), cnt, 3) is None
    assert same_regular(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros(0),
                            np.zeros(2, dtype=np.int64), 2) is None


@pytest.mark.parametrize("seed", range(30))
def test_code_sums_is_group_sums_of_the_words(seed):
    """codeops.code_sums against group_sums(g, words[c]) on regular groups (every group the same
    codes: its shortcut), nearly regular ones (one code or one group off) and shuffled ones."""
    from gpuscope.parsers.log.codeops import code_sums, group_sums

    rng = np.random.default_rng(seed)
    ng, k = int(rng.integers(1, 300)), int(rng.integers(1, 5))
    words = rng.integers(1, 2**62, size=8, dtype=np.int64).view(np.uint64)
    g = np.repeat(np.arange(ng), k)
    c = np.tile(rng.integers(0, 8, size=k), ng)
    kind = seed % 4
    if kind == 1:
        c[rng.integers(0, len(c))] = (c[0] + 1) % 8
    elif kind == 2 and ng > 1:
        g = np.sort(np.minimum(g + (rng.random(len(g)) < 0.05), ng - 1))
    elif kind == 3:
        order = rng.permutation(len(g))
        g, c = g[order], c[order]
    want = group_sums(g, words[c], ng)
    np.testing.assert_array_equal(code_sums(g, c, words, ng), want)
    np.testing.assert_array_equal(code_sums(g, c, words, ng, out=np.empty(len(c), dtype=np.uint64)), want)

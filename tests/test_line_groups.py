"""parsers/log/linerecords.py `_groups`: the regular layout's comparison (every row printing the
same number of counters, rows in order: an (n, c) table of views) gives the groups the general
gathers give, on fresh random counters (repeats, NaN, other sources' rows)."""

from __future__ import annotations

import numpy as np
import pytest

from gpuscope.parsers.log import linerecords as lr


def _general(counters, n, mine, monkeypatch):
    with monkeypatch.context() as m:
        m.setattr(lr, "_same_regular", lambda *a: None)
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
    assert lr._same_regular(crow, ccode, cval, np.bincount(crow, minlength=n), n) is not None
    np.testing.assert_array_equal(got, _general((crow, ccode, cval), n, mine, monkeypatch))


def test_irregular_rows_take_the_general_path():
    crow = np.array([0, 0, 1, 2, 2])  # row 1 prints one counter, the others two
    cnt = np.bincount(crow, minlength=3)
    assert lr._same_regular(crow, np.zeros(5, dtype=np.int64), np.zeros(5), cnt, 3) is None
    assert lr._same_regular(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros(0),
                            np.zeros(2, dtype=np.int64), 2) is None

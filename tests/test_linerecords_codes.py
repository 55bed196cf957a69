"""finish (parsers/log/lines/records.py) over name codes instead of arrays of name objects: each
numpy replacement gives what the pandas operation it replaced gave (factorize, groupby median,
unique, ngroup), on random input with repeats, NaN and unsorted keys."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from gpuscope.parsers.log import codeops
from gpuscope.parsers.log import scan as sc
from gpuscope.parsers.log.lines import records as lr


@pytest.mark.parametrize("head", [4096, 7, 1])
@pytest.mark.parametrize("seed", range(6))
def test_first_codes_is_factorize(seed, head, monkeypatch):
    """Also where the head it looks at first holds some of the names, or all (head 7, 1)."""
    monkeypatch.setattr(sc, "FIRST_CODES_HEAD", head)
    rng = np.random.default_rng(seed)
    m = int(rng.integers(1, 40))
    table = np.asarray([f"n{i}" for i in range(m)], dtype=object)
    codes = rng.integers(0, m, size=int(rng.integers(0, 500))).astype(np.int32)
    new, order = sc.first_codes(codes, m)
    want_codes, want_uniq = pd.factorize(table[codes])
    assert new.tolist() == want_codes.tolist()
    assert table[order].tolist() == list(want_uniq)


def _pandas_running_totals(names, values, mine):
    """The replaced implementation (pandas' groupby median over every name)."""
    sel = np.flatnonzero(mine)
    if len(sel) < 4:
        return [], values
    values = values.copy()
    codes, uniq = pd.factorize(names[sel])
    order = np.argsort(codes, kind="stable")
    idx, cc = sel[order], codes[order]
    v = values[idx]
    same = cc[1:] == cc[:-1]
    d = np.diff(v)
    nu = len(uniq)
    count = np.bincount(cc, minlength=nu)
    falls = np.bincount(cc[1:][same & (d < 0)], minlength=nu) > 0
    med = pd.Series(d[same]).groupby(cc[1:][same]).median().reindex(range(nu)).to_numpy()
    first = np.full(nu, np.nan)
    starts = np.flatnonzero(np.concatenate(([True], ~same)))
    first[cc[starts]] = v[starts]
    with np.errstate(invalid="ignore"):
        total = (count >= 4) & ~falls & (med > 0) & (first <= 2 * med)
    step = np.flatnonzero(same & total[cc[1:]]) + 1
    values[idx[step]] = d[step - 1]
    return [str(uniq[c]) for c in np.flatnonzero(total)], values


@pytest.mark.parametrize("seed", range(30))
def test_running_totals_as_pandas(seed):
    rng = np.random.default_rng(seed)
    m, n = int(rng.integers(1, 8)), int(rng.integers(0, 300))
    table = [f"t{i}" for i in range(m)]
    codes = rng.integers(0, m, size=n).astype(np.int32)
    values = rng.uniform(0, 5, size=n).round(1)
    for c in range(0, m, 2):  # every other name a running total (some starting too high)
        at = codes == c
        values[at] = np.cumsum(rng.choice([0.0, 1.0, 2.0, 3.0], size=int(at.sum()))) + rng.choice([0.0, 9.0])
    values[rng.random(n) < 0.03] = np.nan
    mine = rng.random(n) < 0.9
    want, want_values = _pandas_running_totals(np.asarray(table, dtype=object)[codes], values, mine)
    got_values = values.copy()
    got = lr.running_totals_codes(codes, table, got_values, mine)
    assert got == want
    np.testing.assert_array_equal(got_values, want_values)


@pytest.mark.parametrize("seed", range(12))
def test_running_totals_of_lines_alike(seed):
    """Every line the same names in the same order (runtotals.period: a name's values are
    every k-th), every value the log's own: what pandas finds, and runtotals.period tells such
    a layout from one a line breaks (another order, a name missing)."""
    from gpuscope.parsers.log import runtotals

    rng = np.random.default_rng(seed)
    k, rows = int(rng.integers(1, 6)), int(rng.integers(4, 200))
    table = [f"t{i}" for i in range(k)]
    codes = np.tile(rng.permutation(k), rows).astype(np.int32)
    values = rng.uniform(0, 5, size=len(codes)).round(1)
    for c in range(0, k, 2):
        at = codes == c
        values[at] = np.cumsum(rng.choice([0.0, 1.0, 2.0], size=int(at.sum()))) + rng.choice([0.0, 9.0])
    values[rng.random(len(codes)) < 0.03] = np.nan
    mine = np.ones(len(codes), dtype=bool)
    assert runtotals.period(codes) == k
    want, want_values = _pandas_running_totals(np.asarray(table, dtype=object)[codes], values, mine)
    got_values = values.copy()
    assert lr.running_totals_codes(codes, table, got_values, mine) == want
    np.testing.assert_array_equal(got_values, want_values)
    if k > 1:
        broken = codes.copy()
        broken[k], broken[k + 1] = codes[k + 1], codes[k]
        assert runtotals.period(broken) == 0
        assert runtotals.period(codes[:-1]) == 0


@pytest.mark.parametrize("seed", range(10))
def test_labels_and_distinct(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 400))
    cols = tuple(rng.integers(0, 3, size=n).astype(np.uint64) for _ in range(3))
    if seed % 2:  # runs of equal rows, as records print them
        cols = tuple(np.repeat(c[: n // 4 + 1], 4)[:n] for c in cols)
    got = codeops.labels(cols)
    want = pd.DataFrame({"k": cols[0], "a": cols[1], "b": cols[2]}).groupby(["k", "a", "b"], sort=False).ngroup()
    # the same partition of the rows (the numbering itself is free)
    assert len(set(zip(got.tolist(), want.tolist(), strict=True))) == len(set(want.tolist())) == len(set(got.tolist()))
    keys = rng.integers(0, 50, size=n)
    assert sorted(codeops.distinct(keys).tolist()) == sorted(pd.unique(keys).tolist())
    keys = np.sort(keys)
    assert codeops.distinct(keys).tolist() == pd.unique(keys).tolist()


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.uint16, np.uint64])
def test_dense_is_unique(dtype):
    from gpuscope.analysis.evidence.log import groupstats

    rng = np.random.default_rng(3)
    for hi in (1, 7, 5000, 10**9):
        keys = rng.integers(0, hi, size=300).astype(dtype)
        labels, uniq = groupstats.dense(keys)
        want_uniq, want_labels = np.unique(keys, return_inverse=True)
        assert labels.dtype == np.int64 and uniq.dtype == want_uniq.dtype
        assert labels.tolist() == want_labels.tolist() and uniq.tolist() == want_uniq.tolist()
    assert groupstats.dense(np.asarray([-3, 5, -3]))[0].tolist() == [0, 1, 0]


@pytest.mark.parametrize("seed", range(12))
def test_running_totals_sorted_path(seed, monkeypatch):
    """Beyond FEW_NAMES names, one stable sort of them all: the same answer."""
    from gpuscope.parsers.log import runtotals

    monkeypatch.setattr(runtotals, "FEW_NAMES", 0)
    test_running_totals_as_pandas(seed)


def test_running_totals_every_value_mine():
    rng = np.random.default_rng(5)
    codes = rng.integers(0, 3, size=200).astype(np.int32)
    values = np.where(codes == 1, 1.0, rng.uniform(0, 1, size=200))
    values[codes == 1] = np.cumsum(values[codes == 1])
    mine = np.ones(200, dtype=bool)
    want, want_values = _pandas_running_totals(np.asarray(["a", "b", "c"], dtype=object)[codes], values, mine)
    got = lr.running_totals_codes(codes, ["a", "b", "c"], values, mine)
    assert got == want == ["b"]
    np.testing.assert_array_equal(values, want_values)


@pytest.mark.parametrize("ordered", [True, False])
def test_group_sums_wrap_as_add_at(ordered):
    rng = np.random.default_rng(8)
    g = rng.integers(0, 30, size=500)
    if ordered:
        g = np.sort(g)
    x = rng.integers(1, 2**62, size=500, dtype=np.int64).view(np.uint64) * np.uint64(3)  # (sums wrap)
    want = np.zeros(40, dtype=np.uint64)
    np.add.at(want, g, x)
    assert codeops.group_sums(g, x, 40).tolist() == want.tolist()
    pg, pc = codeops.distinct_pairs(g, g % 7, 7)
    assert sorted(zip(pg.tolist(), pc.tolist(), strict=True)) == sorted(set(zip(g.tolist(), (g % 7).tolist(), strict=True)))


def test_most_common_is_counters():
    from collections import Counter

    rng = np.random.default_rng(9)
    for _ in range(50):
        codes = rng.integers(0, 5, size=int(rng.integers(1, 30)))
        assert lr._most_common(codes) == Counter(codes.tolist()).most_common(1)[0]

"""numpy helpers of parsers/log/lines/records.py over integer codes, each giving what the pandas
operation it replaces gives (tests/test_linerecords_codes.py): medians per group, distinct
keys, labels of equal rows. No pandas import: a `lines` log is analysed without it."""

from __future__ import annotations

import numpy as np

from gpuscope.arrays import distinct, median


def medians(d: np.ndarray, cc: np.ndarray, same: np.ndarray, cand: np.ndarray, nu: int) -> np.ndarray:
    """Per name (codes cc, sorted), the median of its increments d where `cand` (NaN elsewhere
    and where it has none): pandas' groupby median (NaN skipped; the mean of the two middle
    ones)."""
    med = np.full(nu, np.nan)
    g = cc[1:]
    keep = same & cand[g]
    dk, gk = d[keep], g[keep]
    if not len(dk):
        return med
    cuts = np.flatnonzero(gk[1:] != gk[:-1]) + 1
    for lo, hi in zip(np.concatenate(([0], cuts)).tolist(), np.concatenate((cuts, [len(gk)])).tolist(), strict=True):
        seg = dk[lo:hi]
        seg = seg[~np.isnan(seg)]
        if len(seg):
            med[gk[lo]] = median(seg)
    return med


def labels(cols: tuple[np.ndarray, ...]) -> np.ndarray:
    """Per row, a label of its tuple of columns' values (equal tuples, equal labels): runs of
    equal rows first (consecutive records print one shape), then the runs' first rows sorted."""
    ng = len(cols[0])
    start = np.ones(ng, dtype=bool)
    if ng > 1:
        same = np.ones(ng - 1, dtype=bool)
        for c in cols:
            same &= c[1:] == c[:-1]
        start[1:] = ~same
    reps = np.flatnonzero(start)
    sub = [c[reps] for c in cols]
    o = np.lexsort(sub[::-1])
    new = np.ones(len(o), dtype=bool)
    if len(o) > 1:
        differ = np.zeros(len(o) - 1, dtype=bool)
        for c in sub:
            co = c[o]
            differ |= co[1:] != co[:-1]
        new[1:] = differ
    lab = np.empty(len(o), dtype=np.int64)
    lab[o] = np.cumsum(new) - 1
    return lab[np.cumsum(start) - 1]


def distinct_pairs(g: np.ndarray, c: np.ndarray, w: int) -> tuple[np.ndarray, np.ndarray]:
    """The distinct (g, c) pairs (0 <= c < w) as two arrays, in no promised order. Pairs in
    order (a group's names in the order of the first line's) are checked on g and c (masks,
    no key as long as the pairs), else sorted by the key g * w + c."""
    if len(g) > 1:
        up = g[1:] > g[:-1]
        if bool((up | (g[1:] == g[:-1])).all()) and bool((up | (c[1:] >= c[:-1])).all()):
            new = up | (c[1:] != c[:-1])
            if new.all():
                return g, c
            mask = np.concatenate(([True], new))
            return g[mask], c[mask]
    key = g.astype(np.int64)  # (a copy, then in place: one temporary as long as the pairs)
    key *= w
    key += c
    key = distinct(key)
    return key // w, key % w


def group_sums(g: np.ndarray, x: np.ndarray, ng: int) -> np.ndarray:
    """Per group 0..ng-1, the sum of its uint64 words x (wrapping: the same in any order);
    one reduceat where the groups come in order (records in log order), else ufunc.at."""
    out = np.zeros(ng, dtype=np.uint64)
    if not len(g):
        return out
    if bool((g[1:] >= g[:-1]).all()):
        starts = np.flatnonzero(np.concatenate(([True], g[1:] != g[:-1])))
        out[g[starts]] = exact_runs(np.add, x, starts)
    else:
        np.add.at(out, g, x)
    return out


def code_sums(g: np.ndarray, c: np.ndarray, words: np.ndarray, ng: int,
              out: np.ndarray | None = None) -> np.ndarray:
    """group_sums(g, words[c], ng): per group, the wrapping sum of its codes' uint64 words.
    Where every group 0..ng-1 holds the same k codes in the same order (each line of a
    training log printing the same names: g is 0,0,1,1,...), each group's sum is the first
    group's, computed once (two passes to tell, no gather of len(c) words). `out`: a buffer
    as long as c for the gather otherwise."""
    k = len(g) // ng if ng else 0
    if k and len(g) == ng * k and bool((c.reshape(ng, k) == c[:k]).all()) \
            and bool((g.reshape(ng, k) == np.arange(ng)[:, None]).all()):
        return np.full(ng, np.add.reduce(words[c[:k]]), dtype=np.uint64)
    x = np.take(words, c, out=out, mode="clip") if out is not None else np.take(words, c)
    return group_sums(g, x, ng)


def exact_runs(op: np.ufunc, x: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """op.reduceat(x, starts) (starts increasing from 0) for an op whose result is the same in
    any order (integer sums, wrapping; fmin, fmax): runs of one length (a record of one line,
    a line of k names) reduced as rows of a (runs, k) view, no segment loop."""
    m = len(starts)
    if m and len(x) % m == 0:
        k = len(x) // m
        if k and int(starts[-1]) == len(x) - k and (m == 1 or bool((np.diff(starts) == k).all())):
            return x.copy() if k == 1 else op.reduce(x.reshape(m, k), axis=1)
    return op.reduceat(x, starts)


def fmax_at(out: np.ndarray, rows: np.ndarray, x: np.ndarray) -> None:
    """np.fmax.at(out, rows, x) into an out of NaN: where each row comes once, in order (one
    whole a line), an assignment (fmax(NaN, v) is v), without ufunc.at's loop."""
    if len(rows) < 2 or bool((rows[1:] > rows[:-1]).all()):
        out[rows] = x
    else:
        np.fmax.at(out, rows, x)


def same_regular(crow, ccode, cval, cnt, n):
    """lines/records._groups' `same` (row r+1 prints the same counters as row r) where every
    row prints the same number c of counters, rows in order (a training log's `epoch 0 step
    17` on every line): the counters as an (n, c) table, each row against the next, in two
    passes over views instead of a dozen gathers (1M lines: 0.3 -> 0.02 CPU-s). None where
    the rows are not so laid out."""
    c = int(cnt[0]) if n else 0
    if not c or len(crow) != n * c or int(cnt.min()) != c or int(cnt.max()) != c \
            or not bool((crow[1:] >= crow[:-1]).all()):
        return None
    codes, values = ccode.reshape(n, c), cval.reshape(n, c)
    same = np.zeros(n, dtype=bool)
    same[:-1] = (codes[1:] == codes[:-1]).all(axis=1) & (values[1:] == values[:-1]).all(axis=1)
    return same


def repeats(counts: np.ndarray) -> int | np.ndarray:
    """What np.repeat of per-row values by `counts` is given: the one count where every row has
    as many (a scalar repeat, four times faster than one by a million counts), else counts."""
    return int(counts[0]) if len(counts) and int(counts.min()) == int(counts.max()) else counts


def every_row_alike(gid, codes, counts, crow, ccode) -> bool:
    """Whether every row is in a group (gid >= 0) and prints the same k > 0 names in the same
    order (codes, counts: per value and per row) and the same counter keys in the same order
    (crow, ccode: per counter): then every group has one shape, and lines/records._record_groups'
    hashing of each group's names would find what this finds in two comparisons (every group
    a record: a training log printing one line a step)."""
    n = len(counts)
    if not n or int(gid.min()) < 0:
        return False
    k = int(counts[0])
    if not k or int(counts.min()) != k or int(counts.max()) != k or len(codes) != n * k:
        return False
    if not bool((codes.reshape(n, k) == codes[:k]).all()):
        return False
    if not len(crow):
        return True
    c = len(crow) // n
    if not c or len(crow) != n * c or not bool((crow.reshape(n, c) == np.arange(n)[:, None]).all()):
        return False
    return bool((ccode.reshape(n, c) == ccode[:c]).all())


def split_at_wholes(gid, has_whole, mine):
    """A group that prints the whole on more than one of its rows is that many records, each
    ending at its whole: `Epoch: [0][  7/100]  Time  0.257 ...` repeats the epoch on every
    step's line, so the counters alone would make the epoch one record."""
    if not len(gid) or gid.max() < 0:
        return gid
    per = np.bincount(gid[mine & has_whole], minlength=int(gid.max()) + 1)
    multi = mine & (per[np.maximum(gid, 0)] >= 2)
    if not multi.any():
        return gid
    after_whole = np.concatenate(([False], has_whole[:-1]))
    same_as_prev = np.concatenate(([False], gid[1:] == gid[:-1]))
    start = mine & (~same_as_prev | (multi & after_whole))
    out = np.cumsum(start) - 1
    out[~mine] = -1
    return out

"""Sums and runs over a samples grid's intervals, numpy's own (samplegrid re-exports them).

    masked_sum(x, mask)       float(x[mask].sum())
    masked_dot(x, w, mask)    float(np.sum(x[mask] * w[mask]))
    wmean(x, w, where=None)   the time-weighted mean of the finite x (and `where`)
    take(x, mask)             x[mask], a view where mask is one run
    segment_sums(x, a, b)     x[a:b].sum() for each run
    run_bounds(mask), cover(n, a, b), first_last(mask)
    small_pages()             numpy's arrays made inside without the huge-page hint

A view where the mask is one run, else numpy's x[mask]. (A compiled twin of these sums, to the
bit, saved ~16 ms on 4M values: not worth a second implementation; it went in Analysis v2.)
"""

from __future__ import annotations

import numpy as np

from gpuscope.allocator import small_pages  # noqa: F401 (the grid's, samplegrid)
from gpuscope.arrays import distinct


def take(x: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """x[mask]: the same values in the same order, as a view (no copy) where mask is one run."""
    k = int(np.count_nonzero(mask))
    if k == 0:
        return x[:0]
    a = int(np.argmax(mask))
    if k == mask.size or bool(mask[a:a + k].all()):
        return x[a:a + k]
    return x[mask]


def first_last(mask: np.ndarray) -> tuple[int, int] | None:
    """The first and the last index where mask is True (None: nowhere), without an index array."""
    if not mask.size or not mask.any():
        return None
    return int(np.argmax(mask)), int(mask.size - 1 - np.argmax(mask[::-1]))


def masked_sum(x: np.ndarray, mask: np.ndarray) -> float:
    """float(x[mask].sum()), without the copy where mask is one run."""
    return _over(x, None, mask)


def masked_dot(x: np.ndarray, w: np.ndarray, mask: np.ndarray) -> float:
    """float(np.sum(x[mask] * w[mask])), without the copies where mask is one run."""
    return _over(x, w, mask)


def _over(x: np.ndarray, w: np.ndarray | None, mask: np.ndarray) -> float:
    k = int(np.count_nonzero(mask))
    if k == 0:
        return 0.0
    a = int(np.argmax(mask))
    run = k == mask.size or bool(mask[a:a + k].all())
    if run:  # one run: the sum of a view
        return float(x[a:a + k].sum() if w is None else np.sum(x[a:a + k] * w[a:a + k]))
    return float(x[mask].sum() if w is None else np.sum(x[mask] * w[mask]))


def wmean(x: np.ndarray, w: np.ndarray, where: np.ndarray | None = None) -> float:
    """sum(x * w) / sum(w) over the intervals with both finite (and `where`), NaN without weight:
    the figures' time-weighted mean, in as few temporaries as it can."""
    ok = np.isfinite(x)
    ok &= np.isfinite(w)
    if where is not None:
        ok &= where
    s = masked_sum(w, ok)
    if not s > 0:
        return float("nan")
    return float(np.float64(masked_dot(x, w, ok)) / s)


def segment_sums(x: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """x[a:b].sum() for each (a, b), to the bit (numpy's own summation of each run: the runs of
    one length are summed as the rows of one array), without a Python step per run."""
    starts, ends = np.asarray(starts, dtype=np.int64), np.asarray(ends, dtype=np.int64)
    out = np.zeros(starts.size, dtype=np.float64)
    lengths = ends - starts
    for length in distinct(lengths).tolist():
        sel = np.flatnonzero(lengths == length)
        if length <= 0:
            continue
        if sel.size < 4 or length > 4096:
            for i in sel.tolist():
                out[i] = x[starts[i]:ends[i]].sum()
            continue
        step = max(1, (1 << 20) // length)
        for k in range(0, sel.size, step):
            part = sel[k:k + step]
            out[part] = x[starts[part][:, None] + np.arange(length)].sum(axis=1)
    return out


def run_bounds(mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(starts, ends) arrays of the consecutive True stretches of mask ([start, end))."""
    m = np.concatenate([[False], np.asarray(mask, dtype=bool), [False]])
    d = np.diff(m.astype(np.int8))
    return np.flatnonzero(d == 1), np.flatnonzero(d == -1)


def cover(n: int, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """bool per index: inside one of the disjoint ranges [start, end)."""
    starts, ends = np.asarray(starts, dtype=np.int64), np.asarray(ends, dtype=np.int64)
    if starts.size < 2 or (bool((starts[1:] > starts[:-1]).all()) and bool((ends[1:] > ends[:-1]).all())):
        mark = np.zeros(n + 1, dtype=np.int8)  # (each index once: fancy += is exact; disjoint: 0 or 1)
        mark[starts] += 1
        mark[ends] -= 1
        return np.cumsum(mark[:n], dtype=np.int8) > 0
    wide = np.zeros(n + 1, dtype=np.int32)
    np.add.at(wide, starts, 1)
    np.add.at(wide, ends, -1)
    return np.cumsum(wide[:n]) > 0

"""A device's events as sets (gpuscope.analysis.evidence.trace.trace_activity's DeviceView):
their unions made when read, the totals the views hold, the lengths a union covers without
making it where the events are apart, and the categorical codes that name the rows. Issue 32:
at 10M kernels every full-length array here is 50-100 MB."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from gpuscope.analysis.evidence import intervals as iv

if TYPE_CHECKING:
    from numpy.typing import ArrayLike


COVER_BLOCK = 1 << 16  # rows a block (covered_by)


def _blocks(s: np.ndarray, dur: np.ndarray, m: np.ndarray | None, side: int | None = None):
    """The events' (starts, ends) a block of COVER_BLOCK rows at a time (empty blocks left out);
    `side` 0 or 1: the starts or the ends alone."""
    for a in range(0, s.size, COVER_BLOCK):
        b = a + COVER_BLOCK
        if side == 0:
            x = s[a:b] if m is None else s[a:b][m[a:b]]
            if x.size:
                yield x
            continue
        sb, eb = (s[a:b], s[a:b] + dur[a:b]) if m is None else masked_ends(s[a:b], dur[a:b], m[a:b])
        if sb.size:
            yield eb if side == 1 else (sb, eb)


def _part(t: np.ndarray, xs, origin: float) -> np.ndarray:
    """coverage.cumulative's part(x)(t) (rate 1, x in order) over x given a block at a time (t:
    the queries less the origin): per query, k = how many x <= t and the running sum of
    x - origin at the k-th, the sums carried from block to block (numpy's are sequential: the
    same sums as one pass over all of x). Each query is settled by the one block holding its
    last x <= t (the queries in order: those from this block's first x to the next block's), so
    a block costs its own queries, not all of them."""
    order = None if t.size < 2 or bool((t[1:] >= t[:-1]).all()) else np.argsort(t, kind="stable")
    tq = t if order is None else t[order]
    k = np.zeros(t.shape, dtype=np.intp)
    below = np.zeros(t.shape)
    held = None  # (x, its running sums, how many x before it, its first query): settled at the next block
    carry, seen = None, 0
    for x in xs:
        x = x - origin
        first = int(np.searchsorted(tq, x[0], side="left"))
        if held is not None:
            _settle(tq, k, below, held, first)
        sums = x.copy()
        if carry is not None:
            sums[0] = carry + sums[0]
        np.cumsum(sums, out=sums)
        carry = float(sums[-1])
        held = (x, sums, seen, first)
        seen += x.size
    if held is not None:
        _settle(tq, k, below, held, tq.size)
    got = tq * np.asarray(k, dtype="float64") - below
    if order is None:
        return got
    out = np.empty_like(got)
    out[order] = got
    return out


def _settle(tq: np.ndarray, k: np.ndarray, below: np.ndarray, held: tuple, hi: int) -> None:
    """The queries tq[lo:hi], whose last x <= t is in the held block: their k and running sum."""
    x, sums, seen, lo = held
    if hi > lo:
        kb = np.searchsorted(x, tq[lo:hi], side="right")  # (>= 1: each query is at or past x[0])
        k[lo:hi] = seen + kb
        below[lo:hi] = sums[kb - 1]


def covered_by(g: pd.DataFrame, kind: str | None, qs: ArrayLike, qe: ArrayLike) -> np.ndarray:
    """intervals.covered_lengths(qs, qe, *union) of the union of g's events (of one kind), to the
    bit, without the union's arrays where its events are apart (coverage.apart: each its own
    block, as on a long Nsight export): its starts and ends taken a block of rows at a time, one
    part of coverage.cumulative at a time (_part: the queries' ends, then their starts, each by
    the union's starts then its ends). Else the union itself."""
    qs, qe = np.asarray(qs, dtype="float64"), np.asarray(qe, dtype="float64")
    s = g["ts_us"].to_numpy(dtype="float64")
    dur = g["dur_us"].to_numpy(dtype="float64")
    m = None if kind is None else (g["kind"] == kind).to_numpy(dtype=bool)
    origin = last = None  # (the first start; the previous block's last end: its next start lies beyond it)
    for sb, eb in _blocks(s, dur, m):
        if origin is None:
            if not bool(eb[0] > 0):
                return iv.covered_lengths(qs, qe, *union(g, kind))
            origin = float(sb[0])
        if not (bool((eb >= sb).all()) and bool((sb[1:] > eb[:-1]).all()) and (last is None or bool(sb[0] > last))):
            return iv.covered_lengths(qs, qe, *union(g, kind))
        last = float(eb[-1])
    if origin is None:  # (no event of the kind: nothing covered)
        return iv.covered_lengths(qs, qe, np.zeros(0), np.zeros(0))
    cum = []
    for t in (qe, qs):  # cumulative(starts, ends, 1, t) = part(starts) - part(ends)
        t = t - origin
        got = _part(t, _blocks(s, dur, m, 0), origin)
        got = got - _part(t, _blocks(s, dur, m, 1), origin)
        cum.append(got)
        del t, got
    return cum[0] - cum[1]


def union(g: pd.DataFrame, kind: str | None) -> tuple[np.ndarray, np.ndarray]:
    s = g["ts_us"].to_numpy(dtype="float64")
    dur = g["dur_us"].to_numpy(dtype="float64")
    if kind is None:
        return iv.merge(s, s + dur, share=True)
    return iv.merge(*masked_ends(s, dur, (g["kind"] == kind).to_numpy(dtype=bool)), share=True)


def masked_ends(s: np.ndarray, dur: np.ndarray, m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(s[m], (s + dur)[m]), the ends added after the gather: the same numbers without the
    device's every end (8 bytes a row) beside the gathers."""
    sm = s[m]
    em = dur[m]
    np.add(sm, em, out=em)
    return sm, em


def extreme(x: np.ndarray, largest: bool) -> float:
    """pandas' Series(x).max() (min): NaN left out (no bottleneck here: numpy's own reduction
    of the same array where x holds no NaN), without its copies of x."""
    got = x.max() if largest else x.min()
    if np.isnan(got):
        s = pd.Series(x)
        return float(s.max() if largest else s.min())
    return float(got)


def totals(g: pd.DataFrame) -> dict[str, float]:
    """A device's union totals (DeviceView's fields). Each set merged from the times' arrays,
    masked (the rows' frames, g[mask], copied every column), one union at a time: where no two
    events touch, each union is its rows, not copies of them (coverage.merge's share)."""
    s = g["ts_us"].to_numpy(dtype="float64")
    dur = g["dur_us"].to_numpy(dtype="float64")
    e = s + dur
    out = {"busy_us": total_in_place(*iv.merge(s, e, share=True))}
    del e
    kind = g["kind"]  # (a categorical compares its codes)
    copy = (kind == "memcpy").to_numpy(dtype=bool)
    dtod = (g["direction"] == "DtoD").to_numpy(dtype=bool)
    out["computing_us"] = total_in_place(*iv.merge(*masked_ends(s, dur, ~copy | dtod), share=True))
    out["host_copies_us"] = total_in_place(*iv.merge(*masked_ends(s, dur, copy & ~dtod), share=True))
    del dtod
    c = iv.merge(*masked_ends(s, dur, copy), share=True)
    del copy
    # the copies' time under kernels without the kernels' union where they are apart (covered_by);
    # each total from its union's own arrays, the ends made the lengths in place
    out["copy_kernel_overlap_us"] = float(np.sum(np.maximum(covered_by(g, "kernel", *c), 0.0))) if c[0].size else 0.0
    out["copy_us"] = total_in_place(*c)
    del c
    out["kernel_us"] = total_in_place(*iv.merge(*masked_ends(s, dur, (kind == "kernel").to_numpy(dtype=bool)),
                                                  share=True))
    return out


def first_last(g: pd.DataFrame) -> tuple[float, float]:
    """A device's events' first start and last end (pandas' min and max: NaN left out)."""
    s = g["ts_us"].to_numpy(dtype="float64")
    return extreme(s, False), extreme(s + g["dur_us"].to_numpy(dtype="float64"), True)


def total_in_place(s: np.ndarray, e: np.ndarray) -> float:
    """intervals.total(s, e) with e (this caller's own) made the lengths: the same sum."""
    if not s.size:
        return 0.0
    np.subtract(e, s, out=e)
    return float(np.sum(e))


def first_come(codes: np.ndarray, block: int = 1 << 18) -> np.ndarray:
    """The codes >= 0 in the order they first come (pd.unique's order), a block at a time:
    pd.unique of a whole narrow array widened it to int64 first (8 bytes a row)."""
    seen: dict[int, None] = {}
    for a in range(0, codes.size, block):
        b = codes[a:a + block]
        for c in pd.unique(b[b >= 0]).tolist():
            seen.setdefault(int(c), None)
    return np.fromiter(seen, dtype=np.int64, count=len(seen))


def factorized(col: pd.Series) -> tuple[np.ndarray, Any]:
    """pd.factorize(col.astype(object), use_na_sentinel=True): (codes, labels in the order they
    first come), a categorical column's from its codes (no object array of its rows)."""
    if not isinstance(col.dtype, pd.CategoricalDtype):
        return pd.factorize(col.astype(object), use_na_sentinel=True)
    codes, first = pd.factorize(col.cat.codes.to_numpy())
    cats = np.asarray(col.cat.categories, dtype=object)
    missing = np.flatnonzero(first < 0)
    if missing.size:  # a missing value: code -1, and the later labels one down
        k = int(missing[0])
        codes = np.where(codes == k, -1, codes - (codes > k))
        first = np.delete(first, k)
    return codes, (cats[first] if len(first) else np.zeros(0, dtype=object))


def name_codes(col: pd.Series) -> tuple[np.ndarray, Any]:
    """(code per row, -1 where missing; label per code): a categorical's own codes and categories
    (no copy of the rows), else factorized's."""
    if isinstance(col.dtype, pd.CategoricalDtype):
        return col.cat.codes.to_numpy(), np.asarray(col.cat.categories, dtype=object)
    return factorized(col)

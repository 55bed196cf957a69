"""Interval arithmetic on numpy arrays: pairing start/end events, unions, gaps, overlaps."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

# the primitives the pictures and the trace readers share (iv.cumulative, iv.merge stay)
from gpuscope.coverage import apart as apart
from gpuscope.coverage import covered_lengths as covered_lengths
from gpuscope.coverage import cumulative as cumulative
from gpuscope.coverage import merge as merge

if TYPE_CHECKING:
    import pandas as pd
    from numpy.typing import ArrayLike


def pair_rows(event, keys: list, start: str, end: str) -> tuple[np.ndarray, np.ndarray, int]:
    """Pair the n-th `start` event of a key with the n-th `end` event of the same key: (rows
    of the starts, rows of their ends, events left unpaired), rows into the given arrays,
    pairs in the order of their starts. `event`: the event names; `keys`: one array per key
    (text keys are numbered first; a missing one, None or NaN, is its own key, -1)."""
    ev = np.asarray(event, dtype=object)
    is_s = ev == start
    is_e = ev == end
    rows = np.flatnonzero(is_s | is_e)
    if not len(rows):
        return rows, rows, 0
    cols = []
    for k in keys:
        col = np.asarray(k)[rows]
        if col.dtype.kind in "iu":
            cols.append(col.astype(np.int64))
        else:
            index: dict = {}
            codes = np.empty(len(col), dtype=np.int64)
            for i, v in enumerate(col.tolist()):
                if v is None or (isinstance(v, float) and v != v):
                    codes[i] = -1
                else:
                    codes[i] = index.setdefault(v, len(index))
            cols.append(codes)
    gid = np.unique(np.column_stack(cols), axis=0, return_inverse=True)[1].ravel() if cols else np.zeros(len(rows), np.int64)
    flag = is_s[rows]
    g2 = gid.astype(np.int64) * 2 + flag
    o = np.argsort(g2, kind="stable")
    sg = g2[o]
    first = np.flatnonzero(np.concatenate(([True], sg[1:] != sg[:-1])))
    nth = np.empty(len(rows), dtype=np.int64)
    nth[o] = np.arange(len(rows)) - np.repeat(first, np.diff(np.concatenate((first, [len(rows)]))))
    width = int(nth.max()) + 1
    pair = gid.astype(np.int64) * width + nth
    s_at = np.flatnonzero(flag)
    e_at = np.flatnonzero(~flag)
    ekey = pair[e_at]
    eo = np.argsort(ekey, kind="stable")
    found = np.searchsorted(ekey[eo], pair[s_at])
    found = np.minimum(found, len(eo) - 1) if len(eo) else found
    hit = (ekey[eo][found] == pair[s_at]) if len(eo) else np.zeros(len(s_at), dtype=bool)
    srow = rows[s_at[hit]]
    erow = rows[e_at[eo[found[hit]]]] if len(eo) else srow[:0]
    return srow, erow, int(len(s_at) + len(e_at) - 2 * len(srow))


def pair_events(
    events: pd.DataFrame, start: str, end: str, keys: list[str], value: str = "offset_ms"
) -> pd.DataFrame:
    """Pair the n-th `start` event of a key with the n-th `end` event of the same key.

    Returns columns keys + start, end (from `value`) and the end event's row index (`end_row`);
    unpaired events are dropped (their count is in attrs["unpaired"]); pairs whose end is
    before their start are dropped too.
    """
    import pandas as pd

    srow, erow, unpaired = pair_rows(events["event"].to_numpy(dtype=object), [events[k].to_numpy() for k in keys],
                                     start, end)
    vals = events[value].to_numpy(dtype="float64")
    out = pd.DataFrame({k: events[k].to_numpy()[srow] for k in keys})
    out["start"] = vals[srow]
    out["end"] = vals[erow]
    out["end_row"] = events.index.to_numpy()[erow]
    keep = out["end"].to_numpy() >= out["start"].to_numpy()
    out = out.loc[keep].reset_index(drop=True)
    out.attrs["unpaired"] = int(unpaired + 2 * int((~keep).sum()))
    return out


def total(starts: np.ndarray, ends: np.ndarray) -> float:
    return float(np.sum(ends - starts)) if starts.size else 0.0


def gaps(starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Gaps between consecutive disjoint sorted intervals."""
    if starts.size < 2:
        return np.zeros(0)
    g = starts[1:] - ends[:-1]
    return g[g > 0]


def intersection_length(a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray]) -> float:
    """Length of (union a) ∩ (union b); both arguments disjoint sorted (from `merge`)."""
    return float(np.sum(overlaps(a, b)))


def overlaps(a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """For each interval of `a` (any order, may overlap each other), its overlap with the union
    of `b` (disjoint sorted, from `merge`)."""
    (as_, ae), (bs, be) = a, b
    as_, ae = np.asarray(as_, dtype="float64"), np.asarray(ae, dtype="float64")
    if as_.size == 0 or np.asarray(bs).size == 0:
        return np.zeros(as_.size)
    return np.maximum(covered_lengths(as_, ae, bs, be), 0.0)


def max_concurrency(starts: ArrayLike, ends: ArrayLike) -> int:
    """Most intervals open at one instant (an end at t closes before a start at t opens)."""
    s = np.asarray(starts, dtype="float64")
    e = np.asarray(ends, dtype="float64")
    if s.size == 0:
        return 0
    t = np.concatenate([s, e])
    d = np.concatenate([np.ones(s.size), -np.ones(e.size)])
    order = np.lexsort((d, t))  # at equal times, -1 (end) sorts first
    return int(np.max(np.cumsum(d[order])))

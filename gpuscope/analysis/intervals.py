"""Interval arithmetic on numpy arrays: pairing start/end events, unions, gaps, overlaps."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

if TYPE_CHECKING:
    from numpy.typing import ArrayLike


def pair_events(
    events: pd.DataFrame, start: str, end: str, keys: list[str], value: str = "offset_ms"
) -> pd.DataFrame:
    """Pair the n-th `start` event of a key with the n-th `end` event of the same key.

    Returns columns keys + start, end (from `value`) and the end event's row index (`end_row`);
    unpaired events are dropped (their count is in attrs["unpaired"]). String keys are
    factorized first so the grouping runs on integers (fast on big logs).
    """
    ev = events["event"].to_numpy(dtype=object)
    is_s = ev == start
    is_e = ev == end
    sub = events.loc[is_s | is_e, [*keys, value]]
    kcols = []
    for k in keys:
        col = sub[k]
        if col.dtype.kind in "iu":
            kcols.append(col.to_numpy(dtype="int64"))
        else:
            kcols.append(pd.factorize(col)[0].astype("int64"))
    flag = is_s[is_s | is_e]
    kframe = pd.DataFrame({f"k{i}": c for i, c in enumerate(kcols)})
    kframe["s"] = flag
    n = kframe.groupby([*kframe.columns[:-1], "s"], sort=False).cumcount().to_numpy()
    left = pd.DataFrame({**{f"k{i}": c[flag] for i, c in enumerate(kcols)}, "_n": n[flag],
                         "_row_s": np.flatnonzero(flag)})
    right = pd.DataFrame({**{f"k{i}": c[~flag] for i, c in enumerate(kcols)}, "_n": n[~flag],
                          "_row_e": np.flatnonzero(~flag)})
    m = left.merge(right, on=[*[f"k{i}" for i in range(len(keys))], "_n"])
    vals = sub[value].to_numpy(dtype="float64")
    rs, re_ = m["_row_s"].to_numpy(), m["_row_e"].to_numpy()
    out = pd.DataFrame({k: sub[k].to_numpy()[rs] for k in keys})
    out["start"] = vals[rs]
    out["end"] = vals[re_]
    out["end_row"] = sub.index.to_numpy()[re_]
    out = out.loc[out["end"] >= out["start"]].reset_index(drop=True)
    out.attrs["unpaired"] = int(is_s.sum() + is_e.sum() - 2 * len(out))
    return out


def merge(starts: ArrayLike, ends: ArrayLike, gap: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """Union of intervals as disjoint sorted (starts, ends); gaps up to `gap` are closed too."""
    s = np.asarray(starts, dtype="float64")
    e = np.asarray(ends, dtype="float64")
    ok = ~(np.isnan(s) | np.isnan(e))
    s, e = s[ok], e[ok]
    if s.size == 0:
        return s, e
    order = np.argsort(s, kind="stable")
    s, e = s[order], e[order]
    reach = np.maximum.accumulate(e)
    new = np.empty(s.size, dtype=bool)
    new[0] = True
    new[1:] = s[1:] > reach[:-1] + gap
    block = np.cumsum(new) - 1
    ms = s[new]
    me = np.zeros(ms.size)
    np.maximum.at(me, block, reach)
    me = np.maximum(me, ms)
    return ms, me


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


def cumulative(starts: ArrayLike, ends: ArrayLike, rates: ArrayLike, t: ArrayLike) -> np.ndarray:
    """For each time in t: sum over intervals i of rates[i] * |[starts[i], ends[i]] ∩ (-inf, t]|.

    Intervals may overlap (rates add up): with rate = bytes/duration it is the bytes moved by t;
    with rate 1 over disjoint intervals, the time covered by t.
    """
    t = np.asarray(t, dtype="float64")
    s = np.asarray(starts, dtype="float64")
    e = np.asarray(ends, dtype="float64")
    r = np.broadcast_to(np.asarray(rates, dtype="float64"), s.shape)
    if s.size == 0:
        return np.zeros(t.shape)
    origin = float(s.min())  # sums of products of large times cancel badly: work near zero
    s, e, t = s - origin, e - origin, t - origin

    def part(x: np.ndarray) -> np.ndarray:  # sum over x_i <= t of r_i * (t - x_i)
        order = np.argsort(x, kind="stable")
        xs, rs = x[order], r[order]
        cr = np.concatenate([[0.0], np.cumsum(rs)])
        crx = np.concatenate([[0.0], np.cumsum(rs * xs)])
        k = np.searchsorted(xs, t, side="right")
        return t * cr[k] - crx[k]

    return part(s) - part(e)


def covered_lengths(qs: ArrayLike, qe: ArrayLike, starts: ArrayLike, ends: ArrayLike) -> np.ndarray:
    """Per query interval [qs, qe]: its length covered by the disjoint intervals (starts, ends)."""
    qs = np.asarray(qs, dtype="float64")
    qe = np.asarray(qe, dtype="float64")
    return cumulative(starts, ends, 1.0, qe) - cumulative(starts, ends, 1.0, qs)


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

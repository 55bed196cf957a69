"""Interval arithmetic on numpy arrays: pairing start/end events, unions, gaps, overlaps."""

from __future__ import annotations

import numpy as np
import pandas as pd


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


def merge(starts, ends) -> tuple[np.ndarray, np.ndarray]:
    """Union of intervals as disjoint sorted (starts, ends)."""
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
    new[1:] = s[1:] > reach[:-1]
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
    if as_.size == 0 or bs.size == 0:
        return np.zeros(as_.size)
    # For each a interval, overlap with b = integral of b's indicator over [as, ae].
    cum = np.concatenate([[0.0], np.cumsum(be - bs)])

    def covered_until(t: np.ndarray) -> np.ndarray:
        i = np.searchsorted(bs, t, side="right")  # b intervals starting at or before t
        full = cum[np.maximum(i - 1, 0)]
        last_s = bs[np.maximum(i - 1, 0)]
        last_e = be[np.maximum(i - 1, 0)]
        part = np.clip(t - last_s, 0.0, last_e - last_s)
        return np.where(i > 0, full + part, 0.0)

    return np.maximum(covered_until(ae) - covered_until(as_), 0.0)


def max_concurrency(starts, ends) -> int:
    """Most intervals open at one instant (an end at t closes before a start at t opens)."""
    s = np.asarray(starts, dtype="float64")
    e = np.asarray(ends, dtype="float64")
    if s.size == 0:
        return 0
    t = np.concatenate([s, e])
    d = np.concatenate([np.ones(s.size), -np.ones(e.size)])
    order = np.lexsort((d, t))  # at equal times, -1 (end) sorts first
    return int(np.max(np.cumsum(d[order])))

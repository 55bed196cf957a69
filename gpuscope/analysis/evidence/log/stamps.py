"""Times for the lines a log did not stamp, estimated from the lines around them — for
drawing only (plot, export, the HTML picture), never for joining NVML samples.

A daemon log often stamps some lines (its `tracing` lines) and not others (printf'd
CUZK_TIMING lines, TIMELINE events that carry an offset from engine start). Lines are
written in order, so an unstamped line happened between its stamped neighbours:

1. TIMELINE anchor (the wall time of offset 0): from TIMELINE lines that carry a stamp, the
   median of stamp - offset; else each TIMELINE line lies between the stamped lines before
   and after it, which bounds the anchor from both sides: the middle of the interval all
   bounds leave open (the median of the midpoints when clock jitter leaves none).
2. Every line with a known time (a stamp, or anchor + offset) is a knot; an unstamped timing
   line gets the time of the knot nearest to it by line number (it was printed between the
   knots around it; the widest such bracket is reported as the uncertainty).
3. A GPU-lock tenure is placed as one block, not line by line: its held line's time T (as
   in 2) ends it, the lock was taken at T - held; the lines printed as the lock is taken
   (mutex_wait, pre_lock_cpu) end there, and each GPU's lines of the tenure are laid out one
   after another from there, in print order (gpuscope.analysis.evidence.log.phases reads a group of
   components that share a line number as consecutive phases ending at its stamp).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from gpuscope.arrays import distinct, median

if TYPE_CHECKING:
    from gpuscope.rolemodel import RoleModel


@dataclass(frozen=True)
class Placed:
    components: pd.DataFrame
    timeline: pd.DataFrame
    lines_placed: int          # timing lines whose time was estimated
    uncertainty_s: float       # the widest gap between the knots around a placed line


def _knots(components: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """(line, ts) of the stamped lines, one per line, by line number."""
    c = components.loc[components["ts"].notna(), ["line", "ts"]].drop_duplicates("line").sort_values("line")
    return c["line"].to_numpy(dtype=np.int64), c["ts"].to_numpy(dtype=float)


def timeline_anchor(timeline: pd.DataFrame, lines: np.ndarray, ts: np.ndarray) -> float | None:
    """The wall time of TIMELINE offset 0, or None when nothing ties the events to a clock."""
    if timeline is None or not len(timeline):
        return None
    off = timeline["offset_ms"].to_numpy(dtype=float) / 1000.0
    stamped = timeline["ts"].notna().to_numpy() & np.isfinite(off)
    if stamped.any():
        return float(median(timeline["ts"].to_numpy(dtype=float)[stamped] - off[stamped]))
    if not len(lines):
        return None
    tl_lines = timeline["line"].to_numpy(dtype=np.int64)
    k = np.searchsorted(lines, tl_lines)  # knots before: k-1, after: k
    has_both = (k > 0) & (k < len(lines)) & np.isfinite(off)
    if not has_both.any():
        return None
    lo = ts[k[has_both] - 1] - off[has_both]  # the event came after the stamped line before it
    hi = ts[k[has_both]] - off[has_both]      # and before the stamped line after it
    if lo.max() <= hi.min():  # every bound agrees: the middle of what they leave open
        return float((lo.max() + hi.min()) / 2)
    return float(median((lo + hi) / 2))


def _nearest_knot(at: np.ndarray, lines: np.ndarray, ts: np.ndarray) -> np.ndarray:
    """The time of the knot nearest by line number (the later one on a tie): a daemon prints
    in bursts around events, so line counts say little about the time between two knots,
    while an unstamped line next to a stamped one was printed at about its time."""
    k = np.searchsorted(lines, at)
    before = np.clip(k - 1, 0, len(lines) - 1)
    after = np.clip(k, 0, len(lines) - 1)
    use_after = (k < len(lines)) & ((k == 0) | (lines[after] - at <= at - lines[before]))
    return np.where(use_after, ts[after], ts[before])


def _place_tenures(comps: pd.DataFrame, miss: np.ndarray, model: RoleModel) -> pd.DataFrame:
    """Step 3: the unstamped lines of each complete tenure as one block ending at its held line."""
    held = model.held
    rec = comps["record"].to_numpy(dtype=np.int64)
    name = comps["component"].astype(str).to_numpy()
    timed = np.array([model.roles.get(n) not in (None, "info") for n in name], dtype=bool)
    is_held = (name == held) & (rec >= 0)
    held_rows = comps.loc[is_held & miss]
    if not len(held_rows):
        return comps
    t_end = dict(zip(held_rows["record"].to_numpy(dtype=np.int64), held_rows["ts"].to_numpy(dtype=float),
                     strict=True))
    held_ms = dict(zip(held_rows["record"].to_numpy(dtype=np.int64), held_rows["value_ms"].to_numpy(dtype=float),
                       strict=True))
    lines = comps["line"].to_numpy(dtype=np.int64).copy()
    ts = comps["ts"].to_numpy(dtype=float).copy()
    gpu = comps["gpu"].to_numpy(dtype=np.int64)
    val = np.where(timed, comps["value_ms"].to_numpy(dtype=float) / 1000.0, 0.0)  # aggregates are no phase
    todo = miss & (rec >= 0) & ~is_held & np.isin(rec, list(t_end))
    for r in distinct(rec[todo]):
        sel = np.flatnonzero(todo & (rec == r))
        t0 = t_end[r] - held_ms[r] / 1000.0
        for g in distinct(gpu[sel]):
            rows = sel[gpu[sel] == g]
            lines[rows] = lines[rows[0]]  # one group: consecutive phases ending at its stamp
            # the lines printed as the lock is taken end at t0; a GPU's block starts there
            ts[rows] = t0 if g < 0 else t0 + float(np.nansum(val[rows]))
    out = comps.copy()
    out["line"] = lines
    out["ts"] = ts
    return out


def place_unstamped(components: pd.DataFrame, timeline: pd.DataFrame, model: RoleModel | None = None) -> Placed | None:
    """Components (and TIMELINE rows) with estimated times for their unstamped lines, or None
    when every line is stamped already or nothing ties the unstamped ones to a clock."""
    need = components["ts"].isna().any() or (len(timeline) and timeline["ts"].isna().any())
    if not need:
        return None
    lines, ts = _knots(components)
    anchor = timeline_anchor(timeline, lines, ts)
    tl = timeline.copy()
    if anchor is not None:
        miss = tl["ts"].isna() & tl["offset_ms"].notna()
        tl.loc[miss, "ts"] = anchor + tl.loc[miss, "offset_ms"] / 1000.0
        extra = tl.loc[tl["ts"].notna(), ["line", "ts"]]
        both = pd.concat([pd.DataFrame({"line": lines, "ts": ts}), extra]).drop_duplicates("line")
        both = both.sort_values("line")
        lines, ts = both["line"].to_numpy(dtype=np.int64), both["ts"].to_numpy(dtype=float)
    if len(lines) < 1:
        return None
    comps = components.copy()
    miss = comps["ts"].isna().to_numpy()
    if not miss.any() and anchor is None:
        return None
    ml = comps.loc[miss, "line"].to_numpy(dtype=float)
    comps.loc[miss, "ts"] = _nearest_knot(ml, lines, ts)
    if model is not None:
        comps = _place_tenures(comps, miss, model)
    k = np.searchsorted(lines, ml)
    gap = np.where((k > 0) & (k < len(lines)), ts[np.clip(k, 0, len(ts) - 1)] - ts[np.clip(k - 1, 0, len(ts) - 1)],
                   np.nan)
    placed = int(pd.Series(ml).nunique())
    return Placed(components=comps, timeline=tl, lines_placed=placed,
                  uncertainty_s=float(np.nanmax(gap)) if np.isfinite(gap).any() else float("nan"))

"""Time the samples do not cover, and time that goes backwards (issue 34 class 3).

A window average (SM activity, utilization, a PCIe throughput) is filled backwards onto the
intervals before its reading (samplegrid): a reading covers the time since the one before it.
Where readings stop for far longer than their cadence (a recorder suspended for an hour, a
Prometheus scrape gap, a clock that jumped ahead), the next reading does not tell what the GPU
did over the hole: those intervals are unknown, and coverage drops.

    hole_mask(t, raw, resolution_s) -> (bool per interval, holes, seconds)
    backwards(t_in_file_order, t_sorted) -> (bool per interval, steps back, seconds)

A hole is a span between two readings (or from the first row to the first reading) longer
than HOLE_FACTOR x the source's cadence (its median spacing) and than HOLE_MIN_S. What would
make it fire falsely: readings at an uneven but steady pace (nvidia-smi at 1 s that sometimes
takes 2 s): under 10x the median spacing, no hole.

Time going backwards in the file (a clock set back, nvidia-smi's local time across a DST
fall-back: the same hour twice) is sorted into order by the grid; the time where the two runs
of readings interleave cannot tell one from the other, so its intervals are unknown too. A
step back of less than BACK_MIN_S (rows of two threads written a few ms out of order, a clock
slewed) is sorted silently as before.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gpuscope.analysis.evidence.samples.gridsums import cover


@dataclass
class Unknown:
    """A grid's time no reading tells: `mask` per interval (None: none), the activity's holes
    (count, seconds), the time the file went back over (`back_mask`, steps, seconds)."""

    mask: np.ndarray | None = None
    holes: int = 0
    hole_s: float = 0.0
    back_mask: np.ndarray | None = None
    back_steps: int = 0
    back_s: float = 0.0


HOLE_FACTOR = 10.0
HOLE_MIN_S = 1.0
BACK_MIN_S = 1.0


def hole_mask(t: np.ndarray, raw: np.ndarray, resolution_s: float) -> tuple[np.ndarray | None, int, float]:
    """(bool per interval of the grid t, or None when there is no hole; the number of holes;
    their seconds) of the readings `raw` on the grid points (NaN where none)."""
    n = t.size - 1
    if n <= 0 or not np.isfinite(resolution_s) or raw.strides == (0,):
        return None, 0, 0.0
    r = np.flatnonzero(np.isfinite(raw))
    if r.size < 2:
        return None, 0, 0.0
    limit = max(HOLE_FACTOR * resolution_s, HOLE_MIN_S)
    # the spans each reading fills: from the reading before it (the first row for the first)
    lo = np.concatenate([[0], r[:-1]])
    span = t[r] - t[lo]
    long_ = (span > limit) & (r > lo)
    if not long_.any():
        return None, 0, 0.0
    a, b = lo[long_], r[long_]  # intervals a .. b-1 lie between the two readings
    return cover(n, a, b), int(long_.sum()), float(span[long_].sum())


def backwards(t_file: np.ndarray, t: np.ndarray) -> tuple[np.ndarray | None, int, float]:
    """(bool per interval of the sorted grid points t, or None; how many times the file's time
    goes back by more than BACK_MIN_S; the seconds where its readings interleave)."""
    n = t.size - 1
    if n <= 0 or t_file.size < 2:
        return None, 0, 0.0
    top = np.maximum.accumulate(t_file)[:-1]
    late = t_file[1:] < top - BACK_MIN_S  # a row before the time already reached
    if not late.any():
        return None, 0, 0.0
    steps = int(np.count_nonzero(late & (t_file[1:] < t_file[:-1] - BACK_MIN_S)))
    s, e = t_file[1:][late], top[late]
    a = np.clip(np.searchsorted(t, s, side="right") - 1, 0, n)
    b = np.clip(np.searchsorted(t, e, side="left"), 0, n)
    mask = cover(n, a, np.maximum(a, b))
    dt = t[1:] - t[:-1]
    return mask, max(steps, 1), float(dt[mask].sum())


def notes(gpu: int, u: Unknown, resolution_s: float) -> list[str]:
    """What a report says of a GPU's holes and of time that went back."""
    out = []
    if u.holes:
        out.append(f"GPU {gpu}: no activity reading for {u.hole_s:,.1f} s in {u.holes} hole(s) longer than "
                   f"{HOLE_FACTOR:g}x its {resolution_s:.3g} s cadence: that time is unknown, not counted "
                   "as covered")
    if u.back_steps:
        out.append(f"GPU {gpu}: the samples' time goes back {u.back_steps} time(s) (a clock set back, or local "
                   f"time across a DST fall-back): the {u.back_s:,.1f} s read twice cannot be told apart and "
                   "is unknown")
    return out

"""PCIe transfers seen in one GPU's sample grid: their rate, where the samples can tell it.

A transfer burst is a run of consecutive intervals whose RX (or TX) reading is at least
samplegrid.PCIE_BUSY_SHARE of the line rate. A reading averages its whole interval, so the
first and last reading of a burst also hold time before and after the copy: they read low.
Only the readings inside a burst (both neighbours busy too) cover copy time alone; a burst
of fewer than MIN_RESOLVED_READINGS readings has none, and the samples cannot say how
fast it ran, only that it ran at least as fast as its highest reading. So:

- `interior_gbs_median` is the rate of the resolved bursts (readings inside them);
- `resolved` says whether the typical burst is long enough to be judged (median length
  >= MIN_RESOLVED_READINGS readings); rules give no rate verdict otherwise;
- `near_line_rate_s` is the time with a reading >= samplegrid.NEAR_LINE_SHARE of the line
  (a reading that high is a lower bound of the rate, so it needs no resolution).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from gpuscope.analysis.evidence.samples import samplegrid as sg
from gpuscope.arrays import median

if TYPE_CHECKING:
    from gpuscope.analysis.document import BurstsDoc, DirectionDoc

#: a burst must span this many readings (one inside it at least) for its rate to be judged
MIN_RESOLVED_READINGS = 3


def _q(x: np.ndarray, own: bool = False, *, q: float) -> float:
    return _qs(x, own, qs=(q,))[0]


def _qs(x: np.ndarray, own: bool = False, *, qs: tuple[float, ...]) -> list[float]:
    """np.quantile of x's finite values at each of qs, from one copy and one partition (the same
    values as one call each); `own`: x is the caller's copy, free to be reordered."""
    f = sg.take(x, np.isfinite(x))
    own = own or not np.may_share_memory(f, x)
    return [float(v) for v in np.quantile(f, qs, overwrite_input=own)] if f.size else [float("nan")] * len(qs)


def _part(rate: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, bool]:
    """(rate's values inside mask, whether they are a copy of ours)."""
    x = sg.take(rate, mask)
    return x, not np.may_share_memory(x, rate)


def _wmean(x: np.ndarray, w: np.ndarray, where: np.ndarray | None = None) -> float:
    return sg.wmean(x, w, where)


def burst_ranges(rate: np.ndarray, line_rate_gbs: float) -> list[tuple[int, int]]:
    return sg.runs(rate >= sg.PCIE_BUSY_SHARE * line_rate_gbs)


def direction_stats(grid: sg.Grid, direction: str, line_rate_gbs: float,
                    within: np.ndarray | None = None) -> DirectionDoc:
    """Distribution, bursts and line-rate time of one direction (`rx` or `tx`) of a grid;
    `within` (bool per interval) restricts the bursts counted to those that start inside it."""
    rate = grid.rx if direction == "rx" else grid.tx
    dt = grid.dt
    busy = rate >= sg.PCIE_BUSY_SHARE * line_rate_gbs
    gb = rate * dt  # (np.nansum's own: its NaN read as 0, then summed)
    gb[np.isnan(gb)] = 0.0
    p50, p90, p99 = _qs(rate, qs=(0.5, 0.9, 0.99))
    top = float(np.nanmax(rate)) if sg.has_reading(rate) else float("nan")
    busy_s = sg.masked_sum(dt, busy)
    near_s = sg.masked_sum(dt, rate >= sg.NEAR_LINE_SHARE * line_rate_gbs)
    starts, ends = sg.run_bounds(busy)
    del busy
    if within is not None:
        keep = within[starts]
        starts, ends = starts[keep], ends[keep]
    lengths = ends - starts
    in_burst = sg.cover(grid.n, starts, ends)
    long_ = lengths >= MIN_RESOLVED_READINGS
    interior = sg.cover(grid.n, starts[long_] + 1, ends[long_] - 1)
    count = int(starts.size)
    inner_median, inner_p90 = _qs(*_part(rate, interior), qs=(0.5, 0.9))  # (one copy at a time)
    busy_median = _q(*_part(rate, in_burst), q=0.5)
    bursts: BurstsDoc = {
        "count": count,
        "total_s": sg.masked_sum(dt, in_burst),
        "median_readings": float(median(lengths)) if lengths.size else float("nan"),
        "median_s": float(median(sg.segment_sums(dt, starts, ends))) if count else float("nan"),
        "resolved_count": int((lengths >= MIN_RESOLVED_READINGS).sum()),
        "resolved": bool(lengths.size and median(lengths) >= MIN_RESOLVED_READINGS),
        "interior_readings": int(np.count_nonzero(interior)),
        "interior_gbs_median": inner_median, "interior_gbs_p90": inner_p90,
        "busy_gbs_median": busy_median,
        "sm_activity_during": _wmean(grid.activity, dt, in_burst),
        "gb_per_burst_median": float(median(sg.segment_sums(gb, starts, ends))) if count else float("nan"),
    }
    return {"p50_gbs": p50, "p90_gbs": p90, "p99_gbs": p99, "max_gbs": top, "mean_gbs": _wmean(rate, dt),
            "gb": float(gb.sum()), "busy_s": busy_s, "near_line_rate_s": near_s, "bursts": bursts}

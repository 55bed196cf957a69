"""The time (or bytes) a set of intervals covers up to each of some times: the one interval
primitive both the analysis (gpuscope.analysis.evidence.intervals builds on it) and the pictures
(reports.plot: the share of each phase per bucket) use, so a report computes nothing of the
analysis' own to draw."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from numpy.typing import ArrayLike


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

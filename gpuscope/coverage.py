"""The time (or bytes) a set of intervals covers up to each of some times: the one interval
primitive both the analysis (gpuscope.analysis.evidence.intervals builds on it) and the pictures
(reports.plot: the share of each phase per bucket) use, so a report computes nothing of the
analysis' own to draw; and `merge`, the union of intervals, and `covered_lengths`, which the
trace readers' host summaries (parsers/trace/host_summary.py) build and answer with too."""

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
    unit = np.ndim(rates) == 0 and float(np.asarray(rates)) == 1.0
    r = np.broadcast_to(np.asarray(rates, dtype="float64"), s.shape)
    if s.size == 0:
        return np.zeros(t.shape)
    origin = float(s.min())  # sums of products of large times cancel badly: work near zero
    t = t - origin

    def part(x: np.ndarray) -> np.ndarray:  # sum over x_i <= t of r_i * (t - x_i)
        x = x - origin  # (each side shifted as its part is taken: one full-length copy at a time)
        if x.size > 1 and not bool((x[1:] >= x[:-1]).all()):
            order = np.argsort(x, kind="stable")
            xs, rs = x[order], r[order]
        elif unit:
            # a rate of 1 over times in order (merged blocks; a query's covered length): the
            # running sum of the ones at k is k, and rs * xs is xs, so the running sums are taken
            # in x's own copy and read just below each k: the same numbers, without the four
            # other full-length arrays (at 10M kernels 40 MB each)
            k = np.searchsorted(x, t, side="right")
            np.cumsum(x, out=x)
            below = np.where(k > 0, x[np.maximum(k - 1, 0)], 0.0)
            return t * np.asarray(k, dtype="float64") - below
        else:  # already in order: the stable order is the identity, nothing gathered
            xs, rs = x, r
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


def merge(starts: ArrayLike, ends: ArrayLike, gap: float = 0.0, *,
          share: bool = False, spend: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Union of intervals as disjoint sorted (starts, ends); gaps up to `gap` are closed too.
    Starts already in order (a log's tenures) are not sorted again (the stable order of a
    sorted array is itself); a block's end is the reach at its last interval (the reach
    never decreases), at least 0 as the running maximum from 0 always made it. At most two
    full-length arrays beside the arguments (a million tenures: 16 MB).

    `share`: where the intervals are already apart (apart() below: each its own block) the
    arguments themselves come back, not copies of them: for a caller that writes into neither
    (a profiler's GPU events, where no two of a device's touch: at 10M kernels the union of a
    device's events was as many blocks as rows, five arrays of them made to say so). `spend`:
    `ends` is the caller's own, to be written into (the running reach made in it: one
    full-length array fewer), read no more after."""
    s = np.asarray(starts, dtype="float64")
    e = np.asarray(ends, dtype="float64")
    if share and apart(s, e, gap):
        return s, e
    ok = ~(np.isnan(s) | np.isnan(e))
    if not ok.all():
        s, e = s[ok], e[ok]
    del ok
    if s.size == 0:
        return s, e
    if s.size > 1 and not bool((s[1:] >= s[:-1]).all()):
        if bool((e[1:] >= e[:-1]).all()):
            return _merge_by_ends(s, e, gap)
        order = np.argsort(s, kind="stable")
        e = e[order]
        del order
        s = np.sort(s, kind="stable")  # (the same values in the same order as s[order])
        reach = np.maximum.accumulate(e, out=e)  # (e is this function's own copy)
    else:
        reach = np.maximum.accumulate(e, out=e) if spend else np.maximum.accumulate(e)
    new = np.empty(s.size, dtype=bool)
    new[0] = True
    # (+ 0.0 changes only a zero's sign, which > does not see)
    np.greater(s[1:], reach[:-1] + gap if gap else reach[:-1], out=new[1:])
    first = np.flatnonzero(new)
    del new
    ms = s[first]
    me = np.empty(first.size)
    me[:-1] = reach[first[1:] - 1]
    me[-1] = reach[-1]
    me[~(me > 0)] = 0.0
    np.maximum(me, ms, out=me)
    return ms, me


def apart(s: np.ndarray, e: np.ndarray, gap: float = 0.0) -> bool:
    """Whether merge(s, e, gap) is (s, e) itself, number for number: the starts in order, each
    interval ending at or after its start and each starting beyond the previous one's end (+ gap),
    the first ending above 0 (a NaN anywhere: no). Then the reach at each interval is its own
    end, every interval begins a block, and no end is raised to 0 or to its start."""
    if not s.size:
        return False
    if not bool(e[0] > 0) or not bool((e >= s).all()):
        return False
    return bool(np.greater(s[1:], e[:-1] + gap if gap else e[:-1]).all())


def _merge_by_ends(s: np.ndarray, e: np.ndarray, gap: float) -> tuple[np.ndarray, np.ndarray]:
    """merge of intervals whose ends are in order (a log's tenures: stamped at their end, held
    for their own time), without sorting the starts: a block ends at interval i exactly when
    every later interval starts beyond e[i] + gap (the later starts' minimum, one backward
    pass); its start is that minimum at the block's first interval, its end e at its last.
    The same blocks as the sweep by starts, the same numbers (picked, not computed)."""
    later = np.minimum.accumulate(s[::-1])[::-1]  # (the least start from each interval on)
    last = np.empty(s.size, dtype=bool)
    last[-1] = True
    # (+ 0.0 changes only a zero's sign, which > does not see)
    np.greater(later[1:], e[:-1] + gap if gap else e[:-1], out=last[:-1])
    ends_at = np.flatnonzero(last)
    del last
    ms = later[np.concatenate(([0], ends_at[:-1] + 1))]
    me = e[ends_at].copy()
    me[~(me > 0)] = 0.0
    np.maximum(me, ms, out=me)
    return ms, me

"""intervals.merge without the sort of starts already in order and without the running
maximum per block gives the union it always gave, bit for bit (the plain version is here)."""

from __future__ import annotations

import numpy as np
import pytest

from gpuscope.analysis.evidence import intervals as iv


def _plain_merge(starts, ends, gap=0.0):
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


@pytest.mark.parametrize("seed", range(90))
def test_merge_is_the_plain_merge(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 400))
    kind = seed % 6
    if kind == 4:  # ends in order, starts not (tenures stamped at their end: _merge_by_ends)
        e = np.cumsum(rng.choice([0.0, 0.5, 1.0, 2.0], n))
        s = e - rng.choice([0.0, 0.25, 1.0, 3.0, 7.5], n)
    elif kind == 5:  # the same about zero, with signed zeros and ends equal
        e = np.sort(rng.choice([-1.0, -0.0, 0.0, 0.5, 2.0], n))
        s = e - rng.choice([0.0, -0.0, 0.5, 1.0, 2.5], n)
    elif kind == 0:  # tenures in order: end stamps, start = end - held
        e = np.cumsum(rng.uniform(0, 2, n))
        s = e - rng.uniform(0, 3, n)
        s.sort()
    elif kind == 1:  # signed zeros, negative times, NaN, ends before starts
        s = rng.choice([-0.0, 0.0, -1.0, -2.0, 1.0, np.nan], n)
        e = s + rng.choice([-0.0, 0.0, -1.0, 0.5], n)
    else:
        s = np.round(rng.uniform(-5, 5, n), 1)
        e = s + np.round(rng.uniform(-1, 3, n), 1)
        if kind == 3:
            s = np.sort(s)
    gap = float(rng.choice([0.0, 0.5]))
    ours, theirs = iv.merge(s, e, gap), _plain_merge(s, e, gap)
    for a, b in zip(ours, theirs, strict=True):
        assert np.array_equal(a, b) and np.array_equal(np.signbit(a), np.signbit(b))


def _plain_cumulative(starts, ends, rates, t):
    """coverage.cumulative as it was: every set of times sorted by a stable argsort."""
    t = np.asarray(t, dtype="float64")
    s = np.asarray(starts, dtype="float64")
    e = np.asarray(ends, dtype="float64")
    r = np.broadcast_to(np.asarray(rates, dtype="float64"), s.shape)
    if s.size == 0:
        return np.zeros(t.shape)
    origin = float(s.min())
    s, e, t = s - origin, e - origin, t - origin

    def part(x):
        order = np.argsort(x, kind="stable")
        xs, rs = x[order], r[order]
        cr = np.concatenate([[0.0], np.cumsum(rs)])
        crx = np.concatenate([[0.0], np.cumsum(rs * xs)])
        k = np.searchsorted(xs, t, side="right")
        return t * cr[k] - crx[k]

    return part(s) - part(e)


@pytest.mark.parametrize("seed", range(4))
def test_cumulative_over_times_in_order_is_the_sorted_ones_bit_for_bit(seed):
    from gpuscope.coverage import cumulative

    rng = np.random.default_rng(seed)
    s = 1.7e12 + np.round(np.cumsum(rng.exponential(5.0, 5000)), 3)
    e = s + np.round(rng.exponential(3.0, s.size), 3)
    merged = iv.merge(s, e)  # (in order: the blocks the analysis asks about)
    t = np.sort(rng.uniform(s[0] - 10, e[-1] + 10, 700))
    shuffled = rng.permutation(s.size)
    for args in (merged, (s, e), (s[shuffled], e[shuffled]), (np.repeat(s[:50], 3), np.repeat(e[:50], 3))):
        for rates in (1.0, rng.uniform(0, 9, args[0].size)):
            got, want = cumulative(*args, rates, t), _plain_cumulative(*args, rates, t)
            assert np.array_equal(got, want)
    for x in (s[0] + 3.0, s[0] - 1.0):  # a single time, as a 0-d array and a float
        for rates in (1.0, 2.5):
            got, want = cumulative(*merged, rates, x), _plain_cumulative(*merged, rates, x)
            assert np.shape(got) == np.shape(want) and np.asarray(got).tobytes() == np.asarray(want).tobytes()


def _events(rng, n: int, kind: int) -> tuple[np.ndarray, np.ndarray]:
    """A device's events: apart (a long export's: none touching), touching, overlapping (real
    streams run together), unordered, or with NaN, zero-length, negative times."""
    if kind == 0:
        d = rng.choice([0.0, 0.5, 2.0, 7.25], n)
        s = float(rng.choice([1.7e12, -3.0])) + np.concatenate([[0.0], np.cumsum(d + rng.choice([1e-3, 0.5, 4.0], n))[:-1]])[:n]
        return s, s + d
    if kind == 1:  # apart but for one pair that touches or overlaps
        s, e = _events(rng, n, 0)
        if n > 1:
            i = int(rng.integers(1, n))
            s[i] = e[i - 1] - float(rng.choice([0.0, 0.25]))
            e[i] = max(e[i], s[i])
        return s, e
    if kind == 2:  # concurrent streams
        s = np.sort(np.round(rng.uniform(-3, 40, n), 1))
        return s, s + np.round(rng.uniform(0, 4, n), 1)
    s = rng.choice([-0.0, 0.0, -2.0, 1.0, 3.0, 9.0, np.nan], n)
    return (np.sort(s) if kind == 3 else s), s + rng.choice([-0.0, 0.0, -1.0, 0.5, 3.0], n)


@pytest.mark.parametrize("seed", range(40))
def test_shared_merge_is_the_merge_and_hands_back_only_intervals_apart(seed):
    rng = np.random.default_rng(100 + seed)
    s, e = _events(rng, int(rng.integers(0, 300)), seed % 5)
    for gap in (0.0, 0.5):
        got = iv.merge(s, e, gap, share=True)
        for a, b in zip(got, _plain_merge(s, e, gap), strict=True):
            assert a.tobytes() == b.tobytes()
        shared = got[0] is s and got[1] is e
        for a, b in zip(iv.merge(s, e.copy(), gap, share=bool(seed % 2), spend=True), got, strict=True):
            assert a.tobytes() == b.tobytes()  # (the reach made in the ends given: the same blocks)
        assert shared == iv.apart(s, e, gap)
        if seed % 5 == 0 and s.size and gap == 0.0 and e[0] > 0:
            assert shared  # (the shortcut is taken where it can be)
        for m in (s > np.nanmedian(s) if s.size else s > 0, slice(None, None, 2)):  # (subsets: as the views' kinds)
            for a, b in zip(iv.merge(s[m], e[m], share=True), _plain_merge(s[m], e[m]), strict=True):
                assert a.tobytes() == b.tobytes()

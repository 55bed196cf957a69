"""Per-group statistics of float64 values, exactly as pandas' groupby computes them, so the
analysis gives the same figures whether pandas is loaded or not.

What pandas 3.1 does (measured against it, tests/test_groupstats.py; pandas 3.0 orders a sorted
group's sum another way, so there the last bit may differ): a group's sum and mean
are sequential sums in row order (np.add.reduceat) when the group labels never decrease,
and Kahan-compensated sums in row order otherwise (its cython group_sum / group_mean);
variances are Welford's running sums (group_var); medians and quantiles are order
statistics of the sorted group, linearly interpolated as val + (next - val) * frac.
The Kahan and Welford loops run in C (gpuscope/_groupstats.c); where that is not built,
pandas itself computes those two.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gpuscope import native


def _native():
    """gpuscope._groupstats, or None (not built, or GPUSCOPE_PURE_SCANNER=1: no C at all)."""
    return native.load("groupstats")


def dense(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(labels 0..k-1, the sorted distinct keys): the group of each row, as pandas numbers them.
    np.unique's answer; integer keys of a range not much wider than their number (codes, a
    record's position times the names) by a count over the range instead of a sort."""
    keys = np.asarray(keys)
    if (keys.dtype.kind == "i" or (keys.dtype.kind == "u" and keys.dtype.itemsize < 8)) and len(keys):
        lo, hi = int(keys.min()), int(keys.max())
        if lo >= 0 and hi < 4 * len(keys) + 4096:
            present = np.flatnonzero(np.bincount(keys, minlength=hi + 1))
            lut = np.zeros(hi + 1, dtype=np.int64)
            lut[present] = np.arange(len(present), dtype=np.int64)
            return lut[keys], present.astype(keys.dtype)
    uniq, labels = np.unique(keys, return_inverse=True)
    return labels.astype(np.int64).ravel(), uniq


def _monotonic(labels: np.ndarray) -> bool:
    return labels.size < 2 or bool(np.all(labels[1:] >= labels[:-1]))


def sums(labels: np.ndarray, values: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """(sum, count) per group 0..k-1 (NaN values skipped; an empty group sums to 0)."""
    labels = np.ascontiguousarray(labels, dtype=np.int64)
    values = np.ascontiguousarray(values, dtype=np.float64)
    ok = ~np.isnan(values)
    counts = np.bincount(labels[ok], minlength=k).astype(np.int64)
    if not len(labels):
        return np.zeros(k), counts
    if _monotonic(labels):
        v = np.where(ok, values, 0.0) if not ok.all() else values
        starts = np.flatnonzero(np.concatenate(([True], labels[1:] != labels[:-1])))
        out = np.zeros(k)
        out[labels[starts]] = np.add.reduceat(v, starts)
        return out, counts
    mod = _native()
    if mod is not None:
        s, _ = mod.kahan_sums(labels, values, k)
        return np.frombuffer(s, dtype=np.float64).copy(), counts
    import pandas as pd

    out = pd.Series(values).groupby(labels).sum().reindex(range(k), fill_value=0.0).to_numpy(dtype=np.float64)
    return out, counts


def means(labels: np.ndarray, values: np.ndarray, k: int) -> np.ndarray:
    s, c = sums(labels, values, k)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(c > 0, s / np.maximum(c, 1), np.nan)


def variances(labels: np.ndarray, values: np.ndarray, k: int, ddof: int = 1) -> np.ndarray:
    """Per-group variance (NaN for groups of ddof values or fewer)."""
    labels = np.ascontiguousarray(labels, dtype=np.int64)
    values = np.ascontiguousarray(values, dtype=np.float64)
    mod = _native()
    if mod is not None:
        _, var = mod.welford(labels, values, k, ddof)
        return np.frombuffer(var, dtype=np.float64).copy()
    import pandas as pd

    return pd.Series(values).groupby(labels).var(ddof=ddof).reindex(range(k)).to_numpy(dtype=np.float64)


def _picks(n: int, qs) -> tuple[list[int], list[tuple[int, float]]]:
    """The ranks a group of n values needs (median pair, each quantile's pair) and each
    quantile's (rank, fraction)."""
    picks = {n // 2, max(n // 2 - 1, 0)}
    spots = []
    for q in qs:
        i = int(q * (n - 1))
        spots.append((i, (q * (n - 1)) % 1))
        picks.update((i, min(i + 1, n - 1)))
    return sorted(picks), spots


def _interpolate(x, n: int, spots, g: int, med: np.ndarray, qv: np.ndarray) -> None:
    """Group g's median and quantiles from x (rank -> value), linearly interpolated as pandas does."""
    med[g] = x[n // 2] if n % 2 else (x[n // 2 - 1] + x[n // 2]) / 2.0
    for j, (i, frac) in enumerate(spots):
        qv[g, j] = x[i] if frac == 0.0 else x[i] + (x[i + 1] - x[i]) * frac


def order_stats(labels: np.ndarray, values: np.ndarray, k: int, qs=(0.1, 0.9)) -> tuple[np.ndarray, np.ndarray]:
    """(median, quantiles[k, len(qs)]) per group, NaN values left out."""
    labels = np.asarray(labels, dtype=np.int64)
    values = np.asarray(values, dtype=np.float64)
    ok = ~np.isnan(values)
    labels, values = labels[ok], values[ok]
    # (a stable sort of small integers is a radix sort)
    order = np.argsort(labels.astype(np.uint16) if k <= 1 << 16 else labels, kind="stable")
    vs = values[order]
    counts = np.bincount(labels, minlength=k)
    bounds = np.concatenate(([0], np.cumsum(counts)))
    med = np.full(k, np.nan)
    qv = np.full((k, len(qs)), np.nan)
    for g in range(k):
        n = int(counts[g])
        if n == 0:
            continue
        picks, spots = _picks(n, qs)
        _interpolate(np.partition(vs[bounds[g]:bounds[g + 1]], picks), n, spots, g, med, qv)
    return med, qv


@dataclass
class Figures:
    """Per-group figures of `describe`, for the groups `present` (labels that occur at all, ascending)."""

    present: np.ndarray
    sums: np.ndarray
    counts: np.ndarray
    means: np.ndarray
    variances: np.ndarray
    medians: np.ndarray
    quantiles: np.ndarray


def describe(labels: np.ndarray, values: np.ndarray, k: int, qs=(0.1, 0.9)) -> Figures:
    """sums, means, variances (ddof 1), medians and quantiles of each group, as sums, means,
    variances and order_stats give them over dense(labels). Where the C helper is built and
    the labels are integers in [0, k) (a parser's codes, any width), its two passes
    (`moments`, `select_ranks`: no sort, no copy of the values or int64 copy of the labels)
    give the same figures."""
    values = np.ascontiguousarray(values, dtype=np.float64)
    labels = np.ascontiguousarray(labels)
    mod = _native()
    if mod is None or labels.dtype.kind != "i" or not len(labels) or int(labels.min()) < 0 or int(labels.max()) >= k:
        dl, present = dense(labels)
        kk = len(present)
        s, c = sums(dl, values, kk)
        med, qv = order_stats(dl, values, kk, qs)
        return Figures(present, s, c, means(dl, values, kk), variances(dl, values, kk), med, qv)
    s_b, c_b, var_b, rows_b, mono = mod.moments(labels, values, k, 1)
    present = np.flatnonzero(np.frombuffer(rows_b, dtype=np.int64))
    c = np.frombuffer(c_b, dtype=np.int64)
    if mono:  # (pandas sums labels that never decrease another way: sums knows how)
        s, _ = sums(labels, values, k)
    else:
        s = np.frombuffer(s_b, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(c > 0, s / np.maximum(c, 1), np.nan)
    m = 2 + 2 * len(qs)
    ranks = np.full((k, m), -1, dtype=np.int64)
    plan = {}
    for g in present.tolist():
        n = int(c[g])
        if n:
            picks, spots = _picks(n, qs)
            ranks[g, :len(picks)] = picks
            plan[g] = (n, picks, spots)
    picked_b, mixed_b = mod.select_ranks(labels, values, k, ranks)
    picked = np.frombuffer(picked_b, dtype=np.float64).reshape(k, m)
    mixed = np.frombuffer(mixed_b, dtype=np.uint8)
    med = np.full(k, np.nan)
    qv = np.full((k, len(qs)), np.nan)
    for g, (n, picks, spots) in plan.items():
        if mixed[g]:  # -0.0 beside +0.0: which one a rank shows is the partition's choice, as before
            x = values[labels == g]
            x = np.partition(x[~np.isnan(x)], picks)
        else:
            x = dict(zip(picks, picked[g, :len(picks)], strict=True))
        _interpolate(x, n, spots, g, med, qv)
    return Figures(present, s[present], c[present], mean[present], np.frombuffer(var_b, dtype=np.float64)[present],
                   med[present], qv[present])

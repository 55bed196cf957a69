"""compare's statistics: per-component medians and p10-p90, and B/A ratios of medians with
percentile-bootstrap confidence intervals (docs/COMPARE.md).

- describe: count, median, p10, p90 of one side's values;
- bootstrap_ratio: median(B) / median(A) and its 95% CI, both sides resampled with
  replacement, independently, `n_boot` times, from a seeded numpy Generator (the same seed
  gives the same interval);
- compare_components: one row per component of either side (values_row), each component
  with its own random stream derived from the seed and its name.

Pure: arrays and ParsedLog frames in, numbers and dicts out.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from gpuscope.arrays import median

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

    from gpuscope.analysis.compare.document import ComponentRowDoc
    from gpuscope.analysis.compare.side import Side
    from gpuscope.parsers.log.parsed import ParsedLog

DEFAULT_BOOTSTRAP = 2000
CONFIDENCE = 0.95


def finite(values: ArrayLike) -> np.ndarray:
    v = np.asarray(values, dtype=float)
    return v[np.isfinite(v)]


def describe(values: ArrayLike) -> dict[str, float]:
    """count, median, p10, p90 (ms) of the finite values."""
    v = finite(values)
    if not len(v):
        return {"count": 0, "median_ms": math.nan, "p10_ms": math.nan, "p90_ms": math.nan}
    p10, med, p90 = np.percentile(v, [10, 50, 90])
    return {"count": int(len(v)), "median_ms": float(med), "p10_ms": float(p10), "p90_ms": float(p90)}


#: above this many values a side's bootstrap medians are drawn by rank (_boot_medians_by_rank):
#: O(n_boot * sqrt(n)) instead of O(n_boot * n). Below it the resamples are drawn whole, so every
#: interval computed before the rank method existed stays the same to the bit.
RANK_METHOD_MIN = 2_000


def _boot_medians(v: np.ndarray, n_boot: int, rng: np.random.Generator, chunk_cells: int = 4_000_000) -> np.ndarray:
    if len(v) > RANK_METHOD_MIN:
        return _boot_medians_by_rank(np.sort(v), n_boot, rng)
    out = np.empty(n_boot)
    step = max(1, chunk_cells // max(1, len(v)))
    for s in range(0, n_boot, step):
        k = min(step, n_boot - s)
        idx = rng.integers(0, len(v), size=(k, len(v)))
        out[s : s + k] = median(v[idx], axis=1)
    return out


def _boot_medians_by_rank(xs: np.ndarray, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """Medians of `n_boot` resamples (n draws with replacement) of the sorted values `xs`, from
    exactly the distribution of resampling whole, without drawing the n values. A resample is a
    multinomial count per position; the value at rank r is found by halving the positions: of
    the N draws in [a, b), the number in [a, mid) ~ Binomial(N, (mid - a) / (b - a)), and the
    rank lies left when the draws below a plus those reach r. The two middle ranks (one for odd
    n) descend together, sharing their draws while they share an interval, and independently
    once they part (counts of disjoint intervals, given their totals, are independent). About
    log2(n) binomial draws per resample: 1,000,000 values x 2,000 resamples in milliseconds."""
    n = len(xs)
    ranks = ((n + 1) // 2, n // 2 + 1)  # 1-based ranks averaged into the median (equal for odd n)
    a = [np.zeros(n_boot, dtype=np.int64) for _ in ranks]
    b = [np.full(n_boot, n, dtype=np.int64) for _ in ranks]
    below = [np.zeros(n_boot, dtype=np.int64) for _ in ranks]
    inside = [np.full(n_boot, n, dtype=np.int64) for _ in ranks]
    while any(bool((bb - aa > 1).any()) for aa, bb in zip(a, b, strict=True)):
        together = (a[0] == a[1]) & (b[0] == b[1])
        first_left: np.ndarray | None = None
        for i, r in enumerate(ranks):
            live = b[i] - a[i] > 1
            mid = (a[i] + b[i]) // 2
            p = np.where(live, (mid - a[i]) / np.maximum(b[i] - a[i], 1), 0.0)
            left = rng.binomial(inside[i], p)
            if first_left is not None:
                left = np.where(together, first_left, left)
            first_left = left
            go_left = live & (below[i] + left >= r)
            go_right = live & ~go_left
            b[i] = np.where(go_left, mid, b[i])
            a[i] = np.where(go_right, mid, a[i])
            below[i] = np.where(go_right, below[i] + left, below[i])
            inside[i] = np.where(go_left, left, np.where(go_right, inside[i] - left, inside[i]))
    return (xs[a[0]] + xs[a[1]]) / 2


def bootstrap_ratio(
    a: ArrayLike, b: ArrayLike, *, seed: int | list[int] = 0, n_boot: int = DEFAULT_BOOTSTRAP, confidence: float = CONFIDENCE
) -> tuple[float, float, float]:
    """median(b) / median(a) and its percentile-bootstrap CI. NaNs when undefined
    (an empty side or a zero median on A)."""
    va, vb = finite(a), finite(b)
    if not len(va) or not len(vb) or n_boot < 1:
        return math.nan, math.nan, math.nan
    ma = float(median(va))
    if ma == 0:
        return math.nan, math.nan, math.nan
    ratio = float(median(vb)) / ma
    rng = np.random.default_rng(seed)
    ba = _boot_medians(va, n_boot, rng)
    bb = _boot_medians(vb, n_boot, rng)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = bb / ba
    r = r[np.isfinite(r)]
    if not len(r):
        return ratio, math.nan, math.nan
    alpha = (1 - confidence) / 2
    lo, hi = np.quantile(r, [alpha, 1 - alpha])
    return ratio, float(lo), float(hi)


def component_values(parsed: ParsedLog, name: str, held_key: str = "mutex_held") -> np.ndarray:
    """All values of a component (one per line per GPU), in line order. The held key comes
    from the complete tenures (one per tenure)."""
    if name == held_key:
        recs = parsed.columns("records")
        return np.asarray(recs["held_ms"], dtype=float)[np.asarray(recs["complete"], dtype=bool)]
    return component_groups(parsed).get(name, np.zeros(0))


def held_values(side: Side) -> np.ndarray:
    """A side's held times (one per complete tenure); none for a side without timing lines."""
    if side.parsed is None:
        return np.zeros(0)
    return component_values(side.parsed, side.held_key, side.held_key)


def component_groups(parsed: ParsedLog) -> dict[str, np.ndarray]:
    """Every component's values, in line order, grouped in one pass over the parser's codes
    (a name-by-name scan of the components was O(names x rows))."""
    cols = parsed.columns("components")
    codes, cats = cols.codes("component")
    values = np.asarray(cols["value_ms"], dtype=float)
    if not len(codes):
        return {}
    order = np.argsort(codes, kind="stable")
    bounds = np.searchsorted(codes[order], np.arange(len(cats) + 1))
    return {name: values[order[bounds[i]:bounds[i + 1]]] for i, name in enumerate(cats) if bounds[i + 1] > bounds[i]}


def compare_components(
    a: Side, b: Side, *, seed: int = 0, n_boot: int = DEFAULT_BOOTSTRAP, names: list[str] | None = None
) -> dict[str, ComponentRowDoc]:
    """Per component present on both sides: medians, p10-p90, B/A ratio with its CI.

    Order: the held key first, then by A's median, largest first. Components (always
    milliseconds; byte counts are quantities, not components) on one side only are listed
    with null ratio.
    """
    ga, gb = (component_groups(s.parsed) if s.parsed is not None else {} for s in (a, b))
    if names is None:
        names = sorted(set(ga) | set(gb))

    def values(side: Side, groups: dict[str, np.ndarray], name: str) -> np.ndarray:
        return held_values(side) if name == side.held_key else groups.get(name, np.zeros(0))

    out: dict[str, ComponentRowDoc] = {}
    for name in names:
        out[name] = values_row(values(a, ga, name), values(b, gb, name), seed=seed, n_boot=n_boot, name=name)
    held = a.held_key
    first = [held] if held in out else []

    def largest_first(k: str) -> tuple[float, str]:
        med = out[k]["a_median_ms"]
        return -(med if med is not None and math.isfinite(med) else -1), k

    rest = sorted((k for k in out if k != held), key=largest_first)
    return {k: out[k] for k in first + rest}


def values_row(va: ArrayLike, vb: ArrayLike, *, seed: int, n_boot: int, name: str) -> ComponentRowDoc:
    """One component's row: both sides' medians and p10-p90, the B/A ratio with its CI."""
    da, db = describe(va), describe(vb)
    # Each component gets its own stream, derived from the seed and its name, so adding a
    # component does not change the others' intervals.
    ratio, lo, hi = bootstrap_ratio(va, vb, seed=_component_seed(seed, name), n_boot=n_boot)
    return {
        "a_count": int(da["count"]), "a_median_ms": da["median_ms"], "a_p10_ms": da["p10_ms"], "a_p90_ms": da["p90_ms"],
        "b_count": int(db["count"]), "b_median_ms": db["median_ms"], "b_p10_ms": db["p10_ms"], "b_p90_ms": db["p90_ms"],
        "ratio": ratio, "ci_low": lo, "ci_high": hi,
    }


def _component_seed(seed: int, name: str) -> list[int]:
    # A stable (not hash-randomised) per-name entropy word.
    h = 0
    for ch in name.encode():
        h = (h * 131 + ch) % (2**32)
    return [int(seed), h]


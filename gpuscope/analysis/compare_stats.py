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
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

    from gpuscope.analysis.compare_side import Side
    from gpuscope.parsers.parsed import ParsedLog

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


def _boot_medians(v: np.ndarray, n_boot: int, rng: np.random.Generator, chunk_cells: int = 4_000_000) -> np.ndarray:
    out = np.empty(n_boot)
    step = max(1, chunk_cells // max(1, len(v)))
    for s in range(0, n_boot, step):
        k = min(step, n_boot - s)
        idx = rng.integers(0, len(v), size=(k, len(v)))
        out[s : s + k] = np.median(v[idx], axis=1)
    return out


def bootstrap_ratio(
    a: ArrayLike, b: ArrayLike, *, seed: int | list[int] = 0, n_boot: int = DEFAULT_BOOTSTRAP, confidence: float = CONFIDENCE
) -> tuple[float, float, float]:
    """median(b) / median(a) and its percentile-bootstrap CI. NaNs when undefined
    (an empty side or a zero median on A)."""
    va, vb = finite(a), finite(b)
    if not len(va) or not len(vb) or n_boot < 1:
        return math.nan, math.nan, math.nan
    ma = float(np.median(va))
    if ma == 0:
        return math.nan, math.nan, math.nan
    ratio = float(np.median(vb)) / ma
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
    """All values of a component (one per line per GPU). The held key comes from the
    complete tenures (one per tenure)."""
    if name == held_key:
        recs = parsed.records
        if "complete" in recs:
            recs = recs[recs["complete"].astype(bool)]
        return recs["held_ms"].to_numpy(dtype=float)
    c = parsed.components
    return c.loc[c["component"] == name, "value_ms"].to_numpy(dtype=float)


def compare_components(
    a: Side, b: Side, *, seed: int = 0, n_boot: int = DEFAULT_BOOTSTRAP, names: list[str] | None = None
) -> dict[str, dict[str, Any]]:
    """Per component present on both sides: medians, p10-p90, B/A ratio with its CI.

    Order: the held key first, then by A's median, largest first. Components (always
    milliseconds; byte counts are quantities, not components) on one side only are listed
    with null ratio.
    """
    if names is None:
        na = set(a.parsed.components["component"].unique())
        nb = set(b.parsed.components["component"].unique())
        names = sorted(na | nb)
    out: dict[str, dict[str, Any]] = {}
    for name in names:
        va = component_values(a.parsed, name, a.held_key)
        vb = component_values(b.parsed, name, b.held_key)
        out[name] = values_row(va, vb, seed=seed, n_boot=n_boot, name=name)
    held = a.held_key
    first = [held] if held in out else []
    rest = sorted((k for k in out if k != held),
                  key=lambda k: (-(out[k]["a_median_ms"] if math.isfinite(out[k]["a_median_ms"]) else -1), k))
    return {k: out[k] for k in first + rest}



def values_row(va: ArrayLike, vb: ArrayLike, *, seed: int, n_boot: int, name: str) -> dict[str, Any]:
    """One component's row: both sides' medians and p10-p90, the B/A ratio with its CI."""
    da, db = describe(va), describe(vb)
    # Each component gets its own stream, derived from the seed and its name, so adding a
    # component does not change the others' intervals.
    ratio, lo, hi = bootstrap_ratio(va, vb, seed=_component_seed(seed, name), n_boot=n_boot)
    return {
        "a_count": da["count"], "a_median_ms": da["median_ms"], "a_p10_ms": da["p10_ms"], "a_p90_ms": da["p90_ms"],
        "b_count": db["count"], "b_median_ms": db["median_ms"], "b_p10_ms": db["p10_ms"], "b_p90_ms": db["p90_ms"],
        "ratio": ratio, "ci_low": lo, "ci_high": hi,
    }


def _component_seed(seed: int, name: str) -> list[int]:
    # A stable (not hash-randomised) per-name entropy word.
    h = 0
    for ch in name.encode():
        h = (h * 131 + ch) % (2**32)
    return [int(seed), h]


"""Per-component statistics over every value the log printed (one row per GPU for per-GPU lines).

count, sum, mean, median, p10, p90 (linear interpolation, pandas' default) and the coefficient
of variation cv = sample standard deviation / mean (NaN with fewer than 2 values or mean 0).
Components not tied to any record (CPU-side lines) get entries too.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from gpuscope.rolemodel import RoleModel

STAT_COLUMNS = ["role", "count", "sum_ms", "mean_ms", "median_ms", "p10_ms", "p90_ms", "cv"]
_ROLE_ORDER = {"held": 0, "h2d": 1, "gpu_compute": 2, "cpu_stall": 3, "contention": 4, "cpu": 5, "info": 6}


def role_label(component: str, model: RoleModel, present: set[str] | frozenset[str] = frozenset()) -> str:
    """The component's role; for the outer part of a `contains` rule whose inner part is in
    this log (`present`), the remainder's role, as the split counts it (e.g. ntt_kernels is
    gpu_compute when the log also has the explicit h2d it contains)."""
    if component == model.held:
        return "held"
    rule = model.contains.get(component)
    if rule is not None and rule.inner in present:
        return rule.remainder_role
    return model.role_of(component) or "-"


def component_stats(components: pd.DataFrame, model: RoleModel, factorized: tuple | None = None) -> pd.DataFrame:
    """One row per component (index `component`), ordered by role then first appearance.

    `factorized` = pd.factorize(components["component"]) when the caller already has it.
    """
    if components.empty:
        return pd.DataFrame(
            {c: pd.Series(dtype="object" if c == "role" else "float64") for c in STAT_COLUMNS},
            index=pd.Index([], name="component", dtype="object"),
        ).astype({"count": "int64"})
    codes, names = factorized if factorized is not None else pd.factorize(components["component"])
    # factorize numbers components in order of first appearance (rows: lines, then fields)
    g = pd.Series(components["value_ms"].to_numpy(dtype="float64")).groupby(np.asarray(codes))
    agg = g.agg(["count", "sum", "mean", "std", "median"])
    q = g.quantile([0.1, 0.9]).unstack()
    mean = agg["mean"].to_numpy()
    std = agg["std"].to_numpy()
    with np.errstate(divide="ignore", invalid="ignore"):
        cv = np.where((agg["count"].to_numpy() >= 2) & (mean != 0), std / mean, np.nan)
    idx = pd.Index([str(names[c]) for c in agg.index], name="component", dtype="object")
    out = pd.DataFrame(
        {
            "role": [role_label(c, model, set(idx)) for c in idx],
            "count": agg["count"].to_numpy(dtype="int64"),
            "sum_ms": agg["sum"].to_numpy(dtype="float64"),
            "mean_ms": mean.astype("float64"),
            "median_ms": agg["median"].to_numpy(dtype="float64"),
            "p10_ms": q[0.1].reindex(agg.index).to_numpy(dtype="float64"),
            "p90_ms": q[0.9].reindex(agg.index).to_numpy(dtype="float64"),
            "cv": cv,
        },
        index=idx,
    )
    first = dict(zip(idx, agg.index, strict=True))
    order = sorted(out.index, key=lambda c: (_ROLE_ORDER.get(out.at[c, "role"], 7), first[c]))
    return out.loc[order]

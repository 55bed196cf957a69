"""Per-component statistics over every value the log printed (one row per GPU for per-GPU lines).

count, sum, mean, median, p10, p90 (linear interpolation, pandas' default) and the coefficient
of variation cv = sample standard deviation / mean (NaN with fewer than 2 values or mean 0).
Components not tied to any record (CPU-side lines) get entries too. The figures are pandas'
groupby figures to the last bit (gpuscope.analysis.evidence.log.groupstats), computed on the parser's
name codes.
"""

from __future__ import annotations

import numpy as np

from gpuscope.analysis.evidence.log import groupstats
from gpuscope.analysis.evidence.log.split import _component_codes
from gpuscope.analysis.evidence.log.table import Table, column
from gpuscope.rolemodel import RoleModel

STAT_COLUMNS = ["role", "count", "sum_ms", "mean_ms", "median_ms", "p10_ms", "p90_ms", "cv"]
STAT_DTYPES = {"role": "str", "count": "int64", "sum_ms": "float64", "mean_ms": "float64",
               "median_ms": "float64", "p10_ms": "float64", "p90_ms": "float64", "cv": "float64"}
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


def stats_table(components, model: RoleModel, apart: frozenset[str] = frozenset()) -> Table:
    """One row per component (index: its name), ordered by role then first appearance.
    `components`: gpuscope.schemas.Columns or a DataFrame. `apart`: names left out (an
    evaluation's times, ParsedLog.evaluation_names: no training step's, issue 33 class 6)."""
    codes, names = _component_codes(components)
    values = np.asarray(column(components, "value_ms"), dtype="float64")
    if apart and len(codes):
        keep = ~np.isin(codes, [c for c, nm in enumerate(names) if str(nm) in apart])
        codes, values = codes[keep], values[keep]
    if not len(codes):
        return Table({c: np.zeros(0, dtype=STAT_DTYPES[c]) for c in STAT_COLUMNS}, [], "component", STAT_DTYPES)
    # (codes number the names in order of first appearance: the groups in that order)
    fig = groupstats.describe(codes, values, len(names))
    present, s, count, mean, med, q = fig.present, fig.sums, fig.counts, fig.means, fig.medians, fig.quantiles
    k = len(present)
    std = np.sqrt(fig.variances)
    with np.errstate(divide="ignore", invalid="ignore"):
        cv = np.where((count >= 2) & (mean != 0), std / mean, np.nan)
    idx = [str(names[c]) for c in present]
    present_set = set(idx)
    roles = [role_label(c, model, present_set) for c in idx]
    order = sorted(range(k), key=lambda i: (_ROLE_ORDER.get(roles[i], 7), i))
    cols = {
        "role": np.array([roles[i] for i in order], dtype=object),
        "count": count[order].astype("int64"),
        "sum_ms": s[order],
        "mean_ms": mean[order],
        "median_ms": med[order],
        "p10_ms": q[order, 0],
        "p90_ms": q[order, 1],
        "cv": cv[order],
    }
    return Table(cols, [idx[i] for i in order], "component", STAT_DTYPES)


def component_stats(components, model: RoleModel):
    """stats_table as a DataFrame (index `component`)."""
    return stats_table(components, model).frame()

"""What every log diagnosis rule reads (`RuleInput`: the split, the record x component
table, the component statistics, the totals, timeline, bounds, options, model, PCIe per phase,
upload bytes) and the number helpers the rules share.

The rules themselves: upload_rules (h2d_bound, pcie_underused) and tenure_rules (stalls,
convoys, variation, inconsistent records, warm-ups); gpuscope.analysis.rules runs them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from gpuscope.analysis.result import AnalyzeOptions
from gpuscope.rolemodel import RoleModel

NAN = float("nan")


@dataclass
class RuleInput:
    split: pd.DataFrame          # per-record split
    wide: pd.DataFrame           # record x component (GPU-averaged ms)
    stats: pd.DataFrame          # component statistics
    totals: dict                 # split totals
    timeline: dict
    bounds: dict
    options: AnalyzeOptions
    model: RoleModel
    pcie: pd.DataFrame | None = None
    # upload bytes per split row (tenure), from the log's quantities (analysis.quantities)
    upload_bytes: np.ndarray | None = None
    upload_bytes_key: str | None = None



def coef_var(x: np.ndarray) -> float:
    x = x[~np.isnan(x)]
    if x.size < 2 or x.mean() == 0:
        return NAN
    return float(x.std(ddof=1) / x.mean())


def correlation(a: np.ndarray, b: np.ndarray) -> float:
    ok = ~(np.isnan(a) | np.isnan(b))
    a, b = a[ok], b[ok]
    if a.size < 3 or a.std() == 0 or b.std() == 0:
        return NAN
    return float(np.corrcoef(a, b)[0, 1])


def rnd(x: float | None, nd: int = 1) -> float:
    """`x` rounded to `nd` decimals for the evidence; NaN stays NaN (None too)."""
    return NAN if x is None or (isinstance(x, float) and math.isnan(x)) else round(float(x), nd)


def column(wide: pd.DataFrame, name: str) -> np.ndarray | None:
    return wide[name].to_numpy(dtype="float64") if name in wide.columns else None


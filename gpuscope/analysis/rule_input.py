"""What every log diagnosis rule reads (`RuleInput`: the split, the record x component
table, the component statistics, the totals, timeline, bounds, options, model, PCIe per phase,
upload bytes) and the number helpers the rules share.

The rules themselves: rules.upload (h2d_bound, pcie_underused) and rules.tenure (stalls,
convoys, variation, inconsistent records, warm-ups); gpuscope.analysis.rules runs them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from gpuscope.analysis.core import AnalyzeOptions
from gpuscope.analysis.evidence.log.table import Table, as_table
from gpuscope.rolemodel import RoleModel

if TYPE_CHECKING:
    import pandas as pd

NAN = float("nan")


@dataclass
class RuleInput:
    split: Table                 # per-record split (a DataFrame is read into a Table)
    wide: Table                  # record x component (GPU-averaged ms)
    stats: Table                 # component statistics (index: component)
    totals: dict                 # split totals
    timeline: dict
    bounds: dict
    options: AnalyzeOptions
    model: RoleModel
    pcie: pd.DataFrame | None = None
    # upload bytes per split row (tenure), from the log's quantities (analysis.quantities)
    upload_bytes: np.ndarray | None = None
    upload_bytes_key: str | None = None

    def __post_init__(self) -> None:
        self.split = as_table(self.split)
        self.wide = as_table(self.wide)
        self.stats = as_table(self.stats)


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


def column(wide: Table, name: str) -> np.ndarray | None:
    """A column of `wide` as float64, None when it has none of that name."""
    return wide[name].astype("float64") if name in wide else None


def floats(t: Table, name: str) -> np.ndarray:
    """A column of `t` as float64."""
    return t[name].astype("float64")


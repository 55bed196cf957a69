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
from gpuscope.arrays import median
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

    def copies_could_hide_under_compute(self, copies: str) -> bool | None:
        """Whether the records' copies (split column `copies`: h2d_ms, d2h_ms) ran in turn with the GPU
        compute and are no longer than it, so that overlapping them would hide them (what a trace of
        the same copies calls copies_not_overlapped), as far as the log can show. In turn: the log
        prints each record's whole (the model's held component, e.g. `step`, `mutex_held`) and the
        copies plus the compute fit within it (the median record, SERIAL_SLACK over). False: the
        parts exceed the whole (they ran beside each other), or the copies outlast the compute (the
        link stays the limit however they overlap). None: the log cannot tell: no whole printed (the
        whole is then the sum of its parts, which proves nothing of overlap), or no copy or compute."""
        held = self.model.held
        if not held or held not in self.wide.columns or not len(self.split):
            return None
        sp = self.split
        cp, gpu, whole = (np.asarray(sp[c], dtype=float) for c in (copies, "gpu_compute_ms", "held_ms"))
        ok = (cp > 0) & (gpu > 0) & (whole > 0)
        if not ok.any():
            return None
        in_turn = median((cp[ok] + gpu[ok]) / whole[ok]) <= 1.0 + SERIAL_SLACK
        return bool(in_turn and median(cp[ok]) <= median(gpu[ok]))


SERIAL_SLACK = 0.02  # copies + compute this far over the printed whole still ran in turn (rounding)


def coef_var(x: np.ndarray) -> float:
    nan = np.isnan(x)
    if nan.any():
        x = x[~nan]
    if x.size < 2:
        return NAN
    return cv_of(*spread(x), x.size)


def spread(x: np.ndarray) -> tuple[float, float]:
    """(mean, sum of squared deviations from it) of x, by numpy's own steps for x.var() and
    x.mean() (the pairwise sum over the size, then the squares of x minus it summed): the
    mean, var and std numpy gives follow from it to the bit (`cv_of`, `std_of`), and a caller
    that wants two of them reads x twice instead of four times."""
    arr = np.asarray(x)
    mean = np.add.reduce(arr, axis=None, keepdims=True)
    np.true_divide(mean, arr.size, out=mean, casting="unsafe")
    d = np.subtract(arr, mean)
    np.square(d, out=d)
    return float(mean[0] if mean.ndim == 1 else mean.reshape(-1)[0]), float(np.add.reduce(d, axis=None))


def std_of(sq: float, n: int, ddof: int = 0) -> float:
    """x.std(ddof) from spread(x)'s sum of squares and x's size."""
    return float(np.sqrt(np.float64(sq) / max(n - ddof, 0)))


def cv_of(mean: float, sq: float, n: int) -> float:
    """coef_var from spread(x) and x's size (at least 2 values): std(ddof=1) / mean, NaN at a
    zero mean."""
    if mean == 0:
        return NAN
    return float(np.float64(std_of(sq, n, 1)) / np.float64(mean))


def cov_pair(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """np.cov(a, b): the same operations in the same order (the two as the rows of one 2 x n
    matrix, centred on the row means, times its transpose, over n - 1), in that one buffer
    (np.cov copies each, then both: four times the memory of one)."""
    x = np.empty((2, len(a)))
    x[0] = a
    x[1] = b
    avg = np.average(x, axis=1)
    fact: float = x.shape[1] - 1
    if fact <= 0:
        fact = 0.0
    x -= avg[:, None]
    c = np.dot(x, x.T.conj())
    c *= np.true_divide(1, fact)
    return c


def correlation_of(cov: np.ndarray) -> float:
    """np.corrcoef's [0, 1] from the 2 x 2 covariance np.cov gives (its own normalisation)."""
    c = cov.copy()
    stddev = np.sqrt(np.diag(c).real)
    c /= stddev[:, None]
    c /= stddev[None, :]
    np.clip(c.real, -1, 1, out=c.real)
    return float(c[0, 1])


def correlation(a: np.ndarray, b: np.ndarray) -> float:
    ok = ~(np.isnan(a) | np.isnan(b))
    if not ok.all():
        a, b = a[ok], b[ok]
    if a.size < 3 or a.std() == 0 or b.std() == 0:
        return NAN
    return correlation_of(cov_pair(a, b))


def rnd(x: float | None, nd: int = 1) -> float:
    """`x` rounded to `nd` decimals for the evidence; NaN stays NaN (None too)."""
    return NAN if x is None or (isinstance(x, float) and math.isnan(x)) else round(float(x), nd)


def column(wide: Table, name: str) -> np.ndarray | None:
    """A column of `wide` as float64 (the column itself where it is: the rules only read),
    None when it has none of that name."""
    return np.asarray(wide[name], dtype="float64") if name in wide else None


def floats(t: Table, name: str) -> np.ndarray:
    """A column of `t` as float64: the column itself where it is one (the rules only read
    it; a split of a million records is not copied per rule)."""
    return np.asarray(t[name], dtype="float64")


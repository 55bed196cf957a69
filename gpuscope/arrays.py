"""numpy operations the project does one way, where numpy's own default costs a user time.

`distinct(a)` is `np.unique(a)`: the sorted distinct values. numpy 2.4's `np.unique` finds the
distinct values of integers and strings through a hash table, which for a million distinct values
takes ~1.5 CPU-s where a sort takes 0.02 (docs/BENCHMARKS.md, "np.unique"); a 1M-line log's
record ids, (record, GPU) pairs and name codes are such arrays. Every other dtype (floats, whose
NaNs np.unique folds into one, objects) goes to np.unique itself. tests/test_arrays.py holds it
equal to np.unique and keeps plain np.unique calls out of the package.

`median(a)` is `np.median(a)` (`skip_nan`: np.nanmedian's; `axis`: along one axis). numpy 2.4's
median partitions around every middle rank and the last element at once (~12 ms for a million
floats where one partition takes ~3), and its first call imports numpy.ma (whose import reads
function signatures through the tokenizer, ~15 ms a process). Here: one partition, then the
largest value left of it for an even count, the middle pair's mean as np.median takes it (the
same float: (lo + hi) / 2 in the values' own float type; integers as float64), NaN where a NaN is
not skipped. tests/test_arrays.py holds it equal to np.median and keeps np.median out of the package.
"""

from __future__ import annotations

import numpy as np

_SORTED_KINDS = frozenset("biuUS")  # bool, signed and unsigned integers, str and bytes


def distinct(a) -> np.ndarray:
    """The sorted distinct values of `a` (flattened), as np.unique(a) gives them."""
    x = np.asarray(a)
    if x.dtype.kind not in _SORTED_KINDS:
        return np.unique(x)
    s = x.ravel()
    if len(s) < 2:
        return s.copy()
    if not (s[1:] >= s[:-1]).all():  # (keys already in order, as a log prints a group's names: one pass)
        s = np.sort(s)
    keep = np.empty(len(s), dtype=bool)
    keep[0] = True
    np.not_equal(s[1:], s[:-1], out=keep[1:])
    return s[keep]


def median(a, skip_nan: bool = False, axis: int | None = None, overwrite: bool = False):
    """np.median(a) (skip_nan: of the values that are not NaN, NaN where none is; axis: along that
    axis, else of all values); `overwrite`: `a` may be reordered (np.median's overwrite_input)."""
    x = np.asarray(a)
    if x.dtype.kind not in "fc":
        x, overwrite = x.astype(np.float64), True
    if axis is not None:
        return _median_along(np.moveaxis(x, axis, -1), skip_nan)
    x = x.ravel()
    nan = x.dtype.type(np.nan)
    if skip_nan:
        x, overwrite = (x[~np.isnan(x)], True) if np.isnan(x).any() else (x, overwrite)
    elif x.size and np.isnan(x).any():
        return nan
    n = x.size
    if n == 0:
        return nan
    k = n // 2
    p = x if overwrite else x.copy()
    p.partition(k)
    mid = p[k] if n % 2 else (p[:k].max() + p[k]) / 2
    return mid + 0.0  # (np.median's mean adds to +0.0: never a -0.0)


def _median_along(x: np.ndarray, skip_nan: bool) -> np.ndarray:
    """np.median(x, axis=-1) (np.nanmedian's where skip_nan: row by row where a row holds a NaN)."""
    n = x.shape[-1]
    if n == 0:
        return np.full(x.shape[:-1], np.nan, dtype=x.dtype)
    k = n // 2
    p = np.partition(x, k, axis=-1)
    out = (p[..., k] if n % 2 else (p[..., :k].max(axis=-1) + p[..., k]) / 2) + 0.0
    has_nan = np.isnan(x).any(axis=-1)
    if has_nan.any():
        out = np.array(out, copy=True)
        rows = np.argwhere(has_nan)
        for r in map(tuple, rows):
            out[r] = median(x[r], skip_nan) if skip_nan else np.nan
    return out

"""numpy operations the project does one way, where numpy's own default costs a user time.

`distinct(a)` is `np.unique(a)`: the sorted distinct values. numpy 2.4's `np.unique` finds the
distinct values of integers and strings through a hash table, which for a million distinct values
takes ~1.5 CPU-s where a sort takes 0.02 (docs/BENCHMARKS.md, "np.unique"); a 1M-line log's
record ids, (record, GPU) pairs and name codes are such arrays. Every other dtype (floats, whose
NaNs np.unique folds into one, objects) goes to np.unique itself. tests/test_arrays.py holds it
equal to np.unique and keeps plain np.unique calls out of the package.
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

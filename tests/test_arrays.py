"""gpuscope.arrays.distinct is np.unique, one way, without numpy 2.4's hash path for integers and
strings (~1.5 CPU-s for a million distinct values where a sort takes 0.02); gpuscope.arrays.median
is np.median with one partition and without importing numpy.ma."""

from __future__ import annotations

import ast

import numpy as np
import pytest

from gpuscope.arrays import distinct, median
from tests.conftest import REPO
from tests.import_graph import modules, tree_of


@pytest.mark.parametrize("make", [
    lambda r: r.integers(0, 1_000_000, 50_000),                      # many distinct int64
    lambda r: r.integers(0, 5, 50_000).astype(np.int32),             # few
    lambda r: np.sort(r.integers(-9, 9, 1_000)),                     # already in order
    lambda r: r.integers(0, 2, 100).astype(bool),
    lambda r: r.integers(0, 300, 2_000).astype(np.uint16).reshape(40, 50),  # (flattened)
    lambda r: r.integers(0, 500, 3_000).astype(str),                 # str
    lambda r: r.integers(0, 500, 3_000).astype(str).astype(object),  # objects: np.unique itself
    lambda r: np.where(r.random(1_000) < 0.1, np.nan, r.integers(0, 9, 1_000)),  # floats, NaNs folded
    lambda r: np.zeros(0, dtype=np.int64),
    lambda r: np.array([7]),
])
def test_distinct_is_np_unique(make):
    a = make(np.random.default_rng(3))
    got, want = distinct(a), np.unique(a)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


def test_the_package_calls_np_unique_only_through_distinct_or_with_its_options():
    """A plain np.unique(x) of integers or strings is the slow path: gpuscope.arrays.distinct does it
    (np.unique with return_counts / return_inverse / return_index takes the sort path itself)."""
    plain = [where for where, call in _np_calls("unique") if not call.keywords]
    assert not plain, plain


def _np_calls(attr: str) -> list[tuple[str, ast.Call]]:
    """The package's calls np.<attr>(...), as (path:line, call); gpuscope/arrays.py, their one home,
    left out. (The syntax trees are tests.import_graph's: parsed once for every test that reads them.)"""
    found = []
    for module, path in sorted(modules().items(), key=lambda kv: kv[1]):
        if path.name == "arrays.py":
            continue
        for n in ast.walk(tree_of(module)):
            if (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == attr
                    and isinstance(n.func.value, ast.Name) and n.func.value.id == "np"):
                found.append((f"{path.relative_to(REPO)}:{n.lineno}", n))
    return found


MEDIAN_INPUTS = [
    lambda r, n: r.normal(size=n),
    lambda r, n: r.integers(-5, 5, n),                                          # ints: a float64 median
    lambda r, n: r.normal(size=n).astype(np.float32),                           # float32 stays float32
    lambda r, n: np.where(r.random(n) < 0.2, np.nan, r.normal(size=n)),         # NaNs
    lambda r, n: r.integers(0, 3, n).astype(float) * r.choice([-1.0, 1.0], n),  # ties, signed zeros
    lambda r, n: np.round(r.normal(size=n), 1),                                 # ties
]


@pytest.mark.parametrize("seed", range(60))
def test_median_is_np_median(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 60)) if seed % 3 else int(rng.integers(1, 5_000))
    a = MEDIAN_INPUTS[seed % len(MEDIAN_INPUTS)](rng, n)
    with np.errstate(all="ignore"):
        for got, want in ((median(a), np.median(a)), (median(a, skip_nan=True), np.nanmedian(a)),
                          (median(a.copy(), overwrite=True), np.median(a))):
            assert np.asarray(got).dtype == np.asarray(want).dtype
            np.testing.assert_array_equal(got, want)
        m = rng.normal(size=(4, n))
        m[1, 0] = np.nan
        np.testing.assert_array_equal(median(m, axis=1), np.median(m, axis=1))
        np.testing.assert_array_equal(median(m, axis=1, skip_nan=True), np.nanmedian(m, axis=1))
        np.testing.assert_array_equal(median(m.T, axis=0), np.median(m.T, axis=0))


def test_median_of_nothing_is_nan_without_a_warning():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert np.isnan(median(np.zeros(0))) and np.isnan(median([np.nan], skip_nan=True))


def test_the_package_takes_medians_through_arrays_median():
    """np.median partitions around three ranks and imports numpy.ma on first use (~15 ms a process):
    gpuscope.arrays.median is the one way."""
    found = [where for where, _call in _np_calls("median")]
    assert not found, found

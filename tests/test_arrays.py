"""gpuscope.arrays.distinct is np.unique, one way, without numpy 2.4's hash path for integers and
strings (~1.5 CPU-s for a million distinct values where a sort takes 0.02)."""

from __future__ import annotations

import ast

import numpy as np
import pytest

from gpuscope.arrays import distinct
from tests.conftest import REPO


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
    plain = []
    for root in ("gpuscope", "parsers", "reports"):
        for p in sorted((REPO / root).rglob("*.py")):
            if p.name == "arrays.py":
                continue
            for n in ast.walk(ast.parse(p.read_text())):
                if (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "unique"
                        and isinstance(n.func.value, ast.Name) and n.func.value.id == "np" and not n.keywords):
                    plain.append(f"{p.relative_to(REPO)}:{n.lineno}")
    assert not plain, plain

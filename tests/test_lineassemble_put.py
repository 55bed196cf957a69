"""parsers/log/lines/assemble.py `_put`: the rows of a reading placed by the compiled scanner's
place_rows are those numpy's fancy assignment places (1-D and 2-D, with and without a gather,
one row to every place), and numpy's path (no compiled scanner, another dtype) is the same."""

from __future__ import annotations

import numpy as np
import pytest

from gpuscope.parsers.log import scan
from gpuscope.parsers.log.lines import assemble as lineassemble

NATIVE = scan.compiled_scanner()
needs_native = pytest.mark.skipif(NATIVE is None or not hasattr(NATIVE, "place_rows"),
                                  reason="the compiled scanner is not built here")


def cases(rng):
    n = 1000
    at = np.sort(rng.choice(n, size=300, replace=False)).astype(np.int64)
    pos = rng.integers(0, 500, size=300).astype(np.int32)
    yield "meta", np.zeros((n, 8), np.int32), at, rng.integers(-5, 10**6, size=(300, 8)).astype(np.int32), None
    yield "values", np.zeros((n, 3)), at, rng.random((500, 3)), pos
    yield "codes", np.zeros((n, 3), np.int32), at, np.array([[4, 7, 9]], np.int32), None
    yield "aux", np.zeros(n, np.int64), at, rng.integers(0, 99, size=300), None
    yield "tol", np.zeros(n), at, np.asarray(0.015), None
    yield "one", np.zeros((n, 2)), at[:1], rng.random((1, 2)), None


def expected(dst, at, src, pos):
    want = dst.copy()
    want[at] = src[pos] if pos is not None else (src if src.ndim == 0 or len(src) == len(at) else src[0])
    return want


@needs_native
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_place_rows_places_what_numpy_places(seed):
    for name, dst, at, src, pos in cases(np.random.default_rng(seed)):
        want = expected(dst, at, src, pos)
        lineassemble._put(dst, at, src, pos)
        np.testing.assert_array_equal(dst, want, err_msg=name)


@pytest.mark.parametrize("seed", [0, 1])
def test_numpys_path_places_the_same(seed, monkeypatch):
    monkeypatch.setattr(lineassemble, "_place_rows", lambda: None)
    for name, dst, at, src, pos in cases(np.random.default_rng(seed)):
        want = expected(dst, at, src, pos)
        lineassemble._put(dst, at, src, pos)
        np.testing.assert_array_equal(dst, want, err_msg=name)
    dst = np.zeros(10, np.int32)  # (another dtype than the source's: numpy casts)
    lineassemble._put(dst, np.array([1, 3]), np.array([5, 6], np.int64))
    assert dst.tolist() == [0, 5, 0, 6, 0, 0, 0, 0, 0, 0]


@needs_native
def test_place_rows_refuses_an_index_outside_either_array():
    dst = np.zeros((4, 2))
    with pytest.raises(IndexError):
        NATIVE.place_rows(dst, 16, np.array([0, 4], np.int64), np.ones((2, 2)), None)
    with pytest.raises(IndexError):
        NATIVE.place_rows(dst, 16, np.array([0, 1], np.int64), np.ones((2, 2)), np.array([0, 2], np.int64))
    with pytest.raises(ValueError):
        NATIVE.place_rows(dst, 16, np.array([0, 1, 2], np.int64), np.ones((2, 2)), None)


@pytest.mark.parametrize("seed", range(4))
def test_ranks_are_the_inverse_of_a_stable_argsort(seed):
    """lineassemble._ranks counts distinct dense line numbers, else sorts: both the places of
    a stable sort (repeats, gaps, a sparse spread, empty)."""
    rng = np.random.default_rng(seed)
    for x in (rng.permutation(1000) + 5, rng.integers(0, 50, size=300), rng.choice(10**9, size=200, replace=False),
              np.zeros(0, dtype=np.int64), np.array([7])):
        order = np.argsort(x, kind="stable")
        want = np.empty(len(x), dtype=np.int64)
        want[order] = np.arange(len(x))
        assert lineassemble._ranks(np.asarray(x)).tolist() == want.tolist()

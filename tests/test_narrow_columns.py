"""The narrow integer columns of a log's frames (parsers/log/tenures.py build_columns,
gpuscope/schemas.py Columns): the same numbers as the int64 path, on fresh random scans, and
the frames still in the schema's dtypes."""

from __future__ import annotations

import numpy as np
import pytest

from gpuscope.parsers.log import scan as sc
from gpuscope.parsers.log import tenures
from gpuscope.schemas import COMPONENT_COLUMNS, Columns

KINDS = (sc.K_FREE, sc.K_OPEN, sc.K_HELD, sc.K_GPU, sc.K_NTT)


def _scan(rng: np.random.Generator, n: int, meta_dtype, constant: bool) -> sc.Scan:
    s = sc.Scan()
    s.finalize()
    ln = np.sort(rng.choice(np.arange(1, 10 * n + 2), size=n, replace=False))
    kind = rng.choice(KINDS, size=n)
    gpu = rng.integers(-1, 4, size=n)
    worker = np.full(n, -1) if constant else rng.integers(-1, 3, size=n)
    part = np.full(n, -1) if constant else rng.integers(-1, 300, size=n)
    counts = rng.integers(0, 4, size=n)
    src = np.full(n, sc.SRC["lines"]) if constant else rng.integers(0, len(sc.SOURCES), size=n)
    s.meta = np.stack([ln, np.arange(n), kind, gpu, worker, part, counts, src], axis=1).astype(meta_dtype)
    nv = int(counts.sum())
    s.codes = rng.integers(0, 5, size=nv).astype(np.int32)
    s.values = rng.random(nv) * 100
    for name in ("a", "b", "c", "d", "e"):
        s.tables.names.code(name)
        s.tables.qnames.code(name)
    nq = int(rng.integers(0, 2 * n + 1))
    s.qrow = np.sort(rng.integers(0, max(n, 1), size=nq)) if n else np.zeros(0, dtype=np.int64)
    s.qcodes = rng.integers(0, 5, size=nq).astype(np.int32)
    s.qvalues = rng.random(nq)
    hrows = np.flatnonzero(kind == sc.K_HELD)
    s.held = (hrows.astype(np.int64), rng.random(len(hrows)))
    s.ts = np.where(rng.random(n) < 0.1, np.nan, rng.random(n) * 1e9)
    return s


@pytest.mark.parametrize("seed", range(8))
def test_narrow_meta_gives_the_int64_columns(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 400))
    constant = bool(seed % 2)
    wide = tenures.build_columns(_scan(np.random.default_rng(seed), n, np.int64, constant))
    thin = tenures.build_columns(_scan(np.random.default_rng(seed), n, np.int32, constant))
    for frame in ("components", "records", "quantities"):
        a, b = wide[frame].frame(), thin[frame].frame()
        assert list(a.dtypes) == list(b.dtypes)
        assert a.equals(b), frame
    for frame in ("components", "records", "quantities"):
        for name in wide[frame].schema:
            x, y = np.asarray(wide[frame][name]), np.asarray(thin[frame][name])
            assert np.array_equal(x, y, equal_nan=x.dtype.kind == "f"), (frame, name)


def test_frames_keep_the_schema_dtypes():
    rng = np.random.default_rng(7)
    cols = tenures.build_columns(_scan(rng, 300, np.int32, False))
    comps = cols["components"]
    assert comps.data["gpu"].dtype.itemsize < 8  # (kept narrow in the columns)
    df = comps.frame()
    for name, dtype in COMPONENT_COLUMNS.items():
        if dtype == "int64":
            assert df[name].dtype == np.int64, name


@pytest.mark.parametrize("seed", range(6))
def test_small_holds_every_value(seed):
    rng = np.random.default_rng(seed)
    bound = int(rng.choice([100, 30_000, 2**31 - 1, 2**40]))
    a = rng.integers(-bound, bound, size=int(rng.integers(0, 50)), endpoint=True)
    out = tenures.small(a)
    assert out.tolist() == a.tolist()
    if len(a):
        assert out.dtype == tenures.narrow(int(a.min()), int(a.max()))
        smaller = [t for t in tenures._INTS if np.dtype(t).itemsize < out.dtype.itemsize]
        assert all(np.iinfo(t).min > a.min() or np.iinfo(t).max < a.max() for t in smaller)
    c = tenures._constant(np.full(5, -1))
    assert c == -1 and isinstance(c, int)


def test_columns_keep_narrow_ints_and_cast_others():
    c = Columns(COMPONENT_COLUMNS, {"record": np.arange(4, dtype=np.int16), "line": [1, 2, 3, 4],
                                    "gpu": np.zeros(4, dtype=np.uint8)})
    assert c["record"].dtype == np.int16
    assert c["line"].dtype == np.int64
    assert c["gpu"].dtype == np.int64  # (unsigned: cast, as before)


@pytest.mark.parametrize("seed", range(8))
def test_distinct_pairs_in_any_order(seed):
    """codeops.distinct_pairs' path for pairs in order (masks, no key) and its sort: the set
    of pairs, each once, on pairs sorted, sorted by group only, and shuffled."""
    from gpuscope.parsers.log import codeops

    rng = np.random.default_rng(seed)
    m = int(rng.integers(0, 300))
    w = int(rng.integers(1, 9))
    g = np.sort(rng.integers(0, 40, size=m)).astype(rng.choice([np.int32, np.int64]))
    c = rng.integers(0, w, size=m).astype(np.int32)
    how = seed % 3
    if how == 0:
        o = np.lexsort((c, g))
        g, c = g[o], c[o]
    elif how == 2:
        o = rng.permutation(m)
        g, c = g[o], c[o]
    want = set(zip(g.tolist(), c.tolist(), strict=True))
    pg, pc = codeops.distinct_pairs(g, c, w)
    got = list(zip(pg.tolist(), pc.tolist(), strict=True))
    assert len(got) == len(want) and set(got) == want


@pytest.mark.parametrize("seed", range(10))
def test_exact_runs_is_reduceat(seed):
    """codeops.exact_runs' runs of one length (a (runs, k) view) give op.reduceat's result, to
    the bit, for wrapping integer sums and fmin / fmax over NaN; uneven runs too."""
    from gpuscope.parsers.log import codeops

    rng = np.random.default_rng(seed)
    m = int(rng.integers(1, 60))
    k = int(rng.integers(1, 4))
    lens = np.full(m, k) if seed % 3 else rng.integers(1, 4, size=m)
    starts = np.concatenate(([0], np.cumsum(lens)[:-1]))
    n = int(lens.sum())
    f = np.where(rng.random(n) < 0.3, np.nan, rng.normal(size=n))
    u = rng.integers(1, 2**62, size=n, dtype=np.int64).view(np.uint64) * np.uint64(5)
    for op, x in ((np.fmin, f), (np.fmax, f), (np.add, u)):
        want = op.reduceat(x, starts)
        got = codeops.exact_runs(op, x, starts)
        assert got.dtype == want.dtype
        assert np.array_equal(got, want, equal_nan=x.dtype.kind == "f")


@pytest.mark.parametrize("seed", range(6))
def test_fmax_at_is_ufunc_at(seed):
    """codeops.fmax_at into NaN: np.fmax.at's result, rows once each in order or repeated."""
    from gpuscope.parsers.log import codeops

    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 80))
    rows = np.sort(rng.choice(n, size=int(rng.integers(0, n + 1)), replace=bool(seed % 2)))
    x = np.where(rng.random(len(rows)) < 0.3, np.nan, rng.normal(size=len(rows)))
    want, got = np.full(n, np.nan), np.full(n, np.nan)
    np.fmax.at(want, rows, x)
    codeops.fmax_at(got, rows, x)
    assert np.array_equal(got, want, equal_nan=True)

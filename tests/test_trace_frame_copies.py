"""The trace analysis reads the GPU frame without copying its rows (issue 32: an export of 10M
kernels in 1 GB): the rules' `TraceRuleInput.gpu` is the frame the views slice, not a
concatenation made on every call; the kernels' tables group categorical codes, not an object
array of every row's name; and what each gives is what the row-copying forms gave, to the bit
(names missing, names that repeat, ties in the order they first come)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from gpuscope.analysis.evidence import intervals as iv
from gpuscope.analysis.evidence.trace.top_kernels import top_kernels
from gpuscope.analysis.evidence.trace.trace_activity import (
    DeviceView,
    _top,
    factorized,
    stream_groups,
)
from gpuscope.analysis.evidence.trace.trace_phases import (
    KIND_PRIORITY,
    MERGE_PER_SPAN,
    _device_phases,
    _subtract,
)
from gpuscope.analysis.rules.kernel_mix import _families, family
from gpuscope.analysis.trace_analysis import analyze_trace
from gpuscope.parsers.trace.kineto import read_trace
from gpuscope.schemas import TRACE_GPU_SCHEMA, typed_frame
from tests.conftest import DATA

TRACES = [DATA / "h200_foreign" / "traces" / "train_slow.json.gz", DATA / "h200_bounds" / "traces" / "ranks2"]
NAMES = ["gemm_a", "elementwise_b", None, "gemm_a", "reduce_c", "elementwise_b", "copy_d", None, "gemm_a", "zz"]


def _gpu(rng: np.random.Generator, n: int) -> pd.DataFrame:
    """A GPU frame of `n` rows: kernels mostly, some copies and memsets, names with gaps."""
    kind = rng.choice(["kernel", "kernel", "kernel", "memcpy", "memset"], n)
    names = [NAMES[i] for i in rng.integers(0, len(NAMES), n)]
    dur = np.round(rng.exponential(20.0, n), 3)
    dur[rng.integers(0, n, 3)] = 7.0  # (ties: the order names first come decides)
    return typed_frame({"rank": np.zeros(n, dtype=np.int64), "device": rng.integers(0, 2, n), "stream": rng.integers(7, 9, n),
                        "kind": kind, "name": names, "ts_us": np.cumsum(rng.uniform(1, 30, n)), "dur_us": dur,
                        "correlation": np.arange(n), "bytes": np.full(n, np.nan), "direction": [""] * n,
                        "host_memory": [""] * n, "trace_gbs": np.full(n, np.nan)}, TRACE_GPU_SCHEMA)


def _as_objects(gpu: pd.DataFrame) -> pd.DataFrame:
    return gpu.assign(**{c: gpu[c].astype(object) for c in ("kind", "name", "direction", "host_memory")})


@pytest.mark.parametrize("seed", range(4))
def test_top_kernels_by_codes_are_the_names_table_to_the_bit(seed):
    gpu = _gpu(np.random.default_rng(seed), 2000)
    assert isinstance(gpu["name"].dtype, pd.CategoricalDtype)
    got, want = top_kernels(gpu, limit=50), top_kernels(_as_objects(gpu), limit=50)
    assert got == want and len(got) == 5  # (five names, the missing one left out as groupby leaves it)


def _top_by_groupby(gpu: pd.DataFrame, limit: int) -> list[tuple]:
    """top_kernels' figures as they were: pandas' groupby over the kernels' rows, median included."""
    k = gpu[(gpu["kind"] == "kernel").to_numpy(dtype=bool)]
    dur = k["dur_us"].astype("float64").fillna(0.0).clip(lower=0.0)
    # (integer keys, one per name, as main's table grouped them: with object keys pandas sums the
    # names whose kernels come in one run another way, a last bit apart)
    codes, names = pd.factorize(k["name"].astype(object).to_numpy())
    g = dur[codes >= 0].groupby(codes[codes >= 0].astype(np.int32), sort=False).agg(
        ["count", "sum", "median", "mean", "max"])
    g = g.sort_values(["sum", "count"], ascending=[False, False], kind="stable").head(limit)
    return [(str(names[c]), int(r["count"]), float(r["sum"]) / 1e3, float(r["median"]), float(r["mean"]),
             float(r["max"])) for c, r in g.iterrows()]


@pytest.mark.parametrize("seed", range(6))
def test_top_kernels_medians_are_groupbys_to_the_bit(seed):
    """The medians of the names shown, each its own rows' (no sort of every kernel): groupby's, odd
    and even counts, ties, NaN and negative durations, signed zeros."""
    rng = np.random.default_rng(50 + seed)
    gpu = _gpu(rng, int(rng.integers(1, 400)))
    dur = gpu["dur_us"].to_numpy(dtype="float64").copy()
    pick = rng.integers(0, dur.size, dur.size // 4)
    dur[pick] = rng.choice([np.nan, -3.0, -0.0, 0.0, 7.0, 1e-300, 2.5], pick.size)
    gpu["dur_us"] = dur
    for limit in (2, 50):
        got = [(r["name"], r["count"], r["total_ms"], r["median_us"], r["mean_us"], r["max_us"])
               for r in top_kernels(gpu, limit=limit)]
        want = _top_by_groupby(gpu, limit)
        assert np.asarray(got, dtype=object).shape == np.asarray(want, dtype=object).shape
        assert [np.float64(x).tobytes() for r in got for x in r[1:]] == \
            [np.float64(x).tobytes() for r in want for x in r[1:]] and [r[0] for r in got] == [r[0] for r in want]


def test_factorized_is_pandas_factorize_of_the_objects():
    for values in (["b", "a", None, "b", "c", None, "a"], [None, "x", "y"], ["x", "y", "x"], []):
        col = pd.Series(pd.Categorical(values))
        codes, labels = factorized(col)
        want_codes, want_labels = pd.factorize(col.astype(object), use_na_sentinel=True)
        assert codes.tolist() == list(want_codes) and list(labels) == list(want_labels)


def test_kernel_families_per_category_are_the_rows_families():
    names = pd.Series(pd.Categorical(["ampere_sgemm_128x64_tn", "vectorized_elementwise_kernel", "flash_fwd",
                                      "other_thing", "ampere_sgemm_128x64_tn", "reduce_kernel"]))
    each = names.astype(str).map(family).to_numpy()
    got = _families(names)
    assert {f: m.tolist() for f, m in got.items()} == {f: (each == f).tolist() for f in ("matrix", "streaming", "other")}
    assert got["matrix"].sum() == 3


@pytest.mark.parametrize("path", TRACES, ids=lambda p: p.name)
def test_the_rules_gpu_frame_is_the_views_frame_not_a_copy(path):
    a = analyze_trace(read_trace(path), line_rate_gbs=50.0, line_rate_source="test")
    inp = a.rule_input
    assert inp is not None and inp.frame is not None
    assert inp.gpu is inp.gpu  # (the same frame each call: nothing concatenated)
    pd.testing.assert_frame_equal(inp.gpu, pd.concat([v.gpu for v in inp.views], ignore_index=True))
    # the views' merged sets are the masked rows' unions, as the row frames made them
    for v in inp.views:
        kind = v.gpu["kind"].astype(object)
        k = v.gpu[kind == "kernel"]
        s = k["ts_us"].to_numpy()
        want = iv.merge(s, s + k["dur_us"].to_numpy())
        assert all(np.array_equal(x, y) for x, y in zip(v.kernels, want, strict=True))
        # the totals taken when the view was made: the unions' own, as device_rows took them
        assert v.kernel_us == iv.total(*want) and v.busy_us == iv.total(*v.busy)
        assert v.copy_us == iv.total(*v.copies)
        assert v.copy_kernel_overlap_us == iv.intersection_length(v.copies, v.kernels)
        # and no array held beside the frame's own slice (the unions are made when read)
        assert not [f for f, x in vars(v).items() if isinstance(x, (np.ndarray, tuple)) and f != "span"]


def _top_by_unique(names, dur, top):
    """stream_rows' top kernels as they were: np.unique's first indices and inverse."""
    ok = names >= 0
    names, dur = names[ok], dur[ok]
    if not names.size:
        return []
    uniq, first, inv = np.unique(names, return_index=True, return_inverse=True)
    order = np.argsort(first)
    rank = np.empty(len(uniq), dtype=np.int64)
    rank[order] = np.arange(len(uniq))
    g = rank[inv.ravel()]
    size, sums = np.bincount(g, minlength=len(uniq)), np.bincount(g, weights=dur, minlength=len(uniq))
    pick = np.arange(len(uniq))[::-1][sums[::-1].argsort(kind="quicksort")][::-1][:top]
    return [(int(uniq[order][i]), int(size[i]), float(sums[i])) for i in pick]


@pytest.mark.parametrize("seed", range(8))
def test_stream_top_kernels_by_bincount_are_np_uniques(seed):
    rng = np.random.default_rng(70 + seed)
    n = int(rng.integers(0, 3000))
    k = int(rng.integers(1, 60))
    names = rng.integers(-1 if seed % 2 else 0, k, n).astype(np.int8 if seed % 3 else np.intp)
    dur = rng.choice([0.5, 1.0, 2.0, 3.25, 1e-9], n) if seed % 4 else rng.exponential(3.0, n)
    for top in (3, 100):
        got, want = _top(names, dur, top, k), _top_by_unique(names, dur, top)
        assert [(c, m, np.float64(t).tobytes()) for c, m, t in got] == \
            [(c, m, np.float64(t).tobytes()) for c, m, t in want]


def _memcpy_rows_by_groupby(gpu: pd.DataFrame) -> list[dict]:
    """memcpy_rows as it was: a frame of the copies' rows grouped by their object keys."""
    m = gpu.loc[gpu["kind"] == "memcpy", ["direction", "host_memory", "dur_us", "bytes", "trace_gbs", "device"]]
    rows = []
    for (d, h), g in m.groupby([m["direction"].astype(object), m["host_memory"].astype(object)], sort=False):
        pe = g["bytes"].to_numpy() / (g["dur_us"].to_numpy() * 1e3)
        pe = pe[np.isfinite(pe)]
        us, nb = float(g["dur_us"].sum()), float(g["bytes"].sum())
        rows.append({"direction": d, "host_memory": h, "count": len(g), "bytes": int(nb), "ms": us / 1e3,
                     "gbs": nb / (us * 1e3) if us > 0 else float("nan"),
                     "per_event_gbs_median": float(np.median(pe)) if pe.size else None,
                     "trace_gbs_median": float(g["trace_gbs"].median()) if g["trace_gbs"].notna().any() else None,
                     "devices": sorted({int(x) for x in g["device"]})})
    return sorted(rows, key=lambda r: -r["ms"])


@pytest.mark.parametrize("seed", range(3))
def test_memcpy_rows_by_codes_are_the_groupby_s_to_the_bit(seed):
    from gpuscope.analysis.evidence.trace.trace_activity import memcpy_rows
    rng = np.random.default_rng(seed)
    gpu = _gpu(rng, 3000)
    n = len(gpu)
    gpu["direction"] = pd.Categorical(rng.choice(["HtoD", "DtoH", "DtoD", None], n, p=[0.4, 0.3, 0.25, 0.05]))
    gpu["host_memory"] = pd.Categorical(rng.choice(["pinned", "pageable", "device"], n))
    gpu["bytes"] = np.round(rng.exponential(1e6, n))
    gpu["trace_gbs"] = np.where(rng.random(n) < 0.5, rng.uniform(1, 50, n), np.nan)
    got = [{k: v for k, v in r.items() if k not in ("line_rate_share", "ms_at_line_rate")} for r in memcpy_rows(gpu, 0.0)]
    want = _memcpy_rows_by_groupby(gpu)
    assert got == want and len(got) >= 8  # (pairs with a missing direction left out, as groupby leaves them)


def _old_device_phases(v, tol):
    """phase_frame's device part as it was: object arrays of every row's kind, a stream's rows
    gathered by its sort."""
    kind = v.gpu["kind"].astype(object).to_numpy()
    direction = v.gpu["direction"].astype(object).to_numpy()
    kinds = kind.copy()
    kinds[(kind == "memcpy") & (direction == "HtoD")] = "h2d"
    kinds[(kind == "memcpy") & (direction == "DtoH")] = "d2h"
    ts, dur = v.gpu["ts_us"].to_numpy(dtype="float64"), v.gpu["dur_us"].to_numpy(dtype="float64")
    out = []
    for stream, idx in stream_groups(v.gpu["stream"].to_numpy()):
        taken_s, taken_e = np.zeros(0), np.zeros(0)
        k_s = kinds[idx]
        for k in sorted(set(k_s.tolist()), key=lambda k: KIND_PRIORITY.index(k) if k in KIND_PRIORITY else 99):
            sel = k_s == k
            gs = ts[idx][sel]
            s, e = _subtract(*iv.merge(gs, gs + dur[idx][sel], gap=tol), taken_s, taken_e)
            out.append((stream, str(k), s, e))
            taken_s, taken_e = iv.merge(np.concatenate([taken_s, s]), np.concatenate([taken_e, e]))
    return out


@pytest.mark.parametrize("seed", range(6))
def test_device_phases_by_kind_codes_are_the_object_arrays_blocks(seed):
    rng = np.random.default_rng(90 + seed)
    gpu = _gpu(rng, int(rng.integers(1, 600)))
    gpu["direction"] = pd.Categorical(rng.choice(["HtoD", "DtoH", "DtoD", ""], len(gpu)))
    if seed % 2:  # one stream: read as it is
        gpu["stream"] = 7
    if seed % 3 == 0:  # a device's events overlapping (streams run together)
        gpu["ts_us"] = np.sort(rng.uniform(0, 400, len(gpu)))
    gpu = gpu[gpu["device"] == 0].reset_index(drop=True)
    ts = gpu["ts_us"].to_numpy()
    span = (float(ts.min()), float((ts + gpu["dur_us"].to_numpy()).max()))
    v = DeviceView(rank=0, device=0, name="", span=span, gpu=gpu, host=gpu.iloc[:0], host_summary=None)
    tol = max(1.0, v.span_us / MERGE_PER_SPAN)
    got = _device_phases([v], lambda t: t)
    want = _old_device_phases(v, tol)
    assert len(got) == sum(s.size for _, _, s, _ in want)
    assert got["phase"].astype(object).tolist() == [k for _, k, s, _ in want for _ in range(s.size)]
    assert got["worker"].tolist() == [st for st, _, s, _ in want for _ in range(s.size)]
    for col, i in (("t_start", 2), ("t_end", 3)):
        assert got[col].to_numpy(dtype="float64").tobytes() == np.concatenate([w[i] for w in want]).tobytes()


@pytest.mark.parametrize("seed", range(6))
def test_gap_bounds_are_the_every_gap_arrays_kept(seed):
    from gpuscope.analysis.evidence.trace.trace_gaps import GAP_MIN_US, gap_bounds

    rng = np.random.default_rng(130 + seed)
    n = int(rng.integers(1, 500))
    bs = 1.7e12 + np.cumsum(rng.choice([0.5, 9.999, 10.0, 25.0, 1e3], n))
    be = bs + rng.uniform(0, 0.5, n)
    span = (float(bs[0] - rng.choice([0.0, 10.0, 50.0])), float(be[-1] + rng.choice([0.0, 10.0, 50.0])))
    g0, g1 = np.concatenate([[span[0]], be]), np.concatenate([bs, [span[1]]])
    edge = np.zeros(g0.size, dtype=bool)
    edge[0] = edge[-1] = True
    keep = (g1 - g0) >= GAP_MIN_US
    for step in (1, 2, 7, 1 << 16):  # (blocks of the inner gaps: their edges everywhere)
        for got, want in zip(gap_bounds(bs, be, span, step), (g0[keep], g1[keep], edge[keep]), strict=True):
            assert got.dtype == want.dtype and got.tobytes() == want.tobytes()


@pytest.mark.parametrize("seed", range(4))
def test_in_order_by_blocks_is_the_whole_frames_check(seed, monkeypatch):
    from gpuscope.analysis.evidence.trace import trace_activity as act

    rng = np.random.default_rng(140 + seed)
    gpu = _gpu(rng, 300).assign(device=1).sort_values(["rank", "device", "ts_us"], ignore_index=True)
    if seed:  # one pair out of order: across a block's edge (rows 7 and 8), beside it, inside a block
        i = (0, 8, 9, 150)[seed]
        gpu.loc[i, "ts_us"] = gpu.loc[i - 1, "ts_us"] - 1.0
    monkeypatch.setattr(act, "ORDER_BLOCK", 8)
    got = act.in_order(gpu)
    assert (got is gpu) == (seed == 0)
    pd.testing.assert_frame_equal(got, gpu.sort_values(["rank", "device", "ts_us"], kind="stable", ignore_index=True))


@pytest.mark.parametrize("seed", range(6))
def test_top_kernels_by_the_c_helpers_sums_are_groupbys_to_the_bit(seed):
    """Durations whose compensated sums differ from plain ones (1e-6 .. 1e6 us), names interleaved
    or each in one run (pandas sums those another way: the pandas path), names missing."""
    from gpuscope.analysis.evidence.trace import top_kernels as tk

    rng = np.random.default_rng(160 + seed)
    gpu = _gpu(rng, 3000)
    gpu["dur_us"] = 10.0 ** rng.uniform(-6, 6, len(gpu))
    if seed % 3 == 2:  # each name's kernels in one run
        gpu = gpu.sort_values("name", kind="stable", na_position="last", ignore_index=True)
    kern = (gpu["kind"] == "kernel").to_numpy(dtype=bool)
    assert (tk._by_codes(gpu, kern, 50) is None) == (seed % 3 == 2)
    got = [(r["name"], r["count"], r["total_ms"], r["median_us"], r["mean_us"], r["max_us"])
           for r in top_kernels(gpu, limit=50)]
    want = _top_by_groupby(gpu, 50)
    assert [r[0] for r in got] == [r[0] for r in want] and len(got) == 5
    assert [np.float64(x).tobytes() for r in got for x in r[1:]] == [np.float64(x).tobytes() for r in want for x in r[1:]]


@pytest.mark.parametrize("seed", range(10))
def test_covered_by_blocks_is_the_unions_covered_lengths(seed, monkeypatch):
    """DeviceView.covered: apart events taken a block of rows at a time (blocks of 7 here, edges
    everywhere), overlapping or touching ones through the union, a kind with no event, NaN."""
    from gpuscope.analysis.evidence.trace import device_sets

    rng = np.random.default_rng(180 + seed)
    gpu = _gpu(rng, int(rng.integers(1, 300)))
    dur = gpu["dur_us"].to_numpy().copy()
    gap = rng.choice([1e-3, 0.5, 20.0], dur.size)
    gpu["ts_us"] = 1.7e9 + np.concatenate([[0.0], np.cumsum(dur + gap)[:-1]])
    if seed % 5 == 1 and len(gpu) > 8:  # one pair overlapping, across a block's edge (rows 6, 7) or inside one
        i = 7 if seed < 5 else int(rng.integers(1, len(gpu)))
        gpu.loc[i, "ts_us"] = gpu["ts_us"].iloc[i - 1] + 0.75 * gpu["dur_us"].iloc[i - 1]
        gpu.loc[i, "dur_us"] = 0.2 * gpu["dur_us"].iloc[i - 1]  # (inside row i - 1: row i + 1 still apart)
    elif seed % 5 == 2:  # streams together
        gpu["ts_us"] = np.sort(rng.uniform(0, 300, len(gpu)))
    elif seed % 5 == 3 and len(gpu) > 2:
        gpu.loc[2, "dur_us"] = np.nan
    monkeypatch.setattr(device_sets, "COVER_BLOCK", 7)
    v = DeviceView(rank=0, device=0, name="", span=(0.0, 1.0), gpu=gpu, host=gpu.iloc[:0], host_summary=None)
    t = np.sort(rng.uniform(gpu["ts_us"].min() - 5, gpu["ts_us"].max() + 50, 40))
    for kind in (None, "kernel", "memcpy", "nothing"):
        union = v.union(kind)
        shuffled = rng.permutation(t)  # (queries in any order, one NaN among them)
        shuffled[int(rng.integers(0, shuffled.size))] = np.nan
        for qs, qe in ((t[:-1], t[1:]), union, (t[:0], t[:0]), (shuffled[:-1], shuffled[1:])):
            got, want = v.covered(kind, qs, qe), iv.covered_lengths(qs, qe, *union)
            assert got.shape == want.shape and got.tobytes() == want.tobytes()
        assert v.overlap(kind, (t[:-1:2], t[1::2])) == iv.intersection_length((t[:-1:2], t[1::2]), union)


@pytest.mark.parametrize("seed", range(4))
def test_first_come_and_runs_by_blocks_are_the_whole_arrays(seed):
    from gpuscope.analysis.evidence.trace.top_kernels import _runs
    from gpuscope.analysis.evidence.trace.trace_activity import first_come

    rng = np.random.default_rng(200 + seed)
    lab = rng.integers(-1, 9, int(rng.integers(0, 400))).astype(np.int16)
    if seed % 2:  # runs of one label, a block's edge inside them
        lab = np.repeat(lab[:30], rng.integers(1, 9, lab[:30].size))
    named = lab[lab >= 0]
    want_runs = int(named.size and 1 + np.count_nonzero(named[1:] != named[:-1]))
    for block in (1, 3, 7, 1 << 18):
        assert first_come(lab, block).tolist() == pd.unique(named).tolist()
        assert _runs(lab, block) == want_runs

"""Samples at scale (issues 21, 22): a file naming a new GPU index on every row costs what its rows
cost (the GPUs analyzed one by one and drawn are bounded, and each bound is said), the picture
of a long recording is decimated to its pixel columns, and the run sums that replaced a Python
step per run are numpy's own sums to the bit."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from gpuscope.analysis.evidence.samples import samplegrid as sg
from gpuscope.analysis.evidence.samples.activity import MAX_GPUS, activity_from_samples
from gpuscope.cli import app
from gpuscope.reports import plot_panels as P


def _many_gpus(tmp_path, n_rows: int = 3000, n_gpus: int = 300):
    lines = ["t_wall,t_mono,gpu,rx_gbs,tx_gbs,sm_active,pcie_source,wrap_suspect"]
    rng = np.random.default_rng(22)
    for i in range(n_rows):
        g = i % n_gpus if i < n_rows - 100 else 7  # GPU 7 has the most rows
        lines.append(f"{1796047200 + i * 0.02:.3f},{i * 0.02:.3f},{g},{rng.uniform(0, 5):.3f},0.01,"
                     f"{rng.random():.3f},counter,0")
    p = tmp_path / "samples.csv"
    p.write_text("\n".join(lines) + "\n")
    return p


def test_a_new_gpu_index_per_row_is_analyzed_for_a_bounded_set_and_says_so(tmp_path):
    p = _many_gpus(tmp_path)
    from gpuscope.parsers.samples import read_samples_csv

    act = activity_from_samples(read_samples_csv(p), meta=None, line_rate_gbs=55.5, line_rate_source="test")
    assert len(act.gpus) == MAX_GPUS and 7 in [g.gpu for g in act.gpus]
    assert [g.gpu for g in act.gpus] == sorted(g.gpu for g in act.gpus)
    note = next(n for n in act.notes if "GPUs" in n)
    assert "300 GPUs" in note and f"the {MAX_GPUS} with the most rows" in note and "236" in note
    r = CliRunner().invoke(app, ["analyze", str(p), "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert len(doc["samples"]["activity"]["per_gpu"]) == MAX_GPUS and any("300 GPUs" in n for n in doc["samples"]["activity"]["notes"])


def test_the_bound_is_overridable(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUSCOPE_MAX_GPUS", "300")
    from gpuscope.parsers.samples import read_samples_csv

    act = activity_from_samples(read_samples_csv(_many_gpus(tmp_path)), meta=None, line_rate_gbs=55.5,
                                line_rate_source="test")
    assert len(act.gpus) == 300 and not any("GPUs" in n for n in act.notes)


def test_plot_draws_a_bounded_set_of_gpus_and_says_so(tmp_path):
    from gpuscope.parsers.samples import read_samples_csv

    df = read_samples_csv(_many_gpus(tmp_path))
    drawn, note = P.drawn_gpus(df)
    assert drawn["gpu"].nunique() == P.MAX_DRAWN_GPUS and 7 in set(drawn["gpu"])
    assert note is not None and "300 GPUs" in note
    out = tmp_path / "x.png"
    r = CliRunner().invoke(app, ["plot", str(tmp_path / "samples.csv"), "-o", str(out)])
    assert r.exit_code == 0, r.output
    assert out.stat().st_size > 10_000


def test_a_long_series_is_drawn_from_its_pixel_columns_high_and_low():
    t = np.arange(1_000_000) * 0.02
    y = np.sin(t) + (np.arange(t.size) == 500_000) * 10.0  # one spike must survive
    tt, yy = P.decimate(t, y)
    assert tt.size <= 2 * P.PIXEL_COLUMNS and yy.max() == y.max() and yy.min() == y.min()
    assert np.all(np.diff(tt) >= 0) and tt[0] == t[0] and tt[-1] == t[-1]
    short_t, short_y = P.decimate(t[:100], y[:100])
    assert short_t.size == 100


def test_a_solid_line_goes_on_from_where_the_column_before_ended():
    """decimate(solid=True): each column's same two readings at the same two times, the
    highest first in every other column and the lowest first in the rest, so the path never
    draws a column's range twice; a dashed line's order (solid=False) is each highest first."""
    rng = np.random.default_rng(3)
    t = np.arange(200_000) * 0.02
    y = rng.uniform(0, 9, t.size)
    tt, yy = P.decimate(t, y)
    st, sy = P.decimate(t, y, solid=True)
    assert np.array_equal(tt, st) and np.all(yy[0::2] >= yy[1::2])
    hi, lo = yy[0::2], yy[1::2]
    assert np.array_equal(sy[0::4], hi[0::2]) and np.array_equal(sy[1::4], lo[0::2])  # even columns: highest first
    assert np.array_equal(sy[2::4], lo[1::2]) and np.array_equal(sy[3::4], hi[1::2])  # odd ones: lowest first
    travel = lambda v: float(np.abs(np.diff(v)).sum())  # noqa: E731  (the path's vertical length)
    assert travel(sy) < 0.6 * travel(yy)
    assert np.array_equal(P.decimate(t[:100], y[:100], solid=True)[1], y[:100])  # a short series as it is


def test_sub_pixel_shading_is_bounded_and_keeps_its_share():
    a = np.arange(200_000) * 0.1
    b = a + 0.05  # half of the time shaded, in 200,000 slivers
    parts = P._shading(a, b, float(a[0]), float(b[-1]))
    bars = sum(p[0][0].size for p in parts)
    assert bars <= 2 * P.PIXEL_COLUMNS
    alphas = {round(p[1] / P.SHADE_ALPHA, 2) for p in parts}
    assert alphas == {0.5}  # every column half covered
    few = P._shading(a[:10], b[:10], 0.0, 1.0)
    assert few[0][0][0].size == 10 and few[0][1] == P.SHADE_ALPHA


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_run_sums_are_numpys_own(seed):
    rng = np.random.default_rng(seed)
    x = rng.random(200_000) * 1e3
    mask = rng.random(x.size) < 0.97  # runs of every length up to a few hundred
    a, b = sg.run_bounds(mask)
    want = np.array([x[i:j].sum() for i, j in zip(a.tolist(), b.tolist(), strict=True)])
    assert np.array_equal(sg.segment_sums(x, a, b), want)
    assert sg.runs(mask) == list(zip(a.tolist(), b.tolist(), strict=True))
    covered = sg.cover(x.size, a, b)
    assert np.array_equal(covered, mask)


def test_a_grid_of_one_gpu_copies_no_column_it_does_not_change(tmp_path):
    """The grid's PCIe counter readings are the frame's own (no wrap-suspect row); a column never
    read is a view of one NaN."""
    n = 1000
    df = pd.DataFrame({"t_wall": 1796047200 + np.arange(n) * 0.02, "gpu": np.zeros(n, dtype=np.int16),
                       "rx_gbs": np.random.default_rng(0).random(n), "tx_gbs": np.zeros(n),
                       "sm_active": np.full(n, 0.5), "pcie_source": pd.Categorical(["counter"] * n),
                       "wrap_suspect": np.zeros(n, dtype=np.int8)})
    g = sg.build_grid(df, 0, 55.5)
    assert np.shares_memory(g.rx, df["rx_gbs"].to_numpy())
    assert g.states["temperature_c"].strides == (0,) and np.isnan(g.states["temperature_c"]).all()
    assert g.pcie_source == "counter" and set(g.cls) <= {"computing", "both"}


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_masked_sums_are_numpys_own(seed):
    """samplegrid's masked sums (a view where the mask is one run) give numpy's x[mask].sum() and
    (x[mask] * w[mask]).sum() to the bit, at every length across the pairwise blocks (8, 128,
    their halves) and with NaN."""
    rng = np.random.default_rng(seed)
    for n in (1, 7, 8, 9, 127, 128, 129, 255, 1000, 8193, 100_003, 1_000_000):
        x = rng.random(n) * 10.0 ** rng.uniform(-3, 6, n)
        w = rng.random(n)
        if n > 100:
            x[rng.integers(0, n, 3)] = np.nan
        for mask in (rng.random(n) < rng.uniform(0.05, 1.0), np.ones(n, bool), np.arange(n) >= n // 3,
                     np.zeros(n, bool)):
            want = (float(x[mask].sum()), float(np.sum(x[mask] * w[mask])))
            got = (sg.masked_sum(x, mask), sg.masked_dot(x, w, mask))
            assert np.array_equal(np.array(got), np.array(want), equal_nan=True), (n, got, want)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_the_grids_fills_are_pandas_own(dtype):
    """samplegrid's fills are pandas' bfill, and ffill then bfill,
    value for value: leading, trailing, single and long runs of NaN, none, and all NaN."""
    rng = np.random.default_rng(5)
    cases = [rng.random(1000), np.full(50, np.nan), np.array([1.5]), np.array([np.nan, 2.0, np.nan])]
    x = rng.random(100_000)
    x[rng.random(x.size) < 0.8] = np.nan
    x[:17] = np.nan
    x[-23:] = np.nan
    cases.append(x)
    for c in cases:
        c = c.astype(dtype)
        want_b = pd.Series(c).bfill().to_numpy(dtype=dtype)
        want_fb = pd.Series(c).ffill().bfill().to_numpy(dtype=dtype)
        got_b, got_fb = sg._fill(c, "b", dtype), sg._fill(c, "fb", dtype)
        assert got_b.dtype == dtype and got_fb.dtype == dtype
        assert np.array_equal(got_b, want_b, equal_nan=True) and np.array_equal(got_fb, want_fb, equal_nan=True)
        assert got_b.flags.writeable and not np.shares_memory(got_b, c)

"""The drawing verbs' fast paths give what the per-row code gave (issue 31: plot, export and
--html cost what the analysis costs): the trace's counter events byte for byte (the old
row-by-row build is the reference here), pack's all-in-one-slot shortcut the greedy's slots,
text written in pieces the whole text, --html's idle gaps from the analysis' activity."""

from __future__ import annotations

import json
import math
import random

import numpy as np
import pandas as pd

from gpuscope.reports.lanes import pack
from gpuscope.reports.trace import SAMPLE_TRACKS, _us, trace_text


def _old_counter_events(samples: pd.DataFrame, t0: float) -> list[dict]:
    """The counter events as the per-row code built them (before the streamed export), an
    event that repeats its track's previous figures (bit for bit) left out unless it is the
    track's last."""
    out = []
    samples = samples[pd.to_numeric(samples["t_wall"], errors="coerce").notna()]
    for gpu, g in samples.sort_values("t_wall").groupby("gpu", sort=True):
        pid = int(gpu) + 1
        tw = g["t_wall"].to_numpy(float)
        tracks = []
        for track, fields in SAMPLE_TRACKS:
            cols = {key: (pd.to_numeric(g[col], errors="coerce").to_numpy(float), scale, nd)
                    for col, key, scale, nd in fields if col in g}
            if any(pd.notna(v).any() for v, _, _ in cols.values()):
                tracks.append((track, cols))
        last = {track: max((i for i in range(len(g)) if any(math.isfinite(v[i]) for v, _, _ in cols.values())),
                           default=-1) for track, cols in tracks}
        before: dict[str, bytes] = {}
        for i in range(len(g)):
            for track, cols in tracks:
                args = {key: round(float(v[i]) * scale, nd) for key, (v, scale, nd) in cols.items()
                        if math.isfinite(v[i])}
                if not args:
                    continue
                raw = b"".join(np.float64(v[i]).tobytes() for v, _, _ in cols.values())
                if raw != before.get(track) or i == last[track]:
                    out.append({"name": track, "ph": "C", "ts": _us(tw[i], t0), "pid": pid, "args": args})
                before[track] = raw
    return out


def _ragged_samples(n: int = 3000) -> pd.DataFrame:
    """Two GPUs, rows missing one PCIe direction or every GPM figure, -0.0, NaN, repeats,
    a block boundary crossed (trace.BLOCK is patched small by the test)."""
    rng = random.Random(31)
    rows = []
    for i in range(n):
        rx = rng.choice([float("nan"), -0.0, 0.0, 1.23456789, rng.uniform(0, 9)])
        tx = rng.choice([float("nan"), 0.002, rng.uniform(0, 1)])
        sm = rng.uniform(0, 1) if i % 5 == 0 else float("nan")
        rows.append({"t_wall": 1796047200.0 + i * 0.02 + rng.choice([0.0, 1e-7]), "gpu": i % 2, "rx_gbs": rx,
                     "tx_gbs": tx, "sm_active": sm, "power_w": 350.5 if i % 7 == 0 else float("nan")})
    return pd.DataFrame(rows)


def test_counter_events_are_the_row_by_row_ones(monkeypatch):
    import gpuscope.reports.trace as trace

    monkeypatch.setattr(trace, "BLOCK", 257)  # several blocks, one boundary inside a GPU's rows
    s = _ragged_samples()
    doc = trace_text(None, s)
    text = "".join(doc.chunks())
    got = json.loads(text)["traceEvents"]
    want = _old_counter_events(s, float(s["t_wall"].min()))
    assert [e for e in got if e["ph"] == "C"] == want
    assert doc.counter_events == len(want) and doc.slices == 0
    assert text == json.dumps(json.loads(text), allow_nan=False)  # exactly json.dumps' own text


def _greedy(starts: np.ndarray, ends: np.ndarray, tolerance: float) -> np.ndarray:
    slot = np.zeros(len(starts), dtype=int)
    free_at: list[float] = []
    for i in np.argsort(starts, kind="stable"):
        for k, e in enumerate(free_at):
            if e <= starts[i] + tolerance + 1e-9:
                free_at[k] = max(e, ends[i])
                slot[i] = k
                break
        else:
            free_at.append(ends[i])
            slot[i] = len(free_at) - 1
    return slot


def test_pack_shortcut_gives_the_greedy_slots():
    rng = np.random.default_rng(31)
    for overlap in (0.0, 0.004, 0.006, 0.5):  # none, jitter under / over the tolerance, real overlaps
        starts = np.cumsum(rng.uniform(0.01, 0.05, 500))
        ends = starts + rng.uniform(0.001, 0.01, 500) + overlap * (rng.random(500) < 0.1)
        order = rng.permutation(500)
        for tol in (0.0, 0.005):
            assert (pack(starts[order], ends[order], tol) == _greedy(starts[order], ends[order], tol)).all()


def test_text_in_pieces_is_written_whole(tmp_path):
    from gpuscope import safe_output

    target = tmp_path / "t.json"
    safe_output.write(target, iter(['{"a": ', "[1, 2]", "}"]), "the trace")
    assert target.read_text() == '{"a": [1, 2]}'


def test_html_idle_gaps_from_the_analysis_activity(tmp_path):
    from gpuscope.analysis import analyze
    from gpuscope.analysis.timeline_view import timeline_view
    from gpuscope.sources import open_source

    path = tmp_path / "samples.csv"
    s = _ragged_samples(600).assign(t_mono=lambda d: d["t_wall"] - d["t_wall"].min(), pcie_source="counter",
                                    wrap_suspect=0)
    s.to_csv(path, index=False)
    src = open_source(str(path))
    result = analyze(src)
    assert result.samples is not None
    again = timeline_view(src).intervals
    reused = timeline_view(src, activity=result.samples).intervals
    assert again is not None and reused is not None
    pd.testing.assert_frame_equal(again.reset_index(drop=True), reused.reset_index(drop=True))


def test_figures_are_round_and_repr():
    from gpuscope.reports.trace import _figures

    rng = np.random.default_rng(7)
    v = np.concatenate([[0.125, 2.675, 0.00005, -0.00004, -0.0, 0.0, 1e-9, 5e-5, 99999.99995, 123456789.98765,
                         2e9, -3.5e12, 1e17, float("nan"), float("inf")],
                        rng.uniform(-10, 10, 2000), np.round(rng.uniform(0, 9, 2000), 6), rng.uniform(0, 1e6, 500)])
    small = v[~(np.abs(v) >= 1e7)]  # (the formatted path: every figure under 1e9 after the scale)
    for values in (v, small):
        for scale, nd in ((1.0, 4), (100.0, 2), (1.0, 2)):
            got = _figures(values, scale, nd).tolist()
            want = [repr(round(float(x) * scale, nd)) if math.isfinite(x) else None for x in values.tolist()]
            assert got == want


def test_a_counter_repeating_its_figure_is_one_event_and_its_last():
    """A power draw that never changes over 1,000 rows is two events (the first, and the last so
    the track reaches the end of the samples); a figure that changes every row keeps every row
    (the false-fire side: nothing that changed is dropped)."""
    n = 1000
    s = pd.DataFrame({"t_wall": 1796047200.0 + np.arange(n) * 0.02, "gpu": 0, "power_w": 350.5,
                      "rx_gbs": np.linspace(0.0, 9.0, n)})
    events = [e for e in json.loads("".join(trace_text(None, s).chunks()))["traceEvents"] if e["ph"] == "C"]
    power = [e for e in events if e["name"] == "power W"]
    assert [e["ts"] for e in power] == [0, round((n - 1) * 0.02 * 1e6)]
    assert len([e for e in events if e["name"] == "PCIe GB/s"]) == n


def test_the_figures_are_made_when_read_and_equal_the_eager_ones(tmp_path):
    """GpuActivity makes its figures when first read (a plot shades the grid's intervals and
    reads no figure): they are gpu_figures of its grid, as analyze reads them."""
    from gpuscope.analysis.evidence.samples.activity import activity_from_samples, gpu_figures

    s = _ragged_samples(600).assign(pcie_source="counter", wrap_suspect=0)
    act = activity_from_samples(s, meta=None, line_rate_gbs=25.0, line_rate_source="test")
    assert len(act.gpus) == 2
    for g in act.gpus:
        assert "_made" not in g.__dict__  # (not made by the activity itself)
    assert len(act.intervals)
    assert all("_made" not in g.__dict__ for g in act.gpus)  # the intervals read no figure
    for g in act.gpus:
        figures, working = gpu_figures(g.grid, {}, 25.0, "test")
        assert json.dumps(g.figures, sort_keys=True, default=str) == json.dumps(figures, sort_keys=True, default=str)
        assert (g.working == working).all()


def test_matplotlib_is_imported_without_its_property_docstrings_and_kwdoc_is_put_back():
    """reports.plot.figure_class: the artist classes a picture uses are made without their
    `set()` signature and property table (~0.25 CPU-s of a picture's import), both made as
    before for a class defined later, and the picture is the one a plain import draws (a
    fresh interpreter each: the import is once)."""
    import subprocess
    import sys

    probe = ("import sys, hashlib\n"
             "plain = sys.argv[1] == 'plain'\n"
             "if plain:\n"
             "    import matplotlib.figure, matplotlib.backends.backend_agg\n"
             "from gpuscope.reports import plot\n"
             "import pandas as pd\n"
             "Figure = plot.figure_class()\n"
             "from matplotlib import artist\n"
             "from matplotlib.lines import Line2D\n"
             "ph = pd.DataFrame({'worker': [0, 0, 1], 'gpu': [0, 0, 0], 'partition': [0, 1, 0],\n"
             "                   'phase': ['h2d', 'gpu', 'h2d'], 't_start': [0.0, 1.0, 0.5], 't_end': [1.0, 2.5, 2.0]})\n"
             "png = plot.timeline_png(ph, title='t')\n"
             "class Later(artist.Artist):\n"
             "    pass\n"
             "import inspect\n"
             "print('Properties:' in (Line2D.set.__doc__ or ''), 'antialiased' in artist.kwdoc(Line2D),\n"
             "      'color' in inspect.signature(Line2D.set).parameters,\n"
             "      'zorder' in inspect.signature(Later.set).parameters, 'Properties:' in Later.set.__doc__,\n"
             "      hashlib.sha256(png).hexdigest())\n")
    out = {}
    for how in ("plain", "figure_class"):
        p = subprocess.run([sys.executable, "-c", probe, how], capture_output=True, text=True, timeout=120)
        assert p.returncode == 0, p.stderr
        out[how] = p.stdout.split()
    assert out["plain"][:5] == ["True"] * 5  # (matplotlib's own import: the tables are there)
    # none made for the classes a picture loads; kwdoc and the signatures put back for a class made later
    assert out["figure_class"][:5] == ["False", "True", "False", "True", "True"]
    assert out["plain"][5] == out["figure_class"][5]


def test_slices_four_to_a_string_are_the_slices_one_by_one():
    from gpuscope.reports.trace import _slice_events

    heads, tails = ['{"name": "a", "ts": ', '{"name": "b", "ts": '], [', "pid": 1}', ', "pid": 2}']
    for n in range(11):
        c, t, d = [(i * 7) % 2 for i in range(n)], [1000 + i for i in range(n)], [i * 3 for i in range(n)]
        one = [f'{heads[k]}{x}, "dur": {y}{tails[k]}' for k, x, y in zip(c, t, d, strict=True)]
        assert ", ".join(_slice_events(heads, tails, c, t, d)) == ", ".join(one)


def test_slices_made_by_numpy_are_the_f_string_ones():
    from gpuscope.reports.trace import _slice_events, _SliceText

    rng = random.Random(31)
    for _ in range(200):
        k = rng.randint(1, 4)
        heads = [f'{{"name": "{"x" * rng.randint(0, 30)}", "ts": ' for _ in range(k)]
        tails = [f', "pid": {rng.randint(0, 10 ** rng.randint(0, 6))}, "args": {{"p": "{"%" * rng.randint(0, 3)}"}}}}'
                 for _ in range(k)]
        n, big = rng.randint(1, 200), 10 ** rng.randint(0, 18)
        c = np.array([rng.randrange(k) for _ in range(n)])
        t = np.array([rng.randrange(0, big + 1) for _ in range(n)], dtype=np.int64)
        d = np.array([rng.choice([0, 1, 9, 10, 9999, 10000, 10 ** 8, rng.randrange(0, big + 1)]) for _ in range(n)],
                     dtype=np.int64)
        assert _SliceText(heads, tails).join(c, t, d) == ", ".join(_slice_events(heads, tails, c.tolist(), t.tolist(),
                                                                                   d.tolist()))
    assert _SliceText(['{"ts": '], ["}"]).join(np.zeros(3, int), np.array([0, 2**62, 2**63 - 1]),
                                               np.zeros(3, int)) == ", ".join(
        f'{{"ts": {x}, "dur": 0}}' for x in (0, 2**62, 2**63 - 1))


def test_lanes_of_categorical_phases_are_the_lanes_of_their_names():
    """assign_lanes tells synthesis by a categorical's codes (a log's display phases) as by the
    names: the same lanes, rows and labels."""
    from gpuscope.reports.lanes import assign_lanes

    rng = random.Random(7)
    names = ["synth", "upload", "kernel", "other", "prep"]
    rows = [{"worker": rng.choice([-1, -1, 0, 1]), "gpu": rng.choice([-1, 0]), "partition": rng.choice([-1, 2]),
             "phase": rng.choice(names), "t_start": i * 0.01, "t_end": i * 0.01 + rng.uniform(0.001, 0.03)}
            for i in range(400)]
    plain = pd.DataFrame(rows)
    for ref in (plain, plain[plain["phase"] != "synth"]):  # (the second: no `synth` category at all)
        cat = ref.assign(phase=pd.Categorical(ref["phase"], categories=list(dict.fromkeys(ref["phase"]))))
        a, b = assign_lanes(ref), assign_lanes(cat)
        assert [(x.label, x.process) for x in a] == [(x.label, x.process) for x in b]
        assert any(x.label.startswith("synthesis") for x in a) == (ref is plain)
        for x, y in zip(a, b, strict=True):
            for u, v in ((x.main, y.main), (x.side, y.side)):
                assert u.index.tolist() == v.index.tolist() and u["phase"].astype(str).tolist() == v["phase"].astype(str).tolist()

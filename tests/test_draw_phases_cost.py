"""The phases drawn from a log are read from its columns (issue 31): `display_phases` of a
stamped log never builds the components' DataFrame (3M rows for a 10^6-line log: copying it
was most of what plot / export / --html cost beyond analyze), and the columns give the very
phases the frame gives (names, order, times to the bit)."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import numpy as np
import pandas as pd

from gpuscope.analysis.evidence.log import phases as ph
from gpuscope.analysis.evidence.log.attribution import display_phases
from gpuscope.analysis.evidence.log.phases import from_log_lines
from gpuscope.sources import open_source


def _log(path, n: int = 400):
    t = datetime(2026, 12, 1, 10, 0, 0, tzinfo=UTC)
    lines = []
    for i in range(n):
        t += timedelta(milliseconds=40 + (i * 7) % 23)
        data, comp = 1.0 + (i * 13) % 17, 20.0 + (i * 5) % 11
        total = data + comp + (3.0 if i % 3 else 0.0)  # every third line's parts cover its whole
        lines.append(f"{t.strftime('%Y-%m-%dT%H:%M:%S.%fZ')} INFO step={i} data_wait={data:.2f}ms "
                     f"kernel={comp:.2f}ms total={total:.2f}ms")
    path.write_text("\n".join(lines) + "\n")
    return path


def test_display_phases_reads_the_columns_not_the_frame(tmp_path):
    src = open_source(_log(tmp_path / "a.log"))
    ph, basis = display_phases(src)
    assert len(ph) and basis.startswith("timestamped timing lines")
    assert "components" not in src.log._frames  # (the frame was never built)
    assert (ph["phase"] == "other").any()  # the whole's time its parts leave: a row of its own


def test_the_columns_give_the_frames_phases(tmp_path):
    src = open_source(_log(tmp_path / "a.log"))
    for display in (False, True):
        by_cols = from_log_lines(src.log.columns("components"), src.model, display=display)
        by_frame = from_log_lines(src.log.components, src.model, display=display)
        pd.testing.assert_frame_equal(by_cols, by_frame, check_exact=True)


def test_lines_out_of_order_give_the_same_phases(tmp_path):
    """The false-fire side of the in-order shortcuts (_previous_stamp, _with_other's sort):
    components whose lines are listed out of order (each line's fields in their order) give the
    phases of the ordered ones, as a set."""
    src = open_source(_log(tmp_path / "a.log", 60))
    comps = src.log.components
    rank = pd.Series(comps["line"].unique()).sample(frac=1.0, random_state=3).reset_index(drop=True)
    key = comps["line"].map(pd.Series(rank.index, index=rank.to_numpy()))
    shuffled = comps.iloc[key.to_numpy().argsort(kind="stable")].reset_index(drop=True)
    assert not shuffled["line"].is_monotonic_increasing
    a = from_log_lines(comps, src.model).sort_values(["t_start", "phase"]).reset_index(drop=True)
    b = from_log_lines(shuffled, src.model).sort_values(["t_start", "phase"]).reset_index(drop=True)
    pd.testing.assert_frame_equal(a, b, check_exact=True)


def test_the_phases_leave_the_columns_they_made_unmade(tmp_path):
    """display_phases reads the components' stamps, lines, workers, partitions and sources once
    (Columns.transient): a column made for them is not kept after (a 10^6-line log: ~100 MB
    beside the phases drawn), and the same phases come out when the columns were made before."""
    src = open_source(_log(tmp_path / "a.log"))
    cols = src.log.columns("components")
    before = set(cols.data)
    assert cols.data.pending  # (some columns are made on first read: else this test reads nothing)
    ph, _ = display_phases(src)
    assert set(cols.data) == before
    for name in list(cols.data.pending):
        cols[name]  # made and kept outside transient()
    assert not cols.data.pending
    again, _ = display_phases(src)
    pd.testing.assert_frame_equal(ph, again, check_exact=True)


def test_a_column_read_in_transient_is_the_kept_one(tmp_path):
    src = open_source(_log(tmp_path / "a.log"))
    cols = src.log.columns("components")
    name = next(iter(cols.data.pending))
    with cols.transient():
        once = cols[name]
        assert name not in cols.data
    kept = cols[name]
    assert name in cols.data
    assert once.dtype == kept.dtype and (once == kept).all()


def test_display_phases_are_categorical_and_read_as_their_names(tmp_path):
    """A picture's phases carry the codes from_log_lines has (a categorical: the lanes, the
    shares and the trace factorize a million names from them); factorize_phases gives what
    pd.factorize of the names gives, and the lanes, picture and trace are those of the names."""
    import numpy as np

    from gpuscope.reports.lanes import assign_lanes, factorize_phases
    from gpuscope.reports.plot import timeline_png
    from gpuscope.reports.trace import trace_text

    ph, _ = display_phases(open_source(_log(tmp_path / "a.log")))
    assert isinstance(ph["phase"].dtype, pd.CategoricalDtype)
    named = ph.assign(phase=ph["phase"].astype(str))
    codes, names = factorize_phases(ph["phase"].iloc[::-1])
    want_codes, want_names = pd.factorize(named["phase"].iloc[::-1].to_numpy(dtype=object))
    assert np.array_equal(codes, want_codes) and list(names) == list(want_names)
    assert [(ln.label, ln.main["phase"].astype(str).tolist(), ln.side["phase"].astype(str).tolist())
            for ln in assign_lanes(ph)] == [(ln.label, ln.main["phase"].tolist(), ln.side["phase"].tolist())
                                            for ln in assign_lanes(named)]
    assert "".join(trace_text(ph).chunks()) == "".join(trace_text(named).chunks())
    assert timeline_png(ph, title="t") == timeline_png(named, title="t")


def _pandas_later(v, line):
    g = pd.Series(v).groupby(line)
    return (g.transform("sum") - g.cumsum()).to_numpy()


def _pandas_covered(c, wholes):
    w = wholes.take(np.flatnonzero(~pd.Series(wholes.line).duplicated(keep="last").to_numpy()))
    covered = pd.Series(c.value_ms[c.printed], index=c.line[c.printed]).groupby(level=0).sum()
    return w, covered.reindex(w.line).fillna(0.0).to_numpy()


def _searched_stamp(line, ts, printed):
    lines, first = np.unique(line[printed], return_index=True)
    stamp = ts[printed][first]
    prev = np.concatenate(([-np.inf], stamp[:-1]))
    prev = np.where(prev <= stamp, prev, -np.inf)
    pos = np.clip(np.searchsorted(lines, line), 0, len(lines) - 1)
    return np.where(printed & (lines[pos] == line), prev[pos], -np.inf)


def test_line_sums_on_numpy_are_pandas_to_the_bit():
    """The lines' sums without pandas' groupby where the lines come in order (a line's later
    phases' time, its parts' cover, the previous stamp) equal pandas' (Kahan's running sums,
    reduceat's totals, reindex) bit for bit, cancellation and unordered lines included."""
    rng = random.Random(31)
    for _ in range(1500):
        n = rng.randint(1, 30)
        line = np.array(sorted(rng.randrange(12) for _ in range(n)) if rng.random() < 0.8
                        else [rng.randrange(12) for _ in range(n)])
        v = np.array([rng.choice([rng.uniform(-1, 1e3), 0.1, 0.2, 0.3, 1e16, -1e16, -0.0, 1e-17,
                                  rng.uniform(0, 1) * 10 ** rng.randint(-8, 12)]) for _ in range(n)])
        assert ph._later_in_line(v, line).tobytes() == _pandas_later(v, line).tobytes()
        printed = np.ones(n, bool) if rng.random() < 0.6 else np.array([rng.random() < 0.7 for _ in range(n)])
        if printed.any():
            ts = np.array([rng.uniform(0, 10) for _ in range(n)])
            assert ph._previous_stamp(line, ts, printed).tobytes() == _searched_stamp(line, ts, printed).tobytes()
        wl = np.array(sorted(rng.randrange(14) for _ in range(rng.randint(1, 12))))
        c = ph._Rows(["a"], np.zeros(n, int), printed, np.arange(n), v, line, np.zeros(n), None)
        wholes = ph._Rows(["a"], np.zeros(len(wl), int), np.ones(len(wl), bool), np.arange(len(wl)),
                          np.arange(len(wl), dtype=float), wl, np.zeros(len(wl)), None)
        (w1, c1), (w2, c2) = ph._covered(c, wholes), _pandas_covered(c, wholes)
        assert w1.line.tobytes() == w2.line.tobytes() and c1.tobytes() == c2.tobytes()

"""The vectorised samples.csv reader against a row-by-row oracle on generated files (hypothesis):
the same rows kept, the same values, the same count of malformed rows; with today's header
and with the header of files written before the slow clock fields (mem_clock_mhz,
temperature_c, clock_event_reasons) were sampled."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuscope.parsers import numbers
from gpuscope.parsers.samples import (
    _NA,
    BOUNDS,
    INT_COLUMNS,
    SAMPLE_COLUMNS,
    STR_COLUMNS,
    read_samples_csv,
)

N = len(SAMPLE_COLUMNS)
NEW_COLUMNS = ("mem_clock_mhz", "temperature_c", "clock_event_reasons",
               "tensor_active", "fp16_active", "fp32_active", "fp64_active")
LEGACY_COLUMNS = tuple(c for c in SAMPLE_COLUMNS if c not in NEW_COLUMNS)


def oracle(text: str) -> tuple[list[dict], int, dict]:
    """One line at a time, the rules of read_samples_csv's docstring: a row without a readable
    t_wall or gpu is dropped; any other unreadable value is missing (wrap_suspect: 1)."""
    lines = text.splitlines()
    header = [h.strip() for h in lines[0].split(",")]
    body, malformed = lines[1:], 0
    if not text.endswith("\n") and body:
        body, malformed = body[:-1], 1
    rows, bad_values = [], {}
    for line in body:
        if not line.strip():
            continue
        f = line.split(",")
        if len(f) != len(header):
            malformed += 1
            continue
        row, ok, bad = {}, True, set()
        for c in SAMPLE_COLUMNS:
            if c not in header:  # a column the file predates: missing everywhere
                row[c] = None if c in STR_COLUMNS else 0 if c in INT_COLUMNS else math.nan
                continue
            v = f[header.index(c)].strip()
            if c in STR_COLUMNS:
                row[c] = v or None
                continue
            if v in _NA:
                x = math.nan
            else:  # the formats' numerals only (parsers.numbers), within the column's bounds
                x = numbers.number(v)
                lo, hi = BOUNDS.get(c, (-math.inf, math.inf))
                if x is not None and not lo <= x <= hi:
                    x = None
            if x is not None and c in INT_COLUMNS and x == x and (x != int(x) or abs(x) >= 2**63):
                x = None
            if x is None:  # unreadable
                if c in ("t_wall", "gpu"):
                    ok = False
                    break
                bad.add(c)
                x = 1 if c == "wrap_suspect" else math.nan
            if c in INT_COLUMNS:
                if x != x:
                    if c == "gpu":
                        ok = False
                        break
                    x = 0
                x = int(x)
            row[c] = x
        if not ok or row["t_wall"] != row["t_wall"]:
            malformed += 1
            continue
        for c in bad:
            bad_values[c] = bad_values.get(c, 0) + 1
        rows.append(row)
    return rows, malformed, bad_values


cell = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False, width=32).map(repr),
    st.integers(-5, 5).map(str),
    st.sampled_from(["", "-", "N/A", "[N/A]", "nan", "inf", "oops", "1e3", " 2 ", "0x10", "3.5", "é", "1,5",
                     "1e308", "\u0669\u0668", "\uff19\uff18", "98_765", "12..", "9876'5432", "1e20", "-0.5"]),
)
def noise(columns):
    return st.lists(cell, min_size=len(columns) - 2, max_size=len(columns) + 1).map(",".join)


@st.composite
def valid(draw, columns) -> str:
    out = []
    for c in columns:
        if c == "t_wall":
            out.append(repr(draw(st.floats(1.7e9, 1.8e9))))
        elif c in INT_COLUMNS:
            out.append(str(draw(st.integers(0, min(3, int(BOUNDS.get(c, (0, 3))[1]))))))
        elif c in STR_COLUMNS:
            out.append(draw(st.sampled_from(["gpm", "counter", ""])))
        else:  # a reading within the column's bounds (a fraction 0..1, a percentage, ...)
            lo, hi = BOUNDS.get(c, (0.0, 1e4))
            out.append(draw(st.one_of(st.floats(max(lo, 0.0), min(hi, 1e4)).map(repr),
                                      st.sampled_from(["", "N/A", "-"]))))
    return ",".join(out)


@st.composite
def files(draw):
    columns = draw(st.sampled_from([SAMPLE_COLUMNS, LEGACY_COLUMNS]))
    row = st.one_of(valid(columns), valid(columns), noise(columns))
    rows = draw(st.lists(st.one_of(row, st.just(""), st.just("   ")), max_size=25))
    return columns, rows, draw(st.booleans())


kept: list[int] = []
legacy_kept: list[int] = []


@settings(max_examples=300, deadline=None)
@given(files())
def test_reader_matches_the_row_oracle(tmp_path_factory, f):
    columns, rows_text, torn = f
    text = ",".join(columns) + "\n" + "".join(r + "\n" for r in rows_text)
    if torn and rows_text:
        text = text[:-1]
    p = tmp_path_factory.mktemp("s") / "samples.csv"
    p.write_text(text)
    df = read_samples_csv(p)
    want, malformed, bad_values = oracle(text)
    assert df.attrs["malformed_rows"] == malformed and df.attrs["bad_values"] == bad_values
    assert len(df) == len(want) and list(df.columns) == list(SAMPLE_COLUMNS)
    kept.append(len(want))
    if columns == LEGACY_COLUMNS:
        legacy_kept.append(len(want))
    for c in SAMPLE_COLUMNS:
        got = df[c].tolist()
        exp = [r[c] for r in want]
        if c in STR_COLUMNS:  # (a categorical: a missing value reads as NaN)
            got = [None if isinstance(v, float) and math.isnan(v) else v for v in got]
        if c in STR_COLUMNS or c in INT_COLUMNS:
            assert got == exp, c
        else:
            assert np.allclose(np.asarray(got, float), np.asarray(exp, float), equal_nan=True, rtol=0, atol=0), c


def test_the_generator_produced_kept_rows():
    # runs after the property test in file order: the oracle comparison saw real rows
    if not kept:
        pytest.skip("needs test_reader_matches_the_row_oracle to have run first")
    assert sum(kept) > 100
    assert sum(legacy_kept) > 20  # rows of files without the newer columns were compared too


# -- a column bad in every row, NUL bytes: what can be read is read, the rest is counted -------

OPTIONAL = [c for c in SAMPLE_COLUMNS if c not in ("t_wall", "gpu") and c not in STR_COLUMNS]


@settings(max_examples=60, deadline=None)
@given(rows=st.lists(valid(SAMPLE_COLUMNS), min_size=1, max_size=15), col=st.sampled_from(OPTIONAL),
       junk=st.sampled_from(["oops", "x", "1.5x", "inf", "--", "0x1q"]))
def test_a_column_bad_in_every_row_costs_that_column_only(tmp_path_factory, rows, col, junk):
    i = SAMPLE_COLUMNS.index(col)
    bad_rows = []
    for r in rows:
        f = r.split(",")
        f[i] = junk
        bad_rows.append(",".join(f))
    p = tmp_path_factory.mktemp("s") / "samples.csv"
    p.write_text(",".join(SAMPLE_COLUMNS) + "\n" + "".join(r + "\n" for r in bad_rows))
    df = read_samples_csv(p)
    assert len(df) == len(rows) and df.attrs["malformed_rows"] == 0
    assert df.attrs["bad_values"] == {col: len(rows)}
    if col == "wrap_suspect":
        assert (df[col] == 1).all()  # not trusted: the rows' PCIe figures are left out
    else:
        assert df[col].isna().all()
    good = read_samples_csv(_write(tmp_path_factory, ",".join(SAMPLE_COLUMNS) + "\n" + "".join(r + "\n" for r in rows)))
    others = [c for c in SAMPLE_COLUMNS if c != col]
    assert df[others].equals(good[others])  # every other reading kept as it was


def _write(factory, text: str):
    p = factory.mktemp("s") / "samples.csv"
    p.write_text(text)
    return p


@settings(max_examples=80, deadline=None)
@given(rows=st.lists(valid(SAMPLE_COLUMNS), min_size=1, max_size=15),
       hits=st.lists(st.tuples(st.integers(0, 14), st.integers(0, 200), st.integers(1, 4)), max_size=4),
       trailing=st.integers(0, 3000))
def test_nul_bytes_are_damage_counted_never_silence(tmp_path_factory, rows, hits, trailing):
    from gpuscope.parsers import read_samples
    from gpuscope.parsers.samples import damage_note

    lines = list(rows)
    hit_lines = set()
    for k, pos, n in hits:
        if k < len(lines):
            s = lines[k]
            j = min(pos, len(s))
            lines[k] = s[:j] + "\x00" * n + s[j:]
            hit_lines.add(k)
    text = ",".join(SAMPLE_COLUMNS) + "\n" + "".join(r + "\n" for r in lines) + "\x00" * trailing
    p = tmp_path_factory.mktemp("s") / "samples.csv"
    p.write_bytes(text.encode())
    df = read_samples(p)
    assert len(df) == len(rows) - len(hit_lines)
    assert df.attrs["nul_bytes"] == text.count("\x00") and df.attrs["nul_rows"] == len(hit_lines)
    assert df.attrs["malformed_rows"] == len(hit_lines)
    note = damage_note(df)
    assert (note is None) == (text.count("\x00") == 0)
    if hit_lines:
        assert "dropped for NUL bytes" in note


def test_nul_bytes_in_the_header_are_a_binary_file(tmp_path):
    from gpuscope.errors import NoDataError

    p = tmp_path / "samples.csv"
    p.write_bytes(b"t_wall,\x00gpu\n1,0\n")
    with pytest.raises(NoDataError, match="binary"):
        read_samples_csv(p)

"""The article's condensed form (examples/article_excerpt.log) and its variants."""

from __future__ import annotations

import math

import pytest

from gpuscope import parsers
from gpuscope.errors import NoDataError
from gpuscope.schemas import COMPONENT_COLUMNS, RECORD_COLUMNS
from tests.conftest import EXAMPLES


def _dtypes(df):
    return {c: str(t) for c, t in df.dtypes.items()}


def test_article_excerpt_records_and_figures():
    p = parsers.parse_log(EXAMPLES / "article_excerpt.log")
    assert p.format == "condensed"
    assert p.total_lines == 12 and p.timing_lines == 12
    assert p.skipped.empty
    r = p.records
    assert list(r["held_ms"]) == [1634.0, 2385.0, 6960.0, 3481.0]
    assert r["complete"].all() and list(r["first_line"]) == [1, 4, 7, 10]
    assert list(r["last_line"]) == [3, 6, 9, 12]
    c = p.components
    ntt = c[c["component"] == "ntt_kernels"]
    assert ntt["value_ms"].median() == 1354.5
    assert ntt["value_ms"].sum() == 8613.0
    assert c.loc[c["component"] == "mutex_held", "value_ms"].sum() == 14460.0
    # the second record: its parts sum to more than its held time (the analyzer flags it)
    rec1 = c[c["record"] == 1].set_index("component")["value_ms"]
    assert rec1["mutex_held"] == 2385.0
    assert rec1[["ntt_kernels", "msm", "batch_add", "tail_msm", "barrier_wait"]].sum() > 2385.0
    # every value keeps its line; ms suffixes are dropped, totals in ms
    assert int(ntt.iloc[1]["line"]) == 5
    assert rec1["total_fn"] == 7473.0
    assert set(c["source"]) == {"condensed"}
    assert (c["gpu"] == -1).all() and c["ts"].isna().all()
    assert _dtypes(c) == COMPONENT_COLUMNS
    assert _dtypes(r) == RECORD_COLUMNS


def test_separators_and_optional_ms_suffix():
    text = (
        "mutex_wait_ms=10|barrier_wait_ms=5\n"
        "ntt_kernels=287ms msm=634 batch_add=401ms|tail_msm=198\n"
        "mutex_held_ms=1600 | total_fn=4215ms\n"
    )
    p = parsers.parse_log(text)
    assert p.format == "condensed"
    got = p.components.set_index("component")["value_ms"].to_dict()
    assert got == {"mutex_wait": 10.0, "barrier_wait": 5.0, "ntt_kernels": 287.0, "msm": 634.0,
                   "batch_add": 401.0, "tail_msm": 198.0, "mutex_held": 1600.0, "total_fn": 4215.0}


def test_prefixed_condensed_keeps_times_and_cut_last_record():
    text = (
        "2026-11-30T14:30:00.250Z mutex_wait_ms=1149 | barrier_wait_ms=0\n"
        "2026-11-30T14:30:01.500Z ntt_kernels=287ms | msm=634ms\n"
        "2026-11-30T14:30:01.750Z mutex_held_ms=1634 | total_fn=4215ms\n"
        "2026-11-30T14:30:02Z mutex_wait_ms=7 | barrier_wait_ms=0\n"
    )
    p = parsers.parse_log(text)
    r = p.records
    assert list(r["complete"]) == [True, False]
    assert math.isnan(r["held_ms"].iloc[1])
    assert r["ts_end"].iloc[0] - r["ts_start"].iloc[0] == pytest.approx(1.5)
    assert p.components["ts"].iloc[0] == pytest.approx(1796049000.25)  # 2026-11-30T14:30:00.25Z


def test_damaged_values_are_skipped_with_line_numbers():
    text = (
        "mutex_wait_ms=1149 | barrier_wait_ms=0\n"
        "ntt_kernels=287ms | msm=63x4ms\n"
        "mutex_held_ms=abc | total_fn=4215ms\n"
        "mutex_wait_ms=1 | barrier_wait_ms=0\n"
        "mutex_held_ms=1634 | total_fn=42\n"
    )
    p = parsers.parse_log(text, "condensed")
    assert list(p.skipped["line"]) == [2, 3]
    assert "not a number" in p.skipped["reason"].iloc[1]
    assert p.timing_lines == 5
    # the lines that could be read are read; the damaged held line means the first
    # record runs on into the next one
    assert p.records["complete"].sum() == 1


def test_condensed_without_any_readable_line_is_no_data():
    with pytest.raises(NoDataError):
        parsers.parse_log("mutex_held_ms=abc\nntt_kernels=??\n", "condensed")

"""Figures printed only as precisely as the evidence carries them (issue 13): a measured line
rate is 55.5 GB/s, not 55.4809; a ratio of 1.55 is 1.5x, not 2x; a gap of 4 ms is 4.1 ms,
not 0.00 s (which says zero); evidence numbers without float noise; an unknown figure is -."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from gpuscope.cli import app
from gpuscope.reports.console import evidence_value
from gpuscope.reports.numbers import secs
from tests.conftest import DATA

RUNS = DATA / "h200_foreign" / "runs"


def test_secs_never_rounds_a_duration_to_zero():
    assert secs(0.0041) == "4.1 ms" and secs(0.00012, 3) == "0.12 ms" and secs(0.0032) == "3.2 ms"
    assert secs(0) == "0.00 s" and secs(1.234) == "1.23 s" and secs(float("nan")) == "-"
    assert secs(6.5e-05) == "0.065 ms" and secs(3.2e-4, 3) == "0.32 ms"  # never 0.00032 s nor e-notation
    assert secs(0.0049) == "4.9 ms" and secs(0.005) == "0.01 s"


def test_evidence_values_carry_their_digits_only():
    assert evidence_value(55.4808836503483) == "55.48"
    assert evidence_value(1610612736.0) == "1610612736"
    assert evidence_value(0.16431) == "0.164" and evidence_value(float("nan")) == "-"
    assert evidence_value({"a": [1.0, 0.0061]}) == "{a: [1, 0.0061]}" and evidence_value(None) == "-"


def test_trace_idle_gaps_one_figure_a_row():
    r = CliRunner().invoke(app, ["analyze", str(DATA / "h200_foreign" / "traces" / "train_slow.json.gz")],
                           env={"COLUMNS": "80"})
    act = r.stdout[r.stdout.index("GPU activity over the traced span"):r.stdout.index("Copies")]
    assert "(exact (" not in act and "e-0" not in act
    rows = [line.split() for line in act.splitlines()]
    assert ["idle", "gaps", "590"] in rows and ["total", "0.293", "s"] in rows and ["longest", "0.089", "s"] in rows


def test_a_measured_line_rate_is_printed_to_one_decimal():
    r = CliRunner().invoke(app, ["analyze", str(RUNS / "copy_pageable"), "--json"])
    doc = json.loads(r.stdout)
    summaries = " ".join(d["summary"] for d in doc["findings"])
    assert "55.5 GB/s line rate" in summaries and "55.48" not in summaries
    assert doc["source"]["options"]["line_rate_gbs"] > 55.48  # the JSON keeps the measured value


def test_the_warmup_factor_is_the_ratio_it_is():
    r = CliRunner().invoke(app, ["analyze", str(RUNS / "copy_pageable"), "--json"])
    warm = next(d for d in json.loads(r.stdout)["findings"] if d["id"] == "first_record_warmup")
    assert "1.5x the median of the others" in warm["summary"]  # 410 / 265 ms, not "2x"


def test_trace_copies_table_rounds_the_line_rate():
    from gpuscope.reports.trace_console import memcpy_table

    t = memcpy_table([{"direction": "HtoD", "host_memory": "pageable", "count": 1, "bytes": 1, "ms": 1.0,
                       "gbs": 1.0, "line_rate_share": 0.1, "ms_at_line_rate": 0.1}], 55.4808836503483)
    assert t.title == "Copies (line rate 55.5 GB/s)"

"""Figures printed only as precisely as the evidence carries them (issue 13): a measured line
rate is 55.5 GB/s, not 55.4809; a ratio of 1.55 is 1.5x, not 2x; a gap of 4 ms is 0.0041 s,
not 0.00 s (which says zero); evidence numbers without float noise; an unknown figure is -."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from gpuscope.cli import app
from gpuscope.reports.numbers import secs
from tests.conftest import DATA

RUNS = DATA / "h200_foreign" / "runs"


def test_secs_never_rounds_a_duration_to_zero():
    assert secs(0.0041) == "0.0041 s" and secs(0.00012, 3) == "0.00012 s"
    assert secs(0) == "0.00 s" and secs(1.234) == "1.23 s" and secs(float("nan")) == "-"


def test_a_measured_line_rate_is_printed_to_one_decimal():
    r = CliRunner().invoke(app, ["analyze", str(RUNS / "copy_pageable"), "--json"])
    doc = json.loads(r.stdout)
    summaries = " ".join(d["summary"] for d in doc["diagnoses"])
    assert "55.5 GB/s line rate" in summaries and "55.48" not in summaries
    assert doc["options"]["line_rate_gbs"] > 55.48  # the JSON keeps the measured value


def test_the_warmup_factor_is_the_ratio_it_is():
    r = CliRunner().invoke(app, ["analyze", str(RUNS / "copy_pageable"), "--json"])
    warm = next(d for d in json.loads(r.stdout)["diagnoses"] if d["id"] == "first_record_warmup")
    assert "1.5x the median of the others" in warm["summary"]  # 410 / 265 ms, not "2x"

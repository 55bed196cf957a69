"""A profiler trace is read and analyzed once per command: `analyze` (with --html too), a
compare side, `plot` and `export` each decode the trace's bytes once and run analyze_trace once
(the picture reuses the report's trace analysis)."""

from __future__ import annotations

import builtins
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpuscope.analysis import trace_analysis
from gpuscope.cli import app
from gpuscope.parsers.trace import kineto
from tests.conftest import DATA

TRACES = DATA / "h200_foreign" / "traces"
TRACE = TRACES / "copy_pageable.json.gz"
runner = CliRunner()


@pytest.fixture
def counts(monkeypatch):
    seen = {"analyze_trace": 0, "decode": 0, "opens": 0}
    real_analyze, real_read_one, real_open = trace_analysis.analyze_trace, kineto._read_one, builtins.open

    def analyze(*a, **kw):
        seen["analyze_trace"] += 1
        return real_analyze(*a, **kw)

    def read_one(*a, **kw):
        seen["decode"] += 1
        return real_read_one(*a, **kw)

    def opened(file, *a, **kw):
        if isinstance(file, str | Path) and Path(file).name == TRACE.name:
            seen["opens"] += 1
        return real_open(file, *a, **kw)

    monkeypatch.setattr(trace_analysis, "analyze_trace", analyze)
    monkeypatch.setattr(kineto, "_read_one", read_one)
    monkeypatch.setattr(builtins, "open", opened)
    return seen


@pytest.mark.parametrize("args", [
    ["analyze", TRACE, "--json"],
    ["analyze", TRACE, "--html", "{out}/report.html"],
    ["plot", TRACE, "-o", "{out}/t.png"],
    ["export", TRACE, "--perfetto", "{out}/t.json"],
])
def test_one_read_and_one_analysis_per_command(counts, tmp_path, args):
    r = runner.invoke(app, [str(a).format(out=tmp_path) for a in args])
    assert r.exit_code == 0, r.stderr
    # the trace's file opened once (its head says what it is, the rest is read from there on),
    # its bytes decoded once
    assert counts == {"analyze_trace": 1, "decode": 1, "opens": 1}


def test_a_compare_side_with_its_picture_analyzes_its_trace_once(counts, tmp_path):
    r = runner.invoke(app, ["compare", str(TRACE), str(TRACES / "copy_pinned.json.gz"),
                            "--html", str(tmp_path / "c.html")])
    assert r.exit_code == 0, r.stderr
    assert counts["analyze_trace"] == 2 and counts["decode"] == 2  # one per side

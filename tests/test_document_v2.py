"""The `analyze --json` document, version 2 (issue 31): the Analysis is shaped like its Source (a
part only where the source has it), the document is built once, and a figure a part cannot
give is null, never 0."""

from __future__ import annotations

import json

from gpuscope.analysis import analyze
from gpuscope.analysis.document import VERSION
from gpuscope.reports.csvout import frames
from gpuscope.sources import open_source
from tests.conftest import DATA, EXAMPLES

TOP = {"version", "source", "log", "samples", "trace", "table", "ranks", "findings", "first_cause", "what_if", "evidence"}


def test_a_trace_has_no_log_part_and_keeps_its_findings():
    """v1 gave a trace `records: 0`, a split of zeros and bounds of an empty log."""
    a = analyze(open_source(DATA / "h200_bounds" / "traces" / "hbm_bound.json.gz"))
    assert a.log is None and a.kind == "trace"
    doc = a.document()
    assert set(doc) == TOP and doc["version"] == VERSION == 2
    assert doc["log"] is None and doc["samples"] is None and doc["table"] is None
    assert doc["trace"] is not None and doc["trace"]["activity"]["source"] == "trace"
    assert "memory_bound" in [f["id"] for f in doc["findings"]] and doc["first_cause"] is not None
    assert not any(name in frames(a) for name in ("components.csv", "records.csv", "timeline.csv"))


def test_a_samples_file_has_no_log_part():
    a = analyze(open_source(DATA / "h200_foreign" / "runs" / "imagenet_quiet"))
    doc = a.document()
    assert doc["log"] is None and doc["trace"] is None and doc["source"]["kind"] == "samples"
    assert doc["samples"] is not None and doc["samples"]["activity"]["busy_fraction"] is not None


def test_a_run_has_its_log_and_samples_parts():
    doc = analyze(open_source(DATA / "h200_foreign" / "runs" / "train_fast")).document()
    assert doc["log"] is not None and doc["log"]["records"] > 0 and doc["samples"]["activity"] is not None
    assert doc["trace"] is None


def test_a_split_role_the_log_never_printed_is_null_not_zero():
    """The CuZK daemon log prints no read-back: v1 said d2h_ms 0.0 (measured, none)."""
    doc = analyze(open_source(EXAMPLES / "cuzk_daemon.log")).document()
    split = doc["log"]["split"]
    assert split["d2h_ms"] is None and split["d2h_share"] is None
    assert split["h2d_ms"] == 74987.0 and split["held_ms"] == 131419.0


def test_a_role_printed_as_zero_stays_zero(tmp_path):
    """What would make the null fire falsely: a role whose component the log prints, at 0 ms.
    That is a measured 0 and stays 0.0."""
    log = tmp_path / "zero_h2d.log"
    log.write_text("".join(f"step={i} h2d_ms=0 compute_ms=5 step_ms=6\n" for i in range(1, 9)))
    doc = analyze(open_source(log)).document()
    comps = doc["log"]["components"]
    assert comps["h2d"]["role"] == "h2d"
    assert doc["log"]["split"]["h2d_ms"] == 0.0 and doc["log"]["split"]["h2d_share"] == 0.0


def test_the_document_is_built_once_and_is_json():
    a = analyze(open_source(EXAMPLES / "article_excerpt.log"))
    assert a.document() is a.document()
    assert json.loads(json.dumps(a.document(), allow_nan=False))["log"]["records"] == 4

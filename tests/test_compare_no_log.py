"""A compare side without timing lines (a trace, samples alone) holds no log (issue 31:
ParsedLog.empty() is gone): no figure of records is set beside it (null, not a count of an
empty log's zeros), and a prediction against it names no stalled tenures ("0 of 0" said a
measurement that was never made)."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from gpuscope.analysis.compare.sources import compare_sources, side_of
from gpuscope.cli import app
from gpuscope.sources import open_source
from tests.conftest import DATA

RUN = DATA / "h200_contention" / "pageable-c8"
TRACE = DATA / "h200_bounds" / "traces" / "hbm_bound.json.gz"
DMON = DATA / "h200_bounds" / "smi" / "hbm_bound_dmon.txt"


def test_a_side_without_timing_lines_has_no_log_and_no_record_figures():
    for path, kind in ((TRACE, "trace"), (DMON, "samples")):
        side = side_of(open_source(path), pictures=False)
        assert side.parsed is None and side.kind == kind
    result, (sa, sb) = compare_sources(open_source(RUN), open_source(TRACE), pictures=False)
    assert sa.parsed is not None and sb.parsed is None
    doc = result.to_json()
    b = doc["b"]
    assert b["format"] == "trace" and b["partitions"] == 0
    assert b["throughput_ppm"] is None and b["span_s"] is None and b["upload_ms_median"] is None
    assert b["gpu_busy_method"] is None and b["activity"] is not None  # (what the GPU did stays compared)
    # the run's own figures are the log's (what would make a log side read as log-less: none)
    assert doc["a"]["partitions"] > 0 and doc["a"]["format"] == sa.parsed.format
    pred = doc["prediction"]
    assert pred is not None and "stalled_measured" not in pred and "stalled_predicted" not in pred


def test_two_logless_sides_compare_what_the_gpus_did():
    r = CliRunner().invoke(app, ["compare", str(TRACE), str(DMON), "--json"])
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["a"]["partitions"] == 0 == doc["b"]["partitions"] and doc["components"] is not None
    assert doc["a"]["format"] == "trace" and doc["b"]["format"] == "samples"

from __future__ import annotations

import json

import pandas as pd
import pytest

from gpuscope.analysis import analyze
from gpuscope.reports.csvout import write_csv
from gpuscope.reports.jsonout import to_json_text
from tests.analysis_builders import LogBuilder, article_log, src

CONTRACT_SPLIT = {"held_ms", "h2d_ms", "gpu_compute_ms", "cpu_stall_ms", "other_ms", "h2d_share",
                  "gpu_compute_share", "cpu_stall_share", "inconsistent_records"}
CONTRACT_COMPONENT = {"count", "sum_ms", "mean_ms", "median_ms", "p10_ms", "p90_ms"}


def test_json_contract_keys_and_values():
    j = json.loads(to_json_text(analyze(src(article_log()))))
    assert set(j) == {"version", "source", "log", "samples", "trace", "table", "ranks", "findings", "first_cause",
                      "what_if", "evidence"}
    assert {"format", "records", "skipped_lines", "components", "split", "timeline"} <= set(j["log"])
    assert j["source"]["kind"] == "condensed" and j["log"]["records"] == 4 and j["log"]["skipped_lines"] == 0
    assert CONTRACT_SPLIT <= set(j["log"]["split"])
    for c in j["log"]["components"].values():
        assert CONTRACT_COMPONENT <= set(c)
    assert j["log"]["components"]["ntt_kernels"]["median_ms"] == 1354.5
    assert j["log"]["split"]["h2d_share"] == pytest.approx(8613 / 14460)
    assert {"wall_s", "gpu_busy_fraction"} <= set(j["log"]["timeline"])
    for d in j["findings"]:
        assert {"id", "severity", "summary", "evidence", "recommendation"} <= set(d) <= {
            "id", "severity", "summary", "evidence", "recommendation", "cause", "aliases"}
        assert d["severity"] in {"high", "medium", "low", "info"}


def test_json_nan_becomes_null_and_is_strict():
    b = LogBuilder()
    b.tenure(100, ntt_kernels=10)
    text = to_json_text(analyze(src(b.build())))
    assert "NaN" not in text and "Infinity" not in text
    j = json.loads(text)
    assert j["log"]["components"]["ntt_kernels"]["cv"] is None   # one value: no cv
    assert j["log"]["timeline"]["gpu_busy_fraction"] is None


def test_csv_files(tmp_path):
    b = LogBuilder()
    for t in (1000, 1200):
        b.tenure(t + 700, ntt_kernels=t, msm_invoke=600, mutex_wait=300)
    b.skip()
    a = analyze(src(b.build()))
    written = write_csv(a, tmp_path / "out")
    names = {p.name for p in written}
    assert {"components.csv", "records.csv", "stats.csv", "timeline.csv", "skipped.csv"} <= names
    rec = pd.read_csv(tmp_path / "out" / "records.csv")
    assert list(rec["held_ms"]) == [1700, 1900] and list(rec["h2d_ms"]) == [1000, 1200]
    st = pd.read_csv(tmp_path / "out" / "stats.csv").set_index("component")
    assert st.at["ntt_kernels", "median_ms"] == 1100
    comps = pd.read_csv(tmp_path / "out" / "components.csv")
    assert len(comps) == 8 and {"record", "component", "value_ms", "line"} <= set(comps.columns)
    sk = pd.read_csv(tmp_path / "out" / "skipped.csv")
    assert len(sk) == 1 and sk.iloc[0]["reason"] == "bad value"
    tl = pd.read_csv(tmp_path / "out" / "timeline.csv")
    assert "gpu_busy_fraction" in set(tl["key"]) and "bounds.gpu_floor_s" in set(tl["key"])


def test_csv_into_a_file_path_is_an_input_error(tmp_path):
    f = tmp_path / "f"
    f.write_text("x")
    from gpuscope.errors import InputError

    with pytest.raises(InputError):
        write_csv(analyze(src(article_log())), f)


def test_run_json_is_written_by_the_one_json_writer():
    """`gpuscope run --json` once serialised on its own (json.dumps, default=str): a NaN in the
    pipeline's summary came out as `NaN`, which no strict JSON reader takes. Its document now goes
    through json_text, as every verb's (gpuscope.cli._common.emit): NaN null, a path its text."""
    from pathlib import Path
    from types import SimpleNamespace

    from gpuscope.reports.jsonout import json_text, run_document

    res = SimpleNamespace(summary=lambda: {"wall_s": float("nan"), "partitions_done": 2, "host_memory": Path("/m")})
    outcome = SimpleNamespace(path=Path("/runs/r1"), status="complete", result=res, analysis=None)
    text = json_text(run_document(outcome))
    assert "NaN" not in text
    j = json.loads(text)
    assert j == {"run_dir": "/runs/r1", "status": "complete", "analysis": None,
                 "pipeline": {"wall_s": None, "partitions_done": 2, "host_memory": "/m"}}

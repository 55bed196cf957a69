"""Quantities (numbers that are not times: h2d_bytes, num_circuits) from the log to the
analysis: ParsedLog.quantities, the h2d rule's measured upload rate, the what-if's bytes,
compare's upload rate, quantities.csv, and gpuscope's own timing.log end to end."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from gpuscope import parsers
from gpuscope.analysis import AnalyzeOptions, analyze
from gpuscope.analysis.compare.comparison import Side
from gpuscope.analysis.compare.figures import run_figures
from gpuscope.analysis.whatif.predict import predict_pinned
from gpuscope.cli import app
from gpuscope.clock import Clock
from gpuscope.parsers.log import reader
from gpuscope.parsers.log.parsed import ParsedLog
from gpuscope.reports.csvout import write_csv
from gpuscope.rundir import TimingLogWriter
from gpuscope.schemas import QUANTITY_COLUMNS, empty
from gpuscope.workload import timinglog as tl
from tests.analysis_builders import src

runner = CliRunner()

NTT = "CUZK_NTT_H: d_b_alloc=0ms ntt_kernels=520ms coset_intt_sync=0ms msm_init=0ms msm_invoke=300ms msm_dtor=0ms total=820ms"
TWO_GPU = "\n".join([
    "2026-01-01T00:00:00.000Z CUZK_TIMING: pre_lock_cpu_ms=1 mutex_wait_ms=10",
    "2026-01-01T00:00:00.900Z " + NTT,
    "2026-01-01T00:00:00.900Z CUZK_TIMING: gpu_tid=0 h2d_ms=500 h2d_bytes=1000000000",
    "2026-01-01T00:00:00.950Z CUZK_TIMING: gpu_tid=0 batch_add_ms=100",
    "2026-01-01T00:00:00.910Z " + NTT,
    "2026-01-01T00:00:00.910Z CUZK_TIMING: gpu_tid=1 h2d_ms=500 h2d_bytes=1000000000",
    "2026-01-01T00:00:00.960Z CUZK_TIMING: gpu_tid=1 batch_add_ms=100",
    "2026-01-01T00:00:01.000Z CUZK_TIMING: mutex_held_ms=1000 total_start_fn_ms=1200",
    "2026-01-01T00:00:01.100Z CUZK_TIMING: b_g2_msm_ms=40 num_circuits=10",
]) + "\n"


def _dtypes(df: pd.DataFrame) -> dict[str, str]:
    return {c: str(t) for c, t in df.dtypes.items()}


# --- parsers ------------------------------------------------------------------------------

def test_two_gpu_tenure_keeps_bytes_per_gpu_and_counts_apart_from_times():
    p = parsers.parse_log(TWO_GPU)
    q = p.quantities
    assert list(q.columns) == list(QUANTITY_COLUMNS)
    assert q[["record", "gpu", "name", "value", "line"]].values.tolist() == [
        [0, 0, "h2d_bytes", 1e9, 3],
        [0, 1, "h2d_bytes", 1e9, 6],
        [-1, -1, "num_circuits", 10.0, 9],
    ]
    assert q["ts"].iloc[1] == pytest.approx(p.records["ts_start"].iloc[0] + 0.91)
    names = set(p.components["component"])
    assert not {"h2d_bytes", "num_circuits"} & names and {"h2d", "b_g2_msm"} <= names
    assert p.records["n_gpus"].tolist() == [2] and p.records["complete"].tolist() == [True]
    assert len(p.skipped) == 0


def test_slow_path_and_quantity_only_lines():
    text = "\n".join([
        "CUZK_TIMING: pre_lock_cpu_ms=1 mutex_wait_ms=10",
        "CUZK_TIMING: gpu_tid=0 h2d_ms=12.5 h2d_bytes=4096",   # decimal: the slow path
        "CUZK_TIMING: gpu_tid=1 h2d_bytes=2048",                # bytes only: tied like a component
        "CUZK_TIMING: gpu_tid=0 h2d_ms=3 h2d_bytes=-5",         # damage
        "CUZK_TIMING: mutex_held_ms=30",
    ]) + "\n"
    p = parsers.parse_log(text)
    assert p.quantities[["record", "gpu", "value", "line"]].values.tolist() == [[0, 0, 4096.0, 2], [0, 1, 2048.0, 3]]
    assert p.records["n_gpus"].tolist() == [2]
    assert p.skipped["line"].tolist() == [4] and "not a count" in p.skipped["reason"].iloc[0]


def test_kv_and_condensed_quantities():
    p = parsers.parse_log("h2d_ms=10 h2d_bytes=1000 num_circuits=4 mutex_held_ms=20\n"
                          "h2d=7ms | abc_bytes=64 | mutex_held=9\n", "kv")
    assert p.quantities[["record", "name", "value", "line"]].values.tolist() == [
        [0, "h2d_bytes", 1000.0, 1], [0, "num_circuits", 4.0, 1], [1, "abc_bytes", 64.0, 2]]
    assert set(p.components["component"]) == {"h2d", "mutex_held"}
    c = parsers.parse_log("h2d=7ms | h2d_bytes=64 | mutex_held=9\n", "condensed")
    assert c.quantities["value"].tolist() == [64.0] and set(c.components["component"]) == {"h2d", "mutex_held"}
    # no held key anywhere: each timed line is a record; a bytes-only line belongs to none
    n = parsers.parse_log("upload_ms=5 upload_bytes=10\nupload_bytes=20\n", "kv")
    assert n.quantities["record"].tolist() == [0, -1] and len(n.records) == 1
    bad = parsers.parse_log("h2d_ms=5 h2d_bytes=lots mutex_held_ms=9\nmutex_held_ms=3\n", "kv")
    assert bad.skipped["line"].tolist() == [1] and len(bad.quantities) == 0


def test_empty_quantities_are_typed():
    p = parsers.parse_log("CUZK_TIMING: mutex_wait_ms=1\nCUZK_TIMING: mutex_held_ms=2\n")
    assert len(p.quantities) == 0 and _dtypes(p.quantities) == QUANTITY_COLUMNS
    assert _dtypes(empty(QUANTITY_COLUMNS)) == QUANTITY_COLUMNS
    # built without quantities (older callers): the typed empty frame
    old = ParsedLog(format="cuzk", source="x", total_lines=0, timing_lines=0, components=p.components,
                    records=p.records, timeline=p.timeline, skipped=p.skipped)
    assert _dtypes(old.quantities) == QUANTITY_COLUMNS


def test_chunked_scan_keeps_quantities(monkeypatch):
    text = TWO_GPU * 200
    one = parsers.parse_log(text)
    monkeypatch.setattr(reader, "CHUNK", 500)
    two = parsers.parse_log(text)
    pd.testing.assert_frame_equal(one.quantities, two.quantities)
    assert len(two.quantities) == 600 and two.quantities["record"].max() == 199


# --- analysis -----------------------------------------------------------------------------

def test_h2d_rule_reports_the_measured_upload_rate():
    a = analyze(src(parsers.parse_log(TWO_GPU), line_rate_gbs=50))
    d = {x.id: x for x in a.findings}["h2d_bound"]
    ev = d.evidence
    # 2e9 B over two GPUs, 500 ms each: 1e9 B per GPU in 0.5 s = 2 GB/s, 4% of 50 GB/s
    assert ev["bytes_source"] == "the log's h2d_bytes field"
    assert ev["bytes_per_record"] == 2e9
    assert ev["measured_upload_gbs_median"] == 2.0
    assert ev["measured_upload_share_of_line_rate"] == 0.04
    assert ev["upload_ms_at_line_rate"] == 20.0  # 1e9 B per GPU at 50 GB/s
    assert "implied_upload_gbs_median" not in ev
    assert "uploads ran at a median 2.00 GB/s, 4% of the 50 GB/s line rate" in d.summary
    assert a.log.split["upload_gbs"] == pytest.approx(2.0)
    assert json.loads(json.dumps(a.document()))["log"]["split"]["upload_gbs"] == pytest.approx(2.0)


def test_abc_bytes_is_only_a_fallback_for_the_rule():
    a = analyze(src(parsers.parse_log(TWO_GPU), line_rate_gbs=50), AnalyzeOptions(abc_bytes=7 * 2**30))
    ev = {x.id: x for x in a.findings}["h2d_bound"].evidence
    assert ev["bytes_source"] == "the log's h2d_bytes field" and ev["bytes_per_record"] == 2e9
    no_bytes = TWO_GPU.replace(" h2d_bytes=1000000000", "")
    a = analyze(src(parsers.parse_log(no_bytes), line_rate_gbs=50), AnalyzeOptions(abc_bytes=2 * 10**9))
    ev = {x.id: x for x in a.findings}["h2d_bound"].evidence
    assert ev["bytes_source"] == "--abc-bytes" and ev["implied_upload_gbs_median"] == 2.0
    assert "measured_upload_gbs_median" not in ev
    assert a.document()["log"]["split"]["upload_gbs"] is None or np.isnan(a.log.split["upload_gbs"])


def test_whatif_takes_log_bytes_over_abc_bytes():
    p = parsers.parse_log(TWO_GPU)
    w = predict_pinned(p, line_rate_gbs=50.0, bytes_per_partition=5 * 2**30, bytes_source="--abc-bytes")
    assert w.bytes_source == "log (h2d_bytes)" and w.bytes_per_partition == 2e9
    assert w.predicted["upload_ms"] == pytest.approx(20.0)
    assert w.measured["upload_gbs"] == pytest.approx(2.0)
    w2 = predict_pinned(parsers.parse_log(TWO_GPU.replace(" h2d_bytes=1000000000", "")), line_rate_gbs=50.0,
                        bytes_per_partition=2e9, bytes_source="--abc-bytes")
    assert w2.bytes_source == "--abc-bytes" and w2.predicted["upload_ms"] == pytest.approx(20.0)


def test_compare_upload_rate_from_measured_bytes():
    f = run_figures(Side("a", parsers.parse_log(TWO_GPU), bytes_per_partition=9e9))
    assert f["bytes_source"] == "log (h2d_bytes)" and f["bytes_per_partition"] == 2e9
    assert f["upload_gbs"] == pytest.approx(2.0)


def test_csv_writes_quantities_with_every_digit(tmp_path):
    a = analyze(src(parsers.parse_log(TWO_GPU.replace("1000000000", "1610612737"))))
    write_csv(a, tmp_path)
    q = pd.read_csv(tmp_path / "quantities.csv")
    assert list(q.columns) == list(QUANTITY_COLUMNS)
    assert q["value"].tolist() == [1610612737.0, 1610612737.0, 10.0]
    empty_a = analyze(src(parsers.parse_log("CUZK_TIMING: mutex_wait_ms=1\nCUZK_TIMING: mutex_held_ms=2\n")))
    write_csv(empty_a, tmp_path / "e")
    assert (tmp_path / "e" / "quantities.csv").read_text().strip() == ",".join(QUANTITY_COLUMNS)


# --- end to end on gpuscope's own timing.log ----------------------------------------------

def _write_run_log(path, h2d_s=(0.5, 0.6, 0.75), nbytes=1_500_000_000):
    clock = Clock()
    log = tl.TimingLog(TimingLogWriter(path, None, clock), None, job_id="j", t0_mono=clock.mono(), clock=clock)
    t = clock.mono()
    for up in h2d_s:
        ten = log.tenure()
        ten.line(tl.line_lock_taken(0.001, 0.01), t)
        ten.line(tl.line_ntt_h(0.0, up + 0.02, 0.0, 0.0, 0.3, 0.0, up + 0.32), t + up + 0.32)
        ten.line(tl.line_h2d(0, up, nbytes), t + up)
        ten.line(tl.line_barrier(0, 0.0), t + up + 0.32)
        ten.line(tl.line_batch_add(0, 0.1), t + up + 0.42)
        ten.line(tl.line_tail_msm(0, 0.05, up + 0.47), t + up + 0.47)
        ten.line(tl.line_mutex_held(up + 0.5, up + 0.6), t + up + 0.5)
        ten.commit()
        log.line(tl.line_prep_msm(0.2), t + up + 0.55)
        t += up + 0.6
    log.close()


def test_end_to_end_timinglog_to_analyze_json_csv_and_whatif(tmp_path):
    log = tmp_path / "timing.log"
    _write_run_log(log)
    r = runner.invoke(app, ["analyze", str(log), "--json", "--what-if", "--line-rate", "50",
                            "--abc-bytes", "1GiB", "--csv", str(tmp_path / "csv")])
    assert r.exit_code == 0, r.stderr
    assert r.stderr == f"gpuscope: wrote 7 CSV files to {tmp_path / 'csv'}\n"
    j = json.loads(r.stdout)
    # 1.5e9 B in 500, 600, 750 ms: 3.0, 2.5, 2.0 GB/s -> median 2.5
    assert j["log"]["split"]["upload_gbs"] == pytest.approx(2.5)
    ev = {d["id"]: d for d in j["findings"]}["h2d_bound"]["evidence"]
    assert ev["measured_upload_gbs_median"] == 2.5 and ev["measured_upload_share_of_line_rate"] == 0.05
    assert ev["bytes_source"] == "the log's h2d_bytes field"
    wi = j["what_if"]
    assert wi["bytes_source"] == "log (h2d_bytes)" and wi["bytes_per_partition"] == 1.5e9
    assert wi["measured"]["upload_gbs"] == pytest.approx(2.5)
    q = pd.read_csv(tmp_path / "csv" / "quantities.csv")
    assert q["record"].tolist() == [0, 1, 2] and q["value"].tolist() == [1.5e9] * 3
    assert (q["name"] == "h2d_bytes").all() and (q["gpu"] == 0).all()


def test_end_to_end_cpu_run_directory(tmp_path):
    out = tmp_path / "run"
    r = runner.invoke(app, ["run", "--backend", "cpu", "--log-n", "8", "--partitions", "3", "--out", str(out)])
    assert r.exit_code == 0, r.stderr
    p = parsers.parse_log(out)
    q = p.quantities
    # the CPU backend uploads nothing: its h2d lines say 0 bytes, still one per tenure on gpu 0
    assert q["name"].tolist() == ["h2d_bytes"] * 3 and q["record"].tolist() == [0, 1, 2]
    assert (q["gpu"] == 0).all() and (q["value"] == 0).all() and q["ts"].notna().all()
    assert "h2d_bytes" not in set(p.components["component"])
    j = json.loads(runner.invoke(app, ["analyze", str(out), "--json"]).stdout)
    assert "upload_gbs" in j["log"]["split"] and j["log"]["split"]["upload_gbs"] is None  # 0 B in 0 ms: no rate


def _plain_tenure_bytes(q, ids, keys=("h2d_bytes", "abc_bytes", "upload_bytes")):
    """tenure_bytes as first written: names compared as text, a dense sum per record."""
    from gpuscope.analysis.evidence.log import groupstats

    rec = np.asarray(q["record"]).astype(np.int64)
    names = np.asarray(q["name"], dtype=object)
    value = np.asarray(q["value"]).astype("float64")
    ids = np.asarray(ids, dtype="int64")
    for key in keys:
        sel = (rec >= 0) & (names == key)
        if not sel.any():
            continue
        labels, uniq = groupstats.dense(rec[sel])
        sums, _ = groupstats.sums(labels, value[sel], len(uniq))
        at = np.searchsorted(uniq, ids)
        hit = (at < len(uniq)) & (uniq[np.minimum(at, len(uniq) - 1)] == ids)
        out = np.where(hit, sums[np.minimum(at, len(uniq) - 1)], np.nan)
        if np.isfinite(out).any():
            return out, key
    return None, None


@pytest.mark.parametrize("seed", range(40))
def test_tenure_bytes_on_codes_is_the_plain_path(seed):
    """Names as the parser's codes, one value per tenure taken as its own sum: the figures of
    the plain path (text names, a sum per record), on fresh random quantities."""
    from gpuscope.analysis.evidence.log.quantities import tenure_bytes
    from gpuscope.schemas import Columns

    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 300))
    names = ["num_circuits", "h2d_bytes", "upload_bytes"][: int(rng.integers(1, 4))]
    if seed % 4 == 0:  # one h2d_bytes per tenure, in order
        rec, code = np.arange(n), np.full(n, len(names) - 1)
    else:
        rec, code = rng.integers(-1, n // 2 + 1, n), rng.integers(0, len(names), n)
    value = rng.choice([np.nan, 0.0, -0.0, 1e9, 3.5e8], n)
    q = Columns(QUANTITY_COLUMNS, {"record": rec.astype(np.int32 if seed % 2 else np.int64), "gpu": np.full(n, -1),
                                   "name": code.astype(np.int32), "value": value}, cats={"name": names}, n=n)
    ids = np.arange(n if seed % 4 == 0 else n // 2)
    parsed = type("P", (), {"columns": lambda self, t: q})()
    ours, key = tenure_bytes(parsed, ids)
    theirs, tkey = _plain_tenure_bytes(q, ids)
    assert key == tkey
    if theirs is None:
        assert ours is None
    else:
        assert np.array_equal(ours, theirs, equal_nan=True) and np.array_equal(np.signbit(ours), np.signbit(theirs))

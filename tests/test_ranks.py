"""`gpuscope analyze DIR` of many ranks: the H200's 2- and 4-rank traces (rank 1 computes twice as
much; the others wait in a gloo all-reduce), a folder of run directories, a damaged rank."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpuscope.cli import app
from gpuscope.ranks_run import analyze_ranks, rank_inputs

DATA = Path(__file__).resolve().parent / "data" / "h200_bounds"
TRACES = DATA / "traces"


@pytest.fixture
def runner():
    return CliRunner()


@pytest.mark.parametrize("world", [2, 4])
def test_the_straggler_is_rank_1_and_the_others_wait_in_gloo(world):
    doc = analyze_ranks(rank_inputs(TRACES / f"ranks{world}"), workers=1)
    assert doc["count"] == world and [r["rank"] for r in doc["table"]] == list(range(world))
    assert [s["rank"] for s in doc["stragglers"]] == [1]
    s = doc["stragglers"][0]
    assert s["metric"] == "compute_ms_per_step" and s["ratio"] > 1.25 and s["excess_ms"] > 10
    assert s["waits"]["others_extra_ms_per_step"] > 5  # the others sit longer in the all-reduce
    assert doc["collectives"]["kinds"] == ["gloo"]
    for r in doc["table"]:
        assert r["steps"] == 3 and r["step_ms"] > 0
        assert r["collectives"]["kind"] == "gloo" and r["collectives"]["count"] == 3
        assert r["collectives"]["overlap_fraction"] < 0.05  # gloo on the host: no kernel hides it
        assert 0 < r["busy_fraction"] < 1 and r["copies"]
    # compute per step of rank 1 is about twice the compute of the others' (twice the matmuls)
    others = [r["compute_ms_per_step"] for r in doc["table"] if r["rank"] != 1]
    assert max(others) < doc["table"][1]["compute_ms_per_step"]


def test_processes_give_the_same_rows_as_one(tmp_path):
    one = analyze_ranks(rank_inputs(TRACES / "ranks4"), workers=1)
    many = analyze_ranks(rank_inputs(TRACES / "ranks4"), workers=2)
    assert many["workers"] == 2
    strip = [{k: v for k, v in r.items() if k != "seconds"} for r in one["table"]]
    assert strip == [{k: v for k, v in r.items() if k != "seconds"} for r in many["table"]]
    assert one["stragglers"] == many["stragglers"]


def test_cli_console_and_json(runner):
    r = runner.invoke(app, ["analyze", str(TRACES / "ranks2")])
    assert r.exit_code == 0, r.stderr
    assert "Ranks (2 traces" in r.stdout and "rank 1 is the straggler" in r.stdout
    r = runner.invoke(app, ["analyze", str(TRACES / "ranks2"), "--json"])
    doc = json.loads(r.stdout)
    assert doc["source"]["kind"] == "trace" and doc["ranks"]["stragglers"][0]["rank"] == 1
    assert doc["trace"]["activity"]  # the folder's own analysis is still there


def test_a_folder_of_run_directories(runner, tmp_path):
    for name in ("tensor_bound", "readback_pageable"):
        shutil.copytree(DATA / "runs" / name, tmp_path / name)
    r = runner.invoke(app, ["analyze", str(tmp_path), "--json"])
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["source"]["kind"] == "ranks" and doc["ranks"]["inputs"] == "runs"
    rows = {x["name"]: x for x in doc["ranks"]["table"]}
    assert rows["tensor_bound"]["busy_fraction"] > rows["readback_pageable"]["busy_fraction"]
    r = runner.invoke(app, ["analyze", str(tmp_path)])
    # two recordings of different programs at different times: side by side, not ranks (issue 33, class 12)
    assert r.exit_code == 0 and "Separate runs, not ranks of one job (2 runs" in r.stdout
    assert "do not overlap" in r.stdout and "straggler" not in r.stdout.replace("no straggler", "")
    r = runner.invoke(app, ["analyze", str(tmp_path), "--csv", str(tmp_path / "csv")])
    assert r.exit_code == 2 and "one source" in r.stderr


def test_a_damaged_rank_is_named_the_others_analyzed(runner, tmp_path):
    for name in ("tensor_bound", "hbm_bound"):
        shutil.copytree(DATA / "runs" / name, tmp_path / name)
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "samples.csv").write_text("garbage\n")
    r = runner.invoke(app, ["analyze", str(tmp_path), "--json"])
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)["ranks"]
    assert [e["name"] for e in doc["errors"]] == ["broken"] and doc["count"] == 2
    assert "broken" in r.stderr


def test_not_a_multi_rank_folder():
    assert rank_inputs(DATA / "runs" / "ranks2") is None  # one run directory
    assert rank_inputs(TRACES / "hbm_bound.json.gz") is None


def _frames(kernels, host=()):
    """A stand-in for TraceFrames: (name, ts_us, dur_us) kernels and host ranges."""
    from types import SimpleNamespace

    import pandas as pd

    gpu = pd.DataFrame({"kind": ["kernel"] * len(kernels), "name": [k[0] for k in kernels],
                        "ts_us": [float(k[1]) for k in kernels], "dur_us": [float(k[2]) for k in kernels]})
    h = pd.DataFrame({"name": [x[0] for x in host], "ts_us": [float(x[1]) for x in host],
                      "dur_us": [float(x[2]) for x in host]})
    return SimpleNamespace(gpu=gpu, host=h)


def test_nccl_kernels_and_their_overlap_with_compute():
    from gpuscope.analysis.ranks import collectives

    compute_ms, c = collectives(_frames([("gemm", 0, 100), ("ncclDevKernel_AllReduce_Sum_f32_RING_LL", 50, 100),
                                         ("gemm", 200, 50)], host=[("nccl:all_reduce", 40, 5)]), steps=2)
    assert c["kind"] == "nccl" and c["count"] == 1 and c["ms"] == pytest.approx(0.1)
    assert c["overlap_fraction"] == pytest.approx(0.5)  # 50 of its 100 us under the first gemm
    assert compute_ms == pytest.approx(0.15)
    assert c["ms_per_step"] == pytest.approx(0.05) and c["per_step_count"] == 0.5


def test_gloo_on_the_host_and_no_collective():
    from gpuscope.analysis.ranks import collectives

    _, c = collectives(_frames([("gemm", 0, 100)], host=[("gloo:all_reduce", 80, 100), ("c10d::allreduce_", 79, 1)]),
                       steps=0)
    assert c["kind"] == "gloo" and c["ms"] == pytest.approx(0.1) and c["overlap_fraction"] == pytest.approx(0.2)
    assert c["ms_per_step"] is None  # (no ProfilerStep: nothing per step)
    _, c = collectives(_frames([("gemm", 0, 100)]), steps=0)
    assert c["kind"] is None and c["overlap_fraction"] is None


def _row(rank, compute, step, coll=None, name=None):
    """A traced rank's row (document.TraceRankRowDoc) with these figures per step (10 steps)."""
    return {"name": name or f"r{rank}", "rank": rank, "position": rank, "kind": "trace",
            "busy_fraction": None, "idle_fraction": None, "first_finding": None, "first_finding_severity": None,
            "rank_known": True, "t_start": None, "t_end": None, "span_s": None, "idle_by_cause_s": {},
            "steps": 10, "step_ms": step, "copies": [],
            "compute_ms": compute * 10 if compute is not None else None, "compute_ms_per_step": compute,
            "collectives": {"kind": "nccl", "count": 10, "ms": coll * 10 if coll is not None else 0.0,
                            "overlap_fraction": 0.1, "names": [], "ms_per_step": coll, "per_step_count": 1.0}}


def test_straggler_rules():
    from gpuscope.analysis.ranks import combine

    even = combine([_row(0, 50, 100, 40), _row(1, 51, 100, 39), _row(2, 50, 100, 40)])
    assert even["stragglers"] == []
    slow = combine([_row(0, 50, 100, 40), _row(1, 80, 100, 10), _row(2, 50, 100, 40), _row(3, 52, 100, 38)])
    (s,) = slow["stragglers"]
    assert s["rank"] == 1 and s["ratio"] == pytest.approx(80 / 50) and s["waits"]["others_extra_ms_per_step"] == 30
    assert "others wait 30.0 ms per step longer" in s["summary"]
    step = combine([_row(0, 50, 100), _row(1, 50, 130), _row(2, 50, 100)])
    assert [(x["rank"], x["metric"]) for x in step["stragglers"]] == [(1, "step_ms")]
    tiny = combine([_row(0, 1.0, 100), _row(1, 1.5, 100)])  # 1.5x but only 0.5 ms more: no straggler
    assert tiny["stragglers"] == []


def test_repeated_rank_numbers_fall_back_to_name_order():
    from gpuscope.analysis.ranks import combine

    rows = [_row(0, 50, 100, name="a"), _row(0, 50, 100, name="b")]
    rows[1]["position"] = 1
    doc = combine(rows)
    assert [r["rank"] for r in doc["table"]] == [0, 1] and doc["notes"]


def test_traces_without_steps_compare_compute_time():
    from gpuscope.analysis.ranks import combine

    rows = [_row(0, None, None), _row(1, None, None), _row(2, None, None)]
    for r, ms in zip(rows, (100.0, 180.0, 105.0), strict=True):
        r["compute_ms"] = ms
    (s,) = combine(rows)["stragglers"]
    assert s["rank"] == 1 and s["metric"] == "compute_ms" and "no ProfilerStep" in s["summary"]

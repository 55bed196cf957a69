"""Rank folders, round four (issue 34 classes 6, 10, 11, 12; issue 33 class 12): every input is a
Kineto trace (or a run directory) written here by tools/gen_trace.TraceBuilder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpuscope.cli import app
from gpuscope.ranks_run import analyze_ranks, rank_inputs
from tools.gen_trace import BASE_NS, TraceBuilder

BIG_STEP = 2**63


@pytest.fixture
def runner():
    return CliRunner()


def rank_trace(path: Path, rank: int | None, *, steps: int = 3, step_name: str = "ProfilerStep#{}",
               base_ns: int | None = BASE_NS, host_extra_us: float = 0.0, wait_us: float = 300.0,
               world: int = 2) -> Path:
    """One rank's trace: per step a kernel of 500 us, then `host_extra_us` of host work outside
    every traced op, then a gloo all_reduce of `wait_us`."""
    b = TraceBuilder(rank=rank, base_ns=base_ns)
    t = 0.0
    for s in range(steps):
        step = 700.0 + host_extra_us + wait_us
        b.annotation(step_name.format(s), t, step)
        b.launch(t + 10, t + 20, 500, op="aten::mm")
        b.cpu("gloo:all_reduce", t + 600 + host_extra_us, wait_us)
        t += step + 10
    doc = b.document()
    if rank is not None:
        doc["distributedInfo"]["world_size"] = world
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc))
    return path


# -- 34.6: a step number beyond 2^63 ------------------------------------------------------------

def test_a_step_number_beyond_2_63_is_skipped_damage_not_an_internal_error(runner, tmp_path):
    f = rank_trace(tmp_path / "r1.pt.trace.json", 1, step_name="ProfilerStep#" + str(BIG_STEP) + "{}")
    for args in (["analyze", str(f)], ["analyze", str(f), "--json"],
                 ["export", str(f), "--perfetto", str(tmp_path / "p.json")]):
        r = runner.invoke(app, args)
        assert r.exit_code == 0, (args, r.stderr)
        assert "internal error" not in r.stderr
        if args[0] == "analyze" and "--json" not in args:
            assert "3 damaged trace event(s) skipped" in r.stderr


def test_one_rank_failing_in_any_way_is_a_row_the_others_analyzed(tmp_path, monkeypatch):
    from gpuscope import ranks_run

    for r in range(3):
        rank_trace(tmp_path / f"r{r}.pt.trace.json", r, world=3)
    orig = ranks_run.open_source  # (the worker calls the facade by the name ranks_run imported)

    def boom(path, **kw):
        if path.endswith("r1.pt.trace.json"):
            raise OverflowError("Python int too large to convert to C long")
        return orig(path, **kw)

    monkeypatch.setattr(ranks_run, "open_source", boom)
    doc = analyze_ranks(rank_inputs(tmp_path), workers=1)
    assert [r["name"] for r in doc["table"]] == ["r0.pt.trace.json", "r2.pt.trace.json"]
    (e,) = doc["errors"]
    assert e["name"] == "r1.pt.trace.json" and e["error"].startswith("internal error: OverflowError")


# -- 34.12: a cut or empty rank file; a folder of per-rank trace folders ------------------------

def _cut_folder(d: Path) -> Path:
    for r in range(2):
        rank_trace(d / f"r{r}.pt.trace.json", r, world=4)
    (d / "r2.pt.trace.json").write_bytes(b"")  # the rank whose profiler never flushed
    cut = rank_trace(d / "r3.pt.trace.json", 3, world=4)
    cut.write_bytes(cut.read_bytes()[:300])  # killed in the middle of its write
    return d


def test_a_cut_or_empty_rank_file_is_a_row_not_the_end_of_the_folder(runner, tmp_path):
    d = _cut_folder(tmp_path / "job")
    r = runner.invoke(app, ["analyze", str(d), "--json"])
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["ranks"]["count"] == 2
    assert sorted(e["name"] for e in doc["ranks"]["errors"]) == ["r2.pt.trace.json", "r3.pt.trace.json"]
    assert "rank not read" in r.stderr and "r2.pt.trace.json is empty" in r.stderr
    assert doc["trace"]["trace"]["ranks"] == [0, 1]  # the folder's own analysis: the two ranks read
    r = runner.invoke(app, ["analyze", str(d)])
    assert r.exit_code == 0 and "not analyzed" in r.stdout
    for args in (["plot", str(d), "-o", str(tmp_path / "p.png")],
                 ["export", str(d), "--perfetto", str(tmp_path / "p.json")]):
        r = runner.invoke(app, args)
        assert r.exit_code == 0, (args, r.stderr)
        assert "r3.pt.trace.json: the trace holds no events" in r.stderr


def test_a_folder_of_per_rank_trace_folders_is_read(runner, tmp_path):
    for r in range(2):
        rank_trace(tmp_path / "job" / f"rank{r}" / "host.123.pt.trace.json", r)
    r = runner.invoke(app, ["analyze", str(tmp_path / "job"), "--json"])
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["ranks"]["inputs"] == "traces" and [x["name"] for x in doc["ranks"]["table"]] == ["rank0", "rank1"]
    assert doc["trace"]["trace"]["ranks"] == [0, 1]
    r = runner.invoke(app, ["export", str(tmp_path / "job"), "--perfetto", str(tmp_path / "p.json")])
    assert r.exit_code == 0, r.stderr


def test_a_run_directory_holding_a_trace_is_not_a_rank_trace_folder(tmp_path):
    from gpuscope.parsers.trace.tracefile import folder_traces, is_trace

    for name in ("a", "b"):  # what `record` leaves: its own files, and the program's trace beside them
        (tmp_path / name).mkdir()
        (tmp_path / name / "meta.json").write_text("{}")
        rank_trace(tmp_path / name / "x.pt.trace.json", None)
    assert folder_traces(tmp_path) == [] and not is_trace(tmp_path)
    # a lone config.json beside a folder's traces is not a rank; a file named as a rank's trace is
    rank_trace(tmp_path / "c" / "r0.pt.trace.json", 0)
    (tmp_path / "c" / "config.json").write_text("{}")
    (tmp_path / "c" / "r1.pt.trace.json").write_text("")
    assert [f.name for f in rank_inputs(tmp_path / "c")] == ["r0.pt.trace.json", "r1.pt.trace.json"]


# -- 34.10: a record_function name per batch ---------------------------------------------------

def _named_ranges(n: int) -> TraceBuilder:
    b = TraceBuilder(rank=0)
    t = 0.0
    for i in range(n):
        b.annotation(f"batch_{i}", t, 100)
        b.launch(t + 5, t + 10, 50)
        t += 120
    return b


def test_many_distinct_range_names_cost_little(tmp_path):
    import time

    from gpuscope.analysis.evidence.trace import trace_activity as act
    from gpuscope.analysis.evidence.trace.trace_phases import split_table
    from gpuscope.parsers.trace.kineto import read_trace

    fr = read_trace(_named_ranges(4000).write(tmp_path / "t.json"))
    views = act.device_views(fr)
    t0 = time.process_time()
    rows = split_table(views, fr.host, sum(v.span_us for v in views), fr.gpu_annotations)
    assert time.process_time() - t0 < 3.0  # a loop per name: ~8 ms each, 30 CPU-s here
    assert len(rows) == 4000 and all(r["count"] == 1 for r in rows)
    r = rows[0]  # 100 us of range, the kernel's 50 us inside it
    assert r["wall_ms"] == pytest.approx(0.1) and r["kernel_ms"] == pytest.approx(0.05)
    assert r["gpu_idle_ms"] == pytest.approx(0.05)


def test_ranges_of_one_name_are_merged_per_name_and_rank(tmp_path):
    """Overlapping ranges of one name count once; another name's ranges never join them."""
    from gpuscope.analysis.evidence.trace import trace_activity as act
    from gpuscope.analysis.evidence.trace.trace_phases import split_table
    from gpuscope.parsers.trace.kineto import read_trace

    b = TraceBuilder(rank=0)
    b.annotation("load", 0, 100)
    b.annotation("load", 50, 100)     # overlaps the first: 150 us covered, 200 us of wall
    b.annotation("fwd", 120, 200)     # overlaps the second load, its own name
    b.annotation("load", 300, 10)
    b.launch(0, 100, 100)             # kernel 100..200: 50 us in the loads, 80 us in fwd
    fr = read_trace(b.write(tmp_path / "t.json"))
    views = act.device_views(fr)
    rows = {r["phase"]: r for r in split_table(views, fr.host, 1000.0, fr.gpu_annotations)}
    assert rows["load"]["wall_ms"] == pytest.approx(0.21) and rows["load"]["share_of_span"] == pytest.approx(0.16)
    assert rows["load"]["kernel_ms"] == pytest.approx(0.05) and rows["fwd"]["kernel_ms"] == pytest.approx(0.08)


# -- 34.11: many small ranks --------------------------------------------------------------------

def test_many_small_ranks_start_the_pool_few_do_not(tmp_path, monkeypatch):
    from gpuscope import ranks_run

    monkeypatch.setattr(ranks_run, "_cores", lambda: 8)
    small = []
    for r in range(ranks_run.PARALLEL_MIN_RANKS):
        f = tmp_path / f"r{r:02d}.pt.trace.json"
        f.write_text("{}")  # (only their number and size count here)
        small.append(f)
    assert ranks_run.pool_size(small) == 8  # 16 ranks of a few bytes: ~0.1 CPU-s each, in parallel
    assert ranks_run.pool_size(small[:4]) == 1  # four small ranks: starting workers costs more
    assert ranks_run.pool_size(small[:4], workers=3) == 3 and ranks_run.pool_size(small[:2], workers=9) == 2


# -- 33.12: the rank the others wait for; one job or separate runs -------------------------------

def _ddp_pair(d: Path, *, rank1_collectives: int = 1) -> Path:
    """Rank 0 waits 81 ms per step in the all_reduce, rank 1 40 ms: rank 1 spends 41 ms per step in
    host work outside every traced op; both compute the same 0.5 ms per step."""
    rank_trace(d / "rank0.pt.trace.json", 0, wait_us=81_000)
    b = rank_trace(d / "rank1.pt.trace.json", 1, wait_us=40_000, host_extra_us=41_000)
    if rank1_collectives > 1:  # a second, different collective per step on rank 1 only (a pipeline stage)
        doc = json.loads(b.read_text())
        steps = [e for e in doc["traceEvents"] if str(e.get("name", "")).startswith("ProfilerStep#")]
        for e in steps:
            doc["traceEvents"].append({**e, "cat": "cpu_op", "name": "gloo:broadcast", "dur": 100.0,
                                       "ts": e["ts"] + 550.0})
        b.write_text(json.dumps(doc))
    return d


def test_the_rank_that_waits_least_in_the_collective_is_the_straggler(runner, tmp_path):
    d = _ddp_pair(tmp_path / "ddp")
    doc = analyze_ranks(rank_inputs(d), workers=1)
    assert doc["one_job"] and "distributedInfo" in doc["one_job_evidence"]
    (s,) = doc["stragglers"]
    assert s["rank"] == 1 and s["metric"] == "collective_ms_per_step"
    assert s["value_ms"] == pytest.approx(40.0) and s["others_median_ms"] == pytest.approx(81.0)
    assert s["excess_ms"] == pytest.approx(41.0)
    assert "holds them back 41.0 ms per step" in s["summary"] and "outside its kernels" in s["summary"]
    r = runner.invoke(app, ["analyze", str(d)])
    assert r.exit_code == 0 and "rank 1 is the straggler" in r.stdout and "No straggler" not in r.stdout


def test_ranks_running_different_collectives_name_no_straggler_from_their_waits(tmp_path):
    """What would make the wait rule fire falsely: ranks whose collectives differ by design."""
    doc = analyze_ranks(rank_inputs(_ddp_pair(tmp_path / "pp", rank1_collectives=2)), workers=1)
    assert doc["one_job"] and doc["stragglers"] == []


def test_even_waits_name_no_straggler(tmp_path):
    rank_trace(tmp_path / "r0.pt.trace.json", 0, wait_us=40_000)
    rank_trace(tmp_path / "r1.pt.trace.json", 1, wait_us=40_500)
    assert analyze_ranks(rank_inputs(tmp_path), workers=1)["stragglers"] == []


def test_traces_of_different_times_without_ranks_are_separate_runs(runner, tmp_path):
    hour_ns = 3600 * 10**9
    rank_trace(tmp_path / "a.pt.trace.json", None, base_ns=BASE_NS, wait_us=81_000)
    rank_trace(tmp_path / "b.pt.trace.json", None, base_ns=BASE_NS + 5 * hour_ns, wait_us=1_000,
               host_extra_us=80_000)
    r = runner.invoke(app, ["analyze", str(tmp_path), "--json"])
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["source"]["kind"] == "ranks" and doc["trace"] is None and doc["samples"] is None  # never merged into one timeline
    assert doc["ranks"]["one_job"] is False and doc["ranks"]["stragglers"] == []
    assert "do not overlap" in doc["ranks"]["one_job_evidence"]
    r = runner.invoke(app, ["analyze", str(tmp_path)])
    assert "Separate runs, not ranks of one job" in r.stdout and "is the straggler" not in r.stdout
    r = runner.invoke(app, ["analyze", str(tmp_path), "--html", str(tmp_path / "x.html")])
    assert r.exit_code == 2 and "separate runs (not ranks of one job)" in r.stderr


def test_two_jobs_rank_0_traces_are_not_one_job(tmp_path):
    """Both name a rank (0 and 1) in distributedInfo, but a day apart: two jobs, not two ranks."""
    rank_trace(tmp_path / "monday.pt.trace.json", 0, base_ns=BASE_NS, wait_us=81_000)
    rank_trace(tmp_path / "tuesday.pt.trace.json", 1, base_ns=BASE_NS + 24 * 3600 * 10**9, wait_us=1_000)
    doc = analyze_ranks(rank_inputs(tmp_path), workers=1)
    assert doc["one_job"] is False and "do not overlap" in doc["one_job_evidence"] and doc["stragglers"] == []


def _run_dir(d: Path, src: Path, *, command: list[str] | None = None, started: str | None = None,
             ended: str | None = None) -> None:
    import shutil

    shutil.copytree(src, d)
    meta = json.loads((d / "meta.json").read_text())
    if command is not None:
        meta["command"] = command
    if started is not None:
        meta["started"], meta["ended"] = started, ended
    (d / "meta.json").write_text(json.dumps(meta))


RUNS = Path(__file__).resolve().parent / "data" / "h200_bounds" / "runs"


def test_a_runs_folder_of_unrelated_recordings_names_no_straggler(runner, tmp_path):
    """The default runs/ folder: recordings of different programs made at different times."""
    for name in ("tensor_bound", "hbm_bound", "duty_cycle", "upload_pageable"):
        _run_dir(tmp_path / name, RUNS / name)
    r = runner.invoke(app, ["analyze", str(tmp_path), "--json"])
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)["ranks"]
    assert doc["count"] == 4 and doc["one_job"] is False and doc["stragglers"] == []
    assert "do not overlap" in doc["one_job_evidence"]  # (they also ran different commands)
    # the console names each run and numbers no rank (a runs/ folder is no job)
    con = runner.invoke(app, ["analyze", str(tmp_path)], env={"COLUMNS": "160"})
    assert con.exit_code == 0, con.stderr
    head = [ln.split()[0] for ln in con.stdout.splitlines() if ln.strip().startswith(("run ", "rank "))]
    assert head == ["run", "run"] and "per run" in con.stdout and "Ranks read from" not in con.stdout
    assert all(f" {n} " in con.stdout for n in ("tensor_bound", "hbm_bound", "duty_cycle", "upload_pageable"))
    # the same command twice, a day apart: still two runs, not two ranks
    same = tmp_path / "same"
    cmd = ["python3", "train.py"]
    _run_dir(same / "a", RUNS / "tensor_bound", command=cmd, started="2026-12-01T10:00:00Z",
             ended="2026-12-01T10:05:00Z")
    _run_dir(same / "b", RUNS / "hbm_bound", command=cmd, started="2026-12-02T10:00:00Z",
             ended="2026-12-02T10:05:00Z")
    doc = analyze_ranks(rank_inputs(same), workers=1)
    assert doc["one_job"] is False and "do not overlap" in doc["one_job_evidence"]
    # the same command over the same minutes: ranks of one job, compared
    _run_dir(same / "c", RUNS / "hbm_bound", command=cmd, started="2026-12-01T10:01:00Z",
             ended="2026-12-01T10:06:00Z")
    doc = analyze_ranks([same / "a", same / "c"], workers=1)
    assert doc["one_job"] is True and "same command" in doc["one_job_evidence"]
    # each rank recorded with its own number in the command: still one program
    _run_dir(same / "d", RUNS / "tensor_bound", command=["python3", "train.py", "--local_rank", "0"],
             started="2026-12-01T10:00:00Z", ended="2026-12-01T10:05:00Z")
    _run_dir(same / "e", RUNS / "hbm_bound", command=["python3", "train.py", "--local_rank", "1"],
             started="2026-12-01T10:00:01Z", ended="2026-12-01T10:05:01Z")
    assert analyze_ranks([same / "d", same / "e"], workers=1)["one_job"] is True
    # two programs over the same minutes (two users on one box): not one job
    _run_dir(same / "f", RUNS / "hbm_bound", command=["python3", "serve.py"],
             started="2026-12-01T10:00:01Z", ended="2026-12-01T10:05:01Z")
    doc = analyze_ranks([same / "d", same / "f"], workers=1)
    assert doc["one_job"] is False and "different commands" in doc["one_job_evidence"]


# -- 33.12: a folder's figures are never a silent sum over ranks --------------------------------

def test_ranks_on_one_device_are_a_union_not_a_sum(runner, tmp_path):
    from gpuscope.analysis.ranks import shared_devices
    from gpuscope.parsers.trace.kineto import read_trace

    d = tmp_path / "shared"
    rank_trace(d / "r0.pt.trace.json", 0)
    rank_trace(d / "r1.pt.trace.json", 1)  # the same device 0, its kernels at the same times
    (s,) = shared_devices(read_trace(d))
    assert s["device"] == 0 and s["ranks"] == [0, 1]
    assert s["busy_s"] == pytest.approx(3 * 500e-6) and s["summed_busy_s"] == pytest.approx(2 * s["busy_s"])
    assert s["busy_s"] + s["idle_s"] == pytest.approx(s["span_s"])
    r = runner.invoke(app, ["analyze", str(d)])
    assert r.exit_code == 0, r.stderr
    assert "span (wall clock)" in r.stdout and "summed over the 2 timelines" in r.stdout
    assert "not the sum" in r.stdout and "summed over the ranks" in r.stdout
    r = runner.invoke(app, ["analyze", str(_ddp_pair(tmp_path / "ddp")), "--json"])
    diags = json.loads(r.stdout)["findings"]  # a finding's share over two ranks says it is theirs together
    assert diags and all("of the traced span" not in x["summary"] for x in diags)
    assert any("of the 2 rank/GPU timelines together, times summed over them" in x["summary"] for x in diags)
    # one rank per device: nothing shared, and one trace alone keeps its plain labels
    b = TraceBuilder(rank=1)
    b.device = 1
    b.launch(10, 20, 500)
    b.write(d / "r1.pt.trace.json")
    assert shared_devices(read_trace(d)) == []
    r = runner.invoke(app, ["analyze", str(d / "r0.pt.trace.json")])
    assert "span (wall clock)" not in r.stdout and "summed over the" not in r.stdout

"""`gpuscope analyze TRACE`: a PyTorch profiler trace opened through the one facade, by
content (a .json.gz file, a tensorboard_trace_handler folder, standard input)."""

from __future__ import annotations

import gzip
import json

from typer.testing import CliRunner

from gpuscope.cli import app
from tests.conftest import DATA

TRACES = DATA / "h200_foreign" / "traces"
runner = CliRunner()


def cli(*args, **kw):
    return runner.invoke(app, [str(a) for a in args], env={"COLUMNS": "100"}, **kw)


def test_pageable_trace_json_keeps_the_contract_and_ranks_the_copies_first():
    r = cli("analyze", TRACES / "copy_pageable.json.gz", "--json", "--line-rate", "55.5")
    assert r.exit_code == 0, r.stderr
    j = json.loads(r.stdout)
    assert j["log"] is None  # a trace has no log part (version 1 carried records: 0 and a split of zeros)
    for key in ("activity", "memcpy", "kernels", "idle_gaps", "phases"):
        assert key in j["trace"]
    assert j["source"]["kind"] == "trace" and j["trace"]["activity"]["source"] == "trace"
    (row,) = j["trace"]["memcpy"]
    assert (row["direction"], row["host_memory"], row["count"], row["bytes"]) == ("HtoD", "pageable", 12, 6442450944)
    assert abs(row["gbs"] / row["per_event_gbs_median"] - 1) < 0.05
    assert j["findings"][0]["id"] == "pageable_memcpy" and j["findings"][0]["severity"] == "high"


def test_pinned_trace_gets_no_pinning_advice():
    r = cli("analyze", TRACES / "copy_pinned.json.gz", "--json", "--line-rate", "55.5")
    j = json.loads(r.stdout)
    assert j["trace"]["memcpy"][0]["host_memory"] == "pinned"
    assert not any(d["id"] == "pageable_memcpy" or "pin the" in d["recommendation"].lower()
                   for d in j["findings"])


def test_console_report_of_a_starved_training_trace():
    r = cli("analyze", TRACES / "train_slow.json.gz")
    assert r.exit_code == 0, r.stderr
    out = r.stdout
    assert "profiler trace" in out and "GPU activity over the traced span" in out and "Copies" in out
    assert "tenure" not in out and "partition" not in out  # the trace's words, not CuZK's
    assert out.index("host_starved") < out.index("launch_bound")


def test_a_tensorboard_folder_and_standard_input(tmp_path):
    r = cli("analyze", TRACES / "train_fast_tb", "--json")
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["trace"]["trace"]["ranks"] == [0]
    data = gzip.decompress((TRACES / "copy_pinned.json.gz").read_bytes())
    r = runner.invoke(app, ["analyze", "-", "--json"], input=data)
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["trace"]["memcpy"][0]["count"] == 12


def test_a_damaged_trace_is_one_line(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"traceEvents": [{"ph": "X", "cat": "kernel"')
    r = cli("analyze", bad)
    assert r.exit_code in (3, 4) and len(r.stderr.splitlines()) == 1 and "internal error" not in r.stderr


def test_plot_and_export_of_a_trace_draw_streams_not_workers(tmp_path):
    r = cli("plot", TRACES / "train_slow.json.gz", "-o", tmp_path / "t.png")
    assert r.exit_code == 0, r.stderr
    out = tmp_path / "t.json"
    assert cli("export", TRACES / "train_slow.json.gz", "--perfetto", out).exit_code == 0
    evs = json.loads(out.read_text())["traceEvents"]
    threads = [e["args"]["name"] for e in evs if e.get("name") == "thread_name"]
    assert "stream 7" in threads and not any(t.startswith("worker") for t in threads)
    assert any(e["ph"] == "C" and e["name"] == "GPU busy (profiler trace)" for e in evs)


def test_compare_two_traces_before_and_after_pinning():
    r = cli("compare", TRACES / "copy_pageable.json.gz", TRACES / "copy_pinned.json.gz", "--json")
    assert r.exit_code == 0, r.stderr
    j = json.loads(r.stdout)
    step = j["components"]["ProfilerStep"]
    assert step["a_count"] == step["b_count"] == 4 and step["ci_high"] < 1
    assert j["winner"] == "copy_pinned"
    assert {(m["direction"], m["host_memory"]) for m in j["a"]["memcpy"]} == {("HtoD", "pageable")}
    assert {(m["direction"], m["host_memory"]) for m in j["b"]["memcpy"]} == {("HtoD", "pinned")}
    text = cli("compare", TRACES / "copy_pageable.json.gz", TRACES / "copy_pinned.json.gz").stdout
    assert "partitions" not in text and "Copies (profiler trace)" in text


def test_launch_bound_trace_from_the_h200():
    j = json.loads(cli("analyze", TRACES / "launch_bound.json.gz", "--json").stdout)
    assert j["findings"][0]["id"] == "launch_bound" and j["findings"][0]["severity"] == "high"


def test_a_run_and_its_programs_trace_on_one_clock(tmp_path):
    """record wrapped the program that wrote the trace: the trace's copies and the run's NVML RX
    line up (both epoch seconds), and the report shows both."""
    from gpuscope.analysis.timeline_view import timeline_view
    from gpuscope.sources import open_source

    run = DATA / "h200_foreign" / "runs" / "copy_pageable"
    tv = timeline_view(open_source(run, trace=TRACES / "copy_pageable.json.gz"))
    up = tv.phases[tv.phases["phase"] == "h2d"]
    s = tv.samples
    inside = s[s["t_wall"].between(up["t_start"].min() + 0.02, up["t_end"].max())]
    rx_during = [inside[(inside["t_wall"] > a + 0.02) & (inside["t_wall"] <= b)]["rx_gbs"].median()
                 for a, b in zip(up["t_start"], up["t_end"], strict=True) if b - a > 0.05]
    assert rx_during and min(rx_during) > 5  # the NVML counters saw the copies where the trace put them
    j = json.loads(cli("analyze", run, "--trace", TRACES / "copy_pageable.json.gz", "--json").stdout)
    assert j["trace"]["memcpy"][0]["count"] == 12 and j["log"]["records"] == 12 and j["samples"]["activity"] is not None


def test_csv_of_a_trace_and_of_samples(tmp_path):
    import csv as _csv

    assert cli("analyze", TRACES / "copy_pageable.json.gz", "--csv", tmp_path / "t").exit_code == 0
    rows = list(_csv.DictReader(open(tmp_path / "t" / "memcpy.csv")))
    assert rows[0]["direction"] == "HtoD" and rows[0]["count"] == "12" and rows[0]["bytes"] == "6442450944"
    assert (tmp_path / "t" / "idle_gaps.csv").read_text().startswith("rank,device,t_start")
    samples = DATA / "h200_foreign" / "runs" / "train_slow" / "samples.csv"
    assert cli("analyze", samples, "--csv", tmp_path / "s").exit_code == 0
    assert (tmp_path / "s" / "activity_intervals.csv").read_text().startswith("gpu,class,t_start,t_end")


def test_a_trace_written_into_the_run_directory_is_read_with_the_run(tmp_path):
    import shutil

    run = tmp_path / "run"
    shutil.copytree(DATA / "h200_foreign" / "runs" / "copy_pageable", run)
    (run / "traces").mkdir()
    shutil.copy(TRACES / "copy_pageable.json.gz", run / "traces" / "rank0.pt.trace.json.gz")
    j = json.loads(cli("analyze", run, "--json").stdout)
    assert j["trace"]["memcpy"][0]["count"] == 12 and j["log"]["records"] == 12
    assert j["findings"][0]["id"] in ("pageable_memcpy", "h2d_bound", "pcie_underused")


def test_a_traces_picture_has_one_lane_per_stream_and_its_ranges_apart():
    """The copy loop's record_function range named "upload" is the user's name on the CPU lanes,
    not a second set of measured copies; memsets inside kernel blocks spill no phantom lane."""
    from gpuscope.analysis.timeline_view import timeline_view
    from gpuscope.reports.lanes import assign_lanes
    from gpuscope.reports.phase_style import style_for
    from gpuscope.sources import open_source

    tv = timeline_view(open_source(TRACES / "copy_pageable.json.gz"))
    lanes = assign_lanes(tv.phases, noun=tv.lane_noun)
    labels = [lane.label for lane in lanes]
    assert [x for x in labels if x.startswith("stream")] == ["stream 7"]
    assert not any(x.startswith("GPU") for x in labels)
    stream = next(lane for lane in lanes if lane.label == "stream 7").main
    assert (stream["t_start"].to_numpy()[1:] >= stream["t_end"].to_numpy()[:-1] - 1e-9).all()
    ranges = tv.phases[tv.phases["worker"] < 0]
    assert set(ranges["phase"]) == {"range:ProfilerStep", "range:upload", "range:compute"}
    assert style_for("range:upload").label == "upload" and style_for("range:upload").group == "cpu"
    assert style_for("h2d").label == "upload H2D"


def test_without_msgspec_a_run_directory_still_analyzes_and_a_trace_says_why_not(tmp_path):
    """msgspec decodes traces only: telling a trace apart (and opening a run directory that has
    none) needs no decoder, and a trace without it is one line, not an internal error."""
    import subprocess
    import sys

    from tests.conftest import DATA

    probe = ("import builtins, sys\nreal = builtins.__import__\n"
             "def imp(name, *a, **k):\n"
             "    if name.split('.')[0] == 'msgspec':\n"
             "        raise ModuleNotFoundError(\"No module named 'msgspec'\")\n"
             "    return real(name, *a, **k)\n"
             "builtins.__import__ = imp\n"
             "from gpuscope.cli import main\nsys.exit(main(sys.argv[1:]))\n")
    run = DATA / "h200_foreign" / "runs" / "train_slow"
    p = subprocess.run([sys.executable, "-c", probe, "analyze", str(run), "--json"], capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0 and '"format": "lines"' in p.stdout, p.stderr
    trace = DATA / "h200_foreign" / "traces" / "copy_pinned.json.gz"
    p = subprocess.run([sys.executable, "-c", probe, "analyze", str(trace)], capture_output=True, text=True, timeout=120)
    assert p.returncode == 1 and "Traceback" not in p.stderr
    assert p.stderr.strip().splitlines() == ["gpuscope: reading a profiler trace needs the msgspec package "
                                             "(a gpuscope dependency): pip install msgspec"]

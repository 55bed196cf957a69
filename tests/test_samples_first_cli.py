"""Any GPU program: a run directory or samples file with NVML samples and no timing lines is
analyzable (issue 11): the activity figures, and the cause the samples support, first."""

from __future__ import annotations

import json
from datetime import UTC

import pytest
from typer.testing import CliRunner

from gpuscope.cli import app
from tests.conftest import DATA

RUNS = DATA / "h200_foreign" / "runs"
runner = CliRunner()


def analyze_json(path, *extra):
    r = runner.invoke(app, ["analyze", str(path), "--json", *extra], env={"COLUMNS": "100"})
    assert r.exit_code == 0, r.stderr
    return json.loads(r.stdout)


def test_starved_training_loop_from_samples_alone():
    j = analyze_json(RUNS / "train_slow" / "samples.csv")
    act = j["samples"]["activity"]
    assert j["source"]["kind"] == "samples" and j["log"] is None  # no log part: no records: 0
    assert act["source"] == "gpm_sm_active" and 0 <= act["busy_fraction"] < 0.05
    assert {"count", "total_s", "longest_s"} <= set(act["idle_gaps"])
    assert j["findings"][0]["id"] == "gpu_starved" and j["findings"][0]["severity"] == "high"


def test_starved_training_loop_with_its_timing_lines_names_the_data_part():
    j = analyze_json(RUNS / "train_slow")
    first = j["findings"][0]
    assert first["id"] == "host_stall" and first["aliases"] == ["cpu_stall_at_barrier"] and "(data)" in first["summary"] and first["severity"] == "high"
    assert "gpu_starved" in [d["id"] for d in j["findings"]]


def test_fed_training_loop_is_not_called_starved():
    ids = [d["id"] for d in analyze_json(RUNS / "train_fast")["findings"]]
    assert "gpu_starved" not in ids


def test_a_dmon_capture():
    d = analyze_json(DATA / "h200_foreign" / "train_slow_dmon.txt")
    assert d["samples"]["activity"]["source"] == "utilization"


@pytest.mark.parametrize("run", ["copy_pinned"])
def test_no_pinning_advice_on_pinned_copies(run):
    j = analyze_json(RUNS / run)
    assert not any("pin the" in d["recommendation"].lower() or d["id"] in ("upload_bound_pageable", "pcie_underused")
                   for d in j["findings"])


def test_pageable_copies_are_flagged_once():
    ids = [d["id"] for d in analyze_json(RUNS / "copy_pageable")["findings"]]
    assert ids[0] in ("h2d_bound", "pcie_underused") and "upload_bound_pageable" not in ids


def test_console_of_a_samples_only_run_speaks_of_samples():
    r = runner.invoke(app, ["analyze", str(RUNS / "train_slow")], env={"COLUMNS": "100"})
    assert r.exit_code == 0, r.stderr
    assert "NVML samples" in r.stdout and "GPU activity from NVML samples" in r.stdout
    assert "tenure" not in r.stdout and "partition" not in r.stdout


def test_plot_and_export_of_a_samples_only_run(tmp_path):
    png = tmp_path / "t.png"
    r = runner.invoke(app, ["plot", str(RUNS / "train_slow" / "samples.csv"), "-o", str(png)])
    assert r.exit_code == 0, r.stderr
    assert "0 phases" in r.stdout and "samples" in r.stdout and png.read_bytes()[:4] == b"\x89PNG"
    out = tmp_path / "t.json"
    r = runner.invoke(app, ["export", str(RUNS / "train_slow" / "samples.csv"), "--perfetto", str(out)])
    assert r.exit_code == 0, r.stderr
    names = {e["name"] for e in json.loads(out.read_text())["traceEvents"] if e["ph"] == "C"}
    assert {"PCIe GB/s", "SM active %"} <= names


def test_the_picture_of_a_samples_only_run_has_its_panels():
    from gpuscope.analysis.timeline_view import timeline_view
    from gpuscope.reports.plot import render_timeline
    from gpuscope.sources import open_source

    tv = timeline_view(open_source(RUNS / "train_slow" / "samples.csv"))
    assert not len(tv.phases) and tv.intervals is not None and (tv.intervals["class"] == "idle_quiet").any()
    fig = render_timeline(tv.phases, tv.samples, title="t", line_rate_gbs=55.5, origin=tv.origin,
                          intervals=tv.intervals)
    labels = [ax.get_ylabel() for ax in fig.axes]
    assert labels[:3] == ["PCIe GB/s", "activity %", "SM clock MHz"] and "power W" in labels


def test_compare_two_samples_only_runs_before_and_after_a_fix():
    r = runner.invoke(app, ["compare", str(RUNS / "train_slow" / "samples.csv"),
                            str(RUNS / "train_fast" / "samples.csv"), "--json"])
    assert r.exit_code == 0, r.stderr
    j = json.loads(r.stdout)
    assert (j["a"]["label"], j["b"]["label"]) == ("A:samples", "B:samples")
    assert j["winner"] == "B:samples" and "busier" in j["verdict"]
    assert j["a"]["activity"]["working_busy_fraction"] < j["b"]["activity"]["working_busy_fraction"]
    assert j["prediction"]["available"] is False


def test_compare_two_runs_of_any_program_by_their_steps():
    r = runner.invoke(app, ["compare", str(RUNS / "train_slow"), str(RUNS / "train_fast"), "--json"])
    assert r.exit_code == 0, r.stderr
    j = json.loads(r.stdout)
    step = j["components"]["step"]
    assert step["ci_high"] < 1 and j["winner"] == "train_fast"
    assert j["a"]["activity"]["working_busy_fraction"] < j["b"]["activity"]["working_busy_fraction"]


def test_power_capped_matmuls_are_called_throttled_with_the_reason():
    """Second H200 capture: the sampler recorded NVML's clock-event reasons; the bf16 matmuls
    ran into the power cap."""
    j = analyze_json(RUNS / "copy_pinned_power_cap")
    d = next(x for x in j["findings"] if x["id"] == "clocks_throttled")
    assert "sw_power_cap" in d["evidence"]["reasons"] and d["evidence"]["sm_busy_median_mhz"] < 1700
    assert not any("pin the" in x["recommendation"].lower() for x in j["findings"])


def test_printf_lines_recorded_through_the_pty_carry_their_print_time():
    import re
    from datetime import datetime

    meta = json.loads((RUNS / "printf_pty" / "meta.json").read_text())
    assert meta["capture"] == "pty"
    errs = []
    for line in (RUNS / "printf_pty" / "timing.log").read_text().splitlines():
        m = re.match(r"(\S+)Z .*printed_at=([\d.]+)", line)
        if m:
            t = datetime.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S.%f").replace(tzinfo=UTC).timestamp()
            errs.append(t - float(m.group(2)))
    assert len(errs) == 30 and max(abs(e) for e in errs) < 0.05


def test_no_cuzk_what_if_for_another_program():
    r = runner.invoke(app, ["analyze", str(RUNS / "copy_pageable"), "--json", "--what-if"])
    j = json.loads(r.stdout)
    assert j["what_if"]["available"] is False and "CuZK" in j["what_if"]["reason"]

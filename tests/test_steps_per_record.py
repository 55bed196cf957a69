"""A log printing every K-th step (its own `i/N` counter advancing by K a line, the PyTorch
examples' ProgressMeter at print-freq 10) stands for K steps a line: the same speed printed
every batch and every 10th batch compares at throughput ~1x, not 0.1x."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from typer.testing import CliRunner

from gpuscope.cli import app
from gpuscope.parsers import parse_log


def _progressmeter(path, steps: int, every: int, step_s: float = 0.1):
    t0 = datetime(2026, 12, 1, 10, 0, 0, tzinfo=UTC)
    lines = []
    for i in range(every - 1, steps, every):
        t = t0 + timedelta(seconds=(i + 1) * step_s)
        lines.append(f"{t.strftime('%Y-%m-%dT%H:%M:%S.%fZ')} Epoch: [0][{i:3d}/{steps}]\tTime  {step_s:.3f} ({step_s:.3f})\t"
                     f"Data  0.020 ( 0.020)\tLoss 6.9e+00 (6.9e+00)\tAcc@1   0.00 (  0.00)")
    path.write_text("\n".join(lines) + "\n")
    return path


def test_every_tenth_line_stands_for_ten_steps(tmp_path):
    every1 = parse_log(_progressmeter(tmp_path / "a.log", 400, 1))
    every10 = parse_log(_progressmeter(tmp_path / "b.log", 400, 10))
    assert every1.steps_per_record == 1 and every10.steps_per_record == 10
    assert any("one step in 10" in n for n in every10.notes)


def test_compare_of_the_same_speed_printed_every_batch_and_every_tenth(tmp_path):
    a = _progressmeter(tmp_path / "a.log", 400, 1)
    b = _progressmeter(tmp_path / "b.log", 400, 10)
    r = CliRunner().invoke(app, ["compare", str(a), str(b), "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    ta, tb = doc["a"]["throughput_ppm"], doc["b"]["throughput_ppm"]
    assert doc["b"]["steps_per_record"] == 10 and doc["a"]["steps_per_record"] == 1
    assert 0.9 <= tb / ta <= 1.15, (ta, tb)  # was 0.1x: records counted printed lines


def test_analyze_says_how_many_steps_a_record_stands_for():
    # a TensorFlow LoggingTensorHook prints every 100th step: the four printed steps are 400 steps,
    # said in the console's header and the JSON, never "4 steps" alone
    import json
    import subprocess
    import sys
    from pathlib import Path

    log = Path(__file__).parent / "data" / "corpus" / "tensorflow" / "estimator.txt"
    out = subprocess.run([sys.executable, "-m", "gpuscope", "analyze", str(log), "--json"],
                         capture_output=True, text=True, check=True).stdout
    j = json.loads(out)
    assert j["log"]["records"] == 4 and j["log"]["steps_per_record"] == 100
    con = subprocess.run([sys.executable, "-m", "gpuscope", "analyze", str(log)], capture_output=True, text=True,
                         check=True, env={**__import__("os").environ, "COLUMNS": "200"}).stdout
    assert "each standing for 100" in con and "400 in all" in con


def test_analyze_counts_every_tenth_line_as_ten_steps_in_the_timeline_and_the_floors(tmp_path):
    """Issue 33 class 7: the same run printed every batch and every 10th batch gives the same share
    of the span inside steps and the same floors; counted by printed lines, every-10th read "10% of
    the span inside records" and "observed 10x the floor" of a run that never idled."""
    docs = {}
    for every in (1, 10):
        r = CliRunner().invoke(app, ["analyze", str(_progressmeter(tmp_path / f"e{every}.log", 400, every)), "--json"])
        assert r.exit_code == 0, r.output
        docs[every] = json.loads(r.stdout)
    one, ten = docs[1], docs[10]
    assert ten["log"]["steps_per_record"] == 10 and ten["log"]["records"] == 40
    assert one["log"]["timeline"]["gpu_busy_fraction"] > 0.95
    assert abs(ten["log"]["timeline"]["gpu_busy_fraction"] - one["log"]["timeline"]["gpu_busy_fraction"]) < 0.05
    assert ten["log"]["bounds"]["partitions"] == 400 == one["log"]["bounds"]["partitions"]
    for key in ("gpu_floor_s", "cpu_floor_s"):
        a, b = one["log"]["bounds"][key], ten["log"]["bounds"][key]
        assert (a is None and b is None) or abs(a - b) <= 0.05 * max(abs(a), 1e-9), (key, a, b)
    assert abs(ten["log"]["bounds"]["observed_over_floor"] - one["log"]["bounds"]["observed_over_floor"]) < 0.05 * one["log"]["bounds"][
        "observed_over_floor"]  # (was 10x one's: the floor counted 40 steps of 400)
    assert "each printed line stands for 10 steps" in ten["log"]["bounds"]["partitions_basis"]


def test_a_log_printing_every_step_is_unchanged_by_the_count():
    """The false-fire side: K = 1 keeps the records' own intervals and counts."""
    import numpy as np
    import pandas as pd

    from gpuscope.analysis.evidence.log.timeline_summary import timeline_summary

    split = pd.DataFrame({"ts_end": [10.0, 20.0], "held_ms": [1000.0, 1000.0], "gpu_compute_ms": [900.0, 900.0]})
    comps = pd.DataFrame({"ts": [9.0, 20.0]})
    one = timeline_summary(None, split, comps)
    assert one == timeline_summary(None, split, comps, steps_per_record=1)
    ten = timeline_summary(None, split, comps, steps_per_record=10)
    assert ten["gpu_busy_fraction"] > one["gpu_busy_fraction"] and np.isfinite(ten["gpu_busy_fraction"])

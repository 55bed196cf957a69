"""A record standing for K steps (its counter advances by K a line): its times are one step's
(a ProgressMeter's batch time, Megatron's time per iteration, a tqdm bar's s/it), so the run took
K x their sum; or they cover the K steps (fairseq's running wall clock, TensorFlow's hook's
seconds since its last line, Hugging Face's train_runtime), so it took their sum. Each figure
below is worked out from the text here, never from gpuscope's output. And Megatron-LM's timers
printed on the line after their iteration line belong to that iteration's record."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpuscope.cli import app
from gpuscope.parsers import parse_log

CORPUS = Path(__file__).parent / "data" / "corpus"


def _doc(path: Path) -> dict:
    r = CliRunner().invoke(app, ["analyze", str(path), "--json"])
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)["log"]


def test_one_steps_time_printed_every_tenth_step_is_ten_steps_of_time():
    path = CORPUS / "pytorch_examples" / "every_10th.txt"
    times = [float(m) for m in re.findall(r"^Epoch: .*?Time\s+([\d.]+)", path.read_text(), re.M)]
    log = _doc(path)
    assert log["steps_per_record"] == 10
    assert log["bounds"]["observed_s"] == pytest.approx(10 * sum(times))
    assert "x 10" in log["bounds"]["observed_basis"]


def test_a_bars_time_per_iteration_every_50th_adds_up_to_the_trainers_runtime():
    path = CORPUS / "hf_trainer" / "train_with_bar.txt"
    text = path.read_text()
    runtime = float(re.search(r"'train_runtime': ([\d.]+)", text).group(1))
    log = _doc(path)
    assert log["steps_per_record"] == 50
    assert log["bounds"]["observed_s"] == pytest.approx(runtime, rel=0.05)  # (was 2% of it)


def test_a_running_wall_clocks_differences_cover_their_hundred_steps():
    path = CORPUS / "fairseq" / "train.txt"
    walls = [float(w) for w in re.findall(r"\bwall=([\d.]+)", path.read_text())]
    p = parse_log(path)
    assert p.steps_per_record == 100 and p.record_time_covers
    log = _doc(path)
    # the first record's interval reaches back its own wall difference, not 100 of them
    assert log["timeline"]["wall_s"] == pytest.approx(walls[-1] - walls[0] + walls[1] - walls[0], rel=0.05)


def test_the_tensorflow_hooks_seconds_since_its_last_line_cover_the_steps_between():
    path = CORPUS / "tensorflow" / "estimator.txt"
    secs = [float(s) for s in re.findall(r"\(([\d.]+) sec\)\s*$", path.read_text(), re.M)]
    p = parse_log(path)
    assert p.steps_per_record == 100 and p.record_time_covers
    assert _doc(path)["bounds"]["observed_s"] == pytest.approx(sum(secs))


def test_megatron_timers_after_the_iteration_line_are_that_iterations():
    path = CORPUS / "megatron" / "pretrain_bert_classic_timers.txt"
    lines = path.read_text().splitlines()
    first = next(i for i, ln in enumerate(lines) if "elapsed time per iteration" in ln)
    timers = next(ln for ln in lines[first + 1:] if ln.startswith("time (ms) | forward-compute"))
    t = {k: float(v) for k, v in re.findall(r"\| ([\w-]+): ([\d.]+)", timers)}
    whole = float(re.search(r"elapsed time per iteration \(ms\): ([\d.]+)", lines[first]).group(1))
    p = parse_log(path)
    rec = p.records.sort_values("record").iloc[0]
    # its own timers (the first, warm-up interval's), the nested ones left out, the reduction no compute
    assert rec["held_ms"] == pytest.approx(whole)
    comps = p.components[p.components["record"] == rec["record"]]
    assert set(comps["component"]) >= {"forward-compute", "optimizer", "backward-reduce-model-grads"}
    got = dict(zip(comps["component"], comps["value_ms"], strict=False))
    assert got["forward-compute"] == pytest.approx(t["forward-compute"])
    assert t["forward-compute"] + t["backward-compute"] + t["backward-reduce-model-grads"] + t["optimizer"] <= whole
    log = _doc(path)
    assert log["bounds"]["observed_s"] == pytest.approx(10 * sum(
        float(m) for m in re.findall(r"elapsed time per iteration \(ms\): ([\d.]+)", path.read_text())) / 1000)
    assert any("starts at that line and takes the timing lines after it" in n for n in log["read_notes"])


def test_parts_before_their_whole_stay_so_where_both_orders_add_up(tmp_path):
    # a program printing its parts, then its whole: read so (kv's way), even where the other
    # order would add up too (each whole well above any two lines' parts)
    lines = []
    for i in range(6):
        lines += [f"step={i} load_ms=1.{i}", f"step={i} compute_ms=2.{i}", f"step={i} total_ms=9.{i}"]
    path = tmp_path / "a.log"
    path.write_text("\n".join(lines) + "\n")
    p = parse_log(path)
    assert not any("takes the timing lines after it" in n for n in p.notes)
    rec = p.records.sort_values("record").iloc[0]
    comps = p.components[p.components["record"] == rec["record"]]
    assert dict(zip(comps["component"], comps["value_ms"], strict=False)) == {
        "load": pytest.approx(1.0), "compute": pytest.approx(2.0), "total": pytest.approx(9.0)}


def test_the_plots_caption_says_each_mark_spans_its_steps_where_the_times_cover_them(tmp_path):
    from gpuscope.analysis.timeline_view import timeline_view
    from gpuscope.reports.plot import every_kth
    from gpuscope.sources.open import open_source

    tv = timeline_view(open_source(CORPUS / "fairseq" / "train.txt"))
    assert tv.steps_per_record == 100 and tv.record_covers
    assert "spans the 100 steps" in every_kth(100, tv.record_covers)
    # a stamped ProgressMeter every 10th batch: one batch's time, the 9 between not drawn
    path = tmp_path / "pm.log"
    path.write_text("".join(f"2026-12-01T10:00:{i // 10:02d}.{i % 10}00000Z Epoch: [0][{i:3d}/500]\tTime  0.100 ( 0.100)"
                            f"\tData  0.020 ( 0.020)\n" for i in range(0, 300, 10)))
    tv = timeline_view(open_source(path))
    assert tv.steps_per_record == 10 and not tv.record_covers
    assert "the 9 between two marks ran in the gap" in every_kth(10, tv.record_covers)

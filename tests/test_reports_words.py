"""Outside the CuZK model the reports speak the user's words (steps, iterations, records;
the log's own whole), give no CuZK-only advice, and say why a figure is missing instead of
printing 0, -x or nan. The CuZK outputs keep their words (tests/test_cli_analyze.py and
the other report tests check them unchanged)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from gpuscope import parsers
from gpuscope.analysis import analyze
from gpuscope.cli import app
from tests.analysis_builders import src
from tests.conftest import DATA, EXAMPLES

RUNS = DATA / "h200_foreign" / "runs"
CUZK_WORDS = ("tenure", "GPU-lock", "partition", "a/b/c", "prep_msm", "barrier", "mutex")
runner = CliRunner()


def run(*args):
    """stdout with its white space folded (tables wrap their captions)."""
    r = runner.invoke(app, ["analyze", *map(str, args)], env={"COLUMNS": "200"})
    assert r.exit_code == 0, r.stderr
    return " ".join(r.stdout.split())


def _no_cuzk_words(text: str) -> None:
    # (the rule ids are the JSON contract's: cpu_stall_at_barrier keeps its name)
    low = text.lower().replace("cpu_stall_at_barrier", "cpu_stall")
    for w in CUZK_WORDS:
        assert w.lower() not in low, w


def test_copy_loop_speaks_of_steps():
    out = run(RUNS / "copy_pageable")
    _no_cuzk_words(out)
    assert "format lines, model guessed" in out
    assert "12 steps; 12 timing lines of 14; 0 skipped" in out
    assert "Step time split (12 steps, 3,416 ms)" in out and "step (whole)" in out
    assert "roles guessed from the names: h2d = h2d (name 'h2d'), compute = gpu (name 'compute')" in out
    assert "whole: 'step' is named like a whole" in out
    assert "H2D takes 64.7% of the step time" in out
    assert "uploads ran at a median 9.11 GB/s" in out
    assert "only the GPU floor is known (the CPU floor is not); observed is 6.83x it" in out
    assert "time inside steps" in out and "GPU busy" not in out


def test_pinned_copies_are_not_told_to_pin():
    out = run(RUNS / "copy_pinned")
    _no_cuzk_words(out)
    assert "already run at 99% of the line rate" in out
    assert "Copy from pinned" not in out


def test_a_starved_training_loop_is_bound_by_its_data():
    out = run(RUNS / "train_slow")
    _no_cuzk_words(out)
    # the first step (915 ms, 9.5x the others: a warm-up) is left out of the stall
    assert "Leaving out the first step (a warm-up): the GPU waited for host-side work (data) in 39 of 39 steps" in out
    assert "CPU floor binds; observed is 1.38x it" in out
    assert "inconsistent" not in out  # 86.0 + 829.0 against 914.9 is rounding
    # its whole is a step, not a GPU-lock tenure: the components table says `whole`, never `held`
    assert " step whole 40 " in out and " step held " not in out


def test_no_gpu_compute_part_no_floor_of_zero():
    out = run(RUNS / "launch_bound")
    _no_cuzk_words(out)
    assert "30 iterations" in out and "Iteration time split" in out
    assert "0.00 s" not in out and "-x it" not in out and "nan" not in out.lower()
    assert "no GPU compute figures: no component has the gpu_compute role" in out
    assert "no floor: the iterations have no GPU compute part" in out
    r = runner.invoke(app, ["analyze", str(RUNS / "launch_bound"), "--json"])
    j = json.loads(r.stdout)
    assert j["log"]["bounds"]["gpu_floor_s"] is None and j["log"]["bounds"]["observed_over_floor"] is None
    assert j["source"]["kind"] == "lines" and j["source"]["model"] == "guessed"


def test_printf_program_speaks_of_iterations():
    out = run(RUNS / "printf_pipe")
    _no_cuzk_words(out)
    assert "The GPU waited for host-side work (prep) in 30 of 30 iterations" in out
    assert "bytes uploaded per iteration" in out


def test_model_option_overrides_the_guess(tmp_path):
    f = tmp_path / "copy.toml"
    f.write_text('name = "copyloop"\nheld = "step"\n[roles]\nh2d = ["h2d"]\ngpu_compute = ["compute"]\n'
                 '[vocabulary]\nrecord = "iteration"\n')
    out = run(RUNS / "copy_pageable", "--model", f)
    assert "model copyloop" in out and "12 iterations" in out and "roles guessed" not in out


def test_a_held_time_the_log_lacks_explains_nothing():
    # kv without a held key: records whose held time is unknown (NaN) get no 'explains nan%'
    text = "".join(f"upload_ms={5 + i % 7} compute_ms={20 + 3 * (i % 5)}\n" for i in range(30))
    a = analyze(src(parsers.parse_log(text, "kv")))
    assert all("nan" not in d.summary.lower() for d in a.findings)
    assert all(d.id != "unstable_component" for d in a.findings)


def test_cuzk_logs_keep_their_words():
    out = run(EXAMPLES / "article_excerpt.log")
    assert "4 GPU-lock tenures" in out and "GPU-lock time split (4 tenures" in out
    assert "a/b/c vectors" in out and "partitions" in out


def test_json_says_how_each_role_was_guessed():
    r = runner.invoke(app, ["analyze", str(RUNS / "copy_pageable"), "--json"])
    j = json.loads(r.stdout)
    assert j["source"]["model"] == "guessed"
    assert j["log"]["roles"]["h2d"] == {"role": "h2d", "how": "guessed from name 'h2d': a host-to-device copy"}
    assert j["log"]["roles"]["compute"]["role"] == "gpu_compute" and j["log"]["roles"]["step"]["role"] == "whole"
    assert j["log"]["whole"]["name"] == "step" and "named like a whole" in j["log"]["whole"]["how"]
    assert j["source"]["vocabulary"]["record"] == "step"
    assert j["log"]["split"]["upload_gbs"] == pytest.approx(9.11, abs=0.05)
    cuzk = json.loads(runner.invoke(app, ["analyze", str(EXAMPLES / "article_excerpt.log"), "--json"]).stdout)
    assert cuzk["log"]["roles"]["ntt_kernels"] == {"role": "h2d", "how": "listed in <built-in cuzk>"}
    assert cuzk["log"]["whole"]["name"] == "mutex_held"


def test_the_timeline_picture_counts_steps_and_puts_compute_on_the_gpu():
    from gpuscope.analysis.timeline_view import timeline_view
    from gpuscope.cli._common import source_title
    from gpuscope.reports.lanes import assign_lanes
    from gpuscope.sources import open_source

    s = open_source(RUNS / "train_slow")
    t = timeline_view(s)
    title = source_title(s, t.records)
    assert "40 steps" in title and "partitions" not in title
    lanes = {lane.label: set(lane.main["phase"]) for lane in assign_lanes(t.phases)}
    gpu = next(v for k, v in lanes.items() if k.startswith("GPU"))
    cpu = next(v for k, v in lanes.items() if k.startswith("CPU"))
    assert "compute" in gpu and "data" in cpu


def test_a_kv_log_without_its_whole_says_held_time_unknown(tmp_path):
    f = tmp_path / "kv.log"
    f.write_text("upload=1.5s, compute=250us, wait_ms=3 other=4\nupload=1.4s, compute=260us, wait_ms=5 other=4\n")
    out = run(f)
    assert "format kv, model guessed" in out and "held time unknown" in out
    assert "nan" not in out.lower() and "0.00x" not in out
    assert "observed - unknown: no time stamps, and the records print no held time" in out
    assert "the log prints no held key: held time unknown" in out


def test_a_part_the_program_never_printed_is_not_printed_not_zero():
    # train_slow prints data and compute, no upload time: its split says so instead of 0.0 ms
    out = run(RUNS / "train_slow")
    assert " h2d not printed " in out and " h2d 0.0 " not in out
    cuzk = run(EXAMPLES / "article_excerpt.log")
    assert "not printed" not in cuzk  # the prover's model fixes its parts

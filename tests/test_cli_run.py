"""`gpuscope run` through typer's CliRunner (stdout and stderr asserted separately) and, for
Ctrl-C, as a real subprocess."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpuscope.cli import app
from gpuscope.workload import backends, curve
from gpuscope.workload.cpu import CpuBackend
from tests.proc_lines import Lines

REPO = Path(__file__).resolve().parents[1]
runner = CliRunner()


def invoke(*args):
    return runner.invoke(app, ["run", *map(str, args)])


@pytest.fixture
def gpuscope_process(tmp_path):
    """Start `python -m gpuscope ARGS` as a real subprocess (Ctrl-C needs one); any still
    running at the end of the test is killed."""
    procs = []

    def start(*args):
        env = dict(os.environ, PYTHONPATH=str(REPO), PYTHONUNBUFFERED="1")
        proc = subprocess.Popen([sys.executable, "-m", "gpuscope", *map(str, args)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                                cwd=tmp_path)
        procs.append(proc)
        return proc

    yield start
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def _wait_for_text(logs, text: str, timeout_s: float = 30) -> bool:
    """Poll until a file that `logs()` returns contains `text`; False at the timeout."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if any(text in p.read_text() for p in logs() if p.exists()):
            return True
        time.sleep(0.05)
    return False


def test_help_has_an_example():
    r = invoke("--help")
    assert r.exit_code == 0
    assert "Example: gpuscope run" in r.stdout
    assert r.stderr == ""


def test_cpu_run_prints_summary_and_writes_rundir(tmp_path):
    d = tmp_path / "r"
    r = invoke("--backend", "cpu", "--log-n", 8, "--partitions", 3, "--mode", "unpinned",
               "--verify", "--out", d)
    assert r.exit_code == 0, r.stderr
    assert "CPU reference" in r.stderr and "modes have no effect" in r.stderr
    # set-up steps that can take seconds are announced before the first progress line
    assert "gpuscope: setup: generating the SRS points (" in r.stderr
    out = r.stdout
    assert "gpuscope run" in out and "complete" in out
    assert "3/3 partitions verified" in out
    assert "GPU-lock time split" in out  # the analyze summary follows
    meta = json.loads((d / "meta.json").read_text())
    assert meta["status"] == "complete" and meta["mode"] == "pageable"
    assert meta["argv"]
    for f in ("timing.log", "samples.csv", "spans.csv", "summary.json"):
        assert (d / f).is_file(), f


def test_json_output(tmp_path):
    r = invoke("--backend", "cpu", "--log-n", 8, "--partitions", 2, "--out", tmp_path / "j", "--json")
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["status"] == "complete"
    assert doc["pipeline"]["partitions_done"] == 2
    assert doc["analysis"]["log"]["records"] == 2


@pytest.mark.parametrize("args, code, text", [
    (["--mode", "locked"], 2, "unknown host-memory mode"),
    (["--backend", "fpga"], 2, "--backend"),
    (["--log-n", "20", "--backend", "cpu"], 2, "too large for the CPU"),
    (["--partitions", "0", "--backend", "cpu"], 2, "--partitions"),
    (["--gpus", "a,b", "--backend", "cpu"], 2, "--gpus"),
    (["--host-budget-mib", "0", "--backend", "cpu", "--log-n", "12"], 6, "--host-budget-mib"),
    (["--pinned-budget-mib", "1", "--mode", "pinned", "--backend", "cpu", "--log-n", "14"], 6,
     "--pinned-budget-mib"),
])
def test_bad_options_one_line_and_exit_code(tmp_path, args, code, text):
    r = invoke(*args, "--out", tmp_path / "bad")
    assert r.exit_code == code, (r.stdout, r.stderr)
    assert r.stdout == ""
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("gpuscope: ") and text in lines[0]
    assert "Traceback" not in r.stderr


def test_gpu_backend_without_gpu_exits_5(tmp_path):
    if backends.gpu_present():
        pytest.skip("a GPU is present")
    r = invoke("--backend", "gpu", "--out", tmp_path / "g")
    assert r.exit_code == 5
    assert r.stdout == ""
    assert "CuPy and a CUDA device" in r.stderr


class _BrokenTail(CpuBackend):
    def tail_msm(self, points, scalars, bitmap):
        good = super().tail_msm(points, scalars, bitmap)
        return curve.point_to_limbs(curve.add(curve.limbs_to_point(good), curve.G1_GEN))


def test_verify_mismatch_fails_loudly_with_exit_1(tmp_path, monkeypatch):
    monkeypatch.setitem(backends._BACKENDS, "cpu", _BrokenTail())
    d = tmp_path / "v"
    r = invoke("--backend", "cpu", "--log-n", 8, "--partitions", 2, "--verify", "--out", d)
    assert r.exit_code == 1
    assert "failed verification" in r.stderr and "tail MSM" in r.stderr
    assert "Traceback" not in r.stderr
    meta = json.loads((d / "meta.json").read_text())
    assert meta["status"] == "failed" and meta["exit_code"] == 1


def test_ctrl_c_stops_at_a_phase_boundary_and_marks_the_run(tmp_path, gpuscope_process):
    d = tmp_path / "int"
    proc = gpuscope_process("run", "--backend", "cpu", "--log-n", 9, "--partitions", 400, "--out", d)
    if not _wait_for_text(lambda: [d / "timing.log"], "mutex_held_ms="):
        pytest.fail("the run never finished a partition")
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert "stopping at the next phase boundary" in err
    assert "status interrupted" in err
    assert "Traceback" not in err
    meta = json.loads((d / "meta.json").read_text())
    assert meta["status"] == "interrupted" and meta["exit_code"] == 130
    done = meta["pipeline"]["partitions_done"]
    assert 1 <= done < 400
    assert json.loads((d / "summary.json").read_text())["log"]["records"] == done
    assert "GPU-lock time split" in out  # the summary of what was done


def test_second_ctrl_c_exits_at_once_leaving_readable_files(tmp_path, gpuscope_process):
    d = tmp_path / "int2"
    proc = gpuscope_process("run", "--backend", "cpu", "--log-n", 10, "--partitions", 400, "--out", d)
    _wait_for_text(lambda: [d / "timing.log"], "GPU_START")
    proc.send_signal(signal.SIGINT)
    time.sleep(0.02)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    meta = json.loads((d / "meta.json").read_text())  # valid JSON, never torn
    assert meta["status"] == "interrupted"
    from gpuscope.parsers import parse_log

    parse_log(str(d / "timing.log"))  # still readable


def test_compare_modes_run_stops_at_ctrl_c_like_run_and_compares_nothing(tmp_path, gpuscope_process):
    root = tmp_path / "cmp"
    proc = gpuscope_process("compare", "pinned", "pageable", "--backend", "cpu", "--log-n", 9,
                            "--partitions", 400, "--out-root", root)
    if not _wait_for_text(lambda: list(root.glob("*/timing.log")), "mutex_held_ms="):
        pytest.fail("the pinned run never finished a partition")
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert out == ""
    assert "stopping at the next phase boundary" in err and "nothing compared" in err
    assert "Traceback" not in err
    (d,) = root.iterdir()  # the pageable run never started
    meta = json.loads((d / "meta.json").read_text())
    assert meta["mode"] == "pinned" and meta["status"] == "interrupted" and meta["exit_code"] == 130
    assert 1 <= meta["pipeline"]["partitions_done"] < 400


def test_out_that_holds_a_run_is_refused_and_left_alone(tmp_path):
    """`run --out EXISTING` used to reuse the directory (analyze then saw both runs' tenures)."""
    d = tmp_path / "r"
    assert invoke("--backend", "cpu", "--log-n", 8, "--partitions", 2, "--out", d).exit_code == 0
    before = {p.name: p.read_bytes() for p in d.iterdir()}
    r = invoke("--backend", "cpu", "--log-n", 8, "--partitions", 2, "--out", d)
    assert r.exit_code == 2 and r.stdout == ""
    assert r.stderr.strip() == f"gpuscope: --out {d} already holds a run: choose a new directory"
    assert {p.name: p.read_bytes() for p in d.iterdir()} == before
    r = invoke("--backend", "cpu", "--log-n", 8, "--partitions", 2, "--out", "")
    assert r.exit_code == 2 and "empty path names the current directory" in r.stderr


def test_ctrl_c_during_set_up_stops_the_run(tmp_path, gpuscope_process):
    """A Ctrl-C while the SRS points were generated used to be lost: every partition ran,
    status complete, exit 0."""
    d = tmp_path / "setup"
    proc = gpuscope_process("run", "--backend", "cpu", "--log-n", 10, "--partitions", 2, "--out", d)
    lines = Lines(out=proc.stdout, err=proc.stderr)
    lines.wait_for("gpuscope: setup: generating the SRS points")
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=30) == 130
    err, out = lines.text("err"), lines.text("out")
    assert "interrupted (Ctrl-C): stopping after the current set-up step" in err
    assert f"gpuscope: interrupted during set-up: no partition ran; run directory {d} (status interrupted)" in err
    assert out == "" and "Traceback" not in err
    meta = json.loads((d / "meta.json").read_text())
    assert (meta["status"], meta["exit_code"]) == ("interrupted", 130)
    assert "pipeline" not in meta and "stop requested: SIGINT" in meta["notes"]
    assert "mutex_held_ms" not in ((d / "timing.log").read_text() if (d / "timing.log").exists() else "")


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_sigterm_and_sighup_stop_at_a_phase_boundary_like_ctrl_c(tmp_path, gpuscope_process, sig):
    """They used to kill the run at once, meta.json left `running`."""
    d = tmp_path / sig.name
    proc = gpuscope_process("run", "--backend", "cpu", "--log-n", 9, "--partitions", 400, "--out", d)
    if not _wait_for_text(lambda: [d / "timing.log"], "mutex_held_ms="):
        pytest.fail("the run never finished a partition")
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert f"interrupted ({sig.name}): stopping at the next phase boundary ({sig.name} again to quit at once)" in err
    meta = json.loads((d / "meta.json").read_text())
    assert (meta["status"], meta["exit_code"]) == ("interrupted", 130)
    assert 1 <= meta["pipeline"]["partitions_done"] < 400 and f"stop requested: {sig.name}" in meta["notes"]
    assert "Traceback" not in err


def test_a_second_stop_signal_of_another_kind_exits_at_once(tmp_path, gpuscope_process):
    d = tmp_path / "twice"
    proc = gpuscope_process("run", "--backend", "cpu", "--log-n", 10, "--partitions", 400, "--out", d)
    lines = Lines(err=proc.stderr)
    _wait_for_text(lambda: [d / "timing.log"], "GPU_START")
    proc.send_signal(signal.SIGTERM)
    lines.wait_for("interrupted (SIGTERM)")
    proc.send_signal(signal.SIGHUP)
    proc.wait(timeout=30)
    assert proc.returncode == 130
    meta = json.loads((d / "meta.json").read_text())
    assert meta["status"] == "interrupted" and meta["notes"][-1] == "second stop signal (SIGHUP): exited at once"


@pytest.mark.parametrize("bad", ["nan", "inf", "1"])
def test_run_interval_must_be_a_finite_number_of_ms(bad):
    from typer.testing import CliRunner

    from gpuscope.cli import app

    r = CliRunner().invoke(app, ["run", "--backend", "cpu", "--interval", bad])
    assert r.exit_code == 2 and "--interval" in r.stderr

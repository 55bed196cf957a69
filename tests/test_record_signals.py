"""`gpuscope record` under signals (issue 13), as real processes: the SIGINT/SIGTERM ladder for
a command that ignores them, SIGHUP/SIGQUIT ending the command (no orphans, meta.json never
left `running`), and output that a background process keeps open after the command exits."""

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

from gpuscope import nvml
from gpuscope.cli import app
from tests.fake_nvml import FakeNvml
from tests.proc_lines import Lines

REPO = Path(__file__).resolve().parents[1]

# runs gpuscope record with a short grace before the timed rungs (the default is 5 s)
LAUNCHER = r"""
import sys
import gpuscope.recorder
gpuscope.recorder.STOP_GRACE_S = float(sys.argv[1])
from gpuscope.cli import main
main(["record", "--no-summary", "--out", sys.argv[2], "--", *sys.argv[3:]])
"""

STUBBORN = r"""
import os, signal, subprocess, sys, time
for name in sys.argv[1].split(","):
    signal.signal(getattr(signal, name), signal.SIG_IGN)
bg = subprocess.Popen(["sleep", "60"])  # in the command's process group, holding its stdout
print("ready", os.getpid(), bg.pid, flush=True)
time.sleep(60)
"""


def _alive(pid: int) -> bool:
    """A process that exists and is not a zombie (a zombie's parent may be a pid 1 that never reaps)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _gone(pid: int, timeout: float = 2.0) -> bool:
    deadline = time.monotonic() + timeout
    while _alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


class Gpuscope:
    """`gpuscope record` as a real process; its stdout and stderr read line by line."""

    def __init__(self, tmp_path: Path, child: list[str], grace_s: float = 5.0) -> None:
        env = dict(os.environ, PYTHONPATH=str(REPO), PYTHONUNBUFFERED="1")
        self.out = tmp_path / "run"
        self.p = subprocess.Popen([sys.executable, "-c", LAUNCHER, str(grace_s), str(self.out), *child],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                                  cwd=tmp_path)
        self.lines = Lines(out=self.p.stdout, err=self.p.stderr)

    def expect(self, text: str, timeout: float = 15.0) -> str:
        return self.lines.wait_for(text, timeout)

    def finish(self, timeout: float = 20.0) -> tuple[int, dict]:
        rc = self.p.wait(timeout=timeout)
        return rc, json.loads((self.out / "meta.json").read_text())

    def err(self) -> str:
        return self.lines.text("err")

    def kill(self) -> None:
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait()


@pytest.fixture
def gpuscope():
    started: list[Gpuscope] = []

    def start(tmp_path, child, grace_s=5.0):
        g = Gpuscope(tmp_path, child, grace_s)
        started.append(g)
        return g

    yield start
    for g in started:
        g.kill()


def _pids(line: str) -> tuple[int, int]:
    _, child, bg = line.split()
    return int(child), int(bg)


def test_three_ctrl_c_stop_a_command_that_ignores_them(tmp_path, gpuscope):
    """SIGINT forwarded, then SIGTERM, then SIGKILL to the process group, each said on stderr."""
    g = gpuscope(tmp_path, [sys.executable, "-c", STUBBORN, "SIGINT,SIGTERM"])
    child, bg = _pids(g.expect("ready"))
    g.p.send_signal(signal.SIGINT)
    g.expect(f"SIGINT: forwarded to the command's process group ({child}); "
             "SIGINT again sends SIGTERM, a third time SIGKILL")
    assert _alive(child)
    g.p.send_signal(signal.SIGINT)
    g.expect(f"SIGINT again: sent SIGTERM to the command's process group ({child}); SIGINT once more sends SIGKILL")
    assert _alive(child)
    g.p.send_signal(signal.SIGINT)
    g.expect("SIGINT a third time: sent SIGKILL to the command's process group")
    rc, meta = g.finish()
    assert rc == 128 + signal.SIGKILL
    assert (meta["status"], meta["exit_code"], meta["child_returncode"]) == ("interrupted", 137, -9)
    assert meta["signals_received"] == ["SIGINT"] * 3
    assert meta["signals_forwarded"] == ["SIGINT", "SIGTERM", "SIGKILL"]
    assert _gone(child) and _gone(bg) and "Traceback" not in g.err()


@pytest.mark.parametrize("sig", [signal.SIGHUP, signal.SIGQUIT])
def test_hangup_or_quit_ends_the_command_and_finishes_meta(tmp_path, gpuscope, sig):
    """SIGHUP/SIGQUIT used to kill gpuscope at once: meta.json stayed `running`, the command ran
    on, orphaned. Now: forwarded, then SIGTERM and SIGKILL on a timer, meta.json finished."""
    g = gpuscope(tmp_path, [sys.executable, "-c", STUBBORN, f"SIGINT,SIGTERM,{sig.name}"], grace_s=0.3)
    child, bg = _pids(g.expect("ready"))
    assert json.loads((g.out / "meta.json").read_text())["status"] == "running"
    g.p.send_signal(sig)
    g.expect(f"{sig.name}: forwarded to the command's process group ({child}); "
             "SIGTERM in 0.3 s and SIGKILL 0.3 s later if it is still running")
    g.expect(f"the command is still running 0.3 s after {sig.name}: sent SIGTERM")
    g.expect("the command is still running 0.3 s after SIGTERM: sent SIGKILL")
    rc, meta = g.finish()
    assert rc == 137 and meta["status"] == "interrupted" and meta["ended"]
    assert meta["signals_forwarded"] == [sig.name, "SIGTERM", "SIGKILL"]
    assert _gone(child) and _gone(bg)  # no orphans
    assert "Traceback" not in g.err()


@pytest.fixture
def runner():
    nvml.use_backend(FakeNvml([], init_error="LibraryNotFound"))
    yield CliRunner()
    nvml.use_backend(None)


def test_output_held_open_by_a_background_process_is_noted(runner, tmp_path):
    out = tmp_path / "bg"
    r = runner.invoke(app, ["record", "--no-summary", "--out", str(out), "--",
                            "sh", "-c", "sleep 5 & echo bg=$!"])
    bg = int(r.stdout.split("bg=")[1].split()[0])
    try:
        assert r.exit_code == 0, r.stderr
        note = ("the command exited but its stdout and stderr stayed open for more than 1 s: a process "
                "it started still holds them, and what that process prints from now on is not recorded")
        assert note in r.stderr
        meta = json.loads((out / "meta.json").read_text())
        assert meta["status"] == "complete" and note in meta["notes"]
    finally:
        os.kill(bg, signal.SIGKILL)


def test_output_of_a_background_process_soon_after_the_exit_is_kept(runner, tmp_path):
    out = tmp_path / "late"
    r = runner.invoke(app, ["record", "--no-summary", "--out", str(out), "--",
                            "sh", "-c", "(sleep 0.3; echo late) & echo early"])
    assert r.exit_code == 0, r.stderr
    assert r.stdout == "early\nlate\n" and "stayed open" not in r.stderr
    log = (out / "timing.log").read_text().splitlines()
    assert [line.split(" ", 1)[1] for line in log] == ["early", "late"]


def test_a_failure_of_the_pump_leaves_no_orphan_and_no_running_meta(runner, tmp_path, monkeypatch):
    from gpuscope.record_capture import StreamCapture

    def broken(self, data, now):
        raise RuntimeError("pump bug")

    monkeypatch.setattr(StreamCapture, "feed", broken)
    out = tmp_path / "bug"
    r = runner.invoke(app, ["record", "--no-summary", "--out", str(out), "--", sys.executable, "-c",
                            "import os, time; print(os.getpid(), flush=True); time.sleep(30)"])
    assert r.exit_code == 1 and "internal error: RuntimeError: pump bug" in r.stderr
    meta = json.loads((out / "meta.json").read_text())
    assert meta["status"] == "failed" and meta["child_returncode"] == -signal.SIGKILL

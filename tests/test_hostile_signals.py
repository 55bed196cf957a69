"""Signals and gpuscope's voice (issues 22, 23): a closed pipe ends quietly with exit 0, Ctrl-C
at any moment is one line and exit 130, library warnings never reach stderr, record's child
dies with it, a run directory whose recorder is gone says so, a stop signal during the
closing summary is written down."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pytest

from gpuscope.cli._common import quiet_libraries

from .conftest import EXAMPLES, REPO

BIN = Path(sys.executable).parent / "gpuscope"
ENV = dict(os.environ, PYTHONPATH=str(REPO))


def _cmd(*args) -> list[str]:
    # the console script when installed (its Ctrl-C handler starts at the package's import)
    return [str(BIN), *map(str, args)] if BIN.exists() else [sys.executable, "-m", "gpuscope", *map(str, args)]


def test_a_closed_pipe_ends_quietly_with_exit_0():
    for args in (("analyze", EXAMPLES / "cuzk_daemon.log"), ("analyze", EXAMPLES / "cuzk_daemon.log", "--records"),
                 ("compare", EXAMPLES / "cuzk_daemon.log", EXAMPLES / "cuzk_daemon.log")):
        p = subprocess.Popen(_cmd(*args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=ENV)
        p.stdout.readline()
        p.stdout.close()  # `| head -1`
        err = p.stderr.read().decode()
        assert p.wait(timeout=60) == 0 and err == "", (args, err)


# Ctrl-C sent at a random or fixed moment of the start-up: each run is a race, and two rare
# outcomes are seen on this 2-core box and not yet explained (issue 22, open): exit 4 ("<stdin> is
# empty": the signal not acted on before stdin closed) and death by SIGINT after the one line
# (`python -m`, 50 ms). They run in `make fuzz` (GPUSCOPE_FUZZ=long), not in `make test`,
# where a rare race must not turn CI red.
RACY = pytest.mark.skipif(not os.environ.get("GPUSCOPE_FUZZ"),
                          reason="a start-up race, run by make fuzz (see RACY in this file)")


@RACY
def test_ctrl_c_at_any_moment_is_one_line_and_exit_130():
    rng = random.Random(7)
    seen = set()
    for i in range(12):
        # importing, parsing options, then reading standard input that never ends: Ctrl-C comes
        # while gpuscope starts up or while it reads, never after it is done
        args = ("analyze", "-", "--json") if i % 2 else ("plot", "-", "-o", os.devnull)  # the fast path, typer
        p = subprocess.Popen(_cmd(*args), stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, env=ENV)
        time.sleep(rng.uniform(0.35, 0.9))  # past the interpreter's own start-up (see docs/CLI.md)
        p.send_signal(signal.SIGINT)
        err = p.communicate(timeout=60)[1].decode()
        rc = p.returncode
        seen.add(rc)
        assert "Traceback" not in err and "KeyboardInterrupt" not in err and "Aborted" not in err, err
        # 130 with its line; -SIGINT (killed at the interpreter's very end) quietly; 0 when done first
        assert (rc == 130 and err == "gpuscope: interrupted\n") or (rc in (0, -signal.SIGINT) and err == ""), (rc, err)
    assert 130 in seen


PACKAGE_DIRS = tuple(str(REPO / d) + os.sep for d in ("gpuscope", "parsers", "reports"))


def _traceback_frames(err: str) -> list[str]:
    import re

    return re.findall(r'File "([^"]+)"', err)


@RACY
@pytest.mark.parametrize("how", ["script", "module"])
def test_ctrl_c_at_fixed_delays_after_the_spawn_never_prints_gpuscope_s_traceback(how):
    # the earliest moments: before Python's own handler (killed quietly by SIGINT), during the
    # interpreter's start-up (site's .pth files: Python's traceback, none of gpuscope's code on
    # it; docs/CLI.md), then gpuscope's handler from the package's first line
    cmd = _cmd("analyze", "-", "--json") if how == "script" else [sys.executable, "-m", "gpuscope", "analyze", "-",
                                                                   "--json"]
    outcomes = []
    for delay_ms in (0, 5, 10, 20, 50, 150, *range(12, 42, 3), *range(12, 42, 3), 150, 150):
        p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=ENV)
        time.sleep(delay_ms / 1000)
        p.send_signal(signal.SIGINT)
        err = p.communicate(timeout=60)[1].decode()
        rc = p.returncode
        if "Traceback" in err:
            ours = [f for f in _traceback_frames(err) if f.startswith(PACKAGE_DIRS)]
            assert not ours, f"{delay_ms} ms: a traceback through gpuscope's own code:\n{err}"
            outcomes.append("start-up")
        else:
            assert (rc == 130 and err == "gpuscope: interrupted\n") or (rc == -signal.SIGINT and err == ""), \
                (delay_ms, rc, err)
            outcomes.append(rc)
    assert 130 in outcomes[-2:] + outcomes[4:6], outcomes  # at 50-150 ms gpuscope is running (loaded box: one may be early)


def test_library_warnings_are_not_gpuscope_s_voice(capsys, monkeypatch):
    monkeypatch.delenv("GPUSCOPE_DEBUG", raising=False)
    import numpy as np

    with quiet_libraries():
        np.float64(1e308) * np.float64(1e308)  # RuntimeWarning: overflow
        warnings.warn("Glyph 9 missing from font", UserWarning, stacklevel=1)
    assert capsys.readouterr().err == ""


SLEEPER = "import time, signal, sys; print('ready', flush=True); time.sleep(60)"


def test_records_child_dies_with_it_and_the_directory_says_the_recorder_is_gone(tmp_path):
    p = subprocess.Popen([sys.executable, "-m", "gpuscope", "record", "--no-summary", "--out", str(tmp_path / "run"),
                          "--", sys.executable, "-c", SLEEPER],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=ENV, cwd=tmp_path)
    try:
        assert p.stdout.readline().strip() == b"ready"
        children = subprocess.run(["pgrep", "-P", str(p.pid)], capture_output=True, text=True).stdout.split()
        assert children
        p.kill()  # SIGKILL: no handler of gpuscope's runs
        p.wait(timeout=10)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and any(_alive(int(c)) for c in children):
            time.sleep(0.05)
        assert not any(_alive(int(c)) for c in children), "the command outlived gpuscope"
    finally:
        if p.poll() is None:
            p.kill()
    r = subprocess.run([sys.executable, "-m", "gpuscope", "analyze", str(tmp_path / "run")], capture_output=True,
                       text=True, env=ENV, timeout=60)
    assert "its recorder (pid" in r.stderr and "is gone" in r.stderr and "Traceback" not in r.stderr


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split()[2] != "Z"
    except OSError:
        return False


def test_a_stop_signal_during_the_summary_is_written_down(tmp_path, monkeypatch):
    import gpuscope.summary as summary
    from gpuscope.rundir import RunDir

    rd = RunDir.create(tmp_path / "run")
    rd.write_meta(status="complete", exit_code=0)
    (rd.path / "timing.log").write_text("step_ms=5\nstep_ms=6\n")

    def slow(*a, **k):
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)
        raise AssertionError("SIGTERM did not stop the summary")

    monkeypatch.setattr(summary, "analyze", slow)
    s = summary.summarize_run(rd.path)
    assert s.interrupted == signal.SIGTERM and s.analysis is None
    meta = json.loads((rd.path / "meta.json").read_text())
    assert meta["status"] == "complete" and meta["summary"].startswith("interrupted by SIGTERM")
    assert not (rd.path / "summary.json").exists()
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # put back


def test_the_summary_field_says_it_was_written(tmp_path):
    from gpuscope.rundir import RunDir
    from gpuscope.summary import summarize_run

    rd = RunDir.create(tmp_path / "run")
    rd.write_meta(status="complete", exit_code=0)
    (rd.path / "timing.log").write_text("step_ms=5\nstep_ms=6\n")
    assert summarize_run(rd.path).analysis is not None
    assert json.loads((rd.path / "meta.json").read_text())["summary"] == "summary.json"


def test_an_empty_claim_of_a_dead_recorder_does_not_refuse_the_directory_for_good(tmp_path):
    from gpuscope.errors import UsageError
    from gpuscope.rundir import CLAIM, RunDir

    d = tmp_path / "out"
    d.mkdir()
    (d / CLAIM).write_text("")
    old = time.time() - 60
    os.utime(d / CLAIM, (old, old))
    assert RunDir.create(d).path == d
    e = tmp_path / "busy"
    e.mkdir()
    (e / CLAIM).write_text(json.dumps({"pid": os.getpid(), "host": os.uname().nodename, "claimed": "now"}))
    with pytest.raises(UsageError, match="taken by another gpuscope run"):
        RunDir.create(e)


def test_a_full_disk_at_the_end_is_never_complete(tmp_path, monkeypatch):
    from gpuscope import nvml
    from gpuscope.recorder import record
    from gpuscope.rundir import RunDir

    nvml.use_backend(None)
    real = RunDir.write_meta

    def full(self, **fields):
        if fields.get("status") in ("complete", "failed"):
            return False
        return real(self, **fields)

    monkeypatch.setattr(RunDir, "write_meta", full)
    res = record([sys.executable, "-c", "print('step_ms=5')"], out=tmp_path / "run", interval_s=0.05,
                 gpus=None, pcie="auto", use_pty=False)
    assert res.status.startswith("unfinished") and res.exit_code == 6


@pytest.mark.parametrize(("raw", "kept"), [("a\x9b31mred\x9b0m b", "ared b"), ("x\u202eevil", "xevil"),
                                           ("o\x9d0;title\x07k", "ok"), ("step\u2066_ms\u2069=5", "step_ms=5"),
                                           ("tab\tkeep é ✓", "tab\tkeep é ✓")])
def test_record_keeps_no_c1_control_or_bidi_override_in_timing_log(raw, kept):
    from gpuscope.record_capture import log_text

    assert log_text(raw) == kept


# A Ctrl-C that a library turns into something else must still end as "interrupted", 130: each
# script makes gpuscope's own process (argv[0] gpuscope), replaces the analysis with code that
# takes the Ctrl-C the way a library does, and runs the console entry point.
_OWN_PROCESS_RUN = """
import os, signal, sys
sys.argv = ["gpuscope", "analyze", "-", "--json"]
import gpuscope
import gpuscope.cli.analyze_run as analyze_run
from gpuscope.cli import main

def run(**kw):
{body}

analyze_run.run = run
main()
"""


@pytest.mark.parametrize("body", [
    # CPython 3.11 marks a KeyboardInterrupt raised in exec() of a string (dataclasses, namedtuple
    # build their methods so) as unhandled though it was caught: the process died by SIGINT at
    # its very end, after gpuscope had said "interrupted" and chosen 130
    "    exec('import os, signal\\nos.kill(os.getpid(), signal.SIGINT)\\nfor _ in range(10**8): pass')",
    # numpy's C import turns a KeyboardInterrupt into an ImportError ("PyCapsule_Import could
    # not import module"): it was an internal error, exit 1
    "    try:\n        os.kill(os.getpid(), signal.SIGINT)\n        for _ in range(10**8): pass\n"
    "    except KeyboardInterrupt:\n        raise ImportError('PyCapsule_Import could not import module')",
    # a Ctrl-C landing in a weakref callback (importlib's module locks) is only "ignored" by
    # Python: it printed "Exception ignored in ...", the command went on and said "stdin is
    # empty" (exit 4)
    "    import weakref\n    class A: pass\n    a = A()\n    def cb(_):\n        raise KeyboardInterrupt\n"
    "    r = weakref.ref(a, cb)\n    del a\n    for _ in range(10**8): pass\n"
    "    from gpuscope.errors import InputError\n    raise InputError('stdin is empty')",
], ids=["caught-in-exec", "turned-into-import-error", "ignored-in-a-callback"])
def test_a_ctrl_c_a_library_took_still_ends_as_interrupted(body, tmp_path):
    # under -m, as `python -m gpuscope` runs (a script's or -c's SystemExit exits at once)
    (tmp_path / "gpuscope_probe.py").write_text(_OWN_PROCESS_RUN.format(body=body))
    env = dict(ENV, PYTHONPATH=f"{tmp_path}{os.pathsep}{ENV['PYTHONPATH']}")
    p = subprocess.run([sys.executable, "-m", "gpuscope_probe"], stdin=subprocess.DEVNULL, capture_output=True,
                       env=env, timeout=60)
    assert (p.returncode, p.stderr.decode()) == (130, "gpuscope: interrupted\n")


_STOP_AT_THE_END = """
import os, signal, sys
sys.argv = ["gpuscope", "analyze", "-", "--json"]
import gpuscope
import gpuscope.cli.analyze_run as analyze_run
from gpuscope.cli import main


class StopAtTeardown:  # the signal comes while the interpreter tears the modules down
    def __del__(self):
        os.kill(os.getpid(), signal.{sig})


KEEP = StopAtTeardown()
analyze_run.run = lambda **kw: print("done", flush=True)
main()
"""


@pytest.mark.parametrize("sig", ["SIGHUP", "SIGTERM", "SIGINT"])
def test_a_stop_signal_after_the_command_is_done_does_not_kill_it(sig, tmp_path):
    """`gpuscope run` finished (meta.json complete) and then died by SIGHUP (exit -1): the
    interpreter's exit puts Python-handled signals back to their default before it tears the
    modules down. A command that is done keeps its own exit code."""
    (tmp_path / "gpuscope_probe_end.py").write_text(_STOP_AT_THE_END.format(sig=sig))
    env = dict(ENV, PYTHONPATH=f"{tmp_path}{os.pathsep}{ENV['PYTHONPATH']}")
    p = subprocess.run([sys.executable, "-m", "gpuscope_probe_end"], stdin=subprocess.DEVNULL, capture_output=True,
                       env=env, timeout=60)
    assert (p.returncode, p.stdout.decode(), p.stderr.decode()) == (0, "done\n", "")

"""Hostile input, round four (issue 34): the CLI, the terminal and `record` (classes 4, 5, 7, 8,
13, 14, 15, 19). Each test runs gpuscope the way a user meets it (a `python -m gpuscope`
process, or typer's CliRunner as tests/test_cli_*.py do) on inputs it writes itself."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest
from typer.testing import CliRunner

from gpuscope.cli import app

from .conftest import EXAMPLES


def gpuscope(*args, env=None, timeout=60, cwd=None):
    """A `python -m gpuscope ...` process: (exit code, stdout, stderr) as text (bytes kept as
    surrogate escapes, so a test can see a raw byte that reached the terminal)."""
    full_env = {**os.environ, "PYTHONIOENCODING": "utf-8", **(env or {})}
    full_env.pop("GPUSCOPE_DEBUG", None)
    r = subprocess.run([sys.executable, "-m", "gpuscope", *map(os.fsdecode, args)], capture_output=True,
                       env=full_env, timeout=timeout, cwd=cwd)
    return (r.returncode, r.stdout.decode("utf-8", "surrogateescape"),
            r.stderr.decode("utf-8", "surrogateescape"))


def one_line(err: str) -> str:
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("gpuscope: "), err
    assert "Traceback" not in err and "internal error" not in err, err
    return lines[0]


# -- class 19: what typer refuses is one line and exit 2, as gpuscope's own usage errors ------

@pytest.mark.parametrize("args, words", [
    (("plot", "x.log", "-o", "a.png", "--start", "abc"), ("--start", "gpuscope plot -h")),
    (("plot", "x.log", "-o", "a.png", "--start"), ("--start", "requires an argument")),
    (("plot",), ("SOURCE", "gpuscope plot -h")),
    (("bogus",), ("bogus",)),
    (("--bogus",), ("--bogus",)),
    (("watch", "--window", "x"), ("--window",)),
    (("analyze", "x.log", "--line-rate", "fast"), ("--line-rate",)),  # (the fast path defers)
])
def test_typer_usage_errors_are_one_line_and_exit_2(args, words):
    """They used to be typer's four lines (Usage:, Try ..., blank, Error: ...)."""
    code, out, err = gpuscope(*args)
    line = one_line(err)
    assert code == 2 and out == ""
    assert all(w in line for w in words), line
    r = CliRunner().invoke(app, list(args))  # the same through typer's test runner
    assert r.exit_code == 2 and one_line(r.stderr) == line


def test_help_and_version_still_work():
    code, out, err = gpuscope("plot", "-h")
    assert code == 0 and out.startswith("Usage: gpuscope plot") and err == ""
    code, out, err = gpuscope("--version")
    assert code == 0 and out.startswith("gpuscope ")
    code, out, err = gpuscope()  # no arguments: the help, as before
    assert "Commands" in out + err and "Traceback" not in err


# -- class 13: plot with nothing drawable is exit 4 "nothing to draw", as export ---------------

@pytest.mark.parametrize("column, value", [("temperature_c", 40), ("mem_used_mib", 400)])
def test_plot_of_samples_with_nothing_drawable_is_exit_4(tmp_path, column, value):
    """Samples of temperature or memory alone used to be an internal error (matplotlib asked
    for 0 rows); `analyze --html` of them still writes its page, without a picture. Falsely
    firing on samples that do hold a figure is what the second half rules out."""
    f = tmp_path / "s.csv"
    f.write_text(f"t_wall,gpu,{column}\n" + "".join(f"{100 + i / 2},0,{value + i}\n" for i in range(6)))
    code, out, err = gpuscope("plot", f, "-o", tmp_path / "p.png")
    assert code == 4 and "nothing to draw" in one_line(err) and not (tmp_path / "p.png").exists()
    code, out, err = gpuscope("analyze", f, "--html", tmp_path / "p.html")
    assert code == 0 and (tmp_path / "p.html").exists() and "internal error" not in err
    f.write_text(f"t_wall,gpu,{column},power_w\n" + "".join(f"{100 + i / 2},0,{value},90\n" for i in range(6)))
    code, out, err = gpuscope("plot", f, "-o", tmp_path / "p.png")
    assert code == 0 and (tmp_path / "p.png").stat().st_size > 0, err


def test_plot_window_that_keeps_nothing_drawable_is_exit_4(tmp_path):
    """A window before the run's samples that keeps only rows without a drawable figure was an
    internal error; an empty window is the same "nothing to draw" (exit 4)."""
    f = tmp_path / "s.csv"
    f.write_text("t_wall,gpu,temperature_c,rx_gbs\n100,0,40,\n100.5,0,40,\n101,0,40,\n"
                 + "".join(f"{105 + i / 2},0,41,3.5\n" for i in range(6)))
    for window in (("--start=0", "--end=1"), ("--start=-50", "--end=-10")):
        code, out, err = gpuscope("plot", f, "-o", tmp_path / "p.png", *window)
        assert code == 4 and "nothing to draw" in one_line(err), (window, err)


# -- class 14: every numeric option finite, positive where it must be, bounded (exit 2) -------

DAEMON = EXAMPLES / "cuzk_daemon.log"


@pytest.mark.parametrize("args, option", [
    (("plot", DAEMON, "-o", "w.png", "--end", "inf"), "--end"),
    (("plot", DAEMON, "-o", "w.png", "--start=-1e308"), "--start"),
    (("plot", DAEMON, "-o", "w.png", "--start", "nan"), "--start"),
    (("watch", "--window", "1e308"), "--window"),
    (("watch", "--line-rate", "0"), "--line-rate"),
    (("watch", "--line-rate", "-5"), "--line-rate"),
    (("watch", "--line-rate", "nan"), "--line-rate"),
    (("watch", "--seconds", "inf"), "--seconds"),
    (("watch", "--refresh", "1e308"), "--refresh"),
    (("record", "--interval", "1e308", "--", "true"), "--interval"),
    (("run", "--interval", "inf"), "--interval"),
    (("run", "--general-share", "nan"), "--general-share"),
    (("compare", DAEMON, DAEMON, "--bootstrap", "100000000000"), "--bootstrap"),
    (("analyze", DAEMON, "--line-rate", "1e400"), "--line-rate"),  # the fast path's words
    (("run", "--backend", "cpu", "--synth-threads", "100000000000"), "--synth-threads"),  # was a MemoryError
    (("run", "--backend", "cpu", "--seed=-1"), "--seed"),
    (("bandwidth", "--repeats", "99999999999999999999"), "--repeats"),
    (("analyze", DAEMON, "--line-rate=0"), "--line-rate"),
])
def test_numeric_options_out_of_bounds_are_one_line_exit_2(tmp_path, args, option):
    """They used to be internal errors (plot --end inf, watch --window 1e308), accepted and
    failing on every refresh (watch --line-rate 0), or a number (--start nan)."""
    r = CliRunner().invoke(app, [str(a) for a in args])
    line = one_line(r.stderr)
    assert r.exit_code == 2 and line.startswith(f"gpuscope: {option} must be"), line
    assert not (tmp_path / "w.png").exists()


def test_numeric_bounds_hold_on_the_fast_analyze_path():
    """gpuscope/cli/fast.py reads analyze's usual lines without typer: a line rate out of bounds
    is left to typer, which says the same line (and a good one still takes the fast path)."""
    from gpuscope.cli import fast

    assert fast.parse(["analyze", "x.log", "--line-rate", "1e400"]) is None
    assert fast.parse(["analyze", "x.log", "--line-rate", "0"]) is None
    assert fast.parse(["analyze", "x.log", "--line-rate", "55.5"]) == {"source": "x.log", "line_rate": 55.5}
    code, out, err = gpuscope("analyze", DAEMON, "--line-rate", "0.0")
    assert code == 2 and one_line(err).startswith("gpuscope: --line-rate must be above 0 GB/s")


def test_numeric_values_in_bounds_are_taken(tmp_path):
    """Falsely refusing: a negative --start (before the first phase) and a window of the run."""
    r = CliRunner().invoke(app, ["plot", str(DAEMON), "-o", str(tmp_path / "w.png"), "--start=-1", "--end", "30"])
    assert r.exit_code == 0, r.stderr


# -- class 7: record drops DCS/SOS/PM/APC control strings whole, payload and all ---------------

def test_record_drops_control_strings_with_their_payload(tmp_path):
    """`ESC _ ... ESC \\` (APC), ESC P (DCS), ESC ^ (PM), ESC X (SOS) and their 8-bit forms show
    nothing on a terminal; record kept their payload in timing.log and analyze read timing
    values from it. A string left open goes on in the next line, up to its ST. Falsely dropping:
    the text around a string, and a two-byte escape's neighbours (ESC M), stay."""
    import json

    child = r"""
import sys
import time
w = sys.stdout.write
for i in range(6):
    w("step=%d step_ms=10\n" % i)
w("\x1b_step=90 step_ms=31415921\x1b\\\n")
w("before \x1bPq step=91 step_ms=31415922\x1b\\after\n")
w("\x1b^step=92 step_ms=31415923\x1b\\\x1bXstep=93 step_ms=31415924\x1b\\\n")
w("\xc2\x9fstep=94 step_ms=31415925\xc2\x9c\n".encode("latin-1").decode("utf-8"))
w("opened \x1b_step=95 step_ms=31415926\n")
w("step=96 step_ms=31415927\n")
w("closed\x1b\\ tail \x1bM kept\n")
"""
    out = tmp_path / "run"
    r = CliRunner().invoke(app, ["record", "--no-summary", "--out", str(out), "--", sys.executable, "-c", child])
    assert r.exit_code == 0, r.stderr
    log = (out / "timing.log").read_text()
    assert "3141592" not in log and "\x1b" not in log, log
    texts = [line.split(" ", 1)[1] if " " in line else "" for line in log.splitlines()]
    assert "before after" in texts and "opened " in texts and " tail  kept" in texts, texts
    r = CliRunner().invoke(app, ["analyze", str(out), "--json"])
    assert r.exit_code == 0, r.stderr
    assert "3141592" not in json.dumps(json.loads(r.stdout))


# -- class 5: a terminal that cannot encode UTF-8 gets stand-ins, not an internal error --------

@pytest.mark.parametrize("encoding", ["ascii", "latin-1"])
def test_console_report_on_a_terminal_without_utf8(tmp_path, encoding):
    """PYTHONIOENCODING=ascii (or an ISO-8859-1 locale) made the report an internal error at its
    first `—` or `█`. Falsely replacing: what the encoding has (latin-1's `é`) stays."""
    env = {"PYTHONIOENCODING": encoding}
    r = subprocess.run([sys.executable, "-m", "gpuscope", "analyze", str(DAEMON)], capture_output=True,
                       env={**os.environ, **env}, timeout=60)
    out, err = r.stdout.decode(encoding), r.stderr.decode(encoding)
    assert r.returncode == 0 and err == "", err
    assert "GPU-lock time split" in out and "mutex_held" in out and " - format cuzk" in out
    log = tmp_path / "caf\u00e9 \u2192 run.log"
    log.write_bytes(DAEMON.read_bytes())
    r = subprocess.run([sys.executable, "-m", "gpuscope", "analyze", str(tmp_path / "gone\u2014.log")],
                       capture_output=True, env={**os.environ, **env}, timeout=60)
    line = one_line(r.stderr.decode(encoding))  # stderr: the same stand-ins
    assert r.returncode == 3 and "gone-.log" in line, line
    r = subprocess.run([sys.executable, "-m", "gpuscope", "analyze", str(log)], capture_output=True,
                       env={**os.environ, **env}, timeout=60)
    out = r.stdout.decode(encoding)
    assert r.returncode == 0 and ("caf\u00e9 -> run.log" if encoding == "latin-1" else "cafe -> run.log") in out


# -- class 4: file names that are not UTF-8 ----------------------------------------------------

@pytest.mark.parametrize("io", ["utf-8", "utf-8:surrogateescape"])  # the second: Python's C/POSIX locale
def test_file_names_that_are_not_utf8(tmp_path, io):
    """`plot` and `--html` of such a name were internal errors (matplotlib got surrogates); the
    console wrote the raw bytes, 0x9b (CSI on an 8-bit terminal) among them. Every name shown
    is the byte's text `\\x9b`; falsely escaping: a UTF-8 name (é) stays as it is."""
    src = os.fsencode(tmp_path) + b"/caf\xc3\xa9 d\x9bx\xff.log"
    with open(src, "wb") as f:
        f.write(DAEMON.read_bytes())
    shown = "caf\u00e9 d\\x9bx\\xff.log"
    env = {"PYTHONIOENCODING": io}
    png = os.fsencode(tmp_path) + b"/o\x9b.png"
    code, out, err = gpuscope("plot", src, "-o", png, env=env)
    assert code == 0 and "wrote " in out and "o\\x9b.png" in out and err == "", err
    assert os.path.getsize(png) > 0
    html = tmp_path / "r.html"
    code, out, err = gpuscope("analyze", src, "--html", html, env=env)
    assert code == 0 and "d\\x9bx\\xff.log" in out and shown in html.read_text(encoding="utf-8"), err
    code, out, err = gpuscope("analyze", os.fsencode(tmp_path) + b"/gone\x9b.log", env=env)
    assert code == 3 and "gone\\x9b.log" in one_line(err)
    for text in (out, err):
        assert not any(0xDC80 <= ord(c) <= 0xDCFF or 0x80 <= ord(c) <= 0x9F for c in text)


# -- class 15: an output FIFO without a reader is waited on as an input FIFO is, then one line --

def test_output_fifo_without_a_reader_ends_with_one_line(tmp_path):
    """`--perfetto FIFO`, `-o FIFO`, `--html FIFO` with no process reading blocked for ever.
    Falsely refusing: a FIFO that has a reader gets the bytes."""
    import threading

    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    env = {"GPUSCOPE_FIFO_WAIT": "0.3"}
    for args in (("export", DAEMON, "--perfetto", fifo), ("analyze", DAEMON, "--html", fifo)):
        code, out, err = gpuscope(*args, env=env, timeout=60)
        assert code == 6 and "named pipe" in one_line(err) and "GPUSCOPE_FIFO_WAIT" in err, err
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
    reader.start()
    code, out, err = gpuscope("export", DAEMON, "--perfetto", fifo, env={"GPUSCOPE_FIFO_WAIT": "30"})
    reader.join(30)
    assert code == 0 and got and got[0].startswith(b"{"), err


def test_output_and_input_fifo_waits_agree(monkeypatch):
    from gpuscope import safe_output
    from gpuscope.parsers import limits

    assert safe_output.FIFO_WAIT_S == limits.FIFO_WAIT_S
    monkeypatch.setenv("GPUSCOPE_FIFO_WAIT", "2.5")
    assert safe_output.fifo_wait_s() == 2.5
    monkeypatch.setenv("GPUSCOPE_FIFO_WAIT", "0")
    assert safe_output.fifo_wait_s() == float("inf")


# -- class 8: record finishes the ladder on the process group, grandchildren included ----------

# a shell that ends on the signal, having started a grandchild that ignores SIGINT and SIGHUP
# (in the command's process group, holding its stdout)
SHELL_AND_GRANDCHILD = ["sh", "-c", "sh -c 'trap \"\" INT HUP; exec sleep 60' & echo ready $$ $!; wait"]


@pytest.mark.parametrize("sig", [signal.SIGHUP, signal.SIGINT])
def test_record_leaves_no_grandchild_after_a_forwarded_stop_signal(tmp_path, sig):
    """The shell died of the forwarded signal; record drained its output for a second and
    exited, its grandchild orphaned although it had announced "SIGTERM in 5 s and SIGKILL 5 s
    later". Now the ladder goes on, on a timer, while the group has a process; falsely killing:
    a command that ends by itself and leaves a background process without any stop signal
    keeps it (tests/test_record_signals.py, test_output_held_open_by_a_background_process...)."""
    from tests.test_record_signals import Gpuscope, _alive, _gone, _pids

    g = Gpuscope(tmp_path, SHELL_AND_GRANDCHILD, grace_s=0.3)
    try:
        shell, grandchild = _pids(g.expect("ready"))
        time.sleep(0.2)  # (the grandchild's trap is set)
        g.p.send_signal(sig)
        g.expect(f"{sig.name}: forwarded to the command's process group ({shell})")
        rc, meta = g.finish(timeout=20)
        assert _gone(grandchild, timeout=5), "the grandchild was left running"
        assert meta["status"] == "interrupted" and "SIGTERM" in meta["signals_forwarded"]
        assert "Traceback" not in g.err() and rc != 0
        if sig == signal.SIGINT:  # (SIGHUP's timer was running already when the shell died)
            assert "the command exited, but processes it started still run in its process group" in g.err()
    finally:
        g.kill()
        if _alive(grandchild):
            os.kill(grandchild, signal.SIGKILL)

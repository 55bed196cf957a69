"""`gpuscope record`'s capture of the child's output (issue 11): stdout through a pseudo-terminal
so that line-buffered programs (C printf, Python without -u) send each line when they print it;
the pty's quirks; the burst warning when the stamps cannot be the print times."""

from __future__ import annotations

import errno
import fcntl
import json
import os
import pty
import re
import shutil
import struct
import subprocess
import sys
import termios
import time
from datetime import datetime
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpuscope import nvml
from gpuscope.cli import app
from tests.fake_nvml import FakeNvml

REPO = Path(__file__).resolve().parents[1]
DATA = Path(__file__).resolve().parent / "data"
ISO = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6})Z (.*)$")
LINES, GAP_S = 8, 0.04
ACCEPT_S = 0.050  # the acceptance: a printed line is stamped within 50 ms of its print

C_PRINTER = r"""
#include <stdio.h>
#include <time.h>
#include <unistd.h>
int main(void) {
    for (int i = 0; i < LINES; i++) {
        struct timespec ts;
        usleep(GAP_US);
        clock_gettime(CLOCK_REALTIME, &ts);
        printf("iter %d printed_at=%.6f\n", i, ts.tv_sec + ts.tv_nsec / 1e9);  /* no fflush */
    }
    return 0;
}
"""

PY_PRINTER = f"""
import time
for i in range({LINES}):
    time.sleep({GAP_S})
    print(f"iter {{i}} printed_at={{time.time():.6f}}")  # no flush, no -u
"""


@pytest.fixture(autouse=True)
def _no_nvml(monkeypatch):
    nvml.use_backend(FakeNvml([], init_error="LibraryNotFound"))
    monkeypatch.delenv("PYTHONUNBUFFERED", raising=False)  # the child must buffer as it would
    yield
    nvml.use_backend(None)


@pytest.fixture(scope="module")
def c_printer(tmp_path_factory):
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler")
    d = tmp_path_factory.mktemp("cprog")
    (d / "printer.c").write_text(C_PRINTER)
    subprocess.run([cc, "-O1", f"-DLINES={LINES}", f"-DGAP_US={int(GAP_S * 1e6)}",
                    "-o", str(d / "printer"), str(d / "printer.c")], check=True, timeout=60)
    return [str(d / "printer")]


def _log(out: Path) -> list[tuple[float, str]]:
    rows = []
    for line in (out / "timing.log").read_text().splitlines():
        m = ISO.match(line)
        assert m, line
        rows.append((datetime.fromisoformat(m.group(1) + "+00:00").timestamp(), m.group(2)))
    return rows


def _lateness(out: Path) -> list[float]:
    """Per line: its stamp minus the time the program says it printed it (s). gpuscope's clock
    is the monotonic clock anchored to the wall clock when it was imported (perhaps minutes ago
    in this test session): the wall clock's drift since is taken out."""
    from gpuscope.clock import CLOCK

    skew = CLOCK.wall() - time.time()
    rows = _log(out)
    assert len(rows) == LINES
    return [t - skew - float(text.split("printed_at=")[1]) for t, text in rows]


def _record(tmp_path: Path, name: str, cmd: list[str], *opts: str):
    out = tmp_path / name
    r = CliRunner().invoke(app, ["record", "--no-summary", "--out", str(out), *opts, "--", *cmd])
    return r, out, json.loads((out / "meta.json").read_text())


@pytest.mark.parametrize("printer", ["c", "python"])
def test_line_buffered_output_stamped_when_printed_under_the_pty(tmp_path, printer, request):
    cmd = request.getfixturevalue("c_printer") if printer == "c" else [sys.executable, "-c", PY_PRINTER]
    r, out, meta = _record(tmp_path, "pty", cmd)
    assert r.exit_code == 0, r.stderr
    assert meta["capture"] == "pty" and meta["output_burst_lines"] == 0
    late = _lateness(out)
    assert all(-0.005 <= x <= ACCEPT_S for x in late), late  # never before the print (5 ms of clock slack)
    assert "bursts" not in r.stderr and not meta["notes"]
    assert r.stdout.count("printed_at=") == LINES  # still passed through

    r, out, meta = _record(tmp_path, "pipes", cmd, "--no-pty")
    assert r.exit_code == 0, r.stderr
    assert meta["capture"] == "pipes"
    late = _lateness(out)
    assert late[0] >= (LINES - 2) * GAP_S  # the whole output came at exit: the first line far too late
    warn = f"{LINES} of {LINES} lines arrived in bursts: the program's output was buffered"
    assert warn in r.stderr and warn in meta["notes"][0] and "without --no-pty" in meta["notes"][0]
    assert meta["output_burst_lines"] == LINES


def test_pty_quirks_reach_the_log_as_plain_lines(tmp_path):
    """CRLF, colours, a \\r progress bar, a terminal title and a NUL: timing.log keeps what a
    terminal would show, a progress bar's every state as a line of its own (issue 33 class 8);
    our own stdout gets the bytes as they came."""
    child = r"""
import sys
w = sys.stdout.write
w("isatty=%s\n" % sys.stdout.isatty())
w("\x1b[2m2026-11-30T12:00:00Z\x1b[0m \x1b[32mINFO\x1b[0m CUZK_TIMING: mutex_held_ms=12\n")
w("windows line\r\n")
w("\r  0%|          |\r 50%|#####     |\r100%|##########|\n")
w("\x1b]0;a title\x07titled \x00line\n")
w("no newline at the end")
"""
    r, out, meta = _record(tmp_path, "q", [sys.executable, "-c", child])
    assert r.exit_code == 0, r.stderr
    assert [t for _, t in _log(out)] == [
        "isatty=True", "2026-11-30T12:00:00Z INFO CUZK_TIMING: mutex_held_ms=12", "windows line",
        "  0%|          |", " 50%|#####     |", "100%|##########|", "titled line", "no newline at the end"]
    assert "\x1b[32mINFO" in r.stdout and "\r 50%" in r.stdout  # passed through untouched
    assert "\r\n" not in r.stdout.replace("windows line\r\n", "")  # no ONLCR: \n stays \n
    r, out, _ = _record(tmp_path, "q2", [sys.executable, "-c", child], "--no-pty")
    assert _log(out)[0][1] == "isatty=False" and _log(out)[1][1].endswith("mutex_held_ms=12")


def test_stdout_and_stderr_interleave_in_arrival_order(tmp_path):
    """One reader takes both streams as they come. (Two lines printed within microseconds of
    each other on the two streams may swap: the pty hands bytes over through the tty layer.)"""
    child = r"""
import sys, time
for i in range(4):
    print(f"out {i}")                     # line-buffered: the pty
    time.sleep(0.015)
    print(f"err {i}", file=sys.stderr)    # a pipe, line-buffered too
    time.sleep(0.015)
"""
    r, out, _ = _record(tmp_path, "i", [sys.executable, "-c", child])
    assert r.exit_code == 0, r.stderr
    rows = _log(out)
    assert [t for _, t in rows] == [f"{s} {i}" for i in range(4) for s in ("out", "err")]
    assert [t for t, _ in rows] == sorted(t for t, _ in rows)
    assert r.stdout == "".join(f"out {i}\n" for i in range(4))
    assert "".join(f"err {i}\n" for i in range(4)) in r.stderr


def test_no_pty_available_falls_back_to_pipes_with_a_note(tmp_path, monkeypatch):
    def no_pty():
        raise OSError(errno.ENOENT, "No such file or directory")

    monkeypatch.setattr(pty, "openpty", no_pty)
    r, out, meta = _record(tmp_path, "np", [sys.executable, "-c", "import sys; print(sys.stdout.isatty())"])
    assert r.exit_code == 0 and r.stdout == "False\n"
    assert meta["capture"] == "pipes"
    assert meta["notes"][0].startswith("no pseudo-terminal available (No such file or directory): "
                                       "the command's stdout is captured through a pipe")
    assert "no pseudo-terminal available" in r.stderr


def _gpuscope(*args: str) -> list[str]:
    return [sys.executable, "-m", "gpuscope", "record", "--no-summary", *args]


def _env() -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    env.pop("PYTHONUNBUFFERED", None)
    return env


def test_on_a_terminal_the_child_gets_our_window_size_and_no_terminal_stdin(tmp_path):
    """gpuscope on a terminal (a pty of the test's, 33 rows x 101 columns): the command's pty has
    the same size, and its stdin is /dev/null (reading the terminal from the background process
    group would stop it for ever)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 33, 101, 0, 0))
    child = "import os, sys; print('size', tuple(os.get_terminal_size())); print('stdin', repr(sys.stdin.read()))"
    out = tmp_path / "tty"
    p = subprocess.Popen(_gpuscope("--out", str(out), "--", sys.executable, "-c", child),
                         stdin=slave, stdout=slave, stderr=slave, env=_env(), cwd=tmp_path)
    os.close(slave)
    seen, deadline = b"", time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            chunk = os.read(master, 4096)
        except OSError:  # EIO: gpuscope and its child are gone
            break
        if not chunk:
            break
        seen += chunk
    os.close(master)
    assert p.wait(timeout=10) == 0, seen
    assert b"size (101, 33)" in seen and b"stdin ''" in seen
    meta = json.loads((out / "meta.json").read_text())
    assert meta["stdin"] == "/dev/null" and meta["capture"] == "pty"


def test_piped_stdin_reaches_the_child(tmp_path):
    out = tmp_path / "in"
    p = subprocess.run(_gpuscope("--out", str(out), "--", sys.executable, "-c", "print(input()[::-1])"),
                       input="olleh\n", capture_output=True, text=True, env=_env(), cwd=tmp_path, timeout=30)
    assert p.returncode == 0 and p.stdout == "hello\n", p.stderr
    assert json.loads((out / "meta.json").read_text())["stdin"] == "inherited"


def _stream(stamps, sizes, ended_at):
    from gpuscope.record_capture import StreamCapture

    o = StreamCapture("stdout", -1, None, None)
    o.stamps, o.sizes, o.ended_at = list(stamps), list(sizes), ended_at
    return o


def test_burst_rule_on_the_h200_printf_capture_and_on_prover_blocks():
    """The captured C program of issue 11 (30 lines, all at exit) is one burst; a prover that
    prints its tenure's 7 lines at once, tenure after tenure, is not."""
    log = DATA / "h200_foreign/runs/printf_pipe/timing.log"
    rows = [ISO.match(line) for line in log.read_text().splitlines()]
    stamps = [datetime.fromisoformat(m.group(1) + "+00:00").timestamp() for m in rows]
    sizes = [len(m.group(2)) + 1 for m in rows]
    assert _stream(stamps, sizes, stamps[-1] + 0.001).burst_lines() == 30
    assert _stream(stamps, sizes, None).burst_lines() == 30  # ~3.9 KB at once: a buffer flush
    blocks = [k * 0.5 + j * 1e-5 for k in range(40) for j in range(7)]
    assert _stream(blocks, [70] * len(blocks), blocks[-1] + 0.001).burst_lines() == 7  # the last only
    spread = [k * 0.05 for k in range(30)]
    assert _stream(spread, [200] * 30, spread[-1]).burst_lines() == 0


def test_a_recorded_progress_bar_keeps_every_state_and_reads_as_its_iterations(tmp_path):
    """Issue 33 class 8: `record` of a tqdm-style bar (\\r redraws, one newline at the end) kept the
    bar's last state only, so 40 iterations read as 1; each state is now a line, stamped when the
    next redraw came, and analyze reads the iterations as it does from the same bar in a file."""
    child = r"""
import sys, time
w = sys.stdout.write
for i in range(41):
    w("\r%3d%%|%-10s| %d/40 [00:%02d<00:%02d, 50.00it/s]" % (i * 100 // 40, "#" * (i // 4), i, i // 50, 1))
    sys.stdout.flush()
    time.sleep(0.02)
w("\n")
"""
    r, out, _ = _record(tmp_path, "bar", [sys.executable, "-c", child])
    assert r.exit_code == 0, r.stderr
    states = [t for _, t in _log(out)]
    assert len(states) == 41 and states[-1].startswith("100%|##########| 40/40")
    stamps = [s for s, _ in _log(out)]
    assert stamps == sorted(stamps) and stamps[-1] - stamps[0] > 0.4  # stamped as they came, not at the end
    a = CliRunner().invoke(app, ["analyze", str(out), "--json"])
    assert a.exit_code == 0, a.output
    assert json.loads(a.stdout)["log"]["records"] >= 35


def test_a_carriage_return_split_across_reads_before_its_newline_is_one_line_end():
    """The false-fire side: `\\r\\n` arriving in two reads is a line's end, not a redraw of it."""
    from gpuscope.record_capture import StreamCapture

    class _Log:
        lines: list[str] = []

        def write_line(self, text, mono=None):
            self.lines.append(text)

    log = _Log()
    s = StreamCapture("stdout", -1, None, log)  # type: ignore[arg-type]
    for chunk in (b"windows line\r", b"\nnext\r", b"\n", b"\r 1/2\r 2/2\n"):
        s.feed(chunk, 0.0)
    assert log.lines == ["windows line", "next", " 1/2", " 2/2"]

"""The Rich panel itself, on a real pseudo-terminal: `watch` and `record --live` over the fake NVML."""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
WRAP = r"""
import sys
from gpuscope import nvml
from gpuscope.cli import main
from tests.fake_nvml import FakeGpu, FakeNvml
nvml.use_backend(FakeNvml([FakeGpu(counters=[(i * 10**7, i, 0) for i in range(100000)])]))
main(sys.argv[1:])
"""


def _on_a_terminal(args: list[str], limit_s: float = 40.0) -> tuple[int, str]:
    master, slave = pty.openpty()
    env = {**os.environ, "COLUMNS": "100", "LINES": "40", "TERM": "xterm-256color"}
    p = subprocess.Popen([sys.executable, "-c", WRAP, *args], cwd=REPO, stdin=slave, stdout=slave, stderr=slave,
                         env=env, close_fds=True)
    os.close(slave)
    out = bytearray()
    end = time.monotonic() + limit_s
    try:
        while time.monotonic() < end:
            r, _, _ = select.select([master], [], [], 0.2)
            if r:
                try:
                    chunk = os.read(master, 65536)
                except OSError:  # EIO: the terminal's last holder is gone
                    break
                if not chunk:
                    break
                out += chunk
            elif p.poll() is not None:
                break
    finally:
        if p.poll() is None:
            p.kill()
        p.wait(10)
        os.close(master)
    return p.returncode, out.decode("utf-8", errors="replace")


def test_watch_draws_the_panel_on_a_terminal():
    rc, text = _on_a_terminal(["watch", "--seconds", "2.5"])
    assert rc == 0, text[-2000:]
    assert "GPU 0 NVIDIA H200" in text and "history" in text and "PCIe RX" in text
    assert "watched" in text and "refreshes" in text
    assert "\x1b[" in text  # Rich redrew the panel in place


def test_record_live_on_a_terminal_scrolls_the_output_above_the_panel(tmp_path):
    out = tmp_path / "run"
    rc, text = _on_a_terminal(["record", "--live", "--out", str(out), "--no-summary", "--", sys.executable, "-c",
                               "import time\nfor i in range(3):\n    print(f'step={i} step_ms=10', flush=True)\n"
                               "    time.sleep(0.5)"])
    assert rc == 0, text[-2000:]
    assert all(f"step={i} step_ms=10" in text for i in range(3)) and "GPU 0" in text
    assert json.loads((out / "meta.json").read_text())["status"] == "complete"
    assert "step=2 step_ms=10" in (out / "timing.log").read_text()

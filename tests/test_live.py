"""The live view over the fake NVML: LiveState (analyze's classes, final intervals counted once),
`gpuscope watch` (plain lines off a terminal, its summary, no NVML), `record --live` (a complete
run directory, also on SIGINT) and the Rich panel."""

from __future__ import annotations

import io
import json
import math
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from gpuscope import nvml
from gpuscope.analysis.evidence.samples.samplegrid import CLASSES, build_grid
from gpuscope.cli import app
from gpuscope.live.state import LiveState
from gpuscope.live.view import panel, plain_line
from gpuscope.sampler import ListSink, Sampler, TeeSink
from tests.fake_nvml import FakeGpu, FakeNvml

REPO = Path(__file__).resolve().parents[1]


class _Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def mono(self) -> float:
        return self.t


def _rows(n: int, sm_every: int = 5):
    """Rows as the sampler writes them: PCIe every 20 ms, GPM every 100 ms; the first half the
    SMs compute with PCIe quiet, the second half the SMs are idle while RX moves 20 GB/s."""
    out = []
    for i in range(n):
        t = i * 0.02
        busy = i < n // 2
        row = {"t_mono": t, "t_wall": 1e9 + t, "gpu": 0, "pcie_source": "counter", "wrap_suspect": 0,
               "rx_gbs": 0.01 if busy else 20.0, "tx_gbs": 0.0}
        if i % sm_every == 0:
            row["sm_active"] = 0.9 if busy else 0.0
        out.append(row)
    return out


def test_state_seconds_are_analyzes_classes_counted_once():
    clock = _Clock()
    st = LiveState([{"index": 0, "name": "NVIDIA H200"}], 50.0, window_s=100.0, clock=clock)
    rows = _rows(501)
    for k, r in enumerate(rows):
        st.write_row(r)
        if k % 37 == 0:  # snapshots at arbitrary moments must not count an interval twice
            clock.t = r["t_mono"]
            st.snapshot()
    clock.t = rows[-1]["t_mono"]
    v = st.snapshot()[0]
    grid = build_grid(pd.DataFrame(rows), 0, 50.0, basis="t_mono")
    want = {c: float(grid.dt[grid.cls == c].sum()) for c in CLASSES if (grid.cls == c).any()}
    assert set(v.state_seconds) <= set(CLASSES)
    for c, s in want.items():
        assert math.isclose(v.state_seconds.get(c, 0.0), s, abs_tol=1e-9), (c, v.state_seconds, want)
    assert v.state == "transferring" and v.shares["computing"] > 0.4 and v.shares["transferring"] > 0.4
    assert math.isclose(v.pcie_bytes["rx"], sum(r["rx_gbs"] for r in rows[1:]) * 1e9 * 0.02, rel_tol=1e-9)


def test_window_trims_rows_and_strip_covers_it():
    clock = _Clock()
    st = LiveState([{"index": 0}], 50.0, window_s=2.0, clock=clock)
    for r in _rows(500):
        st.write_row(r)
        clock.t = r["t_mono"]
        st.snapshot()
    v = st.snapshot()[0]
    assert len(st.frame()) < 2.0 / 0.02 + 20  # the window, not the 500 rows
    assert len(v.strip) == 40 and v.strip[-6:-1] == ["transferring"] * 5  # the last bin: not classed yet
    assert v.state_seconds["computing"] > 4.5  # what left the window was counted before it left


def test_plain_line_and_panel_name_the_state():
    clock = _Clock()
    st = LiveState([{"index": 0, "name": "NVIDIA H200\x1b[31m"}], 50.0, clock=clock)
    for r in _rows(200):
        st.write_row(r)
    clock.t = 4.0
    v = st.snapshot()[0]
    line = plain_line(v, "[HIGH] gpu_starved: ...")
    assert line.startswith("gpu=0 state=transferring") and "rx_gbs=20.00" in line and "| [HIGH]" in line
    from rich.console import Console

    con = Console(file=io.StringIO(), width=100, color_system=None)
    con.print(panel([v], "first", "title"))
    text = con.file.getvalue()
    assert "moving bytes, SMs idle" in text and "PCIe RX" in text and "\x1b" not in text


@pytest.fixture
def fake():
    nvml.use_backend(FakeNvml([FakeGpu(counters=[(i * 50_000_000, 0, i * 20_000) for i in range(1, 100_000)])]))
    yield
    nvml.use_backend(None)


def test_tee_feeds_one_sampler_to_the_file_and_the_view(fake):
    nv = nvml.get()
    st, lst = LiveState([{"index": 0}], 50.0), ListSink()
    s = Sampler(nv, [0], TeeSink(lst, [st]), interval_s=0.02).start()
    time.sleep(0.6)
    s.stop()
    assert st.rows == len(lst.rows) > 5


def test_a_failing_tap_is_dropped_and_named_the_file_goes_on():
    class Bad:
        def write_row(self, row):
            raise RuntimeError("boom")

    errs, lst = [], ListSink()
    tee = TeeSink(lst, [Bad()], on_error=errs.append)
    tee.write_row({"a": 1})
    tee.write_row({"a": 2})
    assert len(lst.rows) == 2 and len(errs) == 1 and "boom" in errs[0]


def test_watch_plain_lines_and_summary(fake):
    r = CliRunner().invoke(app, ["watch", "--seconds", "1.6", "--refresh", "0.3", "--window", "5"])
    assert r.exit_code == 0, r.stderr
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("gpu=0 ")]
    assert len(lines) >= 3 and all("state=" in ln for ln in lines)
    assert "refreshes" in r.stderr and "gpuscope CPU" in r.stderr


def test_watch_without_nvml_exit_5():
    nvml.use_backend(FakeNvml([], init_error="LibraryNotFound"))
    try:
        r = CliRunner().invoke(app, ["watch", "--seconds", "1"])
    finally:
        nvml.use_backend(None)
    assert r.exit_code == 5 and "cannot watch" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.parametrize("args,needle", [(["--refresh", "0"], "--refresh"), (["--window", "-1"], "--window"),
                                         (["--metrics", "nohost:port"], "--metrics"), (["--gpus", "3"], "no GPU 3")])
def test_watch_usage_errors(fake, args, needle):
    r = CliRunner().invoke(app, ["watch", "--seconds", "1", *args])
    assert r.exit_code == 2 and needle in r.stderr


def test_record_live_leaves_a_complete_run_directory(fake, tmp_path):
    out = tmp_path / "run"
    r = CliRunner().invoke(app, ["record", "--live", "--out", str(out), "--no-summary", "--",
                                 sys.executable, "-c", "import time; print('step=1 step_ms=5'); time.sleep(1.2)"])
    assert r.exit_code == 0, r.stderr
    meta = json.loads((out / "meta.json").read_text())
    assert meta["status"] == "complete"
    assert len((out / "samples.csv").read_text().splitlines()) > 10
    assert "step=1" in r.stdout and "live view:" in r.stderr
    assert any(ln.startswith("gpu=0 state=") for ln in r.stderr.splitlines())  # plain lines on stderr


CHILD = r"""
import signal, sys, time
from gpuscope import nvml
from gpuscope.cli import main
from tests.fake_nvml import FakeGpu, FakeNvml
nvml.use_backend(FakeNvml([FakeGpu(counters=[(i * 10**7, i, 0) for i in range(100000)])]))
main(["record", "--live", "--out", sys.argv[1], "--no-summary", "--", sys.executable, "-c",
      "import time; print('ready', flush=True); time.sleep(30)"])
"""


def test_record_live_sigint_ends_the_command_and_finishes_the_run(tmp_path):
    out = tmp_path / "run"
    p = subprocess.Popen([sys.executable, "-c", CHILD, str(out)], cwd=REPO, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not (out / "samples.csv").exists():
        time.sleep(0.1)
    time.sleep(1.0)
    p.send_signal(2)
    try:
        _, err = p.communicate(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
    meta = json.loads((out / "meta.json").read_text())
    assert meta["status"] == "interrupted" and meta["signals_received"] == ["SIGINT"], err
    assert p.returncode == 130
    assert len((out / "samples.csv").read_text().splitlines()) > 5
    r = CliRunner().invoke(app, ["analyze", str(out), "--json"])
    assert r.exit_code == 0 and json.loads(r.stdout)["samples"]["activity"]["classes"]


def test_grid_reused_not_copied():
    # the live module classifies through samplegrid.build_grid: no second classifier
    src = (REPO / "gpuscope" / "live" / "state.py").read_text()
    assert "build_grid" in src and "SM_IDLE" not in src and np is not None


def test_memory_stays_bounded_when_nobody_looks():
    st = LiveState([{"index": 0}], 50.0, window_s=1.0, clock=_Clock())
    for r in _rows(20_000):
        st.write_row(r)
    assert len(st.frame()) <= 1.0 * 200 + 1000 + 1
    v = st.snapshot()[0]
    assert sum(v.state_seconds.values()) == pytest.approx(20_000 * 0.02, rel=0.01)


def test_record_metrics_without_nvml_still_runs_the_command(tmp_path):
    nvml.use_backend(FakeNvml([], init_error="LibraryNotFound"))
    try:
        r = CliRunner().invoke(app, ["record", "--metrics", "127.0.0.1:0", "--out", str(tmp_path / "run"),
                                     "--no-summary", "--", sys.executable, "-c", "raise SystemExit(3)"])
    finally:
        nvml.use_backend(None)
    assert r.exit_code == 3 and "serving metrics on http://127.0.0.1:" in r.stderr and "no samples" in r.stderr


WATCH = r"""
import sys
from gpuscope import nvml
from gpuscope.cli import main
from tests.fake_nvml import FakeGpu, FakeNvml
nvml.use_backend(FakeNvml([FakeGpu(counters=[(i * 10**7, i, 0) for i in range(100000)])]))
print("starting", flush=True)
main(["watch", "--refresh", "0.2"])
"""


@pytest.mark.parametrize("sig", [2, 15])
def test_watch_quits_cleanly_on_sigint_and_sigterm(sig):
    p = subprocess.Popen([sys.executable, "-c", WATCH], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    try:
        assert p.stdout.readline().strip() == "starting"
        line = p.stdout.readline()  # the first plain line: the loop is running
        assert line.startswith("gpu=0 "), line
        p.send_signal(sig)
        _, err = p.communicate(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 0, err
    assert f"stopped by {'SIGINT' if sig == 2 else 'SIGTERM'}" in err and "Traceback" not in err

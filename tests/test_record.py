"""`gpuscope record -- CMD` end to end: pass-through, timing.log stamps, meta.json, samples, signals."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpuscope import nvml
from gpuscope.cli import app
from gpuscope.rundir import SAMPLE_COLUMNS, read_samples
from tests.fake_nvml import FakeGpu, FakeNvml

REPO = Path(__file__).resolve().parents[1]
ISO = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6})Z (.*)$")

CHILD = r"""
import sys, time
print("child stdout line", flush=True)
for line in [
    "CUZK_TIMING: pre_lock_cpu_ms=5 mutex_wait_ms=100",
    "CUZK_NTT_H: d_b_alloc=1ms ntt_kernels=287ms coset_intt_sync=113ms msm_init=1ms msm_invoke=634ms msm_dtor=1ms total=1037ms",
    "CUZK_TIMING: gpu_tid=0 ntt_msm_h_ms=1037",
    "CUZK_TIMING: gpu_tid=0 barrier_wait_ms=0",
    "CUZK_TIMING: gpu_tid=0 batch_add_ms=401",
    "CUZK_TIMING: gpu_tid=0 tail_msm_ms=198 gpu_total_ms=1636",
]:
    print(line, file=sys.stderr, flush=True)
time.sleep(0.3)
print("CUZK_TIMING: mutex_held_ms=1640 total_start_fn_ms=1800", file=sys.stderr, flush=True)
sys.exit(3)
"""


@pytest.fixture
def runner():
    return CliRunner()


@pytest.fixture(autouse=True)
def _restore_nvml():
    yield
    nvml.use_backend(None)


def _stamps(path: Path) -> list[tuple[float, str]]:
    out = []
    for line in path.read_text().splitlines():
        m = ISO.match(line)
        assert m, f"line without ISO prefix: {line!r}"
        out.append((datetime.fromisoformat(m.group(1) + "+00:00").timestamp(), m.group(2)))
    return out


def test_record_child_fails_exit_code_log_meta_samples(runner, tmp_path):
    nvml.use_backend(FakeNvml([FakeGpu(counters=[(i * 50_000_000, i * 1000, 0) for i in range(10_000)])]))
    out = tmp_path / "run"
    r = runner.invoke(app, ["record", "--out", str(out), "--interval", "10", "--", sys.executable, "-c", CHILD])
    assert r.exit_code == 3
    assert "child stdout line" in r.stdout and "CUZK_TIMING" not in r.stdout.split("child stdout line")[0]
    assert "CUZK_TIMING: gpu_tid=0 batch_add_ms=401" in r.stderr  # passed through to our stderr
    assert "child stdout line" not in r.stderr
    assert f"run directory: {out}" in r.stderr and "status failed, exit code 3" in r.stderr
    stamps = _stamps(out / "timing.log")
    texts = [t for _, t in stamps]
    # stdout (the pty) and stderr (a pipe) printed within a moment of each other may arrive in
    # either order: the pty hands its bytes over through the kernel's tty layer, a little later
    assert "child stdout line" in texts and texts[-1].startswith("CUZK_TIMING: mutex_held_ms=1640")
    cuzk = [t for t in texts if t.startswith("CUZK")]
    assert cuzk[0].startswith("CUZK_TIMING: pre_lock_cpu_ms=5") and len(texts) == 8 and len(cuzk) == 7
    assert [t for t, _ in stamps] == sorted(t for t, _ in stamps)
    # arrival times: the last line came ~0.3 s after the others
    assert stamps[-1][0] - stamps[-2][0] >= 0.25
    meta = json.loads((out / "meta.json").read_text())
    assert meta["status"] == "failed" and meta["exit_code"] == 3 and meta["schema_version"] == 1
    assert meta["command"][0] == sys.executable and meta["gpus"][0]["uuid"] == "GPU-fake-0000"
    assert meta["sampler"]["rows"] > 10 and meta["sampler"]["pcie_source"] == {"0": "counter"}
    assert meta["started"] < meta["ended"]
    df = read_samples(out)
    assert list(df.columns) == list(SAMPLE_COLUMNS) and len(df) == meta["sampler"]["rows"]
    assert (df["gpu"] == 0).all() and df["rx_gbs"].iloc[1:].notna().all()
    assert df["sm_active"].notna().sum() >= 2  # GPM rows, ~10 Hz
    # samples cover the child's lifetime on the same clock as the log stamps
    assert df["t_wall"].min() <= stamps[-1][0] <= df["t_wall"].max() + 0.05
    summary = json.loads((out / "summary.json").read_text())
    assert summary["log"]["records"] == 1


def test_record_without_nvml_still_runs(runner, tmp_path):
    nvml.use_backend(FakeNvml([], init_error="LibraryNotFound"))
    out = tmp_path / "run"
    r = runner.invoke(app, ["record", "--no-summary", "--out", str(out), "--", sys.executable, "-c", "print('ok')"])
    assert r.exit_code == 0
    assert r.stdout == "ok\n"
    assert "no samples: no NVIDIA driver found" in r.stderr
    meta = json.loads((out / "meta.json").read_text())
    assert meta["status"] == "complete" and meta["sampler"].startswith("no samples:")
    assert (out / "samples.csv").read_text() == ",".join(SAMPLE_COLUMNS) + "\n"


def test_record_no_timing_lines_says_so(runner, tmp_path):
    nvml.use_backend(FakeNvml([], init_error="LibraryNotFound"))
    r = runner.invoke(app, ["record", "--out", str(tmp_path / "r"), "--", sys.executable, "-c", "print('plain')"])
    assert r.exit_code == 0
    assert r.stdout == "plain\n"
    assert r.stderr.count("no timing lines") == 1


def test_record_unwritable_out_runs_child_reports_once(runner, tmp_path):
    nvml.use_backend(FakeNvml([FakeGpu()]))
    (tmp_path / "file").write_text("x")
    r = runner.invoke(app, ["record", "--out", str(tmp_path / "file" / "run"), "--",
                            sys.executable, "-c", "print('still ran'); raise SystemExit(4)"])
    assert r.exit_code == 4
    assert r.stdout == "still ran\n"
    assert r.stderr.count("cannot write run directory") == 1
    assert len(r.stderr.strip().splitlines()) == 1


def test_record_gpu_lost_mid_run_reported_once(runner, tmp_path):
    fake = FakeNvml([FakeGpu(counters=[(0, 0, 0)])])
    fake.gpus[0].lost_after_calls = 60
    nvml.use_backend(fake)
    out = tmp_path / "run"
    r = runner.invoke(app, ["record", "--no-summary", "--out", str(out), "--interval", "5", "--",
                            sys.executable, "-c", "import time; time.sleep(0.5); print('done')"])
    assert r.exit_code == 0 and r.stdout == "done\n"
    assert r.stderr.count("stopped answering") == 1
    meta = json.loads((out / "meta.json").read_text())
    assert meta["status"] == "complete" and "0" in meta["sampler"]["lost_gpus"]
    assert len(read_samples(out)) >= 1


@pytest.mark.parametrize("args,needle", [
    (["--gpus", "3"], "--gpus: no GPU 3"),
    (["--gpus", "a"], "bad GPU index"),
    (["--interval", "2"], "--interval must be at least 5 ms"),
    (["--interval", "nan"], "--interval must be at least 5 ms and finite, got nan"),
    (["--interval", "inf"], "--interval must be at least 5 ms and finite, got inf"),
    (["--interval", "-inf"], "--interval must be at least 5 ms"),
    (["--pcie", "psychic"], "--pcie must be one of"),
])
def test_record_usage_errors(runner, tmp_path, args, needle):
    nvml.use_backend(FakeNvml([FakeGpu()]))
    r = runner.invoke(app, ["record", "--out", str(tmp_path / "r"), *args, "--", sys.executable, "-c", "pass"])
    assert r.exit_code == 2
    assert r.stdout == ""
    assert needle in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "r").exists()


def test_record_refuses_to_mix_runs(runner, tmp_path):
    nvml.use_backend(FakeNvml([], init_error="LibraryNotFound"))
    out = tmp_path / "r"
    assert runner.invoke(app, ["record", "--no-summary", "--out", str(out), "--", sys.executable, "-c", "pass"]).exit_code == 0
    r = runner.invoke(app, ["record", "--no-summary", "--out", str(out), "--", sys.executable, "-c", "print(1)"])
    assert r.exit_code == 2 and "already holds a run" in r.stderr and r.stdout == ""


def test_record_no_command_and_not_found(runner, tmp_path):
    nvml.use_backend(FakeNvml([], init_error="LibraryNotFound"))
    r = runner.invoke(app, ["record", "--out", str(tmp_path / "a")])
    assert r.exit_code == 2 and "no command given" in r.stderr and r.stdout == ""
    r = runner.invoke(app, ["record", "--no-summary", "--out", str(tmp_path / "b"), "--", "no-such-cmd-xyz"])
    assert r.exit_code == 127 and r.stderr.count("cannot run 'no-such-cmd-xyz'") == 1 and r.stdout == ""
    assert json.loads((tmp_path / "b" / "meta.json").read_text())["status"] == "failed"


def test_record_help_has_example(runner):
    r = runner.invoke(app, ["record", "--help"])
    assert r.exit_code == 0 and "Example: gpuscope record" in r.stdout and r.stderr == ""


SIG_CHILD = r"""
import signal, sys, time
def h(signum, frame):
    print(f"child got {signal.Signals(signum).name}", flush=True)
    sys.exit(42)
for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT):
    signal.signal(s, h)
print("ready", flush=True)
time.sleep(30)
"""


def _spawn(tmp_path: Path, child: str) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(REPO), PYTHONUNBUFFERED="1")
    return subprocess.Popen(
        [sys.executable, "-m", "gpuscope", "record", "--no-summary", "--out", str(tmp_path / "run"),
         "--", sys.executable, "-c", child],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path,
    )


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT])
def test_signal_forwarded_to_child(tmp_path, sig):
    p = _spawn(tmp_path, SIG_CHILD)
    try:
        assert p.stdout.readline().strip() == "ready"
        time.sleep(0.1)
        p.send_signal(sig)
        out, err = p.communicate(timeout=20)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 42, err
    assert out.count(f"child got {sig.name}") == 1  # delivered exactly once
    meta = json.loads((tmp_path / "run" / "meta.json").read_text())
    assert meta["status"] == "interrupted" and meta["exit_code"] == 42
    assert meta["signals_forwarded"] == meta["signals_received"] == [sig.name]
    assert f"{sig.name}: forwarded to the command's process group" in err
    assert "Traceback" not in err


def test_child_killed_by_signal_exit_128_plus_n(tmp_path):
    p = _spawn(tmp_path, "import os, signal; print('ready', flush=True); os.kill(os.getpid(), signal.SIGTERM)")
    out, err = p.communicate(timeout=20)
    assert p.returncode == 128 + signal.SIGTERM
    meta = json.loads((tmp_path / "run" / "meta.json").read_text())
    assert meta["status"] == "interrupted" and meta["child_returncode"] == -signal.SIGTERM


FULL_DISK = r"""
import resource, signal, sys
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # writes past the limit fail with EFBIG instead
resource.setrlimit(resource.RLIMIT_FSIZE, (12000, 12000))
from gpuscope import nvml
from tests.fake_nvml import FakeGpu, FakeNvml
nvml.use_backend(FakeNvml([FakeGpu(counters=[(i * 10**7, i, 0) for i in range(100000)])]))
from gpuscope.cli import main
main(["record", "--no-summary", "--interval", "5", "--out", sys.argv[1], "--",
      sys.executable, "-c", "import time; time.sleep(1.0); print('child done'); raise SystemExit(7)"])
"""


def test_record_disk_full_mid_run(tmp_path):
    """The file-size limit plays a disk filling up: reported once, child unharmed, files readable."""
    env = dict(os.environ, PYTHONPATH=str(REPO))
    out = tmp_path / "run"
    p = subprocess.run([sys.executable, "-c", FULL_DISK, str(out)], capture_output=True, text=True,
                       env=env, cwd=REPO, timeout=60)
    assert p.returncode == 7, p.stderr
    assert p.stdout.startswith("child done\n")
    assert p.stderr.count("cannot write") == 1 and "Traceback" not in p.stderr
    df = read_samples(out)  # what was written before the disk "filled" stays readable
    assert 10 <= len(df) and (out / "samples.csv").stat().st_size <= 12000
    meta = json.loads((out / "meta.json").read_text())
    assert meta["status"] == "failed" and meta["exit_code"] == 7  # meta.json is small: it still fits
    assert "cannot write samples.csv" in meta["errors"][0]


def test_record_pcie_gpm_mode(runner, tmp_path):
    nvml.use_backend(FakeNvml([FakeGpu(counters=[(0, 0, 0)])]))
    out = tmp_path / "run"
    r = runner.invoke(app, ["record", "--no-summary", "--pcie", "gpm", "--out", str(out), "--",
                            sys.executable, "-c", "import time; time.sleep(0.5)"])
    assert r.exit_code == 0, r.stderr
    meta = json.loads((out / "meta.json").read_text())
    assert meta["sampler"]["pcie_source"] == {"0": "gpm"} and meta["sampler"]["interval_ms"] == 100.0
    df = read_samples(out)
    assert (df["pcie_source"] == "gpm").all() and df["rx_gbs"].notna().sum() >= 2


@pytest.mark.parametrize(("rc", "forwarded", "want"), [
    (0, [], (0, "complete")), (3, [], (3, "failed")), (0, [signal.SIGINT], (0, "interrupted")),
    (42, [signal.SIGTERM], (42, "interrupted")), (-signal.SIGINT, [], (130, "interrupted")),
    (-signal.SIGHUP, [], (129, "interrupted")), (-signal.SIGQUIT, [], (131, "interrupted")),
    (-signal.SIGKILL, [], (137, "failed")),
    (-signal.SIGKILL, [signal.SIGINT], (137, "interrupted")),
])
def test_how_the_child_ended(rc, forwarded, want):
    from gpuscope.recorder import _ending

    assert _ending(rc, forwarded) == want


def test_record_out_empty_string_refused(runner, tmp_path, monkeypatch):
    nvml.use_backend(FakeNvml([], init_error="LibraryNotFound"))
    monkeypatch.chdir(tmp_path)
    r = runner.invoke(app, ["record", "--out", "", "--", sys.executable, "-c", "print(1)"])
    assert r.exit_code == 2 and r.stdout == ""
    assert "empty path names the current directory" in r.stderr and list(tmp_path.iterdir()) == []


def test_two_records_into_one_out_at_once(tmp_path):
    """Two `record --out same` at once: one records, the other is refused before its command runs."""
    env = dict(os.environ, PYTHONPATH=str(REPO), PYTHONUNBUFFERED="1")
    out = tmp_path / "same"
    child = "import os, time; print('child of', os.getppid(), flush=True); time.sleep(1)"
    procs = [subprocess.Popen([sys.executable, "-m", "gpuscope", "record", "--no-summary", "--out", str(out),
                               "--", sys.executable, "-c", child],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path)
             for _ in range(2)]
    res = [(p.returncode, o, e) for p in procs for o, e in [p.communicate(timeout=30)]]
    assert sorted(rc for rc, _, _ in res) == [0, 2], res
    (won,) = [p for p, (rc, _, _) in zip(procs, res, strict=True) if rc == 0]
    (_, lost_out, lost_err) = next(r for r in res if r[0] == 2)
    assert lost_out == "" and len(lost_err.strip().splitlines()) == 1
    assert "is taken by another gpuscope run" in lost_err or "already holds a run" in lost_err
    log = (out / "timing.log").read_text().splitlines()
    assert len(log) == 1 and log[0].endswith(f"child of {won.pid}")


def test_record_steady_keeps_every_tick(tmp_path, monkeypatch):
    """--steady: the sampler never slows to the quiet interval; by default it does."""
    import gpuscope.sampler as smp

    seen = []
    orig = smp.Sampler.__init__

    def spy(self, *a, **kw):
        seen.append(kw.get("quiet_interval_s"))
        orig(self, *a, **kw)

    monkeypatch.setattr(smp.Sampler, "__init__", spy)
    nvml.use_backend(FakeNvml([FakeGpu(counters=[(0, 0, 0)])]))
    try:
        for i, extra in enumerate((["--steady"], [])):
            r = CliRunner().invoke(app, ["record", "--out", str(tmp_path / f"r{i}"), "--no-summary", *extra,
                                         "--", sys.executable, "-c", "print('x')"])
            assert r.exit_code == 0, r.stderr
    finally:
        nvml.use_backend(None)
    assert seen == [None, smp.QUIET_INTERVAL_S]

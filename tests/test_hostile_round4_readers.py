"""Hostile input, round four (issue 34), the readers and time: classes 1, 2, 3, 9, 16, 17, 18.
Each case writes its own input; each fails on the code before its fix."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from gpuscope.cli import app
from gpuscope.errors import EXIT_RESOURCE, EXIT_USAGE, UsageError
from gpuscope.rolemodel import load_model

from .conftest import DATA, EXAMPLES

LOG = EXAMPLES / "article_excerpt.log"


def cli(*args, input=None):
    r = CliRunner().invoke(app, [str(a) for a in args], input=input)
    return r.exit_code, r.stdout, r.stderr


def one_line(stderr: str) -> str:
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("gpuscope: "), stderr
    assert "internal error" not in lines[0] and "Traceback" not in stderr
    return lines[0]


# -- 18: a [contains] cycle in a role model ----------------------------------------------------

_ROLES = 'held = "x"\n[roles]\nh2d = ["a", "b", "c"]\n[contains]\n'


@pytest.mark.parametrize("contains", [
    'a = { inner = "b", remainder_role = "gpu_compute" }\nb = { inner = "a", remainder_role = "gpu_compute" }\n',
    'a = { inner = "b", remainder_role = "gpu_compute" }\nb = { inner = "c", remainder_role = "gpu_compute" }\n'
    'c = { inner = "a", remainder_role = "gpu_compute" }\n',
])
def test_a_contains_cycle_is_refused_with_one_line(tmp_path, contains):
    p = tmp_path / "m.toml"
    p.write_text(_ROLES + contains)
    with pytest.raises(UsageError, match="a cycle"):
        load_model(p)
    code, _, err = cli("analyze", LOG, "--model", p)
    assert code == EXIT_USAGE and "a cycle" in one_line(err)


def test_a_contains_chain_without_a_cycle_is_still_a_model(tmp_path):
    # what would make the cycle check fire falsely: a chain (a holds b, b holds c), or two
    # outers sharing one inner; neither comes back to where it began
    p = tmp_path / "m.toml"
    p.write_text(_ROLES + 'a = { inner = "b", remainder_role = "gpu_compute" }\n'
                 'b = { inner = "c", remainder_role = "gpu_compute" }\n')
    assert load_model(p).contains["b"].inner == "c"
    p.write_text(_ROLES + 'a = { inner = "c", remainder_role = "gpu_compute" }\n'
                 'b = { inner = "c", remainder_role = "gpu_compute" }\n')
    assert set(load_model(p).contains) == {"a", "b"}


# -- 9: out of memory, anywhere ------------------------------------------------------------------

def test_memory_error_anywhere_is_exit_6_with_one_line(monkeypatch):
    import gpuscope.rolemodel as rolemodel

    def starve(*a, **k):
        raise MemoryError()

    monkeypatch.setattr(rolemodel, "model_from_dict", starve)
    code, _, err = cli("analyze", LOG)
    assert code == EXIT_RESOURCE and "out of memory" in one_line(err)


# -- 16: a floor above what was observed -------------------------------------------------------

def _bimodal_log(tmp_path, slow: int, n: int = 100):
    p = tmp_path / "bimodal.log"
    p.write_text("".join(f"step {i} data_ms={100.0 if i < slow else 1.0} compute_ms=10.0 "
                         f"step_ms={(100.0 if i < slow else 1.0) + 10.0}\n" for i in range(n)))
    return p


def test_the_cpu_floor_of_bimodal_steps_is_not_above_the_observed_time(tmp_path):
    from gpuscope.analysis import analyze
    from gpuscope.sources import open_source

    # data 100 ms in 51 of 100 steps, 1 ms in the rest: median x steps = 10 s, observed 6.15 s
    b = analyze(open_source(str(_bimodal_log(tmp_path, 51)))).bounds
    assert b["cpu_floor_s"] <= b["observed_s"] and b["observed_over_floor"] >= 1.0
    assert b["cpu_floor_s"] == pytest.approx(5.149)  # the data parts' whole time
    assert any("bimodal" in s for s in b["assumptions"])


def test_a_steady_or_right_skewed_log_keeps_its_median_floor(tmp_path):
    # what would make the mean fire falsely: a log whose medians x steps stay below the
    # observed (most steps fast, a few slow): the median floor, no assumption about it
    from gpuscope.analysis import analyze
    from gpuscope.sources import open_source

    b = analyze(open_source(str(_bimodal_log(tmp_path, 20)))).bounds
    assert b["cpu_per_partition_ms"] == pytest.approx(1.0)
    assert not any("bimodal" in s or "exceeds the observed" in s for s in b["assumptions"])


# -- 2: the run directory's claim file, read when meta.json says running ------------------------

RUN = DATA / "h200_bounds" / "runs" / "hbm_bound"


def _running_rundir(tmp_path):
    d = tmp_path / "run"
    shutil.copytree(RUN, d)
    meta = json.loads((d / "meta.json").read_text())
    meta["status"] = "running"
    (d / "meta.json").write_text(json.dumps(meta))
    return d


def _claim_fifo(c):
    os.mkfifo(c)


def _claim_zero(c):
    os.symlink("/dev/zero", c)


def _claim_huge_pid(c):
    c.write_text(json.dumps({"pid": 2**70, "host": socket.gethostname(), "claimed": "now"}))


def _claim_negative_pid(c):
    c.write_text(json.dumps({"pid": -3, "host": socket.gethostname(), "claimed": "now"}))


@pytest.mark.parametrize("make", [_claim_fifo, _claim_zero, _claim_huge_pid, _claim_negative_pid])
def test_a_hostile_claim_file_is_recorder_state_unknown_and_the_run_is_read(tmp_path, make):
    d = _running_rundir(tmp_path)
    (d / ".gpuscope-run").unlink(missing_ok=True)
    make(d / ".gpuscope-run")
    r = subprocess.run([sys.executable, "-m", "gpuscope", "analyze", str(d)],
                       capture_output=True, timeout=60, text=True)
    assert r.returncode == 0, r.stderr
    assert "recorder state is unknown" in r.stdout + r.stderr
    assert "internal error" not in r.stderr


def test_a_claim_of_a_live_recorder_still_says_so(tmp_path):
    # what would make the guard fire falsely: a good claim (this process, this host)
    from gpuscope import rundir

    d = _running_rundir(tmp_path)
    (d / ".gpuscope-run").unlink(missing_ok=True)
    (d / ".gpuscope-run").write_text(json.dumps({"pid": os.getpid(), "host": socket.gethostname(),
                                                 "claimed": "now"}) + "\n")
    assert rundir.recorder_alive(d) == (os.getpid(), True)
    assert "still being recorded" in rundir.running_note(d)

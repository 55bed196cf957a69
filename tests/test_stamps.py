"""A daemon log that stamps only its tracing lines (gen_daemon_log.py --prefix none): the
unstamped timing lines are placed between their stamped neighbours, so plot and export draw
it (issue 13: they exited 4 "no time stamps" while analyze built a timeline from it)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from typer.testing import CliRunner

from gpuscope.analysis.evidence.log.attribution import display_phases
from gpuscope.cli import app
from gpuscope.reports.lanes import assign_lanes
from gpuscope.sources import open_source
from tests.conftest import REPO


def _gen(tmp_path, prefix: str, gpus: int = 1):
    out = tmp_path / f"{prefix}-{gpus}.log"
    subprocess.run([sys.executable, str(REPO / "tools" / "gen_daemon_log.py"), "--prefix", prefix, "--gpus",
                    str(gpus), "--partitions", "12", "--seed", "5", "-o", str(out)], check=True,
                   capture_output=True)
    return out


@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    d = tmp_path_factory.mktemp("stamps")
    return {"plain": _gen(d, "none"), "iso": _gen(d, "iso"), "plain2": _gen(d, "none", gpus=2)}


def test_plain_log_draws_and_exports(logs, tmp_path):
    r = CliRunner().invoke(app, ["plot", str(logs["plain"]), "-o", str(tmp_path / "t.png")])
    assert r.exit_code == 0, r.stderr
    assert "unstamped lines placed between their stamped neighbours" in r.stdout
    r = CliRunner().invoke(app, ["export", str(logs["plain"]), "--perfetto", str(tmp_path / "t.json")])
    assert r.exit_code == 0 and "0 slices" not in r.stdout


@pytest.mark.parametrize("name", ["plain", "plain2"])
def test_placed_tenures_sit_where_the_stamped_log_has_them(logs, name):
    """Same simulation, stamped and not: each tenure's upload starts within 0.25 s of where the
    stamped log puts it, every GPU-side phase has its worker, and no worker needs an overflow
    lane (a worker's tenures never overlap)."""
    plain, _ = display_phases(open_source(logs[name]))
    iso, _ = display_phases(open_source(logs["iso"] if name == "plain" else logs[name].with_name("iso-1.log")))
    up = ["h2d", "ntt_kernels"]  # the picture names ntt_kernels without an h2d field for what it is
    up_p = np.sort(plain.loc[plain["phase"].isin(up), "t_start"].to_numpy())
    up_i = np.sort(iso.loc[iso["phase"].isin(up), "t_start"].to_numpy())
    if name == "plain":
        assert len(up_p) == len(up_i) == 12
        assert np.abs((up_p - up_p[0]) - (up_i - up_i[0])).max() < 0.25
    gpu_side = plain["phase"].isin([*up, "ntt", "coset_intt_sync", "msm", "barrier", "batch_add", "tail_msm",
                                    "lock_wait"])
    assert (plain.loc[gpu_side, "worker"] >= 0).all()
    labels = [lane.label for lane in assign_lanes(plain)]
    assert not [x for x in labels if x.startswith(("worker", "GPU0 worker", "GPU1 worker")) and "(" in x], labels


def test_a_fully_stamped_log_is_left_alone(logs):
    _, basis = display_phases(open_source(logs["iso"]))
    assert "unstamped" not in basis


def test_plain_log_html_has_its_picture(logs, tmp_path):
    out = tmp_path / "r.html"
    r = CliRunner().invoke(app, ["analyze", str(logs["plain"]), "--html", str(out)])
    assert r.exit_code == 0, r.stderr
    text = out.read_text()
    assert "<img alt='timeline'" in text and "(no timeline" not in text and "(no picture" not in text

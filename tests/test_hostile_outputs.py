"""Outputs that destroy nothing (issue 22): no report over an input of the same command, none
through a symbolic link, none half-written after a full disk (gpuscope/safe_output.py)."""

from __future__ import annotations

import errno
import os
import shutil

import pytest
from typer.testing import CliRunner

from gpuscope import safe_output
from gpuscope.cli import app
from gpuscope.errors import EXIT_RESOURCE, EXIT_USAGE, ResourceError

from .conftest import DATA, EXAMPLES

RUN = DATA / "h200_bounds" / "runs" / "hbm_bound"


def cli(*args):
    r = CliRunner().invoke(app, [str(a) for a in args])
    return r.exit_code, r.stdout, r.stderr


@pytest.fixture
def run(tmp_path):
    d = tmp_path / "run"
    shutil.copytree(RUN, d)
    return d


def _digest(d):
    return {p.name: p.read_bytes() for p in sorted(d.iterdir()) if p.is_file()}


@pytest.mark.parametrize("args", [
    ("export", "{run}", "--perfetto", "{run}/timing.log"),
    ("plot", "{run}", "-o", "{run}/picture.png"),  # a file of the input run directory (made below)
    ("analyze", "{run}", "--html", "{run}/meta.json"),
    ("analyze", "{run}/timing.log", "--html", "{run}/timing.log"),
    ("analyze", "{run}/timing.log", "--samples", "{run}/samples.csv", "--html", "{run}/samples.csv"),
])
def test_no_output_over_an_input(run, args):
    (run / "picture.png").write_bytes(b"an earlier picture")  # (plot -o RUN/samples.csv: refused by its suffix)
    before = _digest(run)
    code, _, err = cli(*[a.format(run=run) for a in args])
    assert code == EXIT_USAGE and "is an input of this command" in err and err.count("\n") == 1
    assert _digest(run) == before


def test_a_hard_link_of_the_input_is_the_input(tmp_path):
    log = tmp_path / "x.log"
    shutil.copy(EXAMPLES / "article_excerpt.log", log)
    os.link(log, tmp_path / "other.html")
    code, _, err = cli("analyze", log, "--html", tmp_path / "other.html")
    assert code == EXIT_USAGE and "is an input" in err
    assert log.read_bytes() == (EXAMPLES / "article_excerpt.log").read_bytes()


def test_new_files_in_an_input_run_directory_are_fine(run):
    code, _, err = cli("plot", run, "-o", run / "timeline.png")
    assert code == 0, err
    assert (run / "timeline.png").read_bytes()[:4] == b"\x89PNG"


def test_never_through_a_symbolic_link(tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("precious")
    (tmp_path / "link.html").symlink_to(victim)
    code, _, err = cli("analyze", EXAMPLES / "article_excerpt.log", "--html", tmp_path / "link.html")
    assert code == EXIT_USAGE and "symbolic link" in err
    csv = tmp_path / "csv"
    csv.mkdir()
    (csv / "components.csv").symlink_to(victim)
    code, _, err = cli("analyze", EXAMPLES / "article_excerpt.log", "--csv", csv)
    assert code == EXIT_USAGE and "symbolic link" in err
    assert victim.read_text() == "precious"
    dangling = tmp_path / "dangling.json"
    dangling.symlink_to(tmp_path / "made-by-the-link")
    code, _, err = cli("export", RUN, "--perfetto", dangling)
    assert code == EXIT_USAGE and not (tmp_path / "made-by-the-link").exists()


def test_a_device_target_is_written_in_place():
    code, _, err = cli("plot", RUN, "-o", "/dev/null")
    assert code == 0, err


def test_a_full_disk_leaves_the_old_file_whole(tmp_path, monkeypatch):
    out = tmp_path / "report.html"
    out.write_text("the good old report")
    real_fsync = os.fsync

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(ResourceError, match="No space left on device.*left as it was"):
        safe_output.write(out, "x" * 100000, "the HTML report")
    monkeypatch.setattr(os, "fsync", real_fsync)
    assert out.read_text() == "the good old report"
    assert [p.name for p in tmp_path.iterdir()] == ["report.html"]  # no temporary file left
    monkeypatch.setattr(os, "fsync", full)
    code, _, err = cli("analyze", EXAMPLES / "article_excerpt.log", "--html", out)
    assert code == EXIT_RESOURCE and err.startswith("gpuscope: cannot write the HTML report")
    assert out.read_text() == "the good old report"


def test_the_mode_of_a_replaced_file_is_kept(tmp_path):
    out = tmp_path / "r.png"
    out.write_bytes(b"old")
    out.chmod(0o640)
    safe_output.write(out, b"new", "the PNG")
    assert out.read_bytes() == b"new" and (out.stat().st_mode & 0o777) == 0o640

"""plot / export of a folder of separate runs (issue 31's drawing verbs, issue 33 class 12's
`runs/` folder): there is no one timeline to draw, so they refuse naming the runs and what to
pass, instead of "a directory without a timing log". The false-fire side: one run directory
and a folder of one job's rank traces still draw; a folder with nothing in it keeps its error."""

from __future__ import annotations

import shutil
from pathlib import Path

from typer.testing import CliRunner

from gpuscope.cli import app

DATA = Path(__file__).parent / "data"


def _runs(tmp_path: Path) -> Path:
    d = tmp_path / "runs"
    for name in ("copy_pageable", "imagenet_fast"):
        shutil.copytree(DATA / "h200_foreign" / "runs" / name, d / name)
    return d


def test_plot_and_export_of_a_runs_folder_say_what_to_pass(tmp_path):
    d = _runs(tmp_path)
    for args in (["plot", str(d), "-o", str(tmp_path / "t.png")],
                 ["export", str(d), "--perfetto", str(tmp_path / "t.json")]):
        r = CliRunner().invoke(app, args)
        assert r.exit_code == 2, r.output
        assert "holds 2 runs (copy_pageable, imagenet_fast)" in r.output
        assert f"pass one of them (gpuscope {args[0]} {d / 'copy_pageable'}" in r.output
        assert "without a timing log" not in r.output
    assert not (tmp_path / "t.png").exists() and not (tmp_path / "t.json").exists()


def test_one_run_and_a_folder_of_rank_traces_still_draw(tmp_path):
    r = CliRunner().invoke(app, ["plot", str(DATA / "h200_foreign" / "runs" / "copy_pageable"), "-o",
                                 str(tmp_path / "a.png")])
    assert r.exit_code == 0, r.output
    r = CliRunner().invoke(app, ["plot", str(DATA / "h200_bounds" / "traces" / "ranks2"), "-o", str(tmp_path / "b.png")])
    assert r.exit_code == 0, r.output


def test_an_empty_folder_keeps_its_error(tmp_path):
    (tmp_path / "empty").mkdir()
    r = CliRunner().invoke(app, ["plot", str(tmp_path / "empty"), "-o", str(tmp_path / "t.png")])
    assert r.exit_code == 3 and "holds" not in r.output

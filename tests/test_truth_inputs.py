"""What gpuscope shows must be true (issue 13): damaged run directories, output that cannot
be written and the inputs users have (gzip, standard input) get one clear line and the
documented exit code, never "internal error"."""

from __future__ import annotations

import csv
import gzip
import json
import os
import shutil
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from gpuscope.cli import app
from tests.conftest import EXAMPLES

ARTICLE = EXAMPLES / "article_excerpt.log"
DAEMON = EXAMPLES / "cuzk_daemon.log"
runner = CliRunner()


def cli(*args):
    return runner.invoke(app, [str(a) for a in args], env={"COLUMNS": "120"})


def one_line_error(r, code: int) -> None:
    assert r.exit_code == code, (r.exit_code, r.stdout, r.stderr)
    assert r.stderr.startswith("gpuscope: ") and len(r.stderr.splitlines()) == 1, r.stderr
    assert "internal error" not in r.stderr


@pytest.fixture
def rundir(tmp_path):
    d = tmp_path / "run"
    d.mkdir()
    shutil.copy(DAEMON, d / "timing.log")
    return d


@pytest.mark.parametrize("meta", ["[1, 2]", '"x"', "5", "null", "{", "[" * 100_000 + "]" * 100_000])
def test_meta_json_that_is_not_an_object(rundir, meta):
    (rundir / "meta.json").write_text(meta)
    for cmd in (("analyze", rundir), ("compare", rundir, rundir), ("plot", rundir, "-o", rundir / "t.png")):
        r = cli(*cmd)
        one_line_error(r, 3)
        assert "meta.json" in r.stderr


def test_meta_with_a_mistyped_workload_still_compares(rundir):
    (rundir / "meta.json").write_text(json.dumps({"mode": "pageable", "workload": "x", "line_rate_gbs": "fast"}))
    r = cli("compare", rundir, rundir, "--json", "--bootstrap", "200")
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["a"]["label"] == "A:pageable"


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_named_meta_json_does_not_hang(rundir):
    os.mkfifo(rundir / "meta.json")
    p = subprocess.run([sys.executable, "-m", "gpuscope", "analyze", str(rundir)], capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 3 and "not a regular file" in p.stderr


def test_spans_with_an_end_before_the_start_are_dropped(rundir, tmp_path):
    rows = [("t_start", "t_end", "gpu", "worker", "partition", "phase"),
            (100.0, 101.0, 0, 0, 0, "h2d"), (102.0, 101.5, 0, 0, 0, "msm"), ("x", 3, 0, 0, 0, "ntt")]
    with open(rundir / "spans.csv", "w", newline="") as f:
        csv.writer(f).writerows(rows)
    r = cli("export", rundir, "--perfetto", tmp_path / "t.json")
    assert r.exit_code == 0, r.stderr
    trace = json.loads((tmp_path / "t.json").read_text())
    assert sum(1 for e in trace["traceEvents"] if e["ph"] == "X") == 1
    assert cli("plot", rundir, "-o", tmp_path / "t.png").exit_code == 0


def test_compare_negative_seed_is_a_usage_error():
    one_line_error(cli("compare", ARTICLE, ARTICLE, "--seed", "-1"), 2)


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full")
def test_stdout_on_a_full_disk_exits_6():
    with open("/dev/full", "w") as full:
        p = subprocess.run([sys.executable, "-m", "gpuscope", "analyze", str(ARTICLE)], stdout=full,
                           stderr=subprocess.PIPE, text=True, timeout=60)
    assert p.returncode == 6
    assert p.stderr.startswith("gpuscope: cannot write the output") and len(p.stderr.splitlines()) == 1


@pytest.mark.parametrize("cmd", [("plot", DAEMON, "-o"), ("export", DAEMON, "--perfetto"),
                                 ("analyze", ARTICLE, "--html")])
def test_report_files_that_cannot_be_written_exit_6(cmd, tmp_path):
    out = "out.png" if cmd[0] == "plot" else "out"  # (plot refuses a name without a picture suffix: exit 2)
    one_line_error(cli(*cmd, tmp_path / "missing-dir" / out), 6)


def test_gzip_log_reads_as_its_content(tmp_path):
    gz = tmp_path / "article.log.gz"
    gz.write_bytes(gzip.compress(ARTICLE.read_bytes()))
    r = cli("analyze", gz, "--json")
    assert r.exit_code == 0, r.stderr
    j = json.loads(r.stdout)
    assert j["log"]["records"] == 4 and j["source"]["path"] == str(gz)
    cut = tmp_path / "cut.log.gz"
    cut.write_bytes(gz.read_bytes()[:-10])
    one_line_error(cli("analyze", cut), 3)


def test_log_on_standard_input():
    r = runner.invoke(app, ["analyze", "-", "--json"], input=ARTICLE.read_text())
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["log"]["records"] == 4
    with open(ARTICLE, "rb") as f:
        p = subprocess.run([sys.executable, "-m", "gpuscope", "analyze", "-", "--json"], stdin=f,
                           capture_output=True, timeout=60)
    assert p.returncode == 0 and json.loads(p.stdout)["source"]["path"] == "<stdin>"


def test_csv_keeps_epoch_precision_and_defuses_formulas(tmp_path):
    log = tmp_path / "x.log"
    log.write_text("2026-11-30T14:00:01.123456Z CUZK_TIMING: mutex_wait_ms=1\n"
                   "2026-11-30T14:00:03.654321Z CUZK_TIMING: mutex_held_ms=9\n"
                   "2026-11-30T14:00:04Z CUZK_TIMING: @SUM_ms=3\n"
                   "=cmd|' /C calc'!A0 CUZK_TIMING: x_ms=oops\n")
    out = tmp_path / "csv"
    assert cli("analyze", log, "--csv", out).exit_code == 0
    recs = list(csv.DictReader(open(out / "records.csv")))
    assert recs[0]["ts_start"] == "1796047201.123456" and recs[0]["ts_end"] == "1796047203.654321"
    text = "".join((out / n).read_text() for n in ("components.csv", "stats.csv", "skipped.csv"))
    assert "\n=" not in text and ",=" not in text and ",@" not in text and "\n@" not in text
    assert "'@SUM" in text and "'=cmd" in text


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(meta=st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
                         lambda kids: st.lists(kids, max_size=4) | st.dictionaries(
                             st.sampled_from(["mode", "workload", "line_rate_gbs", "gpus", "log_n",
                                              "h2d_bytes_per_partition", "workers_per_gpu", "x"]), kids,
                             max_size=5), max_leaves=12),
       spans=st.lists(st.tuples(st.one_of(st.floats(), st.text(max_size=3)), st.floats(allow_nan=True),
                                st.integers(-2, 3), st.sampled_from(["h2d", "msm", "", "x,y"])), max_size=6))
def test_any_meta_json_and_spans_csv_never_crash(tmp_path_factory, meta, spans):
    d = tmp_path_factory.mktemp("fuzz")
    shutil.copy(ARTICLE, d / "timing.log")
    (d / "meta.json").write_text(json.dumps(meta))
    with open(d / "spans.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["t_start", "t_end", "gpu", "worker", "partition", "phase"])
        for t0, t1, g, ph in spans:
            w.writerow([t0, t1, g, g, g, ph])
    for cmd in (("analyze", d, "--json"), ("export", d, "--perfetto", d / "t.json"),
                ("compare", d, d, "--json", "--bootstrap", "100")):
        r = cli(*cmd)
        assert r.exit_code in (0, 3, 4), (cmd, r.exit_code, r.stderr)
        assert "internal error" not in r.stderr

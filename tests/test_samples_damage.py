"""Damaged samples.csv (issue 13): a column bad in every row, or NUL bytes, used to yield no
samples without a word (a run directory's samples silently vanished). What can be read is
read; what was dropped and why is one stderr line, and its count is in the JSON."""

from __future__ import annotations

import csv
import json
import shutil

from typer.testing import CliRunner

from gpuscope.cli import app
from tests.conftest import DATA, EXAMPLES

GOOD = DATA / "h200_foreign" / "runs" / "train_slow" / "samples.csv"


def _bad_column(path, col="sm_active", junk="x"):
    rows = list(csv.reader(open(GOOD)))
    i = rows[0].index(col)
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(rows[0])
        for r in rows[1:]:
            w.writerow(r[:i] + [junk] + r[i + 1:])
    return len(rows) - 1


def test_a_column_bad_in_every_row_costs_that_column_and_says_so(tmp_path):
    p = tmp_path / "samples.csv"
    n = _bad_column(p)
    r = CliRunner().invoke(app, ["analyze", str(p)])
    assert r.exit_code == 0, r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln]
    assert len(lines) == 1 and f"sm_active in {n} rows" in lines[0] and "read as missing" in lines[0]
    assert f"{n} sample rows read" in r.stdout  # and the report says it too
    doc = json.loads(CliRunner().invoke(app, ["analyze", str(p), "--json"]).stdout)
    sr = doc["samples"]["read"]
    assert sr["rows"] == n and sr["dropped_rows"] == 0 and sr["unreadable_values"] == {"sm_active": n}
    assert doc["samples"]["activity"]["source"] == "utilization"  # no GPM column left: said, not guessed


def test_nul_bytes_in_a_run_directory_samples_are_counted_not_silence(tmp_path):
    d = tmp_path / "run"
    d.mkdir()
    shutil.copy(EXAMPLES / "article_excerpt.log", d / "timing.log")
    data = GOOD.read_bytes()
    (d / "samples.csv").write_bytes(data[:300] + b"\x00\x00\x00" + data[300:] + b"\x00" * 512)
    r = CliRunner().invoke(app, ["analyze", str(d), "--json"])
    assert r.exit_code == 0, r.stderr
    sr = json.loads(r.stdout)["samples"]["read"]
    assert sr["nul_bytes"] == 515 and sr["nul_rows"] == 1 and sr["rows"] == 680
    assert "1 row dropped for NUL bytes (515 NUL bytes)" in r.stderr


def test_a_samples_file_without_one_readable_row_says_why(tmp_path):
    p = tmp_path / "samples.csv"
    _bad_column(p, col="t_wall", junk="noon")
    r = CliRunner().invoke(app, ["analyze", str(p)])
    assert r.exit_code == 4
    assert "without one readable sample" in r.stderr and "681 rows dropped" in r.stderr


def test_a_clean_file_says_nothing(tmp_path):
    r = CliRunner().invoke(app, ["analyze", str(GOOD), "--json"])
    assert r.exit_code == 0 and r.stderr == ""
    sr = json.loads(r.stdout)["samples"]["read"]
    assert sr["note"] is None and sr["dropped_rows"] == 0 and sr["unreadable_values"] == {}

"""`analyze --what-if` and `analyze --html` (the what-if and HTML report of issue 5)."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from gpuscope.cli import app
from tests.conftest import EXAMPLES

runner = CliRunner()


def run(*args):
    return runner.invoke(app, ["analyze", *map(str, args)], env={"COLUMNS": "120"})


def test_whatif_json_on_the_daemon_log():
    r = run(EXAMPLES / "cuzk_daemon.log", "--json", "--what-if", "--abc-bytes", "1.5G", "--line-rate", "50")
    assert r.exit_code == 0, r.stderr
    j = json.loads(r.stdout)
    assert j["log"]["records"] == 40  # the analyze contract is still all there
    w = j["what_if"]
    assert w["available"] is True and w["line_rate_gbs"] == 50 and w["line_rate_source"] == "option"
    assert w["bytes_per_partition"] == 1.5 * 2**30
    assert w["predicted"]["upload_ms"] == 1.5 * 2**30 / 50e9 * 1e3
    assert w["predicted"]["held_ms_median"] < w["measured"]["held_ms_median"]
    assert w["predicted"]["throughput_speedup"] > 1


def test_whatif_console_and_unavailable_reason():
    r = run(EXAMPLES / "article_excerpt.log", "--what-if")
    assert r.exit_code == 0, r.stderr
    assert "what-if: not available (upload size unknown" in r.stdout
    r = run(EXAMPLES / "article_excerpt.log", "--what-if", "--abc-bytes", "1.5G")
    assert r.exit_code == 0 and "What-if: pinned uploads would cut mutex_held" in r.stdout
    assert r.stderr == ""


def test_html_report(tmp_path):
    out = tmp_path / "a.html"
    r = run(EXAMPLES / "cuzk_daemon.log", "--html", out, "--abc-bytes", "1.5G")
    assert r.exit_code == 0, r.stderr
    assert r.stderr == f"gpuscope: wrote {out}\n"
    text = out.read_text()
    assert "<h2>Diagnosis</h2>" in text and text.count("data:image/png;base64,") == 1
    assert "What-if: pinned uploads" in text

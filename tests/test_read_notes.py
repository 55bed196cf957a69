"""What the parser assumed in reading a log (ParsedLog.notes) reaches the user: `read_notes` in
`analyze --json`, a `read:` line each under the console's header. They were kept to the parser:
a ProgressMeter's `Time 0.257` read as seconds with nothing printed to say so."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from gpuscope.cli import app
from tests.conftest import DATA, REPO

runner = CliRunner()
CORPUS = DATA / "corpus"


def _json(path) -> dict:
    r = runner.invoke(app, ["analyze", str(path), "--json"])
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def test_a_unit_the_parser_chose_is_said_in_json_and_console():
    path = CORPUS / "pytorch_examples" / "every_10th.txt"
    notes = _json(path)["log"]["read_notes"]
    assert any(n.startswith("printed without a unit, read as seconds: Data, Time") for n in notes)
    assert any("evaluation line(s)" in n for n in notes)
    out = runner.invoke(app, ["analyze", str(path)], env={"COLUMNS": "200"}).stdout
    assert "read: printed without a unit, read as seconds: Data, Time" in out


def test_a_log_the_parser_assumed_nothing_of_has_none():
    assert _json(REPO / "examples" / "article_excerpt.log")["log"]["read_notes"] == []


def test_megatron_s_timers_of_every_rank_are_said_unread_and_what_would_tell():
    notes = _json(CORPUS / "megatron" / "pretrain_gpt_timers_all.txt")["log"]["read_notes"]
    said = [n for n in notes if "times across ranks" in n]
    assert len(said) == 1 and "--timing-log-option minmax" in said[0]
    # the (min, max) form is read: no such note there
    assert not any("times across ranks" in n for n in _json(CORPUS / "megatron" / "pretrain_gpt_timers.txt")["log"]["read_notes"])

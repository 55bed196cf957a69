"""The log part of the `analyze --json` document is typed once (gpuscope/analysis/document.py:
SplitDoc, TimelineDoc, BoundsDoc, issue 31): each part of a real analysis carries exactly the
keys its TypedDict names, so a key added to the evidence without its type (or typed and never
written) fails here."""

from __future__ import annotations

import json
from typing import get_type_hints

import pytest
from typer.testing import CliRunner

from gpuscope.analysis.doctypes import BoundsDoc, SplitDoc, TimelineDoc, WorkerDoc
from gpuscope.cli import app

from .conftest import DATA, EXAMPLES

INPUTS = [EXAMPLES / "cuzk_daemon.log", EXAMPLES / "article_excerpt.log",
          DATA / "h100_lock" / "runs" / "lock_pageable_kv", DATA / "h100_lock" / "runs" / "copy_pinned"]


@pytest.mark.parametrize("path", INPUTS, ids=lambda p: p.name)
def test_the_log_parts_carry_exactly_their_typed_keys(path):
    r = CliRunner().invoke(app, ["analyze", str(path), "--json"])
    assert r.exit_code == 0, r.output
    log = json.loads(r.stdout)["log"]
    for part, typed in (("split", SplitDoc), ("timeline", TimelineDoc), ("bounds", BoundsDoc)):
        assert set(log[part]) == set(get_type_hints(typed)), (part, set(log[part]) ^ set(get_type_hints(typed)))
    for w in log["timeline"]["workers"].values():
        assert set(w) == set(get_type_hints(WorkerDoc))

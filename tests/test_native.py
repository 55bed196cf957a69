"""gpuscope.native: the one seam every compiled module is loaded through (one switch, one cache),
and `gpuscope info` saying which are loaded."""

from __future__ import annotations

import json
import re
from pathlib import Path

from typer.testing import CliRunner

from gpuscope import native
from gpuscope.cli import app
from tests.conftest import REPO


def test_the_switch_turns_every_module_off(monkeypatch):
    monkeypatch.setenv(native.PURE_ENV, "1")
    assert all(native.load(n) is None for n in native.MODULES)
    assert set(native.status().values()) == {f"off ({native.PURE_ENV}=1)"}


def test_status_says_loaded_exactly_where_load_gives_a_module(monkeypatch):
    monkeypatch.delenv(native.PURE_ENV, raising=False)
    for name, state in native.status().items():
        assert state == ("loaded" if native.load(name) is not None else "not built")


def test_info_json_names_the_compiled_paths():
    r = CliRunner().invoke(app, ["info", "--json"])
    assert r.exit_code == 0, r.output
    assert set(json.loads(r.stdout)["compiled"]) == set(native.MODULES)


def test_no_module_imports_an_extension_but_through_native():
    """Every compiled module is reached through native.load: no importlib call names one elsewhere."""
    ext = re.compile(r"import_module\(\s*[\"']gpuscope\.(?:parsers\.)?_\w+")
    offenders = [str(p.relative_to(REPO)) for d in ("gpuscope", "parsers", "reports") for p in (REPO / d).rglob("*.py")
                 if p != Path(native.__file__) and ext.search(p.read_text(encoding="utf-8"))]
    assert offenders == []

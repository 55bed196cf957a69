"""The documentation names what exists (sqlite-utils' manner: a test fails on an undocumented
command or rule, and on a README layout that names a folder that is not there)."""

from __future__ import annotations

import re

import pytest

from gpuscope.analysis.rules.registry import all_rules
from gpuscope.cli import COMMANDS
from tests.conftest import REPO

DOCS = "\n".join(p.read_text(encoding="utf-8") for p in sorted((REPO / "docs").glob("*.md")))


RULES = all_rules()


@pytest.mark.parametrize("rule", [r.id for r in RULES])
def test_every_rule_is_documented(rule):
    assert re.search(rf"\b{re.escape(rule)}\b", DOCS), f"rule {rule} is in no page of docs/"


@pytest.mark.parametrize("finding", sorted({f for r in RULES for f in r.emits}))
def test_every_finding_a_rule_can_emit_is_documented(finding):
    assert re.search(rf"\b{re.escape(finding)}\b", DOCS), f"finding id {finding} is in no page of docs/"


@pytest.mark.parametrize("cause", sorted({c for r in RULES for c in r.emits.values() if c is not None}))
def test_every_cause_is_documented(cause):
    analyze = (REPO / "docs" / "ANALYZE.md").read_text(encoding="utf-8")
    assert f"`{cause}`" in analyze, f"cause {cause} is not in docs/ANALYZE.md's vocabulary of causes"


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_is_documented(command):
    cli = (REPO / "docs" / "CLI.md").read_text(encoding="utf-8")
    assert f"gpuscope {command}" in cli, f"docs/CLI.md never shows `gpuscope {command}`"


def _layout_block() -> str:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    return text.split("## Layout", 1)[1].split("\n## ", 1)[0]


def test_the_readme_layout_names_folders_that_exist():
    block = _layout_block()
    tops = re.findall(r"^    (\w+)/ ", block, flags=re.M)
    subs = re.findall(r"^      (\w+)/ ", block, flags=re.M)
    assert {"gpuscope", "parsers", "reports", "tests"} <= set(tops)
    missing = [t for t in tops if not (REPO / t).is_dir()] + [s for s in subs if not (REPO / "gpuscope" / s).is_dir()]
    assert missing == [], f"README's layout names folders that do not exist: {missing}"
    # and every folder of the package is named there
    folders = {p.name for p in (REPO / "gpuscope").iterdir() if p.is_dir() and not p.name.startswith(("_", "."))}
    assert folders <= set(subs), f"folders of gpuscope/ the README's layout leaves out: {folders - set(subs)}"

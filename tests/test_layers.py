"""The dependency rule of docs/ARCHITECTURE.md, enforced: each layer imports only the layers
below it, and no two modules import each other (directly or around a loop)."""

from __future__ import annotations

import pytest

from tests.import_graph import cycles, cycles_of, graph, modules

BASE = {"gpuscope", "gpuscope._layout", "gpuscope.errors", "gpuscope.safe_output", "gpuscope.schemas", "gpuscope.clock", "gpuscope.units",
        "gpuscope.linerate", "gpuscope.rolemodel"}
IO = {"gpuscope.rundir", "gpuscope.rundir_writers", "gpuscope.nvml", "gpuscope.nvml_gpm", "gpuscope.cuda", "gpuscope.sampler", "gpuscope.recorder", "gpuscope.record_capture", "gpuscope.record_signals",
      "gpuscope.hostbw", "gpuscope.gpuinfo"}
SOURCE_TYPES = {"gpuscope.sources.source", "gpuscope.sources.runmeta"}


def layer(module: str) -> str:
    for prefix in ("gpuscope.cli", "gpuscope.parsers", "gpuscope.reports", "gpuscope.analysis",
                   "gpuscope.sources", "gpuscope.workload"):
        if module == prefix or module.startswith(prefix + "."):
            return prefix.split(".")[1]
    if module in BASE:
        return "base"
    if module in IO:
        return "io"
    return "app"  # gpuscope.summary, gpuscope.__main__


def allowed(src: str, dst: str) -> bool:
    """May module `src` import module `dst`?"""
    a, b = layer(src), layer(dst)
    if b == "cli":
        return a in ("cli", "app")
    if a in ("cli", "app") or a == b:
        return True
    if b == "base":
        return a != "base" or dst == "gpuscope.errors"
    rules = {
        "base": set(),
        "parsers": {"gpuscope.schemas", "gpuscope.errors"},
        "io": "parsers",
        "sources": ("parsers", "io"),
        "analysis": SOURCE_TYPES | {"gpuscope.parsers.parsed"},
        "reports": ("analysis",) ,
        "workload": ("io",),
    }[a]
    if isinstance(rules, str):
        rules = (rules,)
    if b in rules:
        return True
    if a == "reports" and dst in SOURCE_TYPES:
        return True
    if a == "workload" and dst == "gpuscope.summary" and src == "gpuscope.workload.runner":
        return True  # the run's closing summary: moves to the CLI with the runner split
    return dst in rules


def test_every_module_is_in_a_layer():
    assert len(modules()) > 50


@pytest.mark.parametrize("module", sorted(modules()))
def test_module_imports_only_layers_below(module):
    bad = sorted(d for d in graph()[module] if not allowed(module, d))
    assert not bad, f"{module} ({layer(module)}) imports " + ", ".join(f"{d} ({layer(d)})" for d in bad)


def test_no_import_cycles():
    assert cycles() == []


def test_the_rule_catches_an_upward_import():
    assert not allowed("gpuscope.parsers.kv", "gpuscope.analysis.split")
    assert not allowed("gpuscope.analysis.rules", "gpuscope.reports.console")
    assert not allowed("gpuscope.reports.plot", "gpuscope.cli._common")
    assert not allowed("gpuscope.analysis.split", "gpuscope.sources.open")
    assert not allowed("gpuscope.schemas", "gpuscope.parsers")
    assert allowed("gpuscope.sources.open", "gpuscope.parsers.logparse")
    assert allowed("gpuscope.reports.html", "gpuscope.analysis.timeline_view")


def test_no_import_cycles_counting_annotations():
    """Annotations too, in the whole package: a module that only names another's type in an
    annotation still stands on it (the analysis' parts on analysis.core and compare.side; a
    writer declares the owner it reports to as a Protocol instead of importing RunDir)."""
    assert cycles(type_only=True) == []


def test_the_cycle_finder_finds_a_cycle():
    g = {"a": frozenset({"b"}), "b": frozenset({"c"}), "c": frozenset({"a"}), "d": frozenset({"a"})}
    assert cycles_of(g) == [["a", "b", "c"]]
    assert cycles_of({"a": frozenset({"b"}), "b": frozenset()}) == []

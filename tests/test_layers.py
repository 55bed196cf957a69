"""The dependency rule of docs/ARCHITECTURE.md, enforced: each layer imports only the layers
below it, and no two modules import each other (directly or around a loop)."""

from __future__ import annotations

import pytest

from tests.import_graph import cycles, cycles_of, graph, modules

BASE = {"gpuscope", "gpuscope._layout", "gpuscope.coverage", "gpuscope.errors", "gpuscope.safe_output", "gpuscope.schemas", "gpuscope.clock", "gpuscope.units",
        "gpuscope.linerate", "gpuscope.rolemodel", "gpuscope.rolewords", "gpuscope.allocator", "gpuscope.native", "gpuscope.arrays"}
IO = {"gpuscope.rundir", "gpuscope.rundir_spans", "gpuscope.rundir_writers", "gpuscope.nvml", "gpuscope.nvml_gpm", "gpuscope.cuda", "gpuscope.sampler", "gpuscope.recorder", "gpuscope.record_capture", "gpuscope.record_signals",
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
        "parsers": {"gpuscope.schemas", "gpuscope.errors", "gpuscope.native", "gpuscope.arrays"},
        "io": "parsers",
        "sources": ("parsers", "io"),
        "analysis": SOURCE_TYPES | {"gpuscope.parsers.log.parsed"},
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
    assert not allowed("gpuscope.parsers.log.kv", "gpuscope.analysis.evidence.log.split")
    assert not allowed("gpuscope.analysis.rules", "gpuscope.reports.console")
    assert not allowed("gpuscope.reports.plot", "gpuscope.cli._common")
    assert not allowed("gpuscope.analysis.evidence.log.split", "gpuscope.sources.open")
    assert not allowed("gpuscope.schemas", "gpuscope.parsers")
    assert allowed("gpuscope.sources.open", "gpuscope.parsers.log.logparse")
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


# -- the flow: sources -> evidence -> rules -> reports (docs/ARCHITECTURE.md) -------------------

#: the parsers of each kind of input; a module of one kind imports no module of another kind
#: (every parser not named here reads timing logs; PARSERS_SHARED are what all kinds share)
PARSER_KINDS = {
    "samples": {"gpuscope.parsers.samples", "gpuscope.parsers.samples.prometheus", "gpuscope.parsers.samples.samples_base",
                "gpuscope.parsers.samples.samples_csv", "gpuscope.parsers.samples.samples_pyread",
                "gpuscope.parsers.samples.smi_table", "gpuscope.parsers.samples.dcgm_dmon",
                "gpuscope.parsers.samples.gpustat"},
    "trace": {"gpuscope.parsers.trace.kineto", "gpuscope.parsers.trace.kineto_json", "gpuscope.parsers.trace.tracefile",
              "gpuscope.parsers.trace.kineto_ranks", "gpuscope.parsers.trace.nsys_sqlite",
              "gpuscope.parsers.trace.nsys_rep", "gpuscope.parsers.trace.nsys_columns", "gpuscope.parsers.trace.nsys_extra",
              "gpuscope.parsers.trace.nsys_gpu",
              "gpuscope.parsers.trace.host_summary", "gpuscope.parsers.trace.nsys_host",
              "gpuscope.parsers.trace.xla_events", "gpuscope.parsers.trace.nvtx_text"},
}
PARSERS_SHARED = {"gpuscope.parsers", "gpuscope.parsers.limits", "gpuscope.parsers.numbers", "gpuscope.parsers.heads",
                  "gpuscope.parsers.log.parsed", "gpuscope.parsers.log.formats"}
#: gpuscope.sources: the one facade (open), its table of readers over the input's head (readers,
#: head, common; rundir_read: a run directory holds every kind) and the types it hands over; any
#: other module there opens one kind of source and imports no other such opener
SOURCES_SHARED = {"gpuscope.sources", "gpuscope.sources.open", "gpuscope.sources.source",
                  "gpuscope.sources.head", "gpuscope.sources.readers", "gpuscope.sources.common",
                  "gpuscope.sources.rundir_read",
                  "gpuscope.sources.runmeta", "gpuscope.sources.overlap"}
#: gpuscope/analysis/evidence/: one folder per kind of source (the shared model and intervals above them)
EVIDENCE_KINDS = ("log", "samples", "trace")
#: what a report may read of the analysis: result types, the names the analysis gives
REPORT_READS = {"gpuscope.analysis.result", "gpuscope.analysis.core", "gpuscope.analysis.names",
                "gpuscope.analysis.compare.side", "gpuscope.analysis.document",
                "gpuscope.analysis.compare.document"}


def part_of(module: str) -> str | None:
    """The per-source part a module belongs to (None: shared, or outside the per-source parts)."""
    if module.startswith("gpuscope.parsers"):
        if module in PARSERS_SHARED:
            return None
        return next((f"parsers:{k}" for k, ms in PARSER_KINDS.items() if module in ms), "parsers:log")
    if module.startswith("gpuscope.sources.") and module not in SOURCES_SHARED:
        return f"sources:{module}"
    for kind in EVIDENCE_KINDS:  # the evidence of one kind of source reads no other kind's
        if module == f"gpuscope.analysis.evidence.{kind}" or module.startswith(f"gpuscope.analysis.evidence.{kind}."):
            return f"evidence:{kind}"
    return None


def test_every_kind_of_parser_exists():
    assert PARSER_KINDS["samples"] | PARSER_KINDS["trace"] | PARSERS_SHARED <= set(modules())
    assert SOURCES_SHARED | REPORT_READS <= set(modules())
    assert "parsers:log" in {part_of(m) for m in modules()}


def crossings(g: dict[str, frozenset[str]]) -> list[str]:
    """Imports from one per-source part into another (annotations included)."""
    return sorted(f"{m} -> {d}" for m, ds in g.items() for d in ds
                  if part_of(m) is not None and part_of(d) is not None and part_of(m) != part_of(d)
                  and not _reads_its_own_parser(part_of(m), part_of(d)))


def _reads_its_own_parser(src: str | None, dst: str | None) -> bool:
    """The evidence of a kind may read the types its own kind's parsers make."""
    return bool(src and dst) and src.startswith("evidence:") and dst == "parsers:" + src.split(":", 1)[1]


def test_per_source_parts_never_import_each_other():
    assert crossings(graph(type_only=True)) == []


def test_a_crossing_is_caught():
    g = {"gpuscope.parsers.trace.kineto": frozenset({"gpuscope.parsers.log.lines", "gpuscope.parsers.limits"}),
         "gpuscope.parsers.samples": frozenset({"gpuscope.parsers.numbers"}),
         "gpuscope.analysis.evidence.trace.trace_gaps": frozenset({"gpuscope.analysis.evidence.samples.samplegrid",
                                                                   "gpuscope.analysis.evidence.intervals"}),
         "gpuscope.analysis.evidence.trace.trace_activity": frozenset({"gpuscope.parsers.trace.kineto",
                                                                       "gpuscope.parsers.samples"})}
    assert crossings(g) == ["gpuscope.analysis.evidence.trace.trace_activity -> gpuscope.parsers.samples",
                            "gpuscope.analysis.evidence.trace.trace_gaps -> gpuscope.analysis.evidence.samples.samplegrid",
                            "gpuscope.parsers.trace.kineto -> gpuscope.parsers.log.lines"]


def test_every_kind_of_evidence_has_its_folder():
    assert {part_of(m) for m in modules()} >= {f"evidence:{k}" for k in EVIDENCE_KINDS}


def report_reads(g: dict[str, frozenset[str]]) -> list[str]:
    """What reports import of the analysis beyond its result types and names, or of the sources."""
    return sorted(f"{m} -> {d}" for m, ds in g.items() if m.startswith("gpuscope.reports") for d in ds
                  if (layer(d) == "analysis" and d not in REPORT_READS) or layer(d) == "sources")


def test_reports_read_results_never_the_analysis_nor_a_source():
    """Annotations included: a report is handed results (Analysis, a TimelineView, a Side, a
    comparison's document) and draws them; the CLI opens the source and runs the analysis."""
    assert report_reads(graph(type_only=True)) == []


def test_a_report_reading_the_analysis_is_caught():
    g = {"gpuscope.reports.html": frozenset({"gpuscope.analysis.timeline_view", "gpuscope.analysis.result"}),
         "gpuscope.reports.titles": frozenset({"gpuscope.sources"})}
    assert report_reads(g) == ["gpuscope.reports.html -> gpuscope.analysis.timeline_view",
                               "gpuscope.reports.titles -> gpuscope.sources"]


#: the modules that compute what the rules read, and the result types: neither imports a rule
#: (the rules read the evidence; the engine tags each finding with its part, so no part's list of
#: findings is rebuilt by reading the rules back)
NO_RULES = ("gpuscope.analysis.evidence", "gpuscope.analysis.result", "gpuscope.analysis.trace_analysis",
            "gpuscope.analysis.evidence.log.rule_input", "gpuscope.analysis.core", "gpuscope.analysis.causes")


def rule_reads(g: dict[str, frozenset[str]]) -> list[str]:
    """Imports of a rule module (gpuscope.analysis.rules.*) by the evidence or the result types."""
    return sorted(f"{m} -> {d}" for m, ds in g.items() for d in ds
                  if any(m == n or m.startswith(n + ".") for n in NO_RULES)
                  and d.startswith("gpuscope.analysis.rules"))


def test_evidence_and_results_never_import_the_rules():
    """Annotations included: evidence -> rules, never back."""
    assert rule_reads(graph(type_only=True)) == []


def test_an_evidence_module_reading_a_rule_is_caught():
    g = {"gpuscope.analysis.evidence.trace.trace_gaps": frozenset({"gpuscope.analysis.rules.trace"}),
         "gpuscope.analysis.result": frozenset({"gpuscope.analysis.rules.engine", "gpuscope.analysis.core"}),
         "gpuscope.analysis.rules.trace": frozenset({"gpuscope.analysis.evidence.trace.rule_input"})}
    assert rule_reads(g) == ["gpuscope.analysis.evidence.trace.trace_gaps -> gpuscope.analysis.rules.trace",
                             "gpuscope.analysis.result -> gpuscope.analysis.rules.engine"]


#: what a rule may not read: the reports (it makes findings, not text for a screen), the CLI, the
#: sources (it reads the evidence, not the inputs) and the analysis facade or result (it is run by them)
RULES_NEVER_READ = ("gpuscope.reports", "gpuscope.cli", "gpuscope.sources", "gpuscope.analysis.result")


def rule_reaches(g: dict[str, frozenset[str]]) -> list[str]:
    """Imports by a rule module (gpuscope.analysis.rules.*) of a report, the CLI, a source or the result."""
    return sorted(f"{m} -> {d}" for m, ds in g.items() for d in ds
                  if m.startswith("gpuscope.analysis.rules")
                  and any(d == n or d.startswith(n + ".") for n in RULES_NEVER_READ))


def test_rules_never_import_reports_cli_or_sources():
    """Annotations included: a rule reads the evidence and makes findings, nothing else."""
    assert rule_reaches(graph(type_only=True)) == []


def test_a_rule_reading_a_report_is_caught():
    g = {"gpuscope.analysis.rules.pinned_rate": frozenset({"gpuscope.reports.console", "gpuscope.analysis.core"}),
         "gpuscope.analysis.rules.engine": frozenset({"gpuscope.sources.source"}),
         "gpuscope.analysis.evidence": frozenset({"gpuscope.sources.source"})}
    assert rule_reaches(g) == ["gpuscope.analysis.rules.engine -> gpuscope.sources.source",
                               "gpuscope.analysis.rules.pinned_rate -> gpuscope.reports.console"]


# -- small modules, short functions ----------------------------------------------------------------

MAX_MODULE_LINES = 450
MAX_FUNCTION_LINES = 80
#: the only exceptions, each with the reason it stands; remove an entry once its file is in line
SIZE_EXCEPTIONS = {
    "parsers/log/lines/fields.py": "Line, the reading of one line's fields (its quantities and keyless times too): one class in one module (issue 31)",
    "gpuscope/analysis/doctypes.py": "the analyze --json document defined once, every part's TypedDicts in one module (issue 31)",
}


def _sizes() -> tuple[list[str], list[str]]:
    import ast

    from tests.import_graph import REPO, tree_of

    big, long = [], []
    for module, path in sorted(modules().items(), key=lambda kv: kv[1]):
        rel = str(path.relative_to(REPO))
        if rel in SIZE_EXCEPTIONS:
            continue
        text = path.read_text()
        if text.count("\n") > MAX_MODULE_LINES:
            big.append(f"{rel}: {text.count(chr(10))} lines")
        for node in ast.walk(tree_of(module)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                n = (node.end_lineno or node.lineno) - node.lineno + 1
                if n > MAX_FUNCTION_LINES:
                    long.append(f"{rel}:{node.lineno} {node.name}: {n} lines")
    return big, long


def test_no_module_over_450_lines_no_function_over_80():
    big, long = _sizes()
    assert big == [] and long == []


def test_the_size_exceptions_still_hold():
    """An exception that is no longer needed is dropped, not kept 'just in case'."""
    from tests.import_graph import REPO

    for rel in SIZE_EXCEPTIONS:
        assert (REPO / rel).read_text().count("\n") > MAX_MODULE_LINES, f"{rel} is in line now: drop its exception"


def test_the_document_types_are_never_imported_at_run_time():
    """gpuscope.analysis.doctypes (58 TypedDict classes, ~13 ms to create) is for mypy and tests:
    document.py names each part `dict` at run time, and no module imports it outside TYPE_CHECKING."""
    g = graph()
    assert [m for m, deps in g.items() if "gpuscope.analysis.doctypes" in deps] == []
    assert any("gpuscope.analysis.doctypes" in deps for deps in graph(type_only=True).values())

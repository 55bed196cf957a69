"""The `analyze --json` document, version 2, defined once: one typed dict per part, built once
per Analysis (Analysis.document() caches it).

    {"version": 2, "source": {...}, "log": {...} | null, "samples": {...} | null,
     "trace": {...} | null, "table": {...} | null, "ranks": {...} | null, "findings": [...],
     "first_cause": str | null, "what_if": {...} | null, "evidence": {...} | null}

A part the source does not have is null; a figure a part cannot give is null, never 0 (a split
role no component of the log has: `h2d_ms` is null, not 0.0). docs/ARCHITECTURE.md ("The JSON
document") gives the schema and where every version-1 key went; tools/check_v2_mapping.py checks
that mapping over every input the project has.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, cast

from gpuscope.analysis.causes import first_cause
from gpuscope.analysis.core import AnalyzeOptions, Diagnosis, clean
from gpuscope.rolemodel import SPLIT_ROLES

if TYPE_CHECKING:
    import pandas as pd

    from gpuscope.analysis.evidence.log.table import Table
    from gpuscope.parsers.log.tabledoc import BenchTable
    from gpuscope.rolemodel import RoleModel

VERSION = 2

__all__ = ["VERSION", "AnalysisDoc", "BoundsDoc", "ComponentDoc", "LogDoc", "SplitDoc", "TimelineDoc", "WorkerDoc", "PciePhaseDoc", "RanksDoc", "SamplesActivityDoc", "SamplesDoc",
           "SamplesGpuDoc", "SourceDoc",
           "TraceActivityDoc", "TraceDoc", "TraceIdleGapsDoc", "bare_document", "build_document", "trace_doc"]


if TYPE_CHECKING:
    from gpuscope.analysis.doctypes import (
        ActiveDoc,
        ActiveIdleGapsDoc,
        AnalysisDoc,
        BoundsDoc,
        BurstsDoc,
        ClassesDoc,
        ClassName,
        ClocksDoc,
        ComponentDoc,
        DirectionDoc,
        GapBucketDoc,
        GapDistributionDoc,
        HostOpDoc,
        LinkDoc,
        LogDoc,
        LogPcieDoc,
        MemoryDoc,
        OptionsDoc,
        PausesDoc,
        PciePhaseDoc,
        PipeName,
        PipesDoc,
        PowerDoc,
        PowerLimitDoc,
        RankCollectivesDoc,
        RankCopyDoc,
        RankErrorDoc,
        RankRowCommonDoc,
        RankRowDoc,
        RanksCollectivesDoc,
        RanksDoc,
        RoleDoc,
        RunRankCopyDoc,
        RunRankRowDoc,
        SamplesActivityDoc,
        SamplesDoc,
        SamplesGpuDoc,
        SamplesIdleGapsDoc,
        SamplesPcieDoc,
        SamplesReadDoc,
        SharedDeviceDoc,
        SourceDoc,
        SplitDoc,
        SplitRole,
        SplitTotalsDoc,
        StatDoc,
        StragglerDoc,
        StragglerMetric,
        StragglerRuleDoc,
        StreamKernelDoc,
        ThrottleDoc,
        ThrottleReasonDoc,
        TimelineDoc,
        TopKernelDoc,
        TraceActivityDoc,
        TraceDeviceDoc,
        TraceDeviceNameDoc,
        TraceDoc,
        TraceGapDoc,
        TraceIdleGapsDoc,
        TraceInfoDoc,
        TraceMemcpyDoc,
        TraceMemsetDoc,
        TraceOptionsDoc,
        TracePhaseDoc,
        TraceRankRowDoc,
        TraceStreamDoc,
        WaitsDoc,
        WholeDoc,
        WorkerDoc,
    )
else:  # (run time: a part is a plain dict; the TypedDict classes are mypy's: gpuscope/analysis/doctypes.py)
    ActiveDoc = ActiveIdleGapsDoc = AnalysisDoc = BoundsDoc = BurstsDoc = ClassesDoc = ClocksDoc = \
        ComponentDoc = DirectionDoc = GapBucketDoc = GapDistributionDoc = HostOpDoc = LinkDoc = LogDoc = \
        LogPcieDoc = MemoryDoc = OptionsDoc = PausesDoc = PciePhaseDoc = PipesDoc = PowerDoc = \
        PowerLimitDoc = RankCollectivesDoc = RankCopyDoc = RankErrorDoc = RankRowCommonDoc = \
        RanksCollectivesDoc = RanksDoc = RoleDoc = RunRankCopyDoc = RunRankRowDoc = SamplesActivityDoc = \
        SamplesDoc = SamplesGpuDoc = SamplesIdleGapsDoc = SamplesPcieDoc = SamplesReadDoc = SharedDeviceDoc = \
        SourceDoc = SplitDoc = SplitTotalsDoc = StatDoc = StragglerDoc = StragglerRuleDoc = StreamKernelDoc = \
        ThrottleDoc = ThrottleReasonDoc = TimelineDoc = TopKernelDoc = TraceActivityDoc = TraceDeviceDoc = \
        TraceDeviceNameDoc = TraceDoc = TraceGapDoc = TraceIdleGapsDoc = TraceInfoDoc = TraceMemcpyDoc = \
        TraceMemsetDoc = TraceOptionsDoc = TracePhaseDoc = TraceRankRowDoc = TraceStreamDoc = WaitsDoc = \
        WholeDoc = WorkerDoc = dict
    SplitRole = Any
    ClassName = Any
    PipeName = Any
    RankRowDoc = Any
    StragglerMetric = Any


def split_part(s: SplitDoc, role: SplitRole) -> tuple[float | None, float | None]:
    """(ms, share of the held time) of one role of the split."""
    if role == "h2d":
        return s["h2d_ms"], s["h2d_share"]
    if role == "gpu_compute":
        return s["gpu_compute_ms"], s["gpu_compute_share"]
    if role == "cpu_stall":
        return s["cpu_stall_ms"], s["cpu_stall_share"]
    if role == "d2h":
        return s["d2h_ms"], s["d2h_share"]
    return s["other_ms"], s["other_share"]


class Analysis(Protocol):
    """What the document reads of gpuscope.analysis.result.Analysis (named here as a Protocol:
    the result imports this module, not the other way round)."""

    source: str
    kind: str
    model_name: str
    options: AnalyzeOptions
    findings: list[Diagnosis]
    what_if: dict | None
    model: RoleModel | None
    samples_read: dict | None
    table: BenchTable | None

    @property
    def log(self) -> LogParts | None: ...
    @property
    def samples(self) -> SamplesParts | None: ...
    @property
    def evidence(self) -> EvidenceParts | None: ...
    @property
    def trace(self) -> TraceParts | None: ...


class LogParts(Protocol):
    """What the document reads of gpuscope.analysis.logpart.LogPart (a Protocol: the log part
    names LogPcieDoc, so this module does not import it back)."""

    @property
    def format(self) -> str: ...
    @property
    def records(self) -> int: ...
    @property
    def incomplete_records(self) -> int: ...
    @property
    def total_lines(self) -> int: ...
    @property
    def timing_lines(self) -> int: ...
    @property
    def skipped_lines(self) -> int: ...
    @property
    def steps_per_record(self) -> int: ...
    @property
    def read_notes(self) -> list[str]: ...
    @property
    def stats_table(self) -> Table: ...
    @property
    def split(self) -> SplitTotalsDoc: ...
    @property
    def timeline(self) -> TimelineDoc: ...
    @property
    def bounds(self) -> BoundsDoc: ...
    @property
    def pcie(self) -> pd.DataFrame | None: ...
    @property
    def pcie_info(self) -> LogPcieDoc | None: ...
    def pcie_phases(self) -> dict[str, PciePhaseDoc] | None: ...


class SamplesParts(Protocol):
    """What the document reads of gpuscope.analysis.evidence.samples.activity.Activity."""

    def to_json(self) -> SamplesActivityDoc: ...


class EvidenceParts(Protocol):
    """What the document reads of gpuscope.analysis.evidence.Evidence."""

    def to_json(self) -> dict: ...


class TraceParts(Protocol):
    """What the document reads of gpuscope.analysis.trace_analysis.TraceAnalysis (a Protocol:
    the trace analysis names TraceActivityDoc, so this module does not import it back)."""

    @property
    def activity(self) -> TraceActivityDoc: ...
    @property
    def memcpy(self) -> list[TraceMemcpyDoc]: ...
    @property
    def memset(self) -> list[TraceMemsetDoc]: ...
    @property
    def kernels(self) -> list[TraceStreamDoc]: ...
    @property
    def top_kernels(self) -> list[TopKernelDoc]: ...
    @property
    def idle_gaps(self) -> list[TraceGapDoc]: ...
    @property
    def split(self) -> list[TracePhaseDoc]: ...
    @property
    def trace(self) -> TraceInfoDoc: ...
    @property
    def options(self) -> TraceOptionsDoc: ...


def build_document(a: Analysis) -> AnalysisDoc:
    """The version-2 document of `a` (JSON-safe: NaN/inf are null)."""
    doc: AnalysisDoc = {
        "version": VERSION,
        "source": _source(a),
        "log": _log(a, a.log) if a.log is not None else None,
        "samples": _samples(a),
        "trace": _trace(a),
        "table": a.table.to_json() if a.table is not None else None,
        "ranks": None,
        "findings": [d.to_json() for d in a.findings],
        "first_cause": first_cause(a.findings),
        "what_if": a.what_if,
        "evidence": a.evidence.to_json() if a.evidence is not None else None,
    }
    return clean(doc)


def bare_document(path: str, kind: str, *, ranks: RanksDoc | None = None) -> AnalysisDoc:
    """The document of an input that is no one source: a folder of ranks analyzed rank by rank
    (`ranks`). Every other part null."""
    doc: AnalysisDoc = {
        "version": VERSION,
        "source": {"path": path, "kind": kind, "model": None, "vocabulary": None, "options": None},
        "log": None, "samples": None, "trace": None, "table": None, "ranks": ranks,
        "findings": [], "first_cause": None, "what_if": None, "evidence": None,
    }
    return clean(doc)


def _source(a: Analysis) -> SourceDoc:
    if a.table is not None:  # (a table is analyzed by no role and no option: each cell is the tool's own)
        return {"path": a.source, "kind": a.kind, "model": None, "vocabulary": None, "options": None}
    return {
        "path": a.source,
        "kind": a.kind,
        "model": a.model_name,
        "vocabulary": a.model.vocabulary.to_json() if a.model is not None else None,
        "options": {"line_rate_gbs": a.options.line_rate_gbs, "line_rate_source": a.options.line_rate_source,
                    "abc_bytes": a.options.abc_bytes},
    }


def _log(a: Analysis, lg: LogParts) -> LogDoc:
    st = lg.stats_table
    names = [str(n) for n in st.index.tolist()]
    comps: dict[str, ComponentDoc] = {
        name: {"role": row["role"], "count": int(row["count"]), "sum_ms": row["sum_ms"], "mean_ms": row["mean_ms"],
               "median_ms": row["median_ms"], "p10_ms": row["p10_ms"], "p90_ms": row["p90_ms"], "cv": row["cv"]}
        for name, row in zip(names, st.records(), strict=True)
    }
    prov = a.model.provenance(names) if a.model is not None else None
    roles: dict[str, RoleDoc] | None = ({c: {"role": r["role"], "how": r["how"]} for c, r in prov["roles"].items()}
                                        if prov is not None else None)
    whole: WholeDoc | None = ({"name": prov["held"]["name"], "how": prov["held"]["how"]}
                              if prov is not None else None)
    info, phases = lg.pcie_info, lg.pcie_phases()
    pcie: LogPcieDoc | None = ({"phases": phases, **info} if info is not None and phases is not None else info)
    return {
        "format": lg.format,
        "records": lg.records,
        "steps_per_record": lg.steps_per_record,
        "read_notes": lg.read_notes,
        "incomplete_records": lg.incomplete_records,
        "skipped_lines": lg.skipped_lines,
        "total_lines": lg.total_lines,
        "timing_lines": lg.timing_lines,
        "components": comps,
        "split": split_doc(lg.split, {c["role"] for c in comps.values()}),
        "timeline": lg.timeline,
        "bounds": lg.bounds,
        "roles": roles,
        "whole": whole,
        "pcie": pcie,
    }


def split_doc(totals: SplitTotalsDoc, roles: set[str]) -> SplitDoc:
    """The split's sums and shares; a role no component of the log has is null (it was not
    printed: 0.0 would say it was measured and took no time). `records` is the log's own key."""

    out = {k: v for k, v in totals.items() if k != "records"}
    for role in SPLIT_ROLES:
        if role not in roles:
            out[f"{role}_ms"] = None
            out[f"{role}_share"] = None
    out.setdefault("upload_gbs", None)
    return cast("SplitDoc", out)


def _samples(a: Analysis) -> SamplesDoc | None:
    if a.samples is None and a.samples_read is None:
        return None
    act = a.samples.to_json() if a.samples is not None else None
    # (Source.samples_read, built where the samples are read: its keys are SamplesReadDoc's,
    # tests/test_doc_typed.py checks them)
    return {"activity": act, "read": cast("SamplesReadDoc | None", a.samples_read)}


def _trace(a: Analysis) -> TraceDoc | None:
    return trace_doc(a.trace) if a.trace is not None else None


def trace_doc(t: TraceParts) -> TraceDoc:
    """The `trace` part of the document: a trace's figures (JSON-safe). Its findings are the
    document's `findings` (TraceAnalysis.findings: those the engine tagged as the trace's)."""
    doc: TraceDoc = {
        "activity": t.activity, "memcpy": t.memcpy, "memset": t.memset, "kernels": t.kernels,
        "top_kernels": t.top_kernels, "idle_gaps": t.idle_gaps, "phases": t.split, "trace": t.trace,
        "options": t.options,
    }
    return clean(doc)

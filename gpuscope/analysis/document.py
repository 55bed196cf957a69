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

from typing import TYPE_CHECKING, Any, Protocol, TypedDict, cast

from gpuscope.analysis.causes import first_cause
from gpuscope.analysis.core import AnalyzeOptions, Diagnosis, clean
from gpuscope.rolemodel import SPLIT_ROLES

if TYPE_CHECKING:
    from gpuscope.analysis.evidence import Evidence
    from gpuscope.analysis.evidence.samples.activity import Activity
    from gpuscope.analysis.logpart import LogPart
    from gpuscope.parsers.log.tabledoc import BenchTable
    from gpuscope.rolemodel import RoleModel

VERSION = 2

__all__ = ["VERSION", "AnalysisDoc", "BoundsDoc", "ComponentDoc", "LogDoc", "SplitDoc", "TimelineDoc", "WorkerDoc", "PciePhaseDoc", "RanksDoc", "SamplesActivityDoc", "SamplesDoc",
           "SamplesGpuDoc", "SourceDoc",
           "TraceActivityDoc", "TraceDoc", "TraceIdleGapsDoc", "bare_document", "build_document", "trace_doc"]


class OptionsDoc(TypedDict):
    line_rate_gbs: float | None     # the pinned H2D line rate every part reads (GB/s, 1e9)
    line_rate_source: str           # option | meta | cache | link | trace | default
    abc_bytes: int | None           # bytes uploaded per record, when given


class SourceDoc(TypedDict):
    path: str
    kind: str                       # a log's format (lines, cuzk, ...), else trace | samples | benchmark_table | ranks
    model: str | None               # the role model's name (null: nothing was analyzed by roles)
    vocabulary: dict[str, Any] | None   # the model's words (rolemodel.Vocabulary.to_json)
    options: OptionsDoc | None


class ComponentDoc(TypedDict):
    role: str
    count: int
    sum_ms: float | None
    mean_ms: float | None
    median_ms: float | None
    p10_ms: float | None
    p90_ms: float | None
    cv: float | None


class PciePhaseDoc(TypedDict, total=False):
    """The NVML samples taken inside one phase (evidence.log pcie phases; compare.figures.pcie_per_phase
    gives the first four): medians GB/s, SM activity 0..1."""

    samples: int
    rx_gbs_median: float | None
    tx_gbs_median: float | None
    sm_active_median: float | None
    rx_gbs_p90: float | None
    rx_share_of_line_rate: float | None
    duration_median_s: float | None
    sample_interval_s: float | None
    gb_per_phase_median: float | None
    rx_gbs_mean: float | None
    rx_mean_share_of_line_rate: float | None


class SplitDoc(TypedDict):
    """The split's sums (ms) and shares of the held time over all complete records
    (evidence.log.split.split_totals); a role no component of the log has: null."""

    held_ms: float | None
    h2d_ms: float | None
    gpu_compute_ms: float | None
    cpu_stall_ms: float | None
    d2h_ms: float | None
    other_ms: float | None
    h2d_share: float | None
    gpu_compute_share: float | None
    cpu_stall_share: float | None
    d2h_share: float | None
    other_share: float | None
    inconsistent_records: int
    upload_gbs: float | None        # median over tenures of the logged bytes / h2d time; null without byte counts


class WorkerDoc(TypedDict):
    intervals: int
    busy_s: float | None
    busy_fraction: float | None


class TimelineDoc(TypedDict):
    """The records' timeline (evidence.log.timeline_summary, keys TIMELINE_KEYS): from TIMELINE
    events, else from the stamped tenures; every key present, null when unknown."""

    source: str | None              # TIMELINE | tenures | null
    wall_s: float | None
    gpu_span_s: float | None
    gpu_busy_s: float | None
    gpu_busy_fraction: float | None
    idle_gaps: int
    idle_total_s: float | None
    idle_largest_s: float | None
    partitions: int
    synth_s: float | None
    synth_gpu_overlap_s: float | None
    synth_overlap_fraction: float | None
    synth_parallelism: int
    gpu_ms_median: float | None
    gpu_compute_fraction: float | None
    workers: dict[str, WorkerDoc]
    unpaired_events: int
    steady_busy_fraction: float | None  # the records' cover of the run in their steady state


class BoundsDoc(TypedDict):
    """The GPU and CPU floors, the observed time and which binds (evidence.log.bounds.compute_bounds)."""

    partitions: int
    partitions_basis: str
    gpu_per_partition_ms: float | None
    gpu_basis: str
    gpu_floor_s: float | None
    synth_ms: float | None
    synth_parallelism: int | None
    cpu_other_ms: float | None
    cpu_workers: int | None
    cpu_per_partition_ms: float | None
    synth_floor_s: float | None
    cpu_work_floor_s: float | None
    cpu_floor_s: float | None
    observed_s: float | None
    observed_basis: str
    binding: str | None             # gpu | cpu | null
    observed_over_floor: float | None
    observed_over_gpu_floor: float | None
    gap_to_floor_s: float | None
    assumptions: list[str]


class LogDoc(TypedDict):
    format: str
    records: int                    # complete records (tenures, steps)
    steps_per_record: int           # a log printing every K-th step: each record stands for K steps
    read_notes: list[str]           # what the parser assumed (a unit not printed, lines kept apart)
    incomplete_records: int
    skipped_lines: int
    total_lines: int
    timing_lines: int
    components: dict[str, ComponentDoc]
    split: SplitDoc                 # sums and shares by role; a role no component has: null
    timeline: TimelineDoc
    bounds: BoundsDoc
    roles: dict[str, Any] | None    # {component: {role, how}} (RoleModel.provenance)
    whole: Any                      # the component that is the whole (the held time), and how it was found
    pcie: dict[str, Any] | None     # the NVML samples joined to the log's phases; null without samples


class SamplesGpuDoc(TypedDict, total=False):
    """One GPU's figures from its NVML samples (evidence.samples.activity.gpu_figures); docs/ANALYZE.md
    "From NVML samples alone". Nested objects keep their JSON shape (evidence.samples.figures types
    what the rules read of active, pcie and clocks)."""

    source: str | None              # gpm_sm_active | utilization (several GPUs: mixed, when they differ)
    resolution_s: float | None
    time_basis: str
    t_start: float | None
    t_end: float | None
    wall_s: float
    readings: int
    coverage: float | None
    busy_fraction: float | None     # computing, of the whole recording
    copy_fraction: float | None     # a copy ran (PCIe RX or TX busy); None: PCIe not measured
    idle_fraction: float | None
    idle_gaps: dict[str, Any]       # count, total_s, longest_s, leading_s, trailing_s
    classes: dict[str, Any]         # share of the time in each class (computing, both, transferring, ...)
    utilization_busy_fraction: float | None
    active: dict[str, Any] | None   # the working time's figures; None: no GPU work
    pcie: dict[str, Any]
    memory: dict[str, Any]
    power: dict[str, Any]
    clocks: dict[str, Any]
    temperature_c: dict[str, Any]
    throttle: dict[str, Any]
    link: dict[str, Any] | None
    power_limit: dict[str, Any] | None


class SamplesActivityDoc(SamplesGpuDoc, total=False):
    """`samples.activity` (Activity.to_json): one GPU's figures with `gpus` and `notes`; several GPUs:
    the figures pooled over them (said in `pooled`) and each GPU's own under `per_gpu`."""

    gpus: list[int]
    notes: list[str]
    per_gpu: dict[str, SamplesGpuDoc]
    pooled: str


class SamplesDoc(TypedDict):
    activity: SamplesActivityDoc | None  # Activity.to_json(): busy/idle of every GPU the samples name
    read: dict[str, Any] | None      # what reading the samples file cost (rows kept, dropped)


class TraceIdleGapsDoc(TypedDict):
    count: int
    total_s: float
    longest_s: float
    min_gap_s: float                # gaps shorter than this are not counted (trace_gaps.GAP_MIN_US)
    by_cause_s: dict[str, float]    # idle seconds per cause (trace_gaps.CAUSES); a cause with none: absent


class TraceActivityDoc(TypedDict):
    """What the GPU did over the traced span (trace_analysis.TraceAnalysis.activity)."""

    source: str                     # "trace"
    resolution: str
    busy_fraction: float | None     # computing: kernels, memsets, device-to-device copies
    copy_fraction: float | None     # host/peer copies beside it, never in it
    idle_fraction: float | None
    kernel_fraction: float | None
    memcpy_fraction: float | None
    copy_kernel_overlap_fraction: float | None
    idle_gaps: TraceIdleGapsDoc
    span_s: float
    device_span_s: float
    t_start: float
    t_end: float
    epoch: bool                     # t_start/t_end are epoch seconds (else the trace's own clock)
    devices: list[dict[str, Any]]   # one row per rank and GPU (evidence.trace.trace_activity.device_rows)


class TraceDoc(TypedDict):
    activity: TraceActivityDoc
    memcpy: list[dict[str, Any]]
    memset: list[dict[str, Any]]
    kernels: list[dict[str, Any]]
    top_kernels: list[dict[str, Any]]
    idle_gaps: list[dict[str, Any]]
    phases: list[dict[str, Any]]
    trace: dict[str, Any]
    options: dict[str, Any]


class RanksDoc(TypedDict, total=False):
    """A folder of per-rank traces or runs (gpuscope.analysis.ranks.combine, ranks_run.analyze_ranks)."""

    count: int
    inputs: str                      # traces | runs
    one_job: bool                    # ranks of one job (else each is analyzed alone, no straggler named)
    one_job_evidence: str
    table: list[dict[str, Any]]      # one row per rank (ranks.rank_row)
    stragglers: list[dict[str, Any]]
    collectives: dict[str, Any]
    errors: list[dict[str, Any]]     # ranks that could not be read: {name, rank, error}
    notes: list[str]
    rule: dict[str, Any]             # the straggler rule: ratio, min_ms, metric
    shared_devices: Any              # ranks naming one device: its union of activity (the folder's own trace)
    workers: int                     # processes used
    seconds: float                   # wall time of the reading and analysis


class AnalysisDoc(TypedDict):
    version: int
    source: SourceDoc
    log: LogDoc | None
    samples: SamplesDoc | None
    trace: TraceDoc | None
    table: dict[str, Any] | None     # a benchmark tool's table (Google Benchmark, nccl-tests, nsys stats)
    ranks: RanksDoc | None           # a folder of per-rank traces or runs: each rank's row (analysis.ranks)
    findings: list[dict[str, Any]]   # Diagnosis.to_json(), ranked
    first_cause: str | None
    what_if: dict[str, Any] | None
    evidence: dict[str, Any] | None


class Analysis(Protocol):
    """What the document reads of gpuscope.analysis.result.Analysis (named here as a Protocol:
    the result imports this module, not the other way round)."""

    source: str
    kind: str
    model_name: str
    options: AnalyzeOptions
    log: LogPart | None
    samples: Activity | None
    findings: list[Diagnosis]
    what_if: dict | None
    model: RoleModel | None
    evidence: Evidence | None
    samples_read: dict | None
    table: BenchTable | None

    @property
    def trace(self) -> TraceParts | None: ...


class TraceParts(Protocol):
    """What the document reads of gpuscope.analysis.trace_analysis.TraceAnalysis (a Protocol:
    the trace analysis names TraceActivityDoc, so this module does not import it back)."""

    @property
    def activity(self) -> TraceActivityDoc: ...
    @property
    def memcpy(self) -> list[dict[str, Any]]: ...
    @property
    def memset(self) -> list[dict[str, Any]]: ...
    @property
    def kernels(self) -> list[dict[str, Any]]: ...
    @property
    def top_kernels(self) -> list[dict[str, Any]]: ...
    @property
    def idle_gaps(self) -> list[dict[str, Any]]: ...
    @property
    def split(self) -> list[dict[str, Any]]: ...
    @property
    def trace(self) -> dict[str, Any]: ...
    @property
    def options(self) -> dict[str, Any]: ...


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


def _log(a: Analysis, lg: LogPart) -> LogDoc:
    st = lg.stats_table
    names = [str(n) for n in st.index.tolist()]
    comps: dict[str, ComponentDoc] = {
        name: {"role": row["role"], "count": int(row["count"]), "sum_ms": row["sum_ms"], "mean_ms": row["mean_ms"],
               "median_ms": row["median_ms"], "p10_ms": row["p10_ms"], "p90_ms": row["p90_ms"], "cv": row["cv"]}
        for name, row in zip(names, st.records(), strict=True)
    }
    prov = a.model.provenance(names) if a.model is not None else None
    pcie = {"phases": lg.pcie_phases(), **lg.pcie_info} if lg.pcie is not None else (dict(lg.pcie_info) or None)
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
        "timeline": cast("TimelineDoc", lg.timeline),  # (every TIMELINE_KEYS key: timeline_summary)
        "bounds": cast("BoundsDoc", lg.bounds),        # (compute_bounds' one dict)
        "roles": prov["roles"] if prov is not None else None,
        "whole": prov["held"] if prov is not None else None,
        "pcie": pcie,
    }


def split_doc(totals: dict, roles: set[str]) -> SplitDoc:
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
    act = cast("SamplesActivityDoc", a.samples.to_json()) if a.samples is not None else None
    return {"activity": act, "read": a.samples_read}


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

"""The `compare --json` document, defined once: one typed dict per part (issue 31), built once by
`Comparison.to_json()` and read typed by every report (reports/compare_console.py, the HTML
compare page), so mypy checks every key they read.

    {"a": SideDoc, "b": SideDoc, "components": {name: ComponentRowDoc}, "verdict": str,
     "winner": str | null, "bootstrap": {n, seed, confidence}, "prediction": PredictionDoc | null,
     "notes": [str]}

Figures not measured are NaN while computed and null in the document (core.clean): a float
field here is `float | None`. docs/COMPARE.md says what each figure is.
"""

from __future__ import annotations

from typing import Any, TypedDict

from gpuscope.analysis.document import PciePhaseDoc, TraceMemcpyDoc

__all__ = ["ActivityFiguresDoc", "BootstrapDoc", "CompareDoc", "ComponentRowDoc", "PredictionDoc",
           "RecordFiguresDoc", "SideDoc", "UploadFiguresDoc"]


class ComponentRowDoc(TypedDict):
    """One component's row (compare.stats.values_row): both sides' medians and p10-p90 (ms), the
    B/A ratio of the medians with its bootstrap interval."""

    a_count: int
    a_median_ms: float | None
    a_p10_ms: float | None
    a_p90_ms: float | None
    b_count: int
    b_median_ms: float | None
    b_p10_ms: float | None
    b_p90_ms: float | None
    ratio: float | None
    ci_low: float | None
    ci_high: float | None


class ActivityFiguresDoc(TypedDict):
    """The few activity figures compare sets side by side (compare.figures.activity_figures): a
    trace's or the samples', each read by its own keys."""

    source: str | None              # trace | gpm_sm_active | utilization
    span_s: float | None
    busy_fraction: float | None
    working_busy_fraction: float | None
    idle_fraction: float | None     # no compute over the working time
    copy_fraction: float | None
    idle_total_s: float | None
    idle_longest_s: float | None
    rx_p90_gbs: float | None        # a trace: None (no PCIe readings)
    tx_p90_gbs: float | None
    time_near_line_rate_s: float | None


class RecordFiguresDoc(TypedDict):
    """A side's figures of its timing records (compare.figures.record_figures; a side without
    timing lines: 0 records, the rest null)."""

    format: str | None
    partitions: int
    span_s: float | None
    throughput_ppm: float | None
    steps_per_record: int
    lock_held_fraction: float | None
    gpu_busy_fraction: float | None  # the lock-held share under its first name, kept for scripts
    gpu_busy_method: str | None      # timeline | lock_held


class UploadFiguresDoc(TypedDict):
    upload_field: str | None
    upload_ms_median: float | None
    bytes_per_partition: float | None
    bytes_source: str | None
    upload_gbs: float | None


class SideDoc(RecordFiguresDoc, UploadFiguresDoc):
    """One side's run figures (compare.figures.run_figures), `a` or `b` of the document."""

    label: str
    source: str
    mode: str | None                 # pinned | pageable | registered, when known
    sm_active_mean: float | None
    activity: ActivityFiguresDoc | None
    memcpy: list[TraceMemcpyDoc] | None      # a profiler trace's copies (TraceDoc.memcpy rows)
    diagnoses: list[dict[str, Any]] | None   # the side's own findings (AnalysisDoc.findings)
    pcie_per_phase: dict[str, PciePhaseDoc]
    vocabulary: dict[str, Any] | None        # the model's words (Vocabulary.to_json())


class BootstrapDoc(TypedDict):
    n: int
    seed: int
    confidence: float


#: the pinned what-if of one side set against the other side's measurement
#: (compare.comparison.prediction_vs_measured), or {available: false, reason} when none could be made
PredictionDoc = TypedDict("PredictionDoc", {
    "available": bool,
    "reason": str,
    "from": str,
    "against": str,
    "line_rate_gbs": float | None,
    "held_ms_predicted": float | None,
    "held_ms_measured": float | None,
    "held_error": float | None,
    "held_mean_ms_predicted": float | None,
    "held_mean_ms_measured": float | None,
    "held_mean_error": float | None,
    "throughput_ppm_predicted": float | None,
    "throughput_ppm_measured": float | None,
    "throughput_error": float | None,
    "whatif": dict[str, Any],
    "stalled_predicted": list[Any],      # [predicted stalled tenures, of how many]
    "stalled_measured": list[int],
    "from_label": str,
}, total=False)


class CompareDoc(TypedDict):
    a: SideDoc
    b: SideDoc
    components: dict[str, ComponentRowDoc]
    verdict: str
    winner: str | None
    bootstrap: BootstrapDoc
    prediction: PredictionDoc | None
    notes: list[str]

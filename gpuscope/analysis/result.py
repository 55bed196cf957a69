"""Result types of the analysis: options in, Analysis out (its parts: LogPart, the samples' Activity, the
trace's TraceAnalysis; its `analyze --json` document is gpuscope.analysis.document)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, cast

from gpuscope.analysis.core import SEVERITY_ORDER, AnalyzeOptions, Diagnosis, clean
from gpuscope.analysis.document import build_document
from gpuscope.analysis.logpart import LogPart

if TYPE_CHECKING:
    import pandas as pd

    from gpuscope.analysis.document import AnalysisDoc
    from gpuscope.analysis.evidence import Evidence
    from gpuscope.analysis.evidence.samples.activity import Activity
    from gpuscope.analysis.trace_analysis import TraceAnalysis
    from gpuscope.parsers.log.tabledoc import BenchTable
    from gpuscope.rolemodel import RoleModel

__all__ = ["SEVERITY_ORDER", "Analysis", "AnalyzeOptions", "Diagnosis", "LogPart", "TimelineView", "clean"]


@dataclass
class Analysis:
    """What `analyze` found, shaped like the Source: a part for each thing the source has (the
    timing log, the NVML samples' activity, the profiler trace, a benchmark tool's table), None
    where it has none; the
    findings of every part ranked once. `document()` is the `analyze --json` document
    (version 2, gpuscope.analysis.document), built once."""

    source: str
    kind: str                           # what the source is: a log's format, else trace | samples | benchmark_table
    model_name: str
    options: AnalyzeOptions
    log: LogPart | None                 # the timing log's figures, when the source has timing lines
    samples: Activity | None            # GPU activity from the NVML samples, when the source has them
    trace: TraceAnalysis | None         # the profiler trace's analysis, when the source has one
    findings: list[Diagnosis]           # the findings of every part, ranked
    what_if: dict | None = None         # projection.whatif_doc(), when AnalyzeOptions.what_if
    model: RoleModel | None = None      # the role model used (its vocabulary is the reports' words)
    evidence: Evidence | None = None    # every source's pieces the rules read (gpuscope.analysis.evidence)
    samples_read: dict | None = None    # what reading the samples file cost (Source.samples_read)
    malformed_sample_rows: int = 0      # sample rows the reader could not use
    table: BenchTable | None = None     # a benchmark tool's table, when the source is one (its only part)
    _document: dict | None = field(default=None, init=False, repr=False, compare=False)

    def document(self) -> AnalysisDoc:
        """The `analyze --json` document, version 2 (gpuscope.analysis.document), built once."""
        if self._document is None:
            self._document = dict(build_document(self))
        return cast("AnalysisDoc", self._document)


@dataclass(frozen=True)
class TimelineView:
    """What `plot`, `export` and the HTML reports draw for a source (made by
    gpuscope.analysis.timeline_view)."""

    phases: pd.DataFrame             # gpuscope.schemas.PHASE_SCHEMA (may be empty: samples alone)
    samples: pd.DataFrame | None     # gpuscope.schemas.SAMPLE_SCHEMA
    basis: str | None                # where the phases came from
    line_rate_gbs: float | None      # the run's measured line rate (meta.json), for the RX panel
    records: int | None              # complete records of the log, for titles
    origin: float                    # the first phase start (else the first sample): x counts from here
    view: tuple[float, float] | None = None   # (lo, hi) epoch seconds of a window, else None
    intervals: pd.DataFrame | None = None     # ACTIVITY_INTERVAL_SCHEMA: idle gaps to shade
    counters: pd.DataFrame | None = None      # TRACE_COUNTER_SCHEMA: a trace's busy fraction
    lane_noun: str = "worker"                 # what a lane is: a log's worker, a trace's stream
    wall_clock: bool = True                   # False: times are the samples' own (t_mono), not epoch s
    steps_per_record: int = 1                 # a log printing every K-th step: each drawn record stands for K
    record_covers: bool = False               # ... and its times cover those K steps (each mark spans them)

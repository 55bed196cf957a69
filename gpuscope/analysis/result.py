"""Result types of the analysis: options in, Analysis out (with the `analyze --json` contract)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from gpuscope.analysis.causes import first_cause
from gpuscope.analysis.core import SEVERITY_ORDER, AnalyzeOptions, Diagnosis, clean

if TYPE_CHECKING:
    import pandas as pd

    from gpuscope.analysis.evidence import Evidence
    from gpuscope.analysis.evidence.log.table import Table
    from gpuscope.analysis.evidence.samples.activity import Activity
    from gpuscope.analysis.trace_analysis import TraceAnalysis
    from gpuscope.parsers.log.parsed import ParsedLog
    from gpuscope.rolemodel import RoleModel

__all__ = ["SEVERITY_ORDER", "Analysis", "AnalyzeOptions", "Diagnosis", "TimelineView", "clean"]


@dataclass
class Analysis:
    """What `analyze` found. The tables are kept as columns (gpuscope.analysis.evidence.log.table.Table) and
    become DataFrames when a report reads them (`components`, `record_split`,
    `record_components`; `values`, `quantities`, `skipped` are the parsed log's frames), so
    `to_json()` needs no pandas."""

    format: str
    source: str
    total_lines: int
    timing_lines: int
    records: int                     # complete tenures
    incomplete_records: int
    model_name: str
    options: AnalyzeOptions
    stats_table: Table               # component statistics (stats.STAT_COLUMNS, index component)
    split_table: Table               # split.SPLIT_COLUMNS
    wide_table: Table                # record x component (GPU-averaged ms)
    split: dict
    timeline: dict
    bounds: dict
    diagnoses: list[Diagnosis]
    pcie: pd.DataFrame | None = None  # per-phase PCIe/SM figures (pcie.PCIE_COLUMNS)
    pcie_info: dict = field(default_factory=dict)
    parsed: ParsedLog | None = None     # the parsed log (its frames: values, quantities, skipped)
    what_if: dict | None = None         # projection.whatif_doc(), when AnalyzeOptions.what_if
    trace: TraceAnalysis | None = None  # the profiler trace's analysis, when the source has one
    activity: Activity | None = None    # GPU activity from the NVML samples, when the source has them
    model: RoleModel | None = None      # the role model used (its vocabulary is the reports' words)
    evidence: Evidence | None = None    # every source's pieces the rules read (gpuscope.analysis.evidence)
    samples_read: dict | None = None    # what reading the samples file cost (Source.samples_read)
    malformed_sample_rows: int = 0      # sample rows the reader could not use

    @property
    def components(self) -> pd.DataFrame:
        """Component statistics (stats.STAT_COLUMNS, index component)."""
        return self.stats_table.frame()

    @property
    def record_split(self) -> pd.DataFrame:
        """One row per complete record (split.SPLIT_COLUMNS)."""
        return self.split_table.frame()

    @property
    def record_components(self) -> pd.DataFrame:
        """Wide: record x component (GPU-averaged ms)."""
        from gpuscope.analysis.evidence.log.split import record_frame

        return record_frame(self.wide_table)

    @property
    def values(self) -> pd.DataFrame | None:
        """The parsed components (long form), for --csv."""
        return self.parsed.components if self.parsed is not None else None

    @property
    def quantities(self) -> pd.DataFrame | None:
        """The parsed quantities (h2d_bytes, ...), for --csv."""
        return self.parsed.quantities if self.parsed is not None else None

    @property
    def skipped(self) -> pd.DataFrame:
        """line, reason, text of the damaged timing lines."""
        if self.parsed is not None:
            return self.parsed.skipped
        from gpuscope.schemas import SKIPPED_COLUMNS, empty

        return empty(SKIPPED_COLUMNS)

    @property
    def skipped_lines(self) -> int:
        return int(self.parsed.count("skipped")) if self.parsed is not None else 0

    @property
    def steps_per_record(self) -> int:
        """How many of the program's steps one record stands for (ParsedLog.steps_per_record: a
        ProgressMeter printing every 10th batch, a TensorFlow hook every 100th step; else 1)."""
        k = getattr(self.parsed, "steps_per_record", 1) if self.parsed is not None else 1
        return int(k) if isinstance(k, int) and k >= 1 else 1

    @property
    def read_notes(self) -> list[str]:
        """What the parser assumed in reading the log, in sentences (ParsedLog.notes: a unit it
        took where none was printed, lines kept apart as evaluation or statistics, running
        totals differenced, the step counter's advance, the whole): a reader's choice the user
        is shown, not kept to itself."""
        notes = getattr(self.parsed, "notes", None) if self.parsed is not None else None
        return [str(n) for n in notes] if isinstance(notes, list) else []

    def to_json(self) -> dict:
        st = self.stats_table
        comps = {
            str(name): {
                "role": row["role"],
                "count": int(row["count"]),
                "sum_ms": row["sum_ms"],
                "mean_ms": row["mean_ms"],
                "median_ms": row["median_ms"],
                "p10_ms": row["p10_ms"],
                "p90_ms": row["p90_ms"],
                "cv": row["cv"],
            }
            for name, row in zip(st.index.tolist(), st.records(), strict=True)
        }
        split = {k: v for k, v in self.split.items() if k != "records"}
        out = {
            "format": self.format,
            "source": self.source,
            "model": self.model_name,
            "records": self.records,
            # a log printing every K-th step (its own counter says K): each record stands for K steps
            "steps_per_record": self.steps_per_record,
            "read_notes": self.read_notes,  # what the parser assumed (a unit not printed, lines kept apart)
            "incomplete_records": self.incomplete_records,
            "skipped_lines": self.skipped_lines,
            "total_lines": self.total_lines,
            "timing_lines": self.timing_lines,
            "components": comps,
            "split": split,
            "timeline": self.timeline,
            "bounds": self.bounds,
            "diagnoses": [d.to_json() for d in self.diagnoses],
            "first_cause": first_cause(self.diagnoses),
            "options": {
                "line_rate_gbs": self.options.line_rate_gbs,
                "line_rate_source": self.options.line_rate_source,
                "abc_bytes": self.options.abc_bytes,
            },
        }
        if self.pcie is not None:
            out["pcie"] = {"phases": self.pcie_phases(), **self.pcie_info}
        if self.model is not None:  # where the roles came from: {component: {role, how}}, the whole, the words
            prov = self.model.provenance([str(c) for c in st.index.tolist()])
            out.update(roles=prov["roles"], whole=prov["held"], vocabulary=prov["vocabulary"])
        if self.what_if is not None:
            out["what_if"] = self.what_if
        if self.evidence is not None:  # the pieces the rules read: kind, source, GPU, resolution; joins
            out["evidence"] = self.evidence.to_json()
        if self.samples_read is not None:  # what reading the samples file cost: rows kept, dropped, values unreadable
            out["samples_read"] = self.samples_read
        if self.activity is not None:
            out["activity"] = self.activity.to_json()
        if self.trace is not None:  # the trace's activity is exact: it wins; the samples' stays beside
            t = self.trace.to_json()
            if self.activity is not None:
                out["nvml_activity"] = out.pop("activity")
            for key in ("activity", "memcpy", "memset", "kernels", "top_kernels", "idle_gaps", "phases", "trace"):
                out[key] = t[key]
        return clean(out)

    def pcie_phases(self) -> dict | None:
        """`to_json()["pcie"]["phases"]` alone (phase -> PCIe/SM figures, JSON-safe), without
        building the rest of the document; None when the run had no samples."""
        if self.pcie is None:
            return None
        return clean({
            str(r["phase"]): {k: r[k] for k in self.pcie.columns if k != "phase"}
            for _, r in self.pcie.iterrows()
        })


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

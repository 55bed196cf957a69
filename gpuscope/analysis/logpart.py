"""The timing log's part of an Analysis (Analysis.log): computed only when the source has timing
lines. Its own module so the document (gpuscope.analysis.document) and the result both stand on
it without importing each other."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from gpuscope.analysis.core import clean
from gpuscope.analysis.evidence.log.split import record_frame

if TYPE_CHECKING:
    import pandas as pd

    from gpuscope.analysis.document import (
        BoundsDoc,
        LogPcieDoc,
        PciePhaseDoc,
        SplitTotalsDoc,
        TimelineDoc,
    )
    from gpuscope.analysis.evidence.log.table import Table
    from gpuscope.parsers.log.parsed import ParsedLog

__all__ = ["LogPart"]


@dataclass
class LogPart:
    """What the timing log gives (computed only when the source has timing lines). The tables
    are kept as columns (gpuscope.analysis.evidence.log.table.Table) and become DataFrames when
    a report reads them (`components`, `record_split`, `record_components`; `values`,
    `quantities`, `skipped` are the parsed log's frames), so the JSON needs no pandas."""

    format: str                      # the log's format (lines, cuzk, condensed, ...)
    total_lines: int
    timing_lines: int
    records: int                     # complete records (tenures, steps)
    incomplete_records: int
    stats_table: Table               # component statistics (stats.STAT_COLUMNS, index component)
    split_table: Table               # split.SPLIT_COLUMNS
    wide_table: Table                # record x component (GPU-averaged ms)
    split: SplitTotalsDoc            # evidence.log.split.split_totals, with upload_gbs
    timeline: TimelineDoc            # every TIMELINE_KEYS key (evidence.log.timeline_summary)
    bounds: BoundsDoc                # evidence.log.bounds.compute_bounds
    parsed: ParsedLog                # the parsed log (its frames: values, quantities, skipped)
    pcie: pd.DataFrame | None = None  # per-phase PCIe/SM figures (pcie.PCIE_COLUMNS): samples joined to its phases
    pcie_info: LogPcieDoc | None = None  # what the samples joined to it are (null: none); without `phases`

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

        return record_frame(self.wide_table)

    @property
    def values(self) -> pd.DataFrame:
        """The parsed components (long form), for --csv."""
        return self.parsed.components

    @property
    def quantities(self) -> pd.DataFrame | None:
        """The parsed quantities (h2d_bytes, ...), for --csv."""
        return self.parsed.quantities

    @property
    def skipped(self) -> pd.DataFrame:
        """line, reason, text of the damaged timing lines."""
        return self.parsed.skipped

    @property
    def skipped_lines(self) -> int:
        return int(self.parsed.count("skipped"))

    @property
    def steps_per_record(self) -> int:
        """How many of the program's steps one record stands for (ParsedLog.steps_per_record: a
        ProgressMeter printing every 10th batch, a TensorFlow hook every 100th step; else 1)."""
        k = getattr(self.parsed, "steps_per_record", 1)
        return int(k) if isinstance(k, int) and k >= 1 else 1

    @property
    def read_notes(self) -> list[str]:
        """What the parser assumed in reading the log, in sentences (ParsedLog.notes: a unit it
        took where none was printed, lines kept apart as evaluation or statistics, running
        totals differenced, the step counter's advance, the whole): a reader's choice the user
        is shown, not kept to itself."""
        notes = getattr(self.parsed, "notes", None)
        return [str(n) for n in notes] if isinstance(notes, list) else []

    def pcie_phases(self) -> dict[str, PciePhaseDoc] | None:
        """phase -> PCIe/SM figures (JSON-safe); None when the run had no samples on its phases."""
        if self.pcie is None:
            return None
        return clean({
            str(r["phase"]): {k: r[k] for k in self.pcie.columns if k != "phase"}
            for _, r in self.pcie.iterrows()
        })

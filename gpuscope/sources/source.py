"""`Source`: everything gpuscope opened from one path the user named, ready for the analysis.

Built by gpuscope.sources.open_source (the one way in) or, for a log already parsed,
Source.from_parsed. Each part may be missing: a run directory without timing lines has no
`log`, a plain log has no samples, a samples file has neither log nor spans, a benchmark
tool's table (kind `table`) has its `table` alone.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from gpuscope.errors import NoDataError
from gpuscope.linerate import DEFAULT_LINE_RATE_GBS
from gpuscope.rolemodel import RoleModel, model_for
from gpuscope.sources.runmeta import RunMeta

if TYPE_CHECKING:
    import pandas as pd

    from gpuscope.parsers.log.parsed import ParsedLog
    from gpuscope.parsers.log.tabledoc import BenchTable
    from gpuscope.parsers.trace.kineto import TraceFrames


@dataclass
class Source:
    path: Path
    kind: str                                # log | rundir | samples | trace | table
    model: RoleModel
    log: ParsedLog | None = None             # timing records; None: the source has no timing lines
    log_path: Path | None = None
    no_log_reason: str | None = None         # why `log` is None (the parser's one-line message)
    samples: pd.DataFrame | None = None      # gpuscope.schemas.SAMPLE_SCHEMA, None when there are none
    spans: pd.DataFrame | None = None        # spans.csv of a workload run
    trace: TraceFrames | None = None         # a profiler (Kineto) trace: the source itself or --trace
    table: BenchTable | None = None          # a benchmark tool's table: the source itself (no steps, no clock)
    meta: RunMeta = field(default_factory=RunMeta)
    line_rate_gbs: float = DEFAULT_LINE_RATE_GBS   # resolved once (gpuscope.linerate.resolve_line_rate)
    line_rate_source: str = "default"        # option | meta | cache | link | default (analyze: trace)
    notes: list[str] = field(default_factory=list)
    # what the commands say on stderr about the source, one line each (a recording whose
    # recorder is gone, meta.json fields left out): gpuscope.cli._common.say_samples_damage
    warnings: list[str] = field(default_factory=list)
    # what reading the samples cost (parsers.samples.reading_account, plus `file`), None when
    # the source has no samples file; kept also when no row could be read
    samples_read: dict | None = None

    @classmethod
    def from_parsed(cls, parsed: ParsedLog, model: RoleModel | None = None, *,
                    samples: pd.DataFrame | None = None, spans: pd.DataFrame | None = None,
                    meta: dict | None = None, line_rate_gbs: float = DEFAULT_LINE_RATE_GBS,
                    line_rate_source: str = "default") -> Source:
        """A Source around a log parsed elsewhere (tests, the workload's own checks)."""
        return cls(path=Path(str(parsed.source)), kind="log", model=model_for(parsed, model), log=parsed,
                   samples=samples if samples is not None and len(samples) else None, spans=spans,
                   meta=RunMeta(meta or {}), line_rate_gbs=float(line_rate_gbs),
                   line_rate_source=line_rate_source)

    def require_log(self) -> ParsedLog:
        """The timing records, or the NoDataError that says why there are none."""
        if self.log is None:
            raise NoDataError(self.no_log_reason or f"{self.path}: no timing lines")
        return self.log

    def not_a_table(self) -> Source:
        """This source, for a command that needs timed steps or a clock (compare, plot, export, a
        rank, a run's summary): a benchmark tool's table is refused with what it is (exit 4)."""
        if self.table is not None:
            raise NoDataError(self.no_log_reason or f"{self.path}: a benchmark table, not timed steps")
        return self

    @property
    def name(self) -> str:
        """The file or directory name, as titles and labels show it."""
        return self.path.name or str(self.path)

    @property
    def label(self) -> str:
        """A short name for one side of a comparison: a workload run's host-memory mode, else
        the run directory's or the file's name without its suffixes (.log, .json.gz, ...)."""
        if self.meta.mode and self.meta.mode != "record":
            return self.meta.mode
        if self.kind == "rundir":
            return self.name
        name = self.name
        for suffix in (".gz", ".json", ".pt.trace", ".log", ".txt", ".csv"):
            name = name.removesuffix(suffix)
        return name or self.name

"""The parse result: `ParsedLog`, whose frames have the schemas of gpuscope.schemas.

Every frame has the same columns and dtypes whether it holds a million rows or none, so
analysis code never special-cases an empty log (see docs/ARCHITECTURE.md).

The parsers hand their result over as columns (gpuscope.schemas.Columns: numpy arrays,
component names as integer codes); a frame is built from them the first time it is read
(`parsed.components`), so a caller that reads the columns (`parsed.columns("components")`,
as the analysis does) never pays for a million-row DataFrame. Frames given to the
constructor (tests, callers that build a log by hand) are read back into columns on demand.
Treat both as read-only: to change a log, build a new ParsedLog.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gpuscope.parsers.log.formats import NAMES
from gpuscope.parsers.log.words import COUNTERS
from gpuscope.schemas import (
    COMPONENT_COLUMNS,
    QUANTITY_COLUMNS,
    RECORD_COLUMNS,
    SKIPPED_COLUMNS,
    TIMELINE_COLUMNS,
    Columns,
)

if TYPE_CHECKING:
    import pandas as pd

# Keys kept as quantities besides every `*_bytes` key (documented in docs/ARCHITECTURE.md).
COUNT_QUANTITIES = frozenset(("num_circuits",))


def is_quantity_key(key: str) -> bool:
    """`h2d_bytes`, `abc_bytes`, `num_circuits`: a number without a time unit worth keeping."""
    return (key.endswith("_bytes") and len(key) > 6 and key.isidentifier()) or key in COUNT_QUANTITIES


FORMATS = NAMES  # (parsers/log/formats.py: the one table of formats)
#: how ParsedLog.not_parts' reason of a time printed only on evaluation lines starts
EVAL_WHY = "an evaluation's time"

SCHEMAS = {"components": COMPONENT_COLUMNS, "records": RECORD_COLUMNS, "timeline": TIMELINE_COLUMNS,
           "skipped": SKIPPED_COLUMNS, "quantities": QUANTITY_COLUMNS}


class ParsedLog:
    """What parsers.parse_log returns: the log as DataFrames (schemas above), built lazily
    from columns."""

    def __init__(self, format: str, source: str, total_lines: int, timing_lines: int,
                 components: pd.DataFrame | None = None, records: pd.DataFrame | None = None,
                 timeline: pd.DataFrame | None = None, skipped: pd.DataFrame | None = None,
                 quantities: pd.DataFrame | None = None, whole: str | None = None, whole_basis: str = "",
                 notes: list[str] | None = None, *, columns: dict[str, Columns] | None = None,
                 not_parts: dict[str, str] | None = None, steps_per_record: int = 1,
                 record_time_covers: bool = False):
        self.format = format
        self.source = source
        self.total_lines = total_lines
        self.timing_lines = timing_lines
        # the component that is each record's whole (its held time) when the parser found it
        # itself (format `lines`: `step`, `total`, ...), and how it was found; None otherwise
        self.whole = whole
        self.whole_basis = whole_basis
        self.notes = list(notes) if notes is not None else []  # what the parser assumed, in sentences
        # components that are no part of a record's time, and why (format `lines`: a statistic
        # `TTFT.mean`, a part nested in another printed beside it `bwd_allreduce`)
        self.not_parts: dict[str, str] = dict(not_parts or {})
        # how many steps the program ran per record it printed (format `lines`: its own `i/N`
        # counter advancing by K a line, the PyTorch examples' ProgressMeter printing every
        # 10th batch); 1 when each record is one step or the text does not say
        self.steps_per_record = int(steps_per_record) if steps_per_record >= 1 else 1
        # whether a record's times cover those steps (a running total's difference, Hugging Face's
        # train_runtime, TensorFlow's hook's seconds since its last line), or are one step's (a
        # ProgressMeter's batch time, Megatron's time per iteration: the run's time is K x theirs)
        self.record_time_covers = bool(record_time_covers)
        self._cols: dict[str, Columns] = dict(columns or {})
        self._frames: dict[str, pd.DataFrame] = {}
        for name, df in (("components", components), ("records", records), ("timeline", timeline),
                         ("skipped", skipped), ("quantities", quantities)):
            if df is not None:
                self._set(name, df)
        for name, schema in SCHEMAS.items():  # every frame exists, typed, also when empty
            if name not in self._cols and name not in self._frames:
                self._cols[name] = Columns(schema, {})

    def evaluation_names(self) -> frozenset[str]:
        """The components printed only on evaluation lines (no training step's: kept out of
        the component statistics as out of the split)."""
        return frozenset(n for n, why in self.not_parts.items() if why.startswith(EVAL_WHY))

    @staticmethod
    def step_counter_names() -> frozenset[str]:
        """The quantity names that count steps (`step`, `iteration`, `batch`; not `epoch`), which say
        whether a log printed every step (analysis.evidence.log.quantities.counts_every_record)."""
        return COUNTERS - {"epoch"}

    def _set(self, name: str, df: pd.DataFrame) -> None:
        self._frames[name] = df
        self._cols.pop(name, None)

    def _frame(self, name: str) -> pd.DataFrame:
        df = self._frames.get(name)
        if df is None:
            df = self._frames[name] = self._cols[name].frame()
        return df

    def columns(self, name: str) -> Columns:
        """A frame's columns (numpy arrays; text columns as codes where the parser made them)."""
        c = self._cols.get(name)
        if c is None:
            c = self._cols[name] = Columns.from_frame(self._frames[name], SCHEMAS[name])
        return c

    def count(self, name: str) -> int:
        """Rows of a frame, without building it."""
        df = self._frames.get(name)
        return len(df) if df is not None else len(self._cols[name])

    components = property(lambda self: self._frame("components"), lambda self, df: self._set("components", df))
    records = property(lambda self: self._frame("records"), lambda self, df: self._set("records", df))
    timeline = property(lambda self: self._frame("timeline"), lambda self, df: self._set("timeline", df))
    skipped = property(lambda self: self._frame("skipped"), lambda self, df: self._set("skipped", df))
    quantities = property(lambda self: self._frame("quantities"), lambda self, df: self._set("quantities", df))

    def __repr__(self) -> str:
        return (f"ParsedLog(format={self.format!r}, source={self.source!r}, total_lines={self.total_lines}, "
                f"timing_lines={self.timing_lines}, components={self.count('components')} rows, "
                f"records={self.count('records')} rows, skipped={self.count('skipped')} rows)")

    @property
    def complete_records(self) -> int:
        """GPU-lock tenures that have their held line (what `records` counts in JSON)."""
        return int(self.columns("records")["complete"].sum())

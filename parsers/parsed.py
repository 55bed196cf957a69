"""The parse result: `ParsedLog`, whose frames have the schemas of gpuscope.schemas.

Every frame has the same columns and dtypes whether it holds a million rows or none, so
analysis code never special-cases an empty log (see docs/ARCHITECTURE.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from gpuscope.schemas import (
    COMPONENT_COLUMNS,
    QUANTITY_COLUMNS,
    RECORD_COLUMNS,
    SKIPPED_COLUMNS,
    TIMELINE_COLUMNS,
    empty,
)

# Keys kept as quantities besides every `*_bytes` key (documented in docs/ARCHITECTURE.md).
COUNT_QUANTITIES = frozenset(("num_circuits",))


def is_quantity_key(key: str) -> bool:
    """`h2d_bytes`, `abc_bytes`, `num_circuits`: a number without a time unit worth keeping."""
    return (key.endswith("_bytes") and len(key) > 6 and key.isidentifier()) or key in COUNT_QUANTITIES


FORMATS = ("cuzk", "condensed", "kv", "lines")


@dataclass
class ParsedLog:
    """What parsers.parse_log returns: the log as DataFrames (schemas above)."""

    format: str
    source: str
    total_lines: int
    timing_lines: int
    components: pd.DataFrame
    records: pd.DataFrame
    timeline: pd.DataFrame
    skipped: pd.DataFrame
    quantities: pd.DataFrame = field(default_factory=lambda: empty(QUANTITY_COLUMNS))
    # the component that is each record's whole (its held time) when the parser found it
    # itself (format `lines`: `step`, `total`, ...), and how it was found; None otherwise
    whole: str | None = None
    whole_basis: str = ""
    notes: list[str] = field(default_factory=list)  # what the parser assumed, in sentences

    @classmethod
    def empty(cls, source: str, fmt: str) -> ParsedLog:
        """No timing lines at all (a samples file, a profiler trace): every frame typed and empty."""
        return cls(format=fmt, source=source, total_lines=0, timing_lines=0,
                   components=empty(COMPONENT_COLUMNS), records=empty(RECORD_COLUMNS),
                   timeline=empty(TIMELINE_COLUMNS), skipped=empty(SKIPPED_COLUMNS))

    @property
    def complete_records(self) -> int:
        """GPU-lock tenures that have their held line (what `records` counts in JSON)."""
        return int(self.records["complete"].sum())

"""The parse result: `ParsedLog` and the fixed column schemas of its DataFrames.

Every frame has the same columns and dtypes whether it holds a million rows or none, so
analysis code never special-cases an empty log (see docs/ARCHITECTURE.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

STR = "str"

COMPONENT_COLUMNS: dict[str, str] = {
    "record": "int64",
    "gpu": "int64",
    "component": STR,
    "value_ms": "float64",
    "line": "int64",
    "ts": "float64",
    "source": STR,
    "worker": "int64",
    "partition": "int64",
}

RECORD_COLUMNS: dict[str, str] = {
    "record": "int64",
    "first_line": "int64",
    "last_line": "int64",
    "ts_start": "float64",
    "ts_end": "float64",
    "n_gpus": "int64",
    "held_ms": "float64",
    "complete": "bool",
}

TIMELINE_COLUMNS: dict[str, str] = {
    "line": "int64",
    "ts": "float64",
    "offset_ms": "float64",
    "event": STR,
    "job_id": STR,
    "partition": "int64",
    "worker": "int64",
    "synth_ms": "float64",
    "gpu_ms": "float64",
}

SKIPPED_COLUMNS: dict[str, str] = {"line": "int64", "reason": STR, "text": STR}

# Numbers the log prints that are not times (upload byte counts, circuit counts), in their
# own unit: `value` is the number as printed, `name` the key as spelled (h2d_bytes).
QUANTITY_COLUMNS: dict[str, str] = {
    "record": "int64",
    "gpu": "int64",
    "name": STR,
    "value": "float64",
    "line": "int64",
    "ts": "float64",
}
# Keys kept as quantities besides every `*_bytes` key (documented in docs/ARCHITECTURE.md).
COUNT_QUANTITIES = frozenset(("num_circuits",))


def is_quantity_key(key: str) -> bool:
    """`h2d_bytes`, `abc_bytes`, `num_circuits`: a number without a time unit worth keeping."""
    return (key.endswith("_bytes") and len(key) > 6 and key.isidentifier()) or key in COUNT_QUANTITIES

FORMATS = ("cuzk", "condensed", "kv")


def frame(columns: dict[str, list | np.ndarray], schema: dict[str, str]) -> pd.DataFrame:
    """Build a DataFrame from column lists/arrays with the schema's exact dtypes."""
    data = {}
    for name, dtype in schema.items():
        values = columns.get(name, [])
        if dtype == STR:
            data[name] = pd.Series(values, dtype=STR)
        else:
            data[name] = pd.Series(np.asarray(values, dtype=dtype), dtype=dtype, copy=False)
    return pd.DataFrame(data, columns=list(schema), copy=False)


def empty(schema: dict[str, str]) -> pd.DataFrame:
    return frame({}, schema)


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

    @property
    def complete_records(self) -> int:
        """GPU-lock tenures that have their held line (what `records` counts in JSON)."""
        return int(self.records["complete"].sum())

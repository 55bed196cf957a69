"""The frames that cross modules: their columns, dtypes and empty forms, defined once.

Parsers build them, gpuscope.rundir writes and reads them, the analysis consumes them, and
every frame has the same columns and dtypes whether it holds a million rows or none, so no
caller special-cases an empty input (docs/ARCHITECTURE.md lists what each column means).
This module is the bottom layer: it imports nothing from gpuscope, and pandas only when a
frame is built (the run-directory writers import the column names without it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

STR = "str"  # a text column of a log frame (pandas' string dtype where pandas has one)
OBJ = "object"  # a text column that may hold None (samples, phases)

Schema = Mapping[str, str]

# -- a timing log (gpuscope.parsers.ParsedLog) ------------------------------------------------

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

# -- NVML samples (samples.csv, nvidia-smi dmon / query-gpu read into the same columns) -------

SAMPLE_SCHEMA: dict[str, str] = {
    "t_wall": "float64",
    "t_mono": "float64",
    "gpu": "int64",
    "rx_gbs": "float64",
    "tx_gbs": "float64",
    "sm_active": "float64",
    "sm_occupancy": "float64",
    "dram_active": "float64",
    "gpu_util_pct": "float64",
    "mem_util_pct": "float64",
    "mem_used_mib": "float64",
    "power_w": "float64",
    "sm_clock_mhz": "float64",
    "pcie_source": OBJ,
    "wrap_suspect": "int64",
    # read with the slow fields (~5 Hz); absent from files written before they were added
    "mem_clock_mhz": "float64",
    "temperature_c": "float64",
    "clock_event_reasons": "float64",  # NVML clock-event (throttle) reasons bitmask; NaN = not read
}
SAMPLE_COLUMNS: tuple[str, ...] = tuple(SAMPLE_SCHEMA)
SAMPLE_INT_COLUMNS: tuple[str, ...] = tuple(c for c, t in SAMPLE_SCHEMA.items() if t == "int64")
SAMPLE_STR_COLUMNS: tuple[str, ...] = tuple(c for c, t in SAMPLE_SCHEMA.items() if t == OBJ)

# -- phase intervals (spans.csv of a workload run, and the phases rebuilt from a log) ---------

SPAN_PHASES = ("synth", "lock_wait", "h2d", "ntt", "msm", "barrier", "batch_add", "tail_msm", "prep")
SPAN_COLUMNS = ("t_start", "t_end", "gpu", "worker", "partition", "phase")  # spans.csv's order
PHASE_SCHEMA: dict[str, str] = {
    "worker": "int64",
    "gpu": "int64",
    "partition": "int64",
    "phase": OBJ,
    "t_start": "float64",
    "t_end": "float64",
}
PHASE_COLUMNS: list[str] = list(PHASE_SCHEMA)

# -- classed intervals of NVML samples (gpuscope.analysis.activity: Activity.intervals) -------
# consecutive sample intervals of one class merged; class: computing | both | transferring |
# idle_quiet | idle | unknown (gpuscope.analysis.samplegrid); times as the samples' (epoch s)

ACTIVITY_INTERVAL_SCHEMA: dict[str, str] = {
    "gpu": "int64",
    "class": OBJ,
    "t_start": "float64",
    "t_end": "float64",
}


def frame(columns: Mapping[str, Sequence[Any] | Any], schema: Schema) -> pd.DataFrame:
    """A DataFrame from column lists/arrays with the schema's exact dtypes (missing: empty)."""
    import numpy as np
    import pandas as pd

    data = {}
    for name, dtype in schema.items():
        values = columns.get(name, [])
        if dtype in (STR, OBJ):
            data[name] = pd.Series(values, dtype=dtype)
        else:
            data[name] = pd.Series(np.asarray(values, dtype=dtype), dtype=dtype, copy=False)
    return pd.DataFrame(data, columns=list(schema), copy=False)


def empty(schema: Schema) -> pd.DataFrame:
    """The schema's frame with no rows (typed columns)."""
    return frame({}, schema)


def empty_samples() -> pd.DataFrame:
    return empty(SAMPLE_SCHEMA)


def empty_phases() -> pd.DataFrame:
    return empty(PHASE_SCHEMA)

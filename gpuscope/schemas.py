"""The frames that cross modules: their columns, dtypes and empty forms, defined once.

Parsers build them, gpuscope.rundir writes and reads them, the analysis consumes them, and
every frame has the same columns and dtypes whether it holds a million rows or none, so no
caller special-cases an empty input (docs/ARCHITECTURE.md lists what each column means).
This module is the bottom layer: it imports nothing from gpuscope, and pandas only when a
frame is built (the run-directory writers import the column names without it).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
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
    # GPM pipe activity (0-1), beside sm_active; absent from files written before they were added
    "tensor_active": "float64",
    "fp16_active": "float64",
    "fp32_active": "float64",
    "fp64_active": "float64",
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

# -- classed intervals of NVML samples (gpuscope.analysis.evidence.samples.activity: Activity.intervals) -------
# consecutive sample intervals of one class merged; class: computing | both | transferring |
# idle_quiet | idle | unknown (gpuscope.analysis.evidence.samples.samplegrid); times as the samples' (epoch s)

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


class _Deferred(dict):
    """Columns' arrays, some of them made on first read (`pending`: name -> a function): a
    column no one reads (a million lines' line numbers and workers) costs nothing. `keep`
    False (Columns.transient): a column made is given to its reader and not kept."""

    __slots__ = ("keep", "pending")

    def __init__(self) -> None:
        super().__init__()
        self.pending: dict[str, Any] = {}
        self.keep = True

    def __missing__(self, name: str):
        if not self.keep:
            return self.pending[name]()
        v = self[name] = self.pending.pop(name)()
        return v


class Columns:
    """A frame of a schema held as numpy arrays, built into a DataFrame only when asked
    (`frame()`): the analysis reads the arrays, so a command that prints JSON never builds
    the million-row frames (nor imports pandas for them). A column given as a function
    (with `n`) is made when first read. An int64 column given as a narrower signed integer
    array (line numbers as int32, GPUs as int8) is kept in its dtype: a reader that needs
    int64 casts it; the frame has the schema's dtypes.

    A text column is held either as an array of str/object, or as integer codes into a
    list of categories (`codes(name)`, `categories(name)`): component names repeat, and a
    million of them are a few dozen distinct strings. `from_frame` reads a DataFrame back
    (the text columns factorized)."""

    __slots__ = ("schema", "data", "cats", "n")

    def __init__(self, schema: Schema, data: Mapping[str, Any], cats: Mapping[str, Sequence[str]] | None = None,
                 n: int | None = None):
        import numpy as np

        self.schema = schema
        self.cats = {k: list(v) for k, v in (cats or {}).items()}
        self.data = _Deferred()
        for name, dtype in schema.items():
            make = data.get(name)
            if callable(make) and n is not None:
                dt = np.int32 if name in self.cats else (object if dtype in (STR, OBJ) else dtype)
                self.data.pending[name] = lambda make=make, dt=dt: np.asarray(make(), dtype=dt)
            elif name in self.cats:
                self.data[name] = np.asarray(data.get(name, ()), dtype=np.int32)
            elif dtype in (STR, OBJ):
                v = data.get(name, ())
                self.data[name] = v if isinstance(v, np.ndarray) and v.dtype == object else np.asarray(v, dtype=object)
            elif dtype == "int64" and isinstance(make, np.ndarray) and make.dtype.kind == "i":
                self.data[name] = make  # (a narrower integer column stays so: frame() makes it int64)
            else:
                self.data[name] = np.asarray(data.get(name, ()), dtype=dtype)
        lens = {len(v) for v in self.data.values()}
        self.n = n if n is not None else (lens.pop() if lens else 0)

    def __len__(self) -> int:
        return self.n

    @contextmanager
    def transient(self) -> Iterator[Columns]:
        """Inside, a column not made yet (one given as a function) is made for each read and not
        kept: a reader that reads columns once (the phases drawn from a 10^6-line log read its
        3M-row stamps, lines, workers, partitions and sources) holds each only while it uses
        it, not all of them beside what it makes (~100 MB)."""
        keep, self.data.keep = self.data.keep, False
        try:
            yield self
        finally:
            self.data.keep = keep

    def __getitem__(self, name: str):
        """A numeric column's array, or a text column's values (object array)."""
        if name in self.cats:
            import numpy as np

            cats = np.asarray(self.cats[name], dtype=object)
            return cats[self.data[name]] if len(self.data[name]) else np.zeros(0, dtype=object)
        return self.data[name]

    def codes(self, name: str):
        """(codes, categories) of a text column: factorized on first use when held as text."""
        if name not in self.cats:
            import numpy as np

            values = self.data[name]
            index: dict = {}
            for v in dict.fromkeys(values.tolist()):
                index[v] = len(index)
            self.data[name] = np.fromiter(map(index.__getitem__, values.tolist()), dtype=np.int32,
                                          count=len(values))
            self.cats[name] = list(index)
        return self.data[name], self.cats[name]

    def frame(self) -> pd.DataFrame:
        import numpy as np

        cols = {}
        for name in self.schema:
            if name in self.cats:
                cats = np.asarray(self.cats[name], dtype=object)
                cols[name] = cats[self.data[name]] if len(self.data[name]) else np.zeros(0, dtype=object)
            else:
                cols[name] = self.data[name]
        return frame(cols, self.schema)

    @classmethod
    def from_frame(cls, df: pd.DataFrame, schema: Schema) -> Columns:
        data = {}
        for name, dtype in schema.items():
            if name not in df.columns:
                continue
            col = df[name]
            data[name] = col.to_numpy(dtype=object) if dtype in (STR, OBJ) else col.to_numpy(dtype=dtype)
        return cls(schema, data, n=len(df))


def empty(schema: Schema) -> pd.DataFrame:
    """The schema's frame with no rows (typed columns)."""
    return frame({}, schema)


def empty_samples() -> pd.DataFrame:
    return empty(SAMPLE_SCHEMA)


def empty_phases() -> pd.DataFrame:
    return empty(PHASE_SCHEMA)

# -- a profiler trace (PyTorch / Kineto Chrome trace JSON, gpuscope.parsers.trace.kineto) -----------
# Times are microseconds on the trace's clock (`ts_us`, `dur_us`, float64: ~1 ns resolution at
# Kineto's ~5e12 us magnitudes, which epoch seconds would not keep); TraceFrames.epoch_offset_s
# turns them into epoch seconds. Text columns that repeat (names, kinds) are categoricals: a
# 1,000,000-event trace holds a few thousand distinct names.
CAT = "category"

# Device activity: kernels, copies, memsets (one frame: busy time is their union).
TRACE_GPU_SCHEMA: dict[str, str] = {
    "rank": "int64",
    "device": "int64",
    "stream": "int64",
    "kind": CAT,            # kernel | memcpy | memset
    "name": CAT,            # as the trace spells it ("Memcpy HtoD (Pageable -> Device)")
    "ts_us": "float64",
    "dur_us": "float64",
    "correlation": "int64",  # links to the runtime call that issued it (-1: none)
    "bytes": "float64",      # copies and memsets; NaN for kernels
    "direction": CAT,        # HtoD | DtoH | DtoD | PtoP | HtoH | ...; "" for kernels and memsets
    "host_memory": CAT,      # pageable | pinned | device | managed | ...; memsets: their memory
    "trace_gbs": "float64",  # the event's own "memory bandwidth (GB/s)"; NaN when absent or damage
}
#: int64 columns of the GPU frame an Nsight export's reader holds in the narrowest signed integer
#: dtype their values fit (int8 ranks and devices, int16 streams, int32 correlation ids, as
#: they come): the same numbers in fewer bytes (10M kernels: 12.6M rows, 69 -> ~45 bytes a row).
#: A reader of the frame casts where it needs int64; the Kineto reader keeps int64 (its ids may
#: be anything up to 2**53).
TRACE_GPU_NARROW = ("rank", "device", "stream", "correlation")
#: a copy's "memory bandwidth (GB/s)" beyond this (10 TB/s, samples' PCIe bound) or negative is
#: damage: NaN and counted (parsers.trace.kineto), the copy itself kept
TRACE_GBS_MAX = 1e4

# Host activity: runtime/driver calls, operators, Python functions, CPU-side annotations.
TRACE_HOST_SCHEMA: dict[str, str] = {
    "rank": "int64",
    "pid": "int64",
    "tid": "int64",
    "cat": CAT,              # cuda_runtime | cuda_driver | cpu_op | python_function | user_annotation
    "name": CAT,
    "ts_us": "float64",
    "dur_us": "float64",
    "correlation": "int64",  # runtime/driver calls; -1 otherwise
}

# The host events a reader keeps as rows whatever their number (parsers/trace/host_summary.py:
# an Nsight Systems export's others are summarised, not kept): annotations, synchronising and
# allocating runtime/driver calls, and operators named like a data loader, a collective or a
# read-back. What the analysis reads of these by name (gpuscope.analysis.evidence.trace.trace_gaps,
# rules.trace, ranks) is defined here, so a reader keeps exactly what is read.
SYNC_RE = re.compile(r"Synchronize$|^cudaMemcpy(2D|3D)?$|^cuMemcpy(DtoH|HtoD|DtoD)?(_v2)?$|^cudaStreamQuery$")
ALLOC_RE = re.compile(r"^cu(da)?(Malloc|Free|HostAlloc|MallocHost|FreeHost|HostRegister|HostUnregister|"
                      r"MemAlloc|MemFree|MemHostAlloc|MemHostRegister|MemCreate|MemMap)")
DATA_RE = re.compile(r"(?i)dataloader|data_loader|_next_data|__next__|\bfetch|collate|dataset|"
                     r"sampler|^data$|^data[_ .:-]|[_ .:-]data$|load_batch|get_batch|prefetch")
HOST_COLLECTIVE = re.compile(r"^(?:gloo|nccl):", re.IGNORECASE)
C10D = re.compile(r"^c10d::", re.IGNORECASE)
#: operators that read a value back to the host (sync_bound's read-back operators)
READBACK_OPS = ("aten::item", "aten::_local_scalar_dense", "aten::nonzero", "aten::is_nonzero", "aten::equal")


def kept_operator(name: str) -> bool:
    """An operator kept as a row: named like a data loader, a collective or a read-back."""
    return name in READBACK_OPS or bool(DATA_RE.search(name) or HOST_COLLECTIVE.search(name) or C10D.search(name))


# GPU-side annotation ranges (gpu_user_annotation: a record_function's span on a stream).
TRACE_GPU_ANNOTATION_SCHEMA: dict[str, str] = {
    "rank": "int64",
    "device": "int64",
    "stream": "int64",
    "name": CAT,
    "ts_us": "float64",
    "dur_us": "float64",
}

TRACE_DEVICE_SCHEMA: dict[str, str] = {
    "rank": "int64",
    "device": "int64",
    "name": OBJ,
    "num_sms": "int64",       # -1 when the trace does not say
    "total_mem_bytes": "float64",
}

# Events left out: index into the rank's traceEvents, why, and the event's name.
TRACE_SKIPPED_SCHEMA: dict[str, str] = {"rank": "int64", "index": "int64", "reason": OBJ, "name": OBJ}

# Busy-fraction track of a trace (gpuscope.analysis.evidence.trace.trace_activity.counters): one row per
# time bin per device; t_wall is the bin's start (epoch s when the trace has a base time).
TRACE_COUNTER_SCHEMA: dict[str, str] = {
    "t_wall": "float64",
    "gpu": "int64",
    "bin_s": "float64",
    "busy_fraction": "float64",     # union of kernels, copies, memsets / bin
    "kernel_fraction": "float64",   # union of kernels / bin
    "htod_gbs": "float64",          # HtoD bytes moved in the bin / bin (each copy spread evenly)
    "dtoh_gbs": "float64",
    "rank": "int64",                # the trace file (rank) the device's events came from
}


def typed_frame(columns: Mapping[str, Sequence[Any] | Any], schema: Schema) -> pd.DataFrame:
    """`frame` for schemas that also hold categoricals (CAT columns)."""
    import pandas as pd

    cats = {name: columns.get(name, []) for name, dtype in schema.items() if dtype == CAT}
    df = frame({k: v for k, v in columns.items() if k not in cats},
               {k: (OBJ if t == CAT else t) for k, t in schema.items()})
    for name, values in cats.items():
        df[name] = values if isinstance(values, pd.Categorical) else pd.Categorical(values)
    return df


# -- summary.json (gpuscope.summary): the analysis document a run directory ends with ---------
# Its top-level fields and the JSON types each may hold (`analyze --json` of the run; bool is
# no int here). Written only when the document fits; read back (summary.read_summary) with a
# field of another type left out and named, never an internal error.
JSON_OBJECT, JSON_LIST = (dict,), (list,)
SUMMARY_SCHEMA: dict[str, tuple[type, ...]] = {  # the version-2 document (gpuscope.analysis.document)
    "version": (int,), "source": JSON_OBJECT, "log": (dict, type(None)), "samples": (dict, type(None)),
    "trace": (dict, type(None)), "table": (dict, type(None)), "ranks": (dict, type(None)), "findings": JSON_LIST,
    "first_cause": (str, type(None)), "what_if": (dict, type(None)), "evidence": (dict, type(None)),
}
SUMMARY_REQUIRED = ("version", "source", "findings")


def misfits(doc: Mapping[str, Any], schema: Mapping[str, tuple[type, ...]]) -> list[str]:
    """The fields of `doc` whose value is not of the schema's JSON types (bool never counts as
    int; a field the schema does not name is not checked)."""
    bad = []
    for k, v in doc.items():
        types = schema.get(k)
        if types is None:
            continue
        if (isinstance(v, bool) and bool not in types) or not isinstance(v, types):
            bad.append(str(k))
    return bad

"""Nsight Systems SQLite exports (`nsys export --type sqlite`) -> TraceFrames. Pure: no printing.

    is_nsys_sqlite(path_or_head) -> bool    an SQLite file (its 16-byte magic; tracefile.is_sqlite)
    read_nsys_sqlite(path, progress=None) -> TraceFrames
                                            the same frames the Kineto reader gives, so every
                                            rule, report, plot, export and compare reads a report
                                            as it reads a PyTorch trace (docs/TRACES.md);
                                            progress(rows read, rows in all) while it reads

What is read (stdlib sqlite3, read-only; one row per event, the columns straight into numpy
arrays a chunk at a time, rows checked in SQL: parsers/trace/nsys_columns.py; names through
StringIds ids mapped once per distinct id, not joined per row):
- CUPTI_ACTIVITY_KIND_KERNEL (demangledName, else shortName), _MEMSET (memKind) and _MEMCPY
  (copyKind -> direction, srcKind/dstKind -> host memory kind) as `gpu` rows; copyKind and the
  memory kinds decode through the file's own ENUM_CUDA_MEMCPY_OPER / ENUM_CUDA_MEM_KIND, the
  documented numbering only where a table is missing (a note says so). Unified-memory copy kinds
  keep their own direction names (UVM_HtoD, UVM_DtoH, UVM_DtoD).
- CUPTI_ACTIVITY_KIND_RUNTIME (and _DRIVER) as `cuda_runtime` (`cuda_driver`) host events with
  their correlationId (names without the `_v3020` ABI suffix, as Kineto spells them);
  NVTX_EVENTS push/pop and start/end ranges (text, else textId) as `user_annotation` host
  events, except the ranges
  torch.autograd.profiler.emit_nvtx opens around each operator ("aten::mm, seq = 12, op_id = 345"):
  those are operators, Kineto's `cpu_op` events, named without the suffix. Marks and unfinished
  ranges are counted, not kept. Of the host events only the few are rows (annotations,
  synchronising and allocating calls, operators named like a data loader, a collective or a
  read-back); the rest are read once, never held, into TraceFrames.host_summary, which looks
  up in SQL what the analysis asks of them (parsers/trace/nsys_host.py).
- TARGET_INFO_GPU (name, SMs, memory) where the export has it (a note where not);
  TARGET_INFO_SESSION_START_TIME.utcEpochNs as the epoch of time 0 (export times are ns from the
  session start; frames hold microseconds).
- ThreadNames as TraceFrames.threads; GPU_METRICS (--gpu-metrics-devices) as TraceFrames.samples,
  what the export settles of them only (parsers/trace/nsys_extra.py).
- Ranks: one per process (pid = globalPid >> 24 & 0xFFFFFF; the host/VM bits above keep the same
  pid on two hosts apart), processes with GPU activity first, in (host, pid) order: CUPTI
  correlation ids are per process, so (rank, correlation) joins a launch to its GPU work as in a
  Kineto trace.
"""

from __future__ import annotations

import functools
import math
import os
import re
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from gpuscope.allocator import give_back
from gpuscope.arrays import distinct
from gpuscope.errors import InputError, NoDataError
from gpuscope.parsers.trace.kineto import TraceFrames
from gpuscope.parsers.trace.nsys_columns import (
    TIMES,
    Stream,
    Strings,
    categorical,
    present,
    skipped,
    stack_parts,
    stream_tables,
)
from gpuscope.parsers.trace.nsys_extra import gpu_metrics, thread_names
from gpuscope.parsers.trace.nsys_gpu import GpuRead, Table, factorize_rows
from gpuscope.parsers.trace.nsys_host import DRIVER_T, NVTX_T, RUNTIME_T, NsysHost
from gpuscope.parsers.trace.tracefile import is_sqlite as is_nsys_sqlite
from gpuscope.schemas import (
    TRACE_DEVICE_SCHEMA,
    TRACE_GPU_ANNOTATION_SCHEMA,
    TRACE_GPU_NARROW,
    TRACE_GPU_SCHEMA,
    TRACE_HOST_SCHEMA,
    TRACE_SKIPPED_SCHEMA,
    frame,
    typed_frame,
)

__all__ = ["is_nsys_sqlite", "nsys_tables", "read_nsys_sqlite"]

KERNEL_T, MEMCPY_T, MEMSET_T = "CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET"
#: tables any of which makes an SQLite file an Nsight Systems export worth reading
NSYS_TABLES = (KERNEL_T, MEMCPY_T, MEMSET_T, RUNTIME_T, DRIVER_T, NVTX_T)
ID_MASK = 0xFFFFFF
NAN = math.nan

# The documented numbering (CUPTI's CUpti_ActivityMemcpyKind / CUpti_ActivityMemoryKind, what
# ENUM_CUDA_MEMCPY_OPER / ENUM_CUDA_MEM_KIND hold in every export seen): used only when the file
# lacks its table. The trap it guards: memory kind 0 is PAGEABLE and 1 PINNED, not the reverse.
COPY_KINDS_DOC = {i: f"CUDA_MEMCPY_KIND_{k}" for i, k in enumerate(
    ("UNKNOWN", "HTOD", "DTOH", "HTOA", "ATOH", "ATOA", "ATOD", "DTOA", "DTOD", "HTOH", "PTOP",
     "UVM_HTOD", "UVM_DTOH", "UVM_DTOD"))}
MEM_KINDS_DOC = {0: "Pageable", 1: "Pinned", 2: "Device", 3: "Array", 4: "Managed", 5: "Device Static",
                 6: "Managed Static", 7: "Unknown"}
# NVTX range event types (ENUM_NSYS_EVENT_TYPE): push/pop and start/end; marks are instants
NVTX_RANGES_DOC = {59: "NvtxPushPopRange", 60: "NvtxStartEndRange"}
DEVICE_SIDE = {"DtoD", "PtoP", "AtoA", "AtoD", "DtoA", "UVM_DtoD"}
_COPY_NAME = re.compile(r"^(UVM_)?([A-Z])TO([A-Z])$")


def _connect(p: Path) -> sqlite3.Connection:
    try:
        con = sqlite3.connect(f"{p.resolve().as_uri()}?mode=ro", uri=True)
        con.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.Error as e:
        raise InputError(f"{p}: not a readable SQLite database ({e})") from None
    return con


def nsys_tables(con: sqlite3.Connection) -> set[str]:
    return {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")}


def _columns(con: sqlite3.Connection, table: str) -> set[str]:
    return {r[1] for r in con.execute(f"PRAGMA table_info({table})")}


def _direction(name: str) -> str:
    """ENUM_CUDA_MEMCPY_OPER's symbol (CUDA_MEMCPY_KIND_UVM_HTOD) -> Kineto's spelling (UVM_HtoD)."""
    sym = name.removeprefix("CUDA_MEMCPY_KIND_")
    m = _COPY_NAME.match(sym)
    return f"{m.group(1) or ''}{m.group(2)}to{m.group(3)}" if m else sym.lower() or "unknown"


def _enum(con: sqlite3.Connection, tables: set[str], table: str, doc: dict[int, str], notes: list[str],
          by_label: bool) -> dict[int, str]:
    """id -> name from the file's own ENUM table; the documented numbering when it is missing."""
    if table in tables:
        rows = con.execute(f"SELECT id, name, label FROM {table}").fetchall()
        out = {int(i): str(label if by_label and label else name or "") for i, name, label in rows}
        if out:
            return out
    notes.append(f"no {table} table: its codes read by the documented numbering "
                 f"({', '.join(f'{k} {v}' for k, v in list(doc.items())[:4])}, ...)")
    return dict(doc)


def _copy_names(c: int, s: int, d: int, copy_kinds: dict[int, str], mem_kinds: dict[int, str]) -> tuple[str, str, str]:
    """(direction, host memory, Kineto-style name) of a copy of kind `c` from memory kind `s` to `d`."""
    direction = _direction(copy_kinds.get(c, f"kind {c}"))
    src, dst = mem_kinds.get(s, "Unknown"), mem_kinds.get(d, "Unknown")
    host = dst if direction.endswith("toH") and direction != "HtoH" else src
    return direction, "device" if direction in DEVICE_SIDE else _kind(host), f"Memcpy {direction} ({src} -> {dst})"


def _kind(label: str) -> str:
    """A memory kind as Kineto's copy names give it: lower case, `_` for spaces."""
    return label.removeprefix("CUDA_MEMOPR_MEMORY_KIND_").strip().lower().replace(" ", "_") or "unknown"


def _renamed(names: pd.Categorical, fn: Any) -> pd.Categorical:
    """fn applied once per distinct name (names that become alike merge)."""
    return categorical(np.asarray(names.codes), [fn(str(c)) for c in names.categories])


# A process's key is the serialized GlobalId without its thread (>> 24), so the same pid on two
# hosts (a merged multi-node report: the host/VM id sits above bit 48) is two processes.
_PLACE = re.compile(r"\{(\w+)\}")
# (the process key shifted in SQL: ~8 digits printed and parsed a row, not ~15)
GPU_COLS = {"start": "{start}", "end": "{end}", "device": "{deviceId}", "stream": "{streamId}",
            "correlation": "ifnull({correlationId}, -1)", "pkey": "CAST(ifnull({globalPid}, 0) AS INTEGER) >> 24"}
GPU_CHECKS = [TIMES, (present("{deviceId}"), "no deviceId"), (present("{streamId}"), "no streamId")]
BYTES = (present("{bytes}"), "no bytes")


class _Reader:
    """One export: its tables, enums and string ids; the frames built table by table."""

    def __init__(self, con: sqlite3.Connection, where: str, progress: Any = None) -> None:
        self.con, self.where = con, where
        self.tables = nsys_tables(con)
        self.notes: list[str] = []
        self.skips: list[dict] = []
        self.counts: dict[str, int] = {}
        self.strings = Strings(con, self.tables)
        self.progress, self.done = progress, 0
        self._have: dict[str, set[str]] = {}
        # what the GPU read has decoded: a kernel name's StringIds id, a copy's kind triple -> codes
        self._kernel_ids: dict[int, int] = {}
        self._copy_triples: dict[tuple[int, ...], tuple[int, int, int]] = {}
        # a table's row count, once (count(*) walks the table's pages)
        self.rows = functools.cache(lambda t: int(con.execute(f"SELECT count(*) FROM {t}").fetchone()[0]))
        self.total = sum(self.rows(t) for t in NSYS_TABLES if t in self.tables) if progress is not None else 0

    def _tick(self, rows: int) -> None:
        self.done += rows
        if self.progress is not None and self.total:
            self.progress(min(self.done, self.total), self.total)

    def sub(self, table: str, e: str) -> str:
        """An SQL expression's {column} places filled: the quoted column, NULL where the table lacks it."""
        if table not in self._have:
            self._have[table] = _columns(self.con, table)
        have = self._have[table]
        return _PLACE.sub(lambda m: f'"{m[1]}"' if m[1] in have else "NULL", e)

    def _account(self, table: str, conds: list[tuple[str, str]], where: str, got: int,
                 expected: int | Callable[[int], int] | None) -> None:
        """The rows failing a check skipped with their reason (the query naming them runs only when
        fewer rows came than `where` holds: `expected`, or expected(got), else all), the table's
        events counted."""
        want = self.rows(table) if expected is None else expected(got) if callable(expected) else expected
        bad = skipped(self.con, table, conds, self.sub(table, where)) if got < int(want) else []
        self.skips += [{"index": r, "reason": why, "name": table} for r, why in bad]
        self.counts[table] = got + len(bad)

    def streams(self, specs: list[Stream]) -> list[int]:
        """`read` without keeping the rows, several tables at once (nsys_columns.stream_tables)."""
        return stream_tables(self, specs)

    def gpu_read(self) -> GpuRead | None:
        """The kernels, copies and memsets tables read together into the GPU frame's buckets
        (parsers/trace/nsys_gpu.py); None where the export has none of them."""
        tables = []
        if KERNEL_T in self.tables:
            tables.append(Table(KERNEL_T, "kernel", {**GPU_COLS, "name": "ifnull(coalesce({demangledName}, {shortName}), -1)"},
                                GPU_CHECKS))
        if MEMCPY_T in self.tables:
            tables.append(Table(MEMCPY_T, "memcpy", {**GPU_COLS, "bytes": "{bytes}", "ck": "ifnull({copyKind}, -1)",
                                                     "sk": "ifnull({srcKind}, -1)", "dk": "ifnull({dstKind}, -1)"},
                                [*GPU_CHECKS, BYTES]))
            self._copy_kinds = _enum(self.con, self.tables, "ENUM_CUDA_MEMCPY_OPER", COPY_KINDS_DOC, self.notes,
                                     by_label=False)
        if MEMSET_T in self.tables:
            tables.append(Table(MEMSET_T, "memset", {**GPU_COLS, "bytes": "{bytes}", "mk": "ifnull({memKind}, 7)"},
                                [*GPU_CHECKS, BYTES]))
        if not tables:
            return None
        if MEMCPY_T in self.tables or MEMSET_T in self.tables:
            self._mem_kinds()
        return GpuRead(self, tables, self._kernel_names, self._copy_labels, self._memset_labels).read()

    def _kernel_names(self, ids: np.ndarray, labels: Any) -> np.ndarray:
        """A chunk's kernel names (StringIds ids) as name codes, each id looked up once per read."""
        codes, uniq = pd.factorize(ids, sort=False)
        seen = self._kernel_ids
        new = [int(u) for u in uniq if int(u) not in seen]
        if new:
            texts = self.strings.texts(new)
            for u in new:
                seen[u] = labels["name"](texts.get(u, "<unnamed kernel>"))
        return np.array([seen[int(u)] for u in uniq], dtype=np.int64)[codes]

    def _copy_labels(self, x: dict[str, np.ndarray], labels: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """A chunk's copies' (direction, host memory, name) codes, decoded once per distinct kind triple."""
        codes, uniq = factorize_rows(x["ck"], x["sk"], x["dk"])
        seen = self._copy_triples
        for key in uniq:
            if key not in seen:
                c, sk, dk = key
                d, m, n = _copy_names(c, sk, dk, self._copy_kinds, self._mem_kinds())
                seen[key] = (labels["direction"](d), labels["host_memory"](m), labels["name"](n))
        lut = np.array([seen[k] for k in uniq], dtype=np.int64).reshape(-1, 3)
        return lut[codes, 0], lut[codes, 1], lut[codes, 2]

    def _memset_labels(self, x: dict[str, np.ndarray], labels: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """A chunk's memsets' (direction "", memory, name) codes, decoded once per memory kind."""
        codes, uniq = pd.factorize(x["mk"], sort=False)
        kinds = self._mem_kinds()
        lut = np.array([(labels["direction"](""), labels["host_memory"](_kind(kinds.get(int(k), "Unknown"))),
                         labels["name"](f"Memset ({kinds.get(int(k), 'Unknown')})")) for k in uniq],
                       dtype=np.int64).reshape(-1, 3)
        return lut[codes, 0], lut[codes, 1], lut[codes, 2]

    def _mem_kinds(self) -> dict[int, str]:
        if not hasattr(self, "_mk"):
            self._mk = _enum(self.con, self.tables, "ENUM_CUDA_MEM_KIND", MEM_KINDS_DOC, self.notes, by_label=True)
        return self._mk

    def nvtx_ranges(self) -> tuple[str, str, Callable[[int], int]]:
        """(SQL: the NVTX rows that are ranges with an end; SQL: a range's name, its text else its
        StringIds text; ended(got): how many such rows, given how many the read passed): marks,
        domain and category registrations counted apart, ranges without an end counted and noted."""
        types = _enum(self.con, self.tables, "ENUM_NSYS_EVENT_TYPE", NVTX_RANGES_DOC, self.notes, by_label=False) \
            if "ENUM_NSYS_EVENT_TYPE" in self.tables else dict(NVTX_RANGES_DOC)
        ranges = [k for k, v in types.items() if v in ("NvtxPushPopRange", "NvtxStartEndRange")] or list(NVTX_RANGES_DOC)
        kept = f"eventType IN ({','.join(str(int(k)) for k in ranges)})"

        def ended(got: int) -> int:  # (every row read: no mark, open range or row to skip, no scan for them)
            unfinished, n = (0, got) if got >= self.rows(NVTX_T) else self.con.execute(
                f'SELECT total({kept} AND "end" IS NULL), total({kept} AND "end" IS NOT NULL) FROM {NVTX_T}').fetchone()
            self._nvtx_counts = (self.rows(NVTX_T), int(unfinished))
            return int(n)

        # the name in SQL (the row's text, else its StringIds text: a lookup only where text is NULL)
        n = "nullif(coalesce({text}, (SELECT value FROM StringIds WHERE id = {textId})), '')" \
            if "StringIds" in self.tables else "nullif({text}, '')"
        return f'{kept} AND "end" IS NOT NULL', n, ended

    def nvtx_counted(self) -> None:
        """The NVTX table's count with its unfinished ranges, and the other rows apart (after the read)."""
        if not hasattr(self, "_nvtx_counts"):
            return
        total, unfinished = self._nvtx_counts
        self.counts[NVTX_T] += unfinished
        if total > self.counts[NVTX_T]:
            self.counts["nvtx_other"] = total - self.counts[NVTX_T]  # marks, domain and category registrations
        if unfinished:
            self.counts["nvtx_unfinished"] = unfinished
            self.notes.append(f"{unfinished} NVTX range(s) without an end (open when the capture stopped) left out")

    def devices(self, pairs: list[tuple[int, int]]) -> pd.DataFrame:
        """One row per (rank, device) with activity (`pairs`, in order); name, SMs and memory from
        TARGET_INFO_GPU."""
        info: dict[int, tuple[str, int, float]] = {}
        if "TARGET_INFO_GPU" in self.tables:
            have = _columns(self.con, "TARGET_INFO_GPU")
            dev = "coalesce(cuDevice, id)" if "cuDevice" in have else "id"
            for d, name, sms, mem in self.con.execute(
                    f"SELECT {dev}, name, smCount, totalMemory FROM TARGET_INFO_GPU"):
                if isinstance(d, int):
                    info[d] = (str(name or "")[:200], sms if isinstance(sms, int) and sms >= 0 else -1,
                               float(mem) if isinstance(mem, (int, float)) and mem >= 0 else NAN)
        else:
            self.notes.append("no TARGET_INFO_GPU table: GPU names, SM counts and memory sizes unknown")
        rows: dict[str, list] = {c: [] for c in TRACE_DEVICE_SCHEMA}
        for r, d in pairs:
            name, sms, mem = info.get(int(d), ("", -1, NAN))
            for c, v in zip(("rank", "device", "name", "num_sms", "total_mem_bytes"), (r, d, name, sms, mem),
                            strict=True):
                rows[c].append(v)
        return frame(rows, TRACE_DEVICE_SCHEMA)

    def epoch(self) -> float | None:
        if "TARGET_INFO_SESSION_START_TIME" in self.tables:
            row = self.con.execute("SELECT utcEpochNs FROM TARGET_INFO_SESSION_START_TIME").fetchone()
            if row and isinstance(row[0], int) and row[0] > 0:
                return row[0] / 1e9
        self.notes.append("no TARGET_INFO_SESSION_START_TIME.utcEpochNs: times are relative to the capture's "
                          "start, not epoch")
        return None


def _ranks(gpu_keys: set[int], host_keys: set[int]) -> dict[int, int]:
    """process key -> rank: processes with GPU activity first, then the others, each in key order."""
    with_gpu = sorted(gpu_keys)
    rest = sorted(set(host_keys) - set(with_gpu))
    return {p: i for i, p in enumerate(with_gpu + rest)}


def _kernel_spans(gpu: pd.DataFrame) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """CUDA device -> its kernels' (start, end) in ns, for every device with GPU events."""
    kern, dev = gpu["kind"].astype(object).to_numpy() == "kernel", gpu["device"].to_numpy()
    s = gpu["ts_us"].to_numpy() * 1e3
    e = s + gpu["dur_us"].to_numpy() * 1e3
    return {int(d): (s[kern & (dev == d)], e[kern & (dev == d)]) for d in distinct(dev)}


def read_nsys_sqlite(source: str | os.PathLike[str], progress: Any = None) -> TraceFrames:
    """Read an Nsight Systems SQLite export. InputError: missing, not SQLite, an SQLite file that
    is not an Nsight Systems export. NoDataError: an export without kernels, copies, memsets,
    runtime calls or NVTX ranges. `progress(done, total)`: event rows read so far, of all."""
    p = Path(source)
    if not p.is_file():
        raise InputError(f"no such file: {p}")
    if not is_nsys_sqlite(p):
        raise InputError(f"{p}: not an SQLite file")
    con = _connect(p)
    try:
        tables = nsys_tables(con)
        if not (set(NSYS_TABLES) & tables):
            raise InputError(f"{p}: an SQLite file that is not an Nsight Systems export (none of the tables "
                             f"{', '.join(NSYS_TABLES)})")
        try:
            return _frames(_Reader(con, str(p), progress), p)
        except (sqlite3.Error, KeyError, ValueError, TypeError, OverflowError) as e:
            raise InputError(f"{p}: a damaged Nsight Systems export ({type(e).__name__}: {e})") from None
    finally:
        con.close()


def _frames(r: _Reader, p: Path) -> TraceFrames:
    # the host side first: its chunks come and go before the GPU frame is built (nsys_host.py)
    side = NsysHost(r)
    host_parts = side.read()
    r.nvtx_counted()
    gpu_read = r.gpu_read()
    if r.progress is not None and r.total:
        r.progress(r.total, r.total)  # (marks and skipped rows are read past, not read)
    ranks = _ranks(gpu_read.pkeys() if gpu_read else set(),
                   side.pkeys() | {int(k) for p in host_parts for k in distinct(p["rank"])})
    gpu, pairs = gpu_read.frame(ranks, TRACE_GPU_NARROW) if gpu_read else (typed_frame({}, TRACE_GPU_SCHEMA), [])
    kinds = {t.kind: t.got for t in gpu_read.tables} if gpu_read else {}  # (the frame's rows by kind, as read)
    del gpu_read
    host = stack_parts(host_parts, TRACE_HOST_SCHEMA, ranks, ["rank", "ts_us"])
    give_back()  # (the tables' parts and the sort's keys, freed: the frames are what the analysis holds)
    host_events = sum(side.counts.values())
    if not len(gpu) and not host_events:
        raise NoDataError(f"{p}: no kernel, copy, memset, runtime call or NVTX range in the export "
                          f"({len(r.skips)} skipped)")
    devices = r.devices(pairs)
    epoch = r.epoch()
    counts = {k: int(kinds.get(k, 0)) for k in ("kernel", "memcpy", "memset")}
    counts.update({k: int(side.counts.get(k, 0)) for k in ("cuda_runtime", "cuda_driver", "cpu_op", "user_annotation")})
    counts.update({k: v for k, v in r.counts.items() if k.startswith("nvtx_")})
    for t in ("CUPTI_ACTIVITY_KIND_GRAPH_TRACE", "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", "GPU_METRICS"):
        if t in r.tables:
            counts[t.removeprefix("CUPTI_ACTIVITY_KIND_").lower()] = int(
                r.con.execute(f"SELECT count(*) FROM {t}").fetchone()[0])
    spans = _kernel_spans(gpu) if "GPU_METRICS" in r.tables else {}
    samples = gpu_metrics(r.con, r.tables, spans, epoch, r.notes)
    skipped_rows = frame({"rank": [0] * len(r.skips), **{k: [s[k] for s in r.skips] for k in ("index", "reason", "name")}},
                         TRACE_SKIPPED_SCHEMA)
    return TraceFrames(
        source=str(p), files=[str(p)], ranks=sorted(set(ranks.values())) or [0], gpu=gpu, host=host,
        gpu_annotations=typed_frame({}, TRACE_GPU_ANNOTATION_SCHEMA), devices=devices, skipped=skipped_rows,
        epoch_offset_s=epoch, events=sum(v for k, v in r.counts.items() if not k.startswith("nvtx_")),
        counts=counts, truncated=False, reader="sqlite3", notes=r.notes, host_only_ranges=True,
        threads=thread_names(r.con, r.tables, ranks), samples=samples, host_summary=side.summary(p, ranks),
    )

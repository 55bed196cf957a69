"""Nsight Systems SQLite exports (`nsys export --type sqlite`) -> TraceFrames. Pure: no printing.

    is_nsys_sqlite(path_or_head) -> bool    an SQLite file (its 16-byte magic; tracefile.is_sqlite)
    read_nsys_sqlite(path) -> TraceFrames   the same frames the Kineto reader gives, so every
                                            rule, report, plot, export and compare reads a report
                                            as it reads a PyTorch trace (docs/TRACES.md)

What is read (stdlib sqlite3, read-only; one row per event, names through StringIds ids mapped
once per distinct id, not joined per row):
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
  ranges are counted, not kept.
- TARGET_INFO_GPU (name, SMs, memory) where the export has it (a note where not);
  TARGET_INFO_SESSION_START_TIME.utcEpochNs as the epoch of time 0 (export times are ns from the
  session start; frames hold microseconds).
- Ranks: one per process (pid = globalPid >> 24 & 0xFFFFFF; the host/VM bits above keep the same
  pid on two hosts apart), processes with GPU activity first, in (host, pid) order: CUPTI
  correlation ids are per process, so (rank, correlation) joins a launch to its GPU work as in a
  Kineto trace.
"""

from __future__ import annotations

import math
import os
import re
import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from gpuscope.errors import InputError, NoDataError
from gpuscope.parsers.trace.kineto import TraceFrames, _concat
from gpuscope.parsers.trace.tracefile import is_sqlite as is_nsys_sqlite
from gpuscope.schemas import (
    TRACE_DEVICE_SCHEMA,
    TRACE_GPU_ANNOTATION_SCHEMA,
    TRACE_GPU_SCHEMA,
    TRACE_HOST_SCHEMA,
    TRACE_SKIPPED_SCHEMA,
    frame,
    typed_frame,
)

__all__ = ["is_nsys_sqlite", "nsys_tables", "read_nsys_sqlite"]

KERNEL_T, MEMCPY_T, MEMSET_T = "CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET"
RUNTIME_T, DRIVER_T, NVTX_T = "CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_DRIVER", "NVTX_EVENTS"
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
_VERSION_SUFFIX = re.compile(r"_v\d+$")
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


class _Strings:
    """StringIds, looked up once per distinct id."""

    def __init__(self, con: sqlite3.Connection, tables: set[str]) -> None:
        self.con, self.ok = con, "StringIds" in tables

    def names(self, ids: pd.Series, fallback: str) -> pd.Categorical:
        codes, uniq = pd.factorize(ids, sort=False)
        got: dict[int, str] = {}
        if self.ok and len(uniq):
            want = [int(u) for u in uniq if not pd.isna(u)]
            for k in range(0, len(want), 900):  # SQLite's bound-parameter limit
                chunk = want[k:k + 900]
                q = f"SELECT id, value FROM StringIds WHERE id IN ({','.join('?' * len(chunk))})"
                got.update({int(i): str(v) for i, v in self.con.execute(q, chunk)})
        # the last entry is the fallback: codes of -1 (a NULL id) pick it
        cats = np.array([*(got.get(int(u), fallback) for u in uniq), fallback], dtype=object)
        return pd.Categorical(cats[np.where(codes < 0, len(uniq), codes)])


CHUNK_ROWS = 1 << 18


def _read(con: sqlite3.Connection, sql: str) -> pd.DataFrame:
    """The rows in chunks: the driver's per-row tuples live one chunk at a time, not for the whole
    table (a report of 10,000,000 kernels), and each chunk becomes typed columns at once."""
    parts = list(pd.read_sql_query(sql, con, chunksize=CHUNK_ROWS))
    if len(parts) == 1:
        return parts[0]
    return pd.concat(parts, ignore_index=True) if parts else pd.read_sql_query(sql, con)


def _times(df: pd.DataFrame, skips: list[dict], table: str) -> pd.DataFrame:
    """Rows with integer start and end, the end not before the start, and the device and stream
    a GPU row needs (the others skipped and counted, the rest read)."""
    num = {c: pd.to_numeric(df[c], errors="coerce") for c in ("start", "end", "deviceId", "streamId") if c in df}
    bad = num["start"].isna() | num["end"].isna() | (num["end"] < num["start"])
    why = np.where(bad.to_numpy(), f"{table}: no start/end or end before start", "")
    for c in ("deviceId", "streamId", "bytes"):
        if c in num or c in df:
            v = num.get(c, pd.to_numeric(df[c], errors="coerce"))
            miss = ((v.isna() | (v < 0)).to_numpy()) & (why == "")
            why[miss] = f"{table}: no {c}"
    for idx in np.flatnonzero(why != ""):
        skips.append({"index": int(df["rowid"].iloc[idx]), "reason": str(why[idx]), "name": table})
    keep = why == ""
    out = df[keep]
    for c, v in num.items():
        out = out.assign(**{c: v[keep].astype("int64")})
    return out


def _gpu_part(df: pd.DataFrame, kind: str, names: Any, ranks: dict[int, int]) -> dict[str, Any]:
    n = len(df)
    pid = _pid_of(df["globalPid"])
    return {
        "rank": _rank_of(pid, ranks),
        "device": df["deviceId"].to_numpy(dtype=np.int64), "stream": df["streamId"].to_numpy(dtype=np.int64),
        "kind": pd.Categorical([kind] * n), "name": names,
        "ts_us": df["start"].to_numpy(dtype=np.float64) / 1e3,
        "dur_us": (df["end"].to_numpy(dtype=np.int64) - df["start"].to_numpy(dtype=np.int64)) / 1e3,
        "correlation": df["correlationId"].fillna(-1).to_numpy(dtype=np.int64),
        "bytes": df["bytes"].to_numpy(dtype=np.float64) if "bytes" in df else np.full(n, NAN),
        "trace_gbs": np.full(n, NAN),
    }


def _copy_columns(df: pd.DataFrame, copy_kinds: dict[int, str], mem_kinds: dict[int, str]
                  ) -> tuple[pd.Categorical, pd.Categorical, pd.Categorical]:
    """(direction, host memory, Kineto-style name) per copy, decoded once per distinct triple."""
    keys = df[["copyKind", "srcKind", "dstKind"]].fillna(-1).astype("int64")
    codes, uniq = pd.factorize(pd.MultiIndex.from_frame(keys), sort=False)
    d_, m_, n_ = [], [], []
    for ck, sk, dk in uniq:
        direction = _direction(copy_kinds.get(int(ck), f"kind {ck}"))
        src, dst = mem_kinds.get(int(sk), "Unknown"), mem_kinds.get(int(dk), "Unknown")
        host = dst if direction.endswith("toH") and direction != "HtoH" else src
        d_.append(direction)
        m_.append("device" if direction in DEVICE_SIDE else _kind(host))
        n_.append(f"Memcpy {direction} ({src} -> {dst})")
    pick = lambda vals: pd.Categorical(np.asarray(vals, dtype=object)[codes])  # noqa: E731
    return pick(d_), pick(m_), pick(n_)


def _kind(label: str) -> str:
    """A memory kind as Kineto's copy names give it: lower case, `_` for spaces."""
    return label.removeprefix("CUDA_MEMOPR_MEMORY_KIND_").strip().lower().replace(" ", "_") or "unknown"


# "aten::mm, seq = 12, op_id = 345[, sizes = ...]": a range emit_nvtx opens around each operator
_EMIT_NVTX = re.compile(r"^([^,]+?),\s*(?:seq\s*=\s*\d+,\s*)?op_id\s*=\s*\d+.*$", re.S)


def _emit_nvtx_ops(names: pd.Categorical) -> np.ndarray:
    hit = np.array([bool(_EMIT_NVTX.match(str(c))) for c in names.categories], dtype=bool)
    codes = np.asarray(names.codes)
    return hit[codes] & (codes >= 0) if hit.size else np.zeros(len(names), dtype=bool)


def _renamed(names: pd.Categorical, fn: Any) -> pd.Categorical:
    """fn applied once per distinct name (names that become alike merge)."""
    new = pd.Series([fn(str(c)) for c in names.categories], dtype=object)
    inv, uniq = pd.factorize(new, sort=False)
    codes = np.asarray(names.codes)
    remapped = np.where(codes >= 0, inv[np.maximum(codes, 0)] if len(inv) else -1, -1)
    return pd.Categorical.from_codes(remapped, categories=pd.Index(uniq, dtype=object))


def _rank_of(pid: np.ndarray, ranks: dict[int, int]) -> np.ndarray:
    keys = np.array(sorted(ranks), dtype=np.int64)
    vals = np.array([ranks[int(k)] for k in keys], dtype=np.int64)
    return vals[np.searchsorted(keys, pid)]


def _pid_of(global_id: pd.Series) -> np.ndarray:
    """A process's key: the serialized GlobalId without its thread, so the same pid on two hosts
    (a merged multi-node report: the host/VM id sits above bit 48) is two processes."""
    return global_id.fillna(0).astype("int64").to_numpy() >> 24


class _Reader:
    """One export: its tables, enums and string ids; the frames built table by table."""

    def __init__(self, con: sqlite3.Connection, where: str) -> None:
        self.con, self.where = con, where
        self.tables = nsys_tables(con)
        self.notes: list[str] = []
        self.skips: list[dict] = []
        self.counts: dict[str, int] = {}
        self.strings = _Strings(con, self.tables)

    def rows(self, table: str, cols: list[str]) -> pd.DataFrame:
        have = _columns(self.con, table)
        sel = ", ".join(c if c in have else f"NULL AS {c}" for c in cols)
        df = _read(self.con, f"SELECT rowid AS rowid, {sel} FROM {table}")
        self.counts[table] = len(df)
        return _times(df, self.skips, table)

    def gpu_rows(self) -> list[tuple[str, pd.DataFrame]]:
        base = ["start", "end", "deviceId", "streamId", "correlationId", "globalPid"]
        out = []
        if KERNEL_T in self.tables:
            out.append(("kernel", self.rows(KERNEL_T, [*base, "demangledName", "shortName"])))
        if MEMCPY_T in self.tables:
            out.append(("memcpy", self.rows(MEMCPY_T, [*base, "bytes", "copyKind", "srcKind", "dstKind"])))
        if MEMSET_T in self.tables:
            out.append(("memset", self.rows(MEMSET_T, [*base, "bytes", "memKind"])))
        return out

    def gpu_frame(self, parts: list[tuple[str, pd.DataFrame]], ranks: dict[int, int]) -> pd.DataFrame:
        copy_kinds = mem_kinds = None
        cols = []
        for kind, df in parts:
            if kind == "kernel":
                ids = df["demangledName"].where(df["demangledName"].notna(), df["shortName"])
                p = _gpu_part(df, kind, self.strings.names(ids, "<unnamed kernel>"), ranks)
                p["direction"] = p["host_memory"] = pd.Categorical([""] * len(df))
            elif kind == "memcpy":
                copy_kinds = copy_kinds or _enum(self.con, self.tables, "ENUM_CUDA_MEMCPY_OPER", COPY_KINDS_DOC,
                                                 self.notes, by_label=False)
                mem_kinds = mem_kinds or self._mem_kinds()
                direction, memory, names = _copy_columns(df, copy_kinds, mem_kinds)
                p = _gpu_part(df, kind, names, ranks)
                p["direction"], p["host_memory"] = direction, memory
            else:
                mem_kinds = mem_kinds or self._mem_kinds()
                labels = [mem_kinds.get(int(k), "Unknown") for k in df["memKind"].fillna(7).astype("int64")]
                p = _gpu_part(df, kind, pd.Categorical([f"Memset ({m})" for m in labels]), ranks)
                p["direction"], p["host_memory"] = pd.Categorical([""] * len(df)), pd.Categorical(map(_kind, labels))
            cols.append(p)
        return _concat(cols, TRACE_GPU_SCHEMA).sort_values(["rank", "device", "ts_us"], kind="stable",
                                                           ignore_index=True)

    def _mem_kinds(self) -> dict[int, str]:
        return _enum(self.con, self.tables, "ENUM_CUDA_MEM_KIND", MEM_KINDS_DOC, self.notes, by_label=True)

    def host_rows(self) -> list[tuple[str, pd.DataFrame, Any]]:
        out: list[tuple[str, pd.DataFrame, Any]] = []
        for table, cat in ((RUNTIME_T, "cuda_runtime"), (DRIVER_T, "cuda_driver")):
            if table in self.tables:  # driver calls (cuLaunchKernel: Triton, JAX) carry their launches' ids too
                rt = self.rows(table, ["start", "end", "globalTid", "correlationId", "nameId"])
                raw = pd.Series(self.strings.names(rt["nameId"], "<unnamed call>"))
                out.append((cat, rt, _renamed(pd.Categorical(raw), lambda c: _VERSION_SUFFIX.sub("", c))))
        if NVTX_T in self.tables:
            nv = self._nvtx()
            names = self._nvtx_names(nv)
            op = _emit_nvtx_ops(names)
            if op.any():  # torch.autograd.profiler.emit_nvtx's operator ranges: Kineto's cpu_op events
                ops = _renamed(names[op], lambda n: _EMIT_NVTX.sub(r"\1", n))
                out.append(("cpu_op", nv[op], ops))
            out.append(("user_annotation", nv[~op], names[~op]))
        return out

    def _nvtx(self) -> pd.DataFrame:
        have = _columns(self.con, NVTX_T)
        types = _enum(self.con, self.tables, "ENUM_NSYS_EVENT_TYPE", NVTX_RANGES_DOC, self.notes, by_label=False) \
            if "ENUM_NSYS_EVENT_TYPE" in self.tables else dict(NVTX_RANGES_DOC)
        ranges = [k for k, v in types.items() if v in ("NvtxPushPopRange", "NvtxStartEndRange")] or list(NVTX_RANGES_DOC)
        cols = ", ".join(c if c in have else f"NULL AS {c}" for c in ("start", "end", "globalTid", "text", "textId"))
        kept = ",".join(str(int(k)) for k in ranges)
        df = _read(self.con, f"SELECT rowid AS rowid, {cols} FROM {NVTX_T} WHERE eventType IN ({kept})")
        total = int(self.con.execute(f"SELECT count(*) FROM {NVTX_T}").fetchone()[0])
        self.counts[NVTX_T] = len(df)
        if total > len(df):
            self.counts["nvtx_other"] = total - len(df)  # marks, domain and category registrations
        unfinished = df["end"].isna()
        if unfinished.any():
            self.counts["nvtx_unfinished"] = int(unfinished.sum())
            self.notes.append(f"{int(unfinished.sum())} NVTX range(s) without an end (open when the capture "
                              "stopped) left out")
        return _times(df[~unfinished.to_numpy()], self.skips, NVTX_T)

    def _nvtx_names(self, nv: pd.DataFrame) -> pd.Categorical:
        by_id = pd.Series(self.strings.names(nv["textId"], ""), index=nv.index, dtype=object)
        text = nv["text"].where(nv["text"].notna(), by_id).fillna("")
        return pd.Categorical(text.where(text != "", "<unnamed range>").astype(object))

    def host_frame(self, parts: list[tuple[str, pd.DataFrame, Any]], ranks: dict[int, int]) -> pd.DataFrame:
        cols = []
        for cat, df, names in parts:
            gtid = df["globalTid"].fillna(0).astype("int64").to_numpy()
            pid = gtid >> 24
            corr = df["correlationId"] if "correlationId" in df else pd.Series(-1, index=df.index)
            cols.append({
                "rank": _rank_of(pid, ranks), "pid": pid & ID_MASK, "tid": gtid & ID_MASK,
                "cat": pd.Categorical([cat] * len(df)), "name": names,
                "ts_us": df["start"].to_numpy(dtype=np.float64) / 1e3,
                "dur_us": (df["end"].to_numpy(dtype=np.float64) - df["start"].to_numpy(dtype=np.float64)) / 1e3,
                "correlation": corr.fillna(-1).to_numpy(dtype=np.int64),
            })
        return _concat(cols, TRACE_HOST_SCHEMA).sort_values(["rank", "ts_us"], kind="stable", ignore_index=True)

    def devices(self, gpu: pd.DataFrame) -> pd.DataFrame:
        """One row per (rank, device) with activity; name, SMs and memory from TARGET_INFO_GPU."""
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
        pairs = gpu[["rank", "device"]].drop_duplicates().sort_values(["rank", "device"])
        rows: dict[str, list] = {c: [] for c in TRACE_DEVICE_SCHEMA}
        for r, d in pairs.itertuples(index=False):
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


def _ranks(gpu_parts: list[tuple[str, pd.DataFrame]], host_parts: list[tuple[str, pd.DataFrame, Any]]
           ) -> dict[int, int]:
    """pid -> rank: processes with GPU activity first, then the others, each in pid order."""
    with_gpu = sorted({int(p) for _, df in gpu_parts for p in np.unique(_pid_of(df["globalPid"]))})
    rest = sorted({int(p) for _, df, _ in host_parts for p in np.unique(_pid_of(df["globalTid"]))} - set(with_gpu))
    return {p: i for i, p in enumerate(with_gpu + rest)}


def read_nsys_sqlite(source: str | os.PathLike[str]) -> TraceFrames:
    """Read an Nsight Systems SQLite export. InputError: missing, not SQLite, an SQLite file that
    is not an Nsight Systems export. NoDataError: an export without kernels, copies, memsets,
    runtime calls or NVTX ranges."""
    p = Path(source)
    if not p.is_file():
        raise InputError(f"no such file: {p}")
    if not is_nsys_sqlite(p):
        raise InputError(f"{p}: not an SQLite file")
    con = _connect(p)
    try:
        r = _Reader(con, str(p))
        if not (set(NSYS_TABLES) & r.tables):
            raise InputError(f"{p}: an SQLite file that is not an Nsight Systems export (none of the tables "
                             f"{', '.join(NSYS_TABLES)})")
        try:
            return _frames(r, p)
        except (sqlite3.Error, KeyError, ValueError, TypeError) as e:
            raise InputError(f"{p}: a damaged Nsight Systems export ({type(e).__name__}: {e})") from None
    finally:
        con.close()


def _frames(r: _Reader, p: Path) -> TraceFrames:
    gpu_parts, host_parts = r.gpu_rows(), r.host_rows()
    ranks = _ranks(gpu_parts, host_parts)
    gpu = r.gpu_frame(gpu_parts, ranks)
    host = r.host_frame(host_parts, ranks)
    if not len(gpu) and not len(host):
        raise NoDataError(f"{p}: no kernel, copy, memset, runtime call or NVTX range in the export "
                          f"({len(r.skips)} skipped)")
    devices = r.devices(gpu)
    epoch = r.epoch()
    counts = {"kernel": int((gpu["kind"] == "kernel").sum()), "memcpy": int((gpu["kind"] == "memcpy").sum()),
              "memset": int((gpu["kind"] == "memset").sum()),
              "cuda_runtime": int((host["cat"] == "cuda_runtime").sum()),
              "cuda_driver": int((host["cat"] == "cuda_driver").sum()),
              "cpu_op": int((host["cat"] == "cpu_op").sum()),
              "user_annotation": int((host["cat"] == "user_annotation").sum())}
    counts.update({k: v for k, v in r.counts.items() if k.startswith("nvtx_")})
    for t in ("CUPTI_ACTIVITY_KIND_GRAPH_TRACE", "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", "GPU_METRICS"):
        if t in r.tables:
            counts[t.removeprefix("CUPTI_ACTIVITY_KIND_").lower()] = int(
                r.con.execute(f"SELECT count(*) FROM {t}").fetchone()[0])
    if "GPU_METRICS" in r.tables:
        r.notes.append("GPU_METRICS samples are in the export but not read (the exact events are)")
    skipped = frame({"rank": [0] * len(r.skips), **{k: [s[k] for s in r.skips] for k in ("index", "reason", "name")}},
                    TRACE_SKIPPED_SCHEMA)
    return TraceFrames(
        source=str(p), files=[str(p)], ranks=sorted(set(ranks.values())) or [0], gpu=gpu, host=host,
        gpu_annotations=typed_frame({}, TRACE_GPU_ANNOTATION_SCHEMA), devices=devices, skipped=skipped,
        epoch_offset_s=epoch, events=sum(v for k, v in r.counts.items() if not k.startswith("nvtx_")),
        counts=counts, truncated=False, reader="sqlite3", notes=r.notes, host_only_ranges=True,
    )

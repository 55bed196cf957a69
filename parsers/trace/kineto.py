"""PyTorch profiler (Kineto) Chrome traces -> typed DataFrames. Pure: no printing.

    read_trace(source) -> TraceFrames      a .json / .json.gz file, a folder of rank traces, or its bytes / text
    is_trace(path_or_head) -> bool         content detection (a trace, not a log or samples)

What is read (docs/TRACES.md): complete events (ph "X") of the categories kernel, gpu_memcpy, gpu_memset
(device activity), cuda_runtime, cuda_driver, cpu_op, python_function, user_annotation (host activity) and
gpu_user_annotation (annotation ranges on a stream), with their args device, stream, correlation, bytes and
"memory bandwidth (GB/s)"; the header's baseTimeNanoseconds, deviceProperties and distributedInfo. Flow
(ac2g), metadata (ph "M") and other events are counted, not kept: a GPU event's runtime call is found
through `correlation`, which both sides carry. A JAX / XLA trace's streams are read so (xla_events.py).

Reader (kineto_json.py): msgspec decodes into slotted structs of only the fields above (docs/BENCHMARKS.md,
"Profiler traces"); one not of those types is decoded generically, bad events skipped, counted; one cut short is
read up to its last complete event (`truncated`). Bad JSON elsewhere: InputError; none: NoDataError."""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from gpuscope.allocator import gc_paused
from gpuscope.errors import InputError, NoDataError
from gpuscope.parsers.trace.host_summary import HostSummary, Summarised
from gpuscope.parsers.trace.kineto_json import NO_ARGS, Decoded, Event, decode
from gpuscope.parsers.trace.kineto_ranks import read_ranks, step_problems
from gpuscope.parsers.trace.tracefile import file_bytes, gunzip, is_trace, read_file
from gpuscope.parsers.trace.xla_events import kineto_shaped, reader_notes
from gpuscope.schemas import (
    TRACE_DEVICE_SCHEMA,
    TRACE_GBS_MAX,
    TRACE_GPU_ANNOTATION_SCHEMA,
    TRACE_GPU_SCHEMA,
    TRACE_HOST_SCHEMA,
    TRACE_SKIPPED_SCHEMA,
    frame,
    typed_frame,
)

__all__ = ["TraceFrames", "is_trace", "memcpy_kind", "memset_memory", "read_trace"]
NAN = math.nan

# category -> kind; the older spellings (torch < 1.13, HTA's test traces) beside the current ones
GPU_KINDS = (KERNEL, MEMCPY, MEMSET) = ("kernel", "memcpy", "memset")
GPU_ANNOTATION = "gpu_user_annotation"
HOST_CATS = ("cuda_runtime", "cuda_driver", "cpu_op", "python_function", "user_annotation")
CATEGORY_KIND = {
    "kernel": KERNEL, "Kernel": KERNEL,
    "gpu_memcpy": MEMCPY, "Memcpy": MEMCPY,
    "gpu_memset": MEMSET, "Memset": MEMSET,
    "cuda_runtime": "cuda_runtime", "Runtime": "cuda_runtime",
    "cuda_driver": "cuda_driver",
    "cpu_op": "cpu_op", "Operator": "cpu_op",
    "python_function": "python_function", "user_annotation": "user_annotation",
    "gpu_user_annotation": GPU_ANNOTATION,
}


@dataclass
class TraceFrames(Summarised):
    """One trace (or a folder of rank traces) as DataFrames (schemas: gpuscope.schemas)."""

    source: str
    files: list[str]
    ranks: list[int]
    gpu: pd.DataFrame              # TRACE_GPU_SCHEMA: kernels, copies, memsets
    host: pd.DataFrame             # TRACE_HOST_SCHEMA: runtime/driver calls, operators, annotations
    gpu_annotations: pd.DataFrame  # TRACE_GPU_ANNOTATION_SCHEMA
    devices: pd.DataFrame          # TRACE_DEVICE_SCHEMA (deviceProperties)
    skipped: pd.DataFrame          # TRACE_SKIPPED_SCHEMA
    epoch_offset_s: float | None   # epoch seconds of ts_us == 0; None: the trace has no base time
    events: int = 0                # traceEvents entries read (every phase)
    counts: dict[str, int] = field(default_factory=dict)  # kept events per kind, flows, metadata, other
    truncated: bool = False
    reader: str = "msgspec"
    notes: list[str] = field(default_factory=list)
    rank_known: bool = False       # every file named its rank (distributedInfo.rank), each a different one
    host_only_ranges: bool = False  # annotations are the host's alone (Nsight's NVTX): phases get their launches
    threads: dict[tuple[int, int, int], str] = field(default_factory=dict)  # (rank, pid, tid) -> thread name
    samples: pd.DataFrame | None = None  # SAMPLE_SCHEMA rows the trace sampled itself (Nsight's GPU_METRICS)
    host_summary: HostSummary | None = None  # what is read of host events `host` may not keep (summary())

    @property
    def skipped_events(self) -> int:
        return int(len(self.skipped))

    def epoch(self, ts_us: Any) -> Any:
        """Epoch seconds of trace times (seconds from the trace's zero when it has no base time)."""
        return (0.0 if self.epoch_offset_s is None else self.epoch_offset_s) + np.asarray(ts_us) / 1e6


# -- events -> frames -------------------------------------------------------------------------

_MEMCPY_RE = re.compile(r"^Memcpy\s+(\w+)(?:\s*\(\s*([^)]*?)\s*->\s*([^)]*?)\s*\))?")
_ROCM_COPY = {"CopyHostToDevice": ("HtoD", "unknown"), "CopyDeviceToHost": ("DtoH", "unknown"),
              "CopyDeviceToDevice": ("DtoD", "device"), "CopyHostToHost": ("HtoH", "unknown")}
_MEMSET_RE = re.compile(r"^Memset\s*\(\s*([^)]*?)\s*\)")
_DEVICE_SIDE = {"DtoD", "PtoP", "AtoA", "AtoD", "DtoA"}


def _memory_kind(s: str | None) -> str:
    return (s or "unknown").strip().lower().replace(" ", "_") or "unknown"


def memcpy_kind(name: str) -> tuple[str, str]:
    """(direction, host memory) of a copy's name: `Memcpy HtoD (Pageable -> Device)` ->
    ("HtoD", "pageable"); the host side's memory for host copies, "device" for device-side ones."""
    m = _MEMCPY_RE.match(name)
    if m is None:
        return _ROCM_COPY.get(name.split()[0] if name else "", ("unknown", "unknown"))
    direction, src, dst = m.group(1), m.group(2), m.group(3)
    if direction in _DEVICE_SIDE:
        return direction, "device"
    if direction.endswith("toH") and direction != "HtoH":  # DtoH, AtoH: the destination is host
        return direction, _memory_kind(dst)
    return direction, _memory_kind(src)


def memset_memory(name: str) -> str:
    m = _MEMSET_RE.match(name)
    return _memory_kind(m.group(1)) if m else "unknown"


def _cat_from_names(names: list[str], fn) -> tuple[pd.Categorical, pd.Categorical]:
    """Two categoricals derived from a name column, computing fn once per distinct name."""
    codes, uniques = pd.factorize(pd.Series(names, dtype=object), sort=False)
    parsed = [fn(u) for u in uniques]
    first = np.array([p[0] for p in parsed], dtype=object)
    second = np.array([p[1] for p in parsed], dtype=object)
    return pd.Categorical(first[codes]), pd.Categorical(second[codes])


# bounds beyond which a value is damage (skipped, counted): ids are exact in a float64 below 2^53;
# a stamp beyond 1e17 us is past the year 5000; no event lasts 1e12 us (11.6 days), no copy moves
# 2^50 bytes (a PiB); a bandwidth: TRACE_GBS_MAX
ID_MAX = 1 << 53
BAD_ID = -(1 << 62)
TS_MAX_US = 1e17
DUR_MAX_US = 1e12
BYTES_MAX = float(1 << 50)


def _ints(values: list[Any]) -> np.ndarray:
    """Ids as int64: -1 where not an int, BAD_ID where an int beyond +-2^53."""
    return np.fromiter((-1 if type(v) is not int else v if -ID_MAX < v < ID_MAX else BAD_ID for v in values),
                       dtype=np.int64, count=len(values))


def _times(evs: list[Event]) -> tuple[np.ndarray, np.ndarray]:
    ts = np.fromiter((e.ts for e in evs), dtype=np.float64, count=len(evs))
    dur = np.fromiter((e.dur for e in evs), dtype=np.float64, count=len(evs))
    return ts, dur


def _time_problems(ts: np.ndarray, dur: np.ndarray) -> np.ndarray:
    """Reason per event ('' when fine)."""
    why = np.full(ts.size, "", dtype=object)
    with np.errstate(invalid="ignore"):
        why[~np.isfinite(dur) | (dur < 0)] = "no valid dur"
        why[np.isfinite(dur) & (dur > DUR_MAX_US)] = f"dur beyond {DUR_MAX_US:g} us"
        why[~np.isfinite(ts)] = "no valid ts"
        why[np.isfinite(ts) & (np.abs(ts) > TS_MAX_US)] = f"ts beyond {TS_MAX_US:g} us"
    return why


def _id_problems(why: np.ndarray, *cols: np.ndarray) -> None:
    bad = np.zeros(why.size, dtype=bool)
    for c in cols:
        bad |= c == BAD_ID
    why[(why == "") & bad] = "an id beyond 2^53"


class _Skips:
    def __init__(self) -> None:
        self.index: list[int] = []
        self.reason: list[str] = []
        self.name: list[str] = []

    def add(self, idx: np.ndarray, why: np.ndarray, evs: list[Event]) -> np.ndarray:
        """Record the events whose reason is not '', return the mask of the good ones."""
        bad = why != ""
        for k in np.flatnonzero(bad):
            self.index.append(int(idx[k]))
            self.reason.append(str(why[k]))
            self.name.append(evs[k].name[:120])
        return ~bad


def _gpu_frame(kind: str, evs: list[Event], idx: np.ndarray, skips: _Skips) -> dict[str, Any]:
    ts, dur = _times(evs)
    args = [e.args or NO_ARGS for e in evs]
    dev0 = _ints([a.device for a in args])
    stream0 = _ints([a.stream for a in args])
    pid, tid = _ints([e.pid for e in evs]), _ints([e.tid for e in evs])
    corr = _ints([a.correlation for a in args])
    dev = np.where(dev0 >= 0, dev0, pid)
    stream = np.where(stream0 >= 0, stream0, tid)
    nbytes = np.fromiter((a.bytes for a in args), dtype=np.float64, count=len(evs))
    why = _time_problems(ts, dur)
    _id_problems(why, dev0, stream0, dev, stream, corr)
    why[(why == "") & ((dev < 0) | (stream < 0))] = "no device/stream"
    if kind != KERNEL:
        why[(why == "") & ~(np.isfinite(nbytes) & (nbytes >= 0))] = f"{kind} without bytes"
        why[(why == "") & (nbytes > BYTES_MAX)] = f"{kind} of more than 2^50 bytes"
    else:
        nbytes = np.full(len(evs), NAN)
    ok = skips.add(idx, why, evs)
    names = [e.name for e, good in zip(evs, ok, strict=True) if good]
    if kind == MEMCPY:
        direction, memory = _cat_from_names(names, memcpy_kind)
    elif kind == MEMSET:
        _, memory = _cat_from_names(names, lambda n: ("", memset_memory(n)))
        direction = pd.Categorical([""] * len(names))
    else:
        direction = memory = pd.Categorical([""] * len(names))
    gbs = np.fromiter((a.gbs for a in args), dtype=np.float64, count=len(evs))[ok]
    gbs[bad_gbs := ~np.isnan(gbs) & ~((gbs >= 0) & (gbs <= TRACE_GBS_MAX))] = NAN  # 1e308, -5: the copy stays
    return {
        "device": dev[ok], "stream": stream[ok], "kind": [kind] * len(names), "name": names,
        "ts_us": ts[ok], "dur_us": dur[ok],
        "correlation": corr[ok],
        "bytes": nbytes[ok], "direction": direction, "host_memory": memory,
        "trace_gbs": gbs, "bad_gbs": int(bad_gbs.sum()),
    }


def _host_frame(cat: str, evs: list[Event], idx: np.ndarray, skips: _Skips) -> dict[str, Any]:
    ts, dur = _times(evs)
    corr = _ints([(e.args or NO_ARGS).correlation for e in evs])
    pid, tid = _ints([e.pid for e in evs]), _ints([e.tid for e in evs])
    why = _time_problems(ts, dur)
    _id_problems(why, corr, pid, tid)
    step_problems(why, [e.name for e in evs])
    ok = skips.add(idx, why, evs)
    return {
        "pid": pid[ok], "tid": tid[ok],
        "cat": [cat] * int(ok.sum()), "name": [e.name for e, good in zip(evs, ok, strict=True) if good],
        "ts_us": ts[ok], "dur_us": dur[ok], "correlation": corr[ok],
    }


def _concat(parts: list[dict[str, Any]], schema: dict[str, str]) -> pd.DataFrame:
    if not parts:
        return typed_frame({}, schema)
    cols: dict[str, Any] = {}
    for name, dtype in schema.items():
        vals = [p[name] for p in parts]
        if dtype == "category":
            cols[name] = pd.Categorical(np.concatenate([np.asarray(v, dtype=object) for v in vals])
                                        if vals else [])
        else:
            cols[name] = np.concatenate([np.asarray(v, dtype=dtype) for v in vals])
    return typed_frame(cols, schema)


@dataclass
class _Rank:
    gpu: list[dict[str, Any]]
    host: list[dict[str, Any]]
    gann: list[dict[str, Any]]
    devices: dict[str, list]
    skips: _Skips
    base_ns: int | None
    rank: int | None
    events: int
    counts: dict[str, int]
    truncated: bool
    reader: str


def _frames_of(decoded: Decoded) -> _Rank:
    groups: dict[str, list[Event]] = {k: [] for k in (*GPU_KINDS, *HOST_CATS, GPU_ANNOTATION)}
    where: dict[str, list[int]] = {k: [] for k in groups}
    flows = meta = other = 0
    kind_of = CATEGORY_KIND
    for i, e in enumerate(decoded.events):
        ph = e.ph
        if ph == "X":
            k = kind_of.get(e.cat)
            if k is None:
                other += 1
                continue
            groups[k].append(e)
            where[k].append(i)
        elif ph in ("s", "f", "t"):
            flows += 1
        elif ph == "M":
            meta += 1
        else:
            other += 1
    skips = _Skips()
    for i, reason, name in decoded.bad:
        skips.index.append(i)
        skips.reason.append(reason)
        skips.name.append(name)
    gpu = [_gpu_frame(k, groups[k], np.asarray(where[k]), skips) for k in GPU_KINDS if groups[k]]
    host = [_host_frame(k, groups[k], np.asarray(where[k]), skips) for k in HOST_CATS if groups[k]]
    gann = []
    if groups[GPU_ANNOTATION]:
        g = _gpu_frame(KERNEL, groups[GPU_ANNOTATION], np.asarray(where[GPU_ANNOTATION]), skips)
        gann.append({k: g[k] for k in ("device", "stream", "name", "ts_us", "dur_us")})
    counts = {k: len(v) for k, v in groups.items() if v}
    counts.update(flows=flows, metadata=meta, other=other, **decoded.header.get("counts", {}))
    if bad_gbs := sum(int(g.get("bad_gbs", 0)) for g in gpu):
        counts["damaged_bandwidth"] = bad_gbs
    h = decoded.header
    devices: dict[str, list] = {c: [] for c in ("device", "name", "num_sms", "total_mem_bytes")}
    for d in h.get("deviceProperties", []):
        did = d.get("id")
        if not _id_ok(did):
            continue
        sms = d.get("numSms")
        mem = d.get("totalGlobalMem")
        devices["device"].append(did)
        devices["name"].append(str(d.get("name", ""))[:200])
        devices["num_sms"].append(sms if _id_ok(sms) else -1)
        good_mem = isinstance(mem, (int, float)) and not isinstance(mem, bool) and 0 <= mem <= BYTES_MAX
        devices["total_mem_bytes"].append(float(mem) if good_mem else NAN)
    base = h.get("baseTimeNanoseconds")
    rank = h.get("rank")
    good_base = type(base) is int and 0 <= base <= TS_MAX_US * 1e3
    return _Rank(gpu, host, gann, devices, skips, base if good_base else None,
                 rank if _id_ok(rank) else None,
                 len(decoded.events) + len(decoded.bad), counts, decoded.truncated, decoded.reader)


def _id_ok(v: Any) -> bool:
    return type(v) is int and 0 <= v < ID_MAX


def _with_rank(parts: list[dict[str, Any]], rank: int, shift_us: float) -> list[dict[str, Any]]:
    out = []
    for p in parts:
        q = dict(p)
        n = len(q["ts_us"])
        q["rank"] = np.full(n, rank, dtype=np.int64)
        if shift_us:
            q["ts_us"] = np.asarray(q["ts_us"]) + shift_us
        out.append(q)
    return out


def _combine(ranks: list[_Rank], files: list[str], source: str) -> TraceFrames:
    notes: list[str] = []
    ids = [r.rank for r in ranks]
    if all(i is not None for i in ids) and len(set(ids)) == len(ids):
        rank_ids = [int(i) for i in ids]  # type: ignore[arg-type]
    else:
        rank_ids = list(range(len(ranks)))
        if len(ranks) > 1:
            notes.append("ranks numbered by file name order (distributedInfo.rank missing or repeated)")
    bases = [r.base_ns for r in ranks]
    known = [b for b in bases if b is not None]
    if len(known) == len(bases):
        ref = min(known)
        shifts = [(b - ref) / 1e3 for b in known]
        epoch: float | None = ref / 1e9
    else:
        shifts = [0.0] * len(ranks)
        epoch = None
        notes.append("no baseTimeNanoseconds: times are relative to the trace's own clock, not epoch")
    gpu, host, gann, skipped = [], [], [], []
    devs: dict[str, list] = {c: [] for c in TRACE_DEVICE_SCHEMA}
    counts: dict[str, int] = {}
    for r, rid, sh in zip(ranks, rank_ids, shifts, strict=True):
        gpu += _with_rank(r.gpu, rid, sh)
        host += _with_rank(r.host, rid, sh)
        gann += _with_rank(r.gann, rid, sh)
        skipped.append(frame({"rank": [rid] * len(r.skips.index), "index": r.skips.index,
                              "reason": r.skips.reason, "name": r.skips.name}, TRACE_SKIPPED_SCHEMA))
        for c in ("device", "name", "num_sms", "total_mem_bytes"):
            devs[c] += r.devices[c]
        devs["rank"] += [rid] * len(r.devices["device"])
        for k, v in r.counts.items():
            counts[k] = counts.get(k, 0) + v
    if any(r.truncated for r in ranks):
        cut = [f for f, r in zip(files, ranks, strict=True) if r.truncated]
        notes.append(f"truncated trace read up to its last complete event: {', '.join(cut)}")
    readers = sorted({r.reader for r in ranks})
    notes += reader_notes(readers)
    return TraceFrames(
        source=source, files=files, ranks=rank_ids,
        gpu=_concat(gpu, TRACE_GPU_SCHEMA).sort_values(["rank", "device", "ts_us"], kind="stable",
                                                      ignore_index=True),
        host=_concat(host, TRACE_HOST_SCHEMA).sort_values(["rank", "ts_us"], kind="stable", ignore_index=True),
        gpu_annotations=_concat(gann, TRACE_GPU_ANNOTATION_SCHEMA),
        devices=frame(devs, TRACE_DEVICE_SCHEMA),
        skipped=pd.concat(skipped, ignore_index=True) if skipped else frame({}, TRACE_SKIPPED_SCHEMA),
        epoch_offset_s=epoch, events=sum(r.events for r in ranks), counts=counts,
        truncated=any(r.truncated for r in ranks), reader=" + ".join(readers), notes=notes,
        rank_known=all(i is not None for i in ids) and len(set(ids)) == len(ids),
    )


def _read_one(data: bytes, where: str, truncated_gz: bool) -> _Rank:
    decoded = kineto_shaped(decode(data, where))  # (a JAX / XLA trace: its streams' events in Kineto's words)
    del data
    if truncated_gz:
        decoded.truncated = True
    with gc_paused():
        r = _frames_of(decoded)
    if r.events == 0:
        raise NoDataError(f"{where}: the trace holds no events")
    return r


def _read_folder(p: Path) -> TraceFrames:
    """A folder of rank traces: those that can be read, the others said in the notes (kineto_ranks)."""
    ranks, read, failed = read_ranks(p, _read_one)
    frames = _combine(ranks, read, str(p))
    frames.notes += [f"rank not read: {err.one_line()}" for err in failed]
    return frames


def read_trace(source: str | os.PathLike[str] | bytes, *, name: str | None = None) -> TraceFrames:
    """Read a profiler trace: a .json / .json.gz file, a folder of them (one per rank), or the
    document itself as bytes (gzip or not) or as a str starting with `{` or `[`. `name`: the
    file the bytes were read from (once, by the caller), for the size cap and the messages.

    InputError: missing or unreadable, not JSON, corrupt gzip. NoDataError: empty, binary,
    no traceEvents, no events, a folder without traces, no device or host activity at all.
    """
    if isinstance(source, bytes) and name is not None:
        data, cut = file_bytes(source, name)
        frames = _combine([_read_one(data, name, cut)], [name], name)
    elif isinstance(source, bytes):
        data, cut = (gunzip(source, "<bytes>") if source[:2] == b"\x1f\x8b" else (source, False))
        frames = _combine([_read_one(data, "<bytes>", cut)], ["<bytes>"], "<bytes>")
    elif isinstance(source, str) and source.lstrip()[:1] in ("{", "["):
        frames = _combine([_read_one(source.encode(), "<string>", False)], ["<string>"], "<string>")
    else:
        p = Path(source)
        if not p.exists():
            raise InputError(f"no such file or directory: {p}")
        if p.is_dir():
            frames = _read_folder(p)
        else:
            data, cut = read_file(p)
            frames = _combine([_read_one(data, str(p), cut)], [str(p)], str(p))
    if not len(frames.gpu) and not len(frames.host):
        raise NoDataError(f"{frames.source}: no kernel, copy, memset, runtime or operator events in the trace"
                          f" ({frames.skipped_events} skipped)")
    return frames

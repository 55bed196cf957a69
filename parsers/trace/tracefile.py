"""Profiler trace files: which files are traces (`is_trace`, `trace_files`: by content, never
raising), and their bytes (`read_file`, `gunzip`: concatenated gzip members, a truncated
stream). No msgspec here: telling a trace apart costs no decoder, so a run directory without
a trace never needs one (parsers/trace/kineto_json.py decodes)."""

from __future__ import annotations

import os
import zlib
from pathlib import Path

from gpuscope.errors import InputError
from gpuscope.parsers import limits

HEAD_BYTES = 64 * 1024
TRACE_SUFFIXES = (".json", ".json.gz")


def gunzip(data: bytes, where: str) -> tuple[bytes, bool]:
    """(decompressed bytes, truncated); concatenated members are read one after another,
    within the trace cap and the ratio guard (parsers/limits.py)."""
    return limits.gunzip(data, "trace", where)


def read_file(p: Path) -> tuple[bytes, bool]:
    """(the trace file's content, decompressed when gzip; truncated gzip)."""
    return _not_empty(*limits.read_input(p, "trace"), p)


def file_bytes(raw: bytes, where: str) -> tuple[bytes, bool]:
    """What read_file gives, from a file's bytes the caller has read already (the source
    opener reads a file once to tell what it is): the trace's size cap, gzip and the messages
    naming the file, as read_file."""
    limits.check_size(where, "trace", len(raw))
    if raw[:2] == b"\x1f\x8b":
        data, cut = limits.gunzip(raw, "trace", where)
        return _not_empty(limits.utf8(data), cut, where)
    return limits.utf8(raw), False


def _not_empty(data: bytes, truncated: bool, where: object) -> tuple[bytes, bool]:
    if truncated and not data.strip():
        raise InputError(f"{where}: truncated gzip file (nothing could be decompressed)")
    return data, truncated


def head_of(path: Path) -> bytes:
    with open(path, "rb") as fh:
        raw = fh.read(HEAD_BYTES)
    if raw[:2] == b"\x1f\x8b":
        try:
            return zlib.decompressobj(wbits=31).decompress(raw, HEAD_BYTES)
        except zlib.error:
            return b""
    return raw


def looks_like_trace(head: bytes | str) -> bool:
    if isinstance(head, str):
        head = head[:HEAD_BYTES].encode("utf-8", "replace")
    h = head[:HEAD_BYTES].lstrip(b"\xef\xbb\xbf \t\r\n")
    if h[:1] == b"{":
        return b'"traceEvents"' in h or (b'"schemaVersion"' in h and b'"deviceProperties"' in h)
    if h[:1] == b"[":  # the Trace Event Format's bare-array form
        return b'"ph"' in h and b'"ts"' in h
    return False


def trace_files(d: Path) -> list[Path]:
    files = sorted(f for f in d.iterdir() if f.is_file() and f.name.endswith(TRACE_SUFFIXES))
    out = []
    for f in files:
        try:
            if looks_like_trace(head_of(f)):
                out.append(f)
        except OSError:
            continue
    return out


#: tensorboard_trace_handler's file names: in a folder that holds traces, a file named so is a rank
#: even when it is empty or cut before its traceEvents (it is then a rank that could not be read)
RANK_SUFFIXES = (".pt.trace.json", ".pt.trace.json.gz")
#: a sub-folder holding one of these is a run directory (gpuscope.rundir's META, TIMING_LOG, SAMPLES:
#: a parser does not import it), whose trace belongs to that run, not to a folder of rank traces
RUN_FILES = ("meta.json", "timing.log", "samples.csv")


def folder_traces(d: Path) -> list[Path]:
    """The rank traces of a folder: its traces (and, beside them, files named like a rank's trace
    whatever they hold), else those of its sub-folders, one level down (a folder of per-rank
    trace folders, docs/CLI.md). Raises OSError when `d` cannot be listed."""
    found = trace_files(d)
    if found:
        named = [f for f in sorted(d.iterdir()) if f.name.endswith(RANK_SUFFIXES) and f not in found
                 and _plain_file(f)]
        return sorted(found + named)
    out: list[Path] = []
    for sub in sorted(x for x in d.iterdir() if x.is_dir()):
        try:
            if not any((sub / n).exists() for n in RUN_FILES):
                out += trace_files(sub)
        except OSError:
            continue
    return out


def _plain_file(f: Path) -> bool:
    try:
        return f.is_file()
    except OSError:
        return False


def is_trace(path_or_head: str | os.PathLike[str] | bytes) -> bool:
    """True when the file (or a folder's *.json[.gz] file, or these first bytes) is a Chrome
    trace: a JSON object with traceEvents, or the bare array of events. Never raises."""
    if isinstance(path_or_head, bytes):
        if path_or_head[:2] == b"\x1f\x8b":
            try:
                path_or_head = zlib.decompressobj(wbits=31).decompress(path_or_head, HEAD_BYTES)
            except zlib.error:
                return False
        return looks_like_trace(path_or_head)
    if isinstance(path_or_head, str) and path_or_head.lstrip()[:1] in ("{", "["):
        return looks_like_trace(path_or_head)
    try:
        p = Path(path_or_head)
        if p.is_dir():
            return bool(folder_traces(p))
        return p.is_file() and looks_like_trace(head_of(p))
    except (OSError, ValueError):
        return False


SQLITE_MAGIC = b"SQLite format 3\x00"


def is_sqlite(path_or_head: str | os.PathLike[str] | bytes) -> bool:
    """True when these first bytes (or the file) start as an SQLite database (an Nsight Systems
    export is one: parsers/trace/nsys_sqlite.py reads it). Never raises."""
    if isinstance(path_or_head, bytes):
        return path_or_head[:16] == SQLITE_MAGIC
    try:
        with open(path_or_head, "rb") as f:
            return f.read(16) == SQLITE_MAGIC
    except (OSError, ValueError):
        return False

"""`parse_log`: a timing log (path or text) -> ParsedLog. See docs/ARCHITECTURE.md."""

from __future__ import annotations

import gc
import os
from pathlib import Path

from gpuscope.errors import InputError, NoDataError, UsageError
from parsers import cuzk, kv
from parsers.detect import detect_format
from parsers.model import FORMATS, ParsedLog
from parsers.scan import split_lines
from parsers.tenures import build_frames

BINARY_PROBE = 8192
LOG_NAMES = ("timing.log",)


def find_log_in_dir(d: Path) -> Path:
    """A run directory's timing.log, else the only *.log inside."""
    for name in LOG_NAMES:
        if (d / name).is_file():
            return d / name
    logs = sorted(p for p in d.glob("*.log") if p.is_file())
    if len(logs) == 1:
        return logs[0]
    if not logs:
        raise InputError(f"{d} is a directory without a timing log (no timing.log or *.log inside)")
    names = ", ".join(p.name for p in logs[:5])
    raise InputError(f"{d} holds several logs ({names}); name the one to read")


def read_source(source) -> tuple[str, str]:
    """(text, name). A str holding a newline, or an '=' and naming no existing file, is log
    text; any other str (or a PathLike) is a path; bytes are log content."""
    if isinstance(source, bytes):
        return _decode(source, "<bytes>"), "<bytes>"
    if isinstance(source, str) and ("\n" in source or ("=" in source and not _exists(source))):
        if "\x00" in source[:BINARY_PROBE]:
            raise NoDataError("<string> looks binary (NUL bytes), not a text log")
        return source, "<string>"
    if not isinstance(source, (str, os.PathLike)):
        raise InputError(f"cannot read a log from a {type(source).__name__}")
    path = Path(source)
    try:
        if path.is_dir():
            path = find_log_in_dir(path)
        data = path.read_bytes()
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except PermissionError:
        raise InputError(f"{path}: permission denied") from None
    except IsADirectoryError:
        raise InputError(f"{path} is a directory") from None
    except OSError as e:
        raise InputError(f"{path}: cannot read ({e.strerror or e})") from None
    except ValueError:  # e.g. a NUL byte in the name
        raise InputError(f"{str(path)[:80]!r} is not a usable file name") from None
    return _decode(data, str(path)), str(path)


def _exists(path: str) -> bool:
    try:
        return len(path) < 4096 and os.path.exists(path)
    except (OSError, ValueError):
        return False


def _decode(data: bytes, name: str) -> str:
    if not data.strip():
        raise NoDataError(f"{name} is empty")
    if b"\x00" in data[:BINARY_PROBE]:
        raise NoDataError(f"{name} looks binary (NUL bytes), not a text log")
    return data.decode("utf-8", errors="replace")


def parse_log(source, fmt: str | None = None, *, held_key: str = "mutex_held") -> ParsedLog:
    """Parse a timing log into DataFrames. `fmt`: cuzk | condensed | kv | None (detect)."""
    if fmt is not None and fmt not in FORMATS:
        raise UsageError(f"unknown log format {fmt!r} (choose {', '.join(FORMATS)})")
    held = held_key[:-3] if held_key.endswith("_ms") else held_key
    text, name = read_source(source)
    fmt = fmt or detect_format(text)
    enabled = gc.isenabled()
    gc.disable()  # millions of small containers: the cyclic GC would rescan them all
    try:
        lines = split_lines(text)
        total = len(lines)
        if fmt == "cuzk":
            idx = [i for i, ln in enumerate(lines) if "CUZK_" in ln or "TIMELINE," in ln or "_TIMING " in ln]
            s = cuzk.scan_cuzk(lines, idx, held)
        else:
            idx = [i for i, ln in enumerate(lines) if "=" in ln]
            s = kv.scan_kv(lines, idx, held, strict=(fmt == "condensed"), source=fmt)
        del lines, idx
        if s.timing_lines == 0:
            raise NoDataError(f"{name}: no timing lines found (format {fmt})")
        if not s.meta and not s.timeline:
            raise NoDataError(f"{name}: all {s.timing_lines} timing lines are damaged; nothing could be read")
        comps, records, tl, skipped = build_frames(s)
    finally:
        if enabled:
            gc.enable()
    return ParsedLog(
        format=fmt,
        source=name,
        total_lines=total,
        timing_lines=s.timing_lines,
        components=comps,
        records=records,
        timeline=tl,
        skipped=skipped,
    )

"""`parse_log`: a timing log (path or text) -> ParsedLog. See docs/ARCHITECTURE.md."""

from __future__ import annotations

import gc
import os
import pickle
import signal
import threading
from pathlib import Path

from gpuscope.errors import InputError, NoDataError, UsageError
from gpuscope.parsers import cuzk, kv
from gpuscope.parsers import lines as freeform
from gpuscope.parsers.detect import detect_format
from gpuscope.parsers.parsed import FORMATS, ParsedLog
from gpuscope.parsers.scan import Scan, count_lines, split_lines
from gpuscope.parsers.tenures import build_frames

BINARY_PROBE = 8192
PARALLEL_MIN_CHARS = 8 * 2**20  # below this a second process costs more than it saves
PARALLEL_SPLIT = 0.54  # share of the text the parent scans; the child also pickles its part
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


def read_source(source, name: str | None = None) -> tuple[str, str]:
    """(text, name). A str holding a newline, or an '=' and not looking like a path (an
    existing file, a '/' or a .log/.txt/.csv/.out/.err suffix), is log text; any other str
    (or a PathLike) is a path; bytes are log content. `name` names text or bytes in messages
    and in ParsedLog.source (default `<string>` / `<bytes>`)."""
    if isinstance(source, bytes):
        return _decode(source, name or "<bytes>"), name or "<bytes>"
    if isinstance(source, str) and ("\n" in source or ("=" in source and not _looks_like_path(source))):
        name = name or "<string>"
        if "\x00" in source[:BINARY_PROBE]:
            raise NoDataError(f"{name} looks binary (NUL bytes), not a text log")
        return source, name
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


def _looks_like_path(text: str) -> bool:
    """A one-line str with '=': a path if it exists, has a separator or a file suffix."""
    if len(text) >= 4096:
        return False
    try:
        if os.path.exists(text):
            return True
    except (OSError, ValueError):
        return False
    return os.sep in text or "/" in text or text.endswith((".log", ".txt", ".csv", ".out", ".err"))


def _decode(data: bytes, name: str) -> str:
    if not data or data.isspace():  # (strip() would copy the whole file)
        raise NoDataError(f"{name} is empty")
    if b"\x00" in data[:BINARY_PROBE]:
        raise NoDataError(f"{name} looks binary (NUL bytes), not a text log")
    return data.decode("utf-8", errors="replace")


def parse_log(source, fmt: str | None = None, *, held_key: str = "mutex_held", name: str | None = None) -> ParsedLog:
    """Parse a timing log into DataFrames. `fmt`: cuzk | condensed | kv | lines | None (detect);
    `name`: what to call text or bytes in messages and ParsedLog.source."""
    if fmt is not None and fmt not in FORMATS:
        raise UsageError(f"unknown log format {fmt!r} (choose {', '.join(FORMATS)})")
    held = held_key[:-3] if held_key.endswith("_ms") else held_key
    text, name = read_source(source, name)
    fmt = fmt or detect_format(text, held)
    enabled = gc.isenabled()
    gc.disable()  # millions of small containers: the cyclic GC would rescan them all
    try:
        s = scan_text(text, fmt, held)
        if s.timing_lines == 0:
            raise NoDataError(f"{name}: no timing lines found (format {fmt})")
        if not s.has_values():
            raise NoDataError(f"{name}: all {s.timing_lines} timing lines are damaged; nothing could be read")
        comps, records, tl, skipped, quantities = build_frames(s)
    finally:
        if enabled:
            gc.enable()
    return ParsedLog(
        format=fmt,
        source=name,
        total_lines=count_lines(text),
        timing_lines=s.timing_lines,
        components=comps,
        records=records,
        timeline=tl,
        skipped=skipped,
        quantities=quantities,
        whole=getattr(s, "whole", None),
        whole_basis=getattr(s, "whole_basis", ""),
        notes=list(s.notes),
    )


def scan_range(text: str, fmt: str, held: str, first: int) -> Scan:
    """Scan one piece of the log whose first line has number `first`."""
    lines = split_lines(text)
    if fmt == "cuzk":
        idx = [i for i, ln in enumerate(lines) if "CUZK_" in ln or "TIMELINE," in ln or "_TIMING " in ln]
        return cuzk.scan_cuzk(lines, idx, held, first)
    if fmt == "lines":
        return freeform.scan_lines(lines, held, first)
    idx = [i for i, ln in enumerate(lines) if "=" in ln]
    return kv.scan_kv(lines, idx, held, strict=(fmt == "condensed"), source=fmt, first=first)


def scan_text(text: str, fmt: str, held: str) -> Scan:
    """Scan the whole log. A big one is scanned in two halves, the second in a forked child
    (the scan is pure Python, one line at a time; the machine has 2+ cores). One process
    where fork is unavailable or unsafe (other threads running), or if the child fails."""
    mid = text.find("\n", int(len(text) * PARALLEL_SPLIT)) + 1
    if (len(text) < PARALLEL_MIN_CHARS or mid <= 0 or mid >= len(text) or not hasattr(os, "fork")
            or (os.cpu_count() or 1) < 2 or threading.active_count() > 1):
        s = scan_range(text, fmt, held, 1)
    else:
        first2 = text.count("\n", 0, mid) + 1
        child = _fork_scan(text, mid, fmt, held, first2)
        try:
            s = scan_range(text[:mid], fmt, held, 1)
        except BaseException:
            _reap(child, kill=True)
            raise
        s.finalize()  # while the child may still be busy
        s2 = _collect(child)
        if s2 is None:
            s2 = scan_range(text[mid:], fmt, held, first2)
        s.merge(s2)
    if fmt == "lines":
        freeform.finish(s, held)
    elif fmt != "cuzk":
        kv.lines_are_records(s)
    return s


def _fork_scan(text: str, mid: int, fmt: str, held: str, first: int):
    try:
        r, w = os.pipe()
        pid = os.fork()
    except OSError:
        return None
    if pid == 0:  # child: scan the second half, send it back pickled, never return
        code = 1
        try:
            os.close(r)
            payload = pickle.dumps(scan_range(text[mid:], fmt, held, first), protocol=pickle.HIGHEST_PROTOCOL)
            with os.fdopen(w, "wb") as f:
                f.write(payload)
            code = 0
        except BaseException:
            code = 1
        finally:
            os._exit(code)
    os.close(w)
    return pid, r


def _reap(child, kill: bool = False) -> int:
    if child is None:
        return -1
    pid, r = child
    if kill:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    try:
        os.close(r)
    except OSError:
        pass
    try:
        return os.waitpid(pid, 0)[1]
    except ChildProcessError:
        return -1


def _collect(child) -> Scan | None:
    """The child's scan, or None (then the caller scans that half itself)."""
    if child is None:
        return None
    pid, r = child
    try:
        with os.fdopen(r, "rb") as f:
            data = f.read()
    except OSError:
        data = b""
    try:
        status = os.waitpid(pid, 0)[1]
    except ChildProcessError:
        status = -1
    if status != 0 or not data:
        return None
    try:
        s = pickle.loads(data)
    except Exception:
        return None
    return s if isinstance(s, Scan) else None

"""`parse_log`: a timing log (path or text) -> ParsedLog. See docs/ARCHITECTURE.md."""

from __future__ import annotations

import gc
import os
from pathlib import Path

from gpuscope.errors import InputError, NoDataError, UsageError
from parsers import cuzk, kv, timeline, tracing
from parsers.builder import Components, Records, Skipped, Timeline
from parsers.detect import detect_format
from parsers.model import FORMATS, ParsedLog
from parsers.prefix import PrefixClock, strip_ansi
from parsers.scan import MAX_LINE, candidate_lines, count_lines

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
    """(text, name). A str with a newline or an '=' is log text; any other str is a path."""
    if isinstance(source, bytes):
        return _decode(source, "<bytes>"), "<bytes>"
    if isinstance(source, str) and ("\n" in source or "=" in source):
        if "\x00" in source[:BINARY_PROBE]:
            raise NoDataError("<string> looks binary (NUL bytes), not a text log")
        return source, "<string>"
    if not isinstance(source, (str, os.PathLike)):
        raise InputError(f"cannot read a log from a {type(source).__name__}")
    path = Path(source)
    if path.is_dir():
        path = find_log_in_dir(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except PermissionError:
        raise InputError(f"{path}: permission denied") from None
    except IsADirectoryError:
        raise InputError(f"{path} is a directory") from None
    except OSError as e:
        raise InputError(f"{path}: cannot read ({e.strerror or e})") from None
    return _decode(data, str(path)), str(path)


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
        if fmt == "cuzk":
            out = _parse_cuzk(text, held)
        else:
            out = _parse_kv(text, held, strict=(fmt == "condensed"), source=fmt)
    finally:
        if enabled:
            gc.enable()
    comps, recs, tl, skipped, n_timing = out
    if n_timing == 0:
        raise NoDataError(f"{name}: no timing lines found (format {fmt})")
    if not comps.count and not tl.cols["line"]:
        raise NoDataError(f"{name}: all {n_timing} timing lines are damaged, nothing could be read")
    return ParsedLog(
        format=fmt,
        source=name,
        total_lines=count_lines(text),
        timing_lines=n_timing,
        components=comps.frame(),
        records=recs.frame(),
        timeline=tl.frame(),
        skipped=skipped.frame(),
    )


def _line(text: str, s: int, e: int) -> str:
    line = text[s:e]
    return line[:-1] if line.endswith("\r") else line


def _common(line: str, ln: int, ts: float, tl: Timeline, comps: Components, skipped: Skipped):
    """TIMELINE and tracing lines, read in every format. True/False = handled, None = not one."""
    i = line.find(timeline.MARKER)
    if i >= 0:
        r = timeline.read_timeline(line[i + 9:])
        if type(r) is str:
            skipped.add(ln, r, line)
        else:
            tl.add(ln, ts, *r)
        return True
    if "_TIMING " in line:
        if "\x1b" in line:
            line = strip_ansi(line)
        at = tracing.find_tag(line)
        if at >= 0:
            r = tracing.read_tracing(line, at)
            if r is None:
                return False
            if type(r) is str:
                skipped.add(ln, r, line)
            else:
                source, names, values, worker, partition = r
                comps.add(ln, ts, -1, -1, source, worker, partition, names, values)
            return True
    return None


def _too_long(line_len: int) -> str:
    return f"line too long ({line_len} chars > {MAX_LINE}); not parsed"


def _parse_cuzk(text: str, held: str):
    comps, recs, tl, skipped = Components(), Records(), Timeline(), Skipped()
    ten = cuzk.Tenures(comps, recs, held)
    clock = PrefixClock()
    ts_of = clock.ts
    read_fields = cuzk.read_fields
    TIMING, NTT = cuzk.TIMING, cuzk.NTT_H
    INFO = cuzk.INFO
    n_timing = 0
    for ln, s, e in candidate_lines(text, ("CUZK_", timeline.MARKER, tracing.MARKER)):
        if e - s > MAX_LINE:
            n_timing += 1
            skipped.add(ln, _too_long(e - s), text[s:s + 120])
            continue
        line = _line(text, s, e)
        ts = ts_of(line)
        i = line.find(TIMING)
        if i >= 0:
            r = read_fields(line[i + 12:], False)
            if r is INFO:
                continue
            n_timing += 1
            if type(r) is str:
                skipped.add(ln, r, line)
            else:
                ten.timing(ln, ts, r[0], r[1], r[2])
            continue
        i = line.find(NTT)
        if i >= 0:
            r = read_fields(line[i + 11:], True)
            if r is INFO:
                continue
            n_timing += 1
            if type(r) is str:
                skipped.add(ln, r, line)
            else:
                ten.ntt_h(ln, ts, r[0], r[1])
            continue
        if _common(line, ln, ts, tl, comps, skipped):
            n_timing += 1
    return comps, recs, tl, skipped, n_timing


def _parse_kv(text: str, held: str, *, strict: bool, source: str):
    comps, recs, tl, skipped = Components(), Records(), Timeline(), Skipped()
    clock = PrefixClock()
    n_timing = 0
    rows: list[tuple[int, float, list[str], list[float]]] = []
    for ln, s, e in candidate_lines(text, ("=",)):
        if e - s > MAX_LINE:
            n_timing += 1
            skipped.add(ln, _too_long(e - s), text[s:s + 120])
            continue
        line = _line(text, s, e)
        ts = clock.ts(line)
        if "TIMELINE," in line or "_TIMING " in line:
            handled = _common(line, ln, ts, tl, comps, skipped)
            if handled is not None:
                n_timing += bool(handled)
                continue
        r = kv.read_kv(line, strict, held)
        if r is None:
            continue
        n_timing += 1
        if type(r) is str:
            skipped.add(ln, r, line)
            continue
        rows.append((ln, ts, r[0], r[1]))
    has_held = any(held in names for _, _, names, _ in rows)
    cur = -1
    for ln, ts, names, values in rows:
        if not has_held:
            rec = recs.open(ln, ts)
            recs.complete[rec] = True
        else:
            if cur < 0:
                cur = recs.open(ln, ts)
            else:
                recs.touch(cur, ln, ts)
            rec = cur
            if held in names:
                recs.held[rec] = values[names.index(held)]
                recs.complete[rec] = True
                cur = -1
        comps.add(ln, ts, rec, -1, source, -1, -1, names, values)
    return comps, recs, tl, skipped, n_timing

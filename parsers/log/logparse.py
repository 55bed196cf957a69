"""`parse_log`: a timing log (path or text) -> ParsedLog. See docs/ARCHITECTURE.md.

The log is read in line-aligned chunks (parsers/log/reader.py). Each chunk goes to the compiled
scanner when it is built and the format has one (cuzk, condensed, kv: parsers/_scan.c,
which hands back the lines it does not read itself), else to the Python scanners, one line
at a time. `GPUSCOPE_PURE_SCANNER=1` forces the Python scanners. Both give the same frames
(tests/test_scanner_paths.py).

A file's (or bytes') last line without its newline may have been cut while it was written
(a log read while the program runs, a file cut by `head -c`): when it is a timing line
whose last non-blank character is a digit or a `.`, its last number may have lost digits
(`mutex_held_ms=348` cut from 3481), so it is skipped ("possibly cut") and counted in
timing_lines; a last line that ends otherwise (a unit: `total=1535ms`, a word, a bracket)
is read. A str given by a caller is whole text: its last line is read as it is.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from functools import partial
from pathlib import Path

from gpuscope.allocator import gc_paused
from gpuscope.errors import InputError, NoDataError, UsageError, read_error
from gpuscope.parsers.log import kv
from gpuscope.parsers.log import scan as sc
from gpuscope.parsers.log.benchtable import (
    looks_like_google_json,
    not_steps,
    read_bench_table,
    share_of_table,
)
from gpuscope.parsers.log.detect import (
    SNIFF_CHARS,
    FormatMarker,
    detect_head,
    detect_input,
    has_marker,
)
from gpuscope.parsers.log.formats import (
    closest_line,
    cprofile_report,
    shapes_read,
    table_kind,
)
from gpuscope.parsers.log.lines import read as freeform
from gpuscope.parsers.log.lines.duplicates import lines_at
from gpuscope.parsers.log.lines.frameworks import keras_eta_only
from gpuscope.parsers.log.oneoffs import no_step_line
from gpuscope.parsers.log.parsed import FORMATS, ParsedLog
from gpuscope.parsers.log.reader import BINARY_PROBE, LogInput, looks_binary
from gpuscope.parsers.log.scan import PURE_ENV as PURE_ENV  # (re-exported: tests and tools set it)
from gpuscope.parsers.log.scanners import PyScanner, chunk_scanner
from gpuscope.parsers.log.stampunit import stamp_seconds
from gpuscope.parsers.log.sumtable import HEADLESS, headless_rows, looks_like_summary, summary_kind
from gpuscope.parsers.log.sweep import sweep_of
from gpuscope.parsers.log.tabledoc import BenchTable
from gpuscope.parsers.log.tenures import build_columns

LOG_NAMES = ("timing.log",)

Progress = Callable[[int, int], None]  # (bytes read, bytes in all)



#: Megatron-LM's `--timing-log-option all` block: a header, a timer's name alone, its ranks' lines
MEGATRON_ALL_RANKS = re.compile(r"times across ranks \(ms\):[ \t]*\r?\n[ \t]+\S[^\n]*:[ \t]*\r?\n[ \t]+rank +\d+: ")

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


def open_input(source, name: str | None = None) -> LogInput:
    """The LogInput of a source. A str holding a newline, or an '=' and not looking like a
    path (an existing file, a '/' or a .log/.txt/.csv/.out/.err suffix), is log text; any
    other str (or a PathLike) is a path; bytes are log content. `name` names text or bytes in
    messages and in ParsedLog.source (default `<string>` / `<bytes>`)."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        name = name or "<bytes>"
        data = bytes(source) if not isinstance(source, bytes) else source
        _check_content(data[:BINARY_PROBE], name, empty=not data or data.isspace())
        return LogInput(name, data=data)
    if isinstance(source, str) and ("\n" in source or ("=" in source and not _looks_like_path(source))):
        name = name or "<string>"
        if "\x00" in source[:BINARY_PROBE]:
            raise NoDataError(f"{name} looks binary (NUL bytes), not a text log")
        return LogInput.from_text(source, name)
    if not isinstance(source, (str, os.PathLike)):
        raise InputError(f"cannot read a log from a {type(source).__name__}")
    path = Path(source)
    try:
        if path.is_dir():
            path = find_log_in_dir(path)
        inp = LogInput(str(path), path=path)
        head = inp.head(BINARY_PROBE)
    except (OSError, ValueError) as e:
        raise read_error(path, e) from None
    _check_content(head, str(path), empty=inp.size == 0 or (head.isspace() and _all_space(inp)))
    return inp


def _all_space(inp: LogInput) -> bool:
    return all(bytes(b).isspace() for b in inp.blocks())


def _check_content(head: bytes, name: str, *, empty: bool) -> None:
    if empty:
        raise NoDataError(f"{name} is empty")
    if looks_binary(head):
        raise NoDataError(f"{name} looks binary (NUL bytes), not a text log")


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


def parse_log(source, fmt: str | None = None, *, held_key: str = "mutex_held", name: str | None = None,
              progress: Progress | None = None, tables: bool = True) -> ParsedLog:
    """Parse a timing log into DataFrames. `fmt`: cuzk | condensed | kv | lines | None (detect);
    `name`: what to call text or bytes in messages and ParsedLog.source; `progress`: called
    after each chunk with (bytes read, bytes in all). A benchmark tool's table is no log: a
    NoDataError that says what it is (`read_table` reads it; `tables=False`: the caller
    looked already, gpuscope/sources/readers.py)."""
    if fmt is not None and fmt not in FORMATS:
        raise UsageError(f"unknown log format {fmt!r} (choose {', '.join(FORMATS)})")
    held = held_key[:-3] if held_key.endswith("_ms") else held_key
    inp = open_input(source, name)
    name = inp.name
    # (a benchmark tool's table before any line is read: its cells would read as steps)
    if fmt is None and tables and (table := bench_first(inp, name)) is not None:
        raise NoDataError(not_steps(name, table))
    watch = False
    chosen = fmt is not None
    if fmt is None:
        fmt = detect_head(inp, held)  # (`lines` by the head alone: the scan watches for a later marker)
        watch = fmt is not None
        fmt = fmt or detect_input(inp, held)
    with gc_paused():  # millions of small containers: the cyclic GC would rescan them all
        try:
            s, total_lines = scan_input(inp, fmt, held, progress, watch=watch)
        except FormatMarker:  # (a CuZK or condensed marker after the head: what every byte says)
            fmt = detect_input(inp, held)
            s, total_lines = scan_input(inp, fmt, held, progress)
        if s.timing_lines == 0 or (fmt == "lines" and not len(s.values) and not len(s.timeline["line"])):
            raise NoDataError(no_timing_lines(inp, name, fmt, chosen))
        if not s.has_values():
            raise NoDataError(f"{name}: all {s.timing_lines} timing lines are damaged; nothing could be read")
        columns = build_columns(s)
    return ParsedLog(
        format=fmt,
        source=name,
        total_lines=total_lines,
        timing_lines=s.timing_lines,
        whole=getattr(s, "whole", None),
        whole_basis=getattr(s, "whole_basis", ""),
        notes=list(s.notes),
        columns=columns,
        not_parts=dict(getattr(s, "not_parts", {}) or {}),
        steps_per_record=int(getattr(s, "steps_per_record", 1)),
        record_time_covers=bool(getattr(s, "record_time_covers", False)),
    )


BENCH_CAP = 16 << 20  # (a benchmark table is read from the input's first 16 MiB)


def read_table(source, name: str | None = None) -> BenchTable | None:
    """The benchmark tool's table an input (a path, text or bytes, as parse_log takes) is, or
    None: a log to parse_log. NoDataError for what is neither (a cProfile report, a summary's
    rows without their header, a Google Benchmark JSON report that cannot be read whole)."""
    inp = open_input(source, name)
    return bench_first(inp, inp.name)


def maybe_table(head: str) -> bool:
    """What a table's head has (a marker of formats.TABLES, a Google Benchmark JSON report, a
    profiler summary's header): the gate before any table is read (a log's head passes it only
    when it names a tool: the table is then read, and a log beside it stays a log)."""
    return table_kind(head) is not None or looks_like_google_json(head) or looks_like_summary(head)


def bench_first(inp: LogInput, name: str) -> BenchTable | None:
    """The benchmark tool's table the input is (a marker of formats.TABLES in its head, and a
    table read from it: Google Benchmark's header, nccl-tests' columns, criterion's `time:
    [...]` lines, a Google Benchmark JSON report), else None."""
    head = str(inp.head(4 * SNIFF_CHARS), "utf-8", "replace")[:SNIFF_CHARS]
    kind = table_kind(head)
    if kind is not None and cprofile_report(head):  # (its `in 19.107 seconds` would read as one step)
        raise NoDataError(f"{name} is {kind}: measurements, not timed steps")
    gb_json = looks_like_google_json(head)
    if kind is None and not gb_json and not looks_like_summary(head):  # (parsers/log/sumtable.py)
        return None
    table = read_bench_table(head) if not gb_json else None  # (is it one? its head says; then read it all)
    if table is None and not gb_json and headless_rows(head):
        named = table_kind(head, named_only=True)  # (a header in a shape no reader reads: TF's `[avg ms]`)
        raise NoDataError(f"{name}: {HEADLESS}" if named is None else f"{name} is {named}: measurements, not timed steps")
    if table is not None and share_of_table(head, table) < 0.5:
        return None  # a table beside the log's own lines: the lines are read (the refusal names the table)
    if gb_json or (table is not None and inp.size > len(head)):
        table = read_bench_table(str(inp.head(BENCH_CAP), "utf-8", "replace"))
    if table is None and gb_json:
        raise NoDataError(f"{name}: a Google Benchmark JSON report that could not be read whole (damaged, or over "
                          f"{BENCH_CAP >> 20} MiB): measurements, not timed steps")
    if table is not None:
        table.kind = kind or table.what
    return table


def no_timing_lines(inp: LogInput, name: str, fmt: str, chosen: bool = True) -> str:
    """The message of a log without one timing line: the shapes the format reads and the
    line that came closest, with what it lacks. `chosen`: the caller named the format (else
    detection fell back to kv or lines, which no line matched: no format is named)."""
    head = str(inp.head(4 * SNIFF_CHARS), "utf-8", "replace")[:SNIFF_CHARS]
    near = closest_line(head)
    said = f"format {fmt}" if chosen or fmt not in ("kv", "lines") else "no known format matched"
    msg = f"{name}: no timing lines found ({said}; shapes read: {shapes_read(fmt)})"
    kind = table_kind(head, named_only=True) or summary_kind(head)
    eta = keras_eta_only(head) if kind is None else None
    sweep = sweep_of(head) if kind is None and eta is None else None
    if kind is not None:
        msg += f"; it looks like {kind}: measurements, not timed steps"
    elif eta is not None:
        msg += f"; it looks like {eta}"
    elif (once := no_step_line(head)) is not None:  # (parsers/log/oneoffs.py)
        msg += f"; the time it prints is of no step: {once}"
    elif sweep is not None:  # (halo2's `K-8 - 28 ms` ... `K-24 - 272.58 s`)
        msg += f"; it looks like {sweep}"
    elif near is not None and (united := _UNITED.search(_untruncated(near, head))) is not None:
        # (`Average latency per token: 0.21 s`, `95680066.8 ns/op (avg)`, TF1's profiler rows `343us`:
        # a unit is there, the reason is what the times are)
        cell = _TIME_CELL.search(near) or united
        msg += (f"; closest: {near!r}, whose times ({cell.group(0)!r}) are none the time of a step: settings, "
                "forecasts, statistics or rates (a window, an ETA, a mean or percentile, a time per token or op), "
                "or a table's cells under a header the reader does not take (a profiler's totals per op)")
    elif near is not None and (word := _TIME_WORD_NUMBER.search(_untruncated(near, head))) is not None:
        msg += (f"; closest: {near!r}, whose {word.group(0)!r} names a time but prints no unit, and nothing in the "
                "text gives one (a unit beside the number, in its key or a header, or a format that documents it: "
                "detectron2's `time:`, Hugging Face's `train_runtime`): no duration is guessed from it; printed as "
                "`0.5 s` or under a key such as `time_ms`, it would be read")
    elif near is not None:
        msg += (f"; closest: {near!r}, whose numbers have no unit or time word beside them "
                "(a number is a duration only when its text says so)")
    return msg


# a time word right before a number (`time/batch = 0.194`, `time: 4.770/4.770`, `epoch_time=150.973`)
_TIME_WORD_NUMBER = re.compile(r"(?i)(?<![a-z])(?:time|elapsed|took|latency|duration|wall)(?![a-z])"
                               r"(?:[^\d\n,;|]{0,12}|[^\d\n,;|:=]{0,30}[:=] *)\d[\d./]*")  # (`Time To First Token : 210.4`)


# a number printed with a time unit (`343us`, `576.11ms`): a time, whatever it is not tied to
_TIME_CELL = re.compile(r"(?<![\w.])\d+(?:\.\d+)?\s?(?:us|\u00b5s|ms|ns|s)(?![\w/])")


def _untruncated(near: str, head: str) -> str:
    """The whole line closest_line cut to 100 characters (`...`)."""
    if not near.endswith("..."):
        return near
    return next((ln.strip() for ln in head.split("\n") if ln.strip().startswith(near[:-3])), near)


# a number with a time unit after it (`0.21 s`, `5000 msec`, `95680066.8 ns/op`)
_UNITED = re.compile(r"\d\s*(?:ns|us|µs|μs|ms|msec|s|sec|secs|seconds?|min|minutes?)(?![A-Za-z])")


def scan_input(inp: LogInput, fmt: str, held: str, progress: Progress | None = None, *,
               watch: bool = False) -> tuple[sc.Scan, int]:
    """The whole log's Scan (finalized, format-specific finishing done) and its line count.
    `watch`: raise detect.FormatMarker at a chunk holding a CuZK or condensed marker (a
    format chosen by the log's head alone, detect.detect_head)."""
    tables = sc.Tables()
    py = PyScanner(fmt, held, tables, inp.errors)
    if py.state is not None:  # (lines: the names whose unit the lines' stamps give, fixed before any is read)
        py.state.stamp_seconds = stamp_seconds(str(inp.head(1 << 16), "utf-8", "replace").split("\n")[:-1], held)
    scanner = chunk_scanner(py)
    total = 0
    tail = None
    for chunk in inp.chunks():
        if chunk.tail:
            if watch and has_marker(chunk.buf):
                raise FormatMarker
            tail = py.tail(chunk.text(inp.errors), chunk.first, inp.may_be_cut)
            total = chunk.first
        else:
            if scanner.feed(chunk) and watch:
                raise FormatMarker
            total = chunk.first + chunk.newlines - 1
        if progress is not None:
            progress(chunk.end, inp.size)
    s = scanner.result(tail)
    if fmt == "lines":
        freeform.finish(s, held, partial(lines_at, inp))
        head = str(inp.head(1 << 20), "utf-8", "replace")
        every = freeform.sampled_every(head)
        if MEGATRON_ALL_RANKS.search(head):
            s.notes.append("Megatron's timers of every rank (`times across ranks (ms):`, --timing-log-option "
                           "all) are not read: a rank's line (`rank  0: 401.20`) does not name its timer; "
                           "--timing-log-option minmax (the default) or max prints them as `name ...: "
                           "(min, max)`, which is read")
        if every is not None and s.steps_per_record == 1:  # (1: the records' counters said nothing)
            s.steps_per_record = every[0]
            s.notes.append(f"the lines' own step counter ({every[1]}, ...) advances by {every[0]} a line: each "
                           f"line is one step in {every[0]} (the program prints every {every[0]}th): records "
                           f"count printed lines, each standing for {every[0]} steps in throughput")
    elif fmt != "cuzk":
        kv.lines_are_records(s)
    return s, total

"""`open_source`: a path (log file, run directory, samples file, `-` for standard input) ->
Source. The format is detected by content; gzip-compressed files are read as their content;
the role model is loaded and the line rate resolved here, once, for every command."""

from __future__ import annotations

import math
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from gpuscope import rundir, safe_output
from gpuscope.errors import InputError, NoDataError, UsageError, read_error
from gpuscope.linerate import resolve_line_rate
from gpuscope.parsers.heads import looks_like_query_header
from gpuscope.parsers.limits import (
    file_kind,
    gunzip,
    is_zero_size_file,
    read_path,
    read_stream,
    readable_file,
    utf8,
    utf16_bom,
)
from gpuscope.rolemodel import RoleModel, held_key, load_model, model_for, user_model
from gpuscope.sources.runmeta import RunMeta, clean_meta
from gpuscope.sources.source import Source

if TYPE_CHECKING:
    import pandas as pd

    from gpuscope.parsers.log.parsed import ParsedLog

STDIN = "-"
GZIP_MAGIC = b"\x1f\x8b"
HEAD = 4096


def open_source(
    path: str | os.PathLike[str],
    *,
    fmt: str | None = None,
    model: RoleModel | str | os.PathLike[str] | None = None,
    samples: str | os.PathLike[str] | None = None,
    trace: str | os.PathLike[str] | None = None,
    line_rate: float | None = None,
    progress=None,
) -> Source:
    """Open what the user named. `fmt` forces the log format, `model` is a RoleModel or a
    TOML path (None: built-in), `samples` a samples file that replaces the source's own,
    `trace` a profiler trace of the same program (joined on the epoch clock), `line_rate`
    the user's --line-rate (else the run's measured rate, the bandwidth cache, or the
    default); `progress(bytes read, bytes in all)` is called while a log is read (the CLI's
    progress line). Raises UsageError / InputError / NoDataError with one clear line."""
    from gpuscope.parsers import FORMATS

    if fmt is not None and fmt not in FORMATS:
        raise UsageError(f"--format: unknown format {fmt!r} (choose {', '.join(FORMATS)})")
    if line_rate is not None and not (line_rate > 0 and math.isfinite(line_rate)):
        raise UsageError(f"--line-rate: must be a positive number of GB/s, got {line_rate}")
    for given in (path, samples, trace, None if isinstance(model, RoleModel) else model):
        safe_output.note_input(given)  # what no output of this command may be written over
    user = user_model(model)  # the user's --model, else None: picked per log (model_for) once parsed
    p = Path(path)
    try:
        if str(path) == STDIN:
            src = _open_bytes(Path("<stdin>"), _read_stdin(), fmt, user, progress)
        elif p.is_dir():
            src = _open_trace(p, user) if _is_trace_folder(p) else _open_rundir(p, fmt, user, progress)
        elif not p.exists():
            raise InputError(f"no such file or directory: {p}")
        else:
            src = _open_file(p, fmt, user, progress)
    except PermissionError as e:  # pathlib's is_dir()/exists() raise it (a folder without its x bit)
        raise _permission(p, e) from None
    if samples is not None:
        src.samples = _kept(src, _read_samples_file(Path(samples)), Path(samples))
    if trace is not None:
        from gpuscope.parsers.trace.kineto import read_trace

        if not Path(trace).exists():
            raise InputError(f"--trace: no such file or directory: {trace}")
        if not Path(trace).is_dir():
            readable_file(trace, "--trace: ")
        from gpuscope.parsers.trace.nsys_rep import is_nsys, read_nsys  # an Nsight Systems report

        src.trace = read_nsys(Path(trace)) if Path(trace).is_file() and is_nsys(Path(trace)) else read_trace(trace)
    if samples is not None or trace is not None:
        from gpuscope.sources.overlap import check_overlap

        check_overlap(src, {**({"samples": f"--samples {samples}"} if samples is not None else {}),
                            **({"trace": f"--trace {trace}"} if trace is not None else {})})
    src.line_rate_gbs, src.line_rate_source = resolve_line_rate(line_rate, src.meta.raw)
    return src


def _read_stdin() -> bytes:
    """Standard input within the log cap; NUL bytes in its first block end the reading there
    (`analyze - < /dev/zero` is refused at once, not after gigabytes)."""
    f = sys.stdin.buffer
    try:
        head = f.read(HEAD * 16)
        if head[:2] != GZIP_MAGIC and b"\x00" in head[:8192]:
            raise NoDataError("<stdin> looks binary (NUL bytes), not a text log")
        return read_stream(f, "log", "<stdin>", first=head)
    except OSError as e:
        raise read_error("<stdin>", e) from None


def _gunzip(p: Path, data: bytes, kind: str = "log") -> bytes:
    out, cut = gunzip(data, kind, p)
    if cut:  # a log or a capture cut short is refused, as before (a trace is read up to its cut)
        raise InputError(f"{p}: a damaged gzip file (it ends before its end-of-stream marker)")
    return out


def _model(user: RoleModel | None, log: ParsedLog | None = None) -> RoleModel:
    """The role model of a source: the user's, else the one its log calls for (the CuZK model
    for CuZK logs, else roles guessed from the names), else the built-in one."""
    if log is not None:
        return model_for(log, user)
    return user if user is not None else load_model(None)


def _open_file(p: Path, fmt: str | None, user: RoleModel | None, progress=None) -> Source:
    """A file named by the user: a plain log is handed to the parser by its path (read in
    chunks, never whole); traces, samples and gzip files are told apart by their head."""
    if readable_file(p) == "fifo" or is_zero_size_file(p):  # a pipe, a /proc file: read as a stream
        return _open_bytes(p, read_path(p, "log"), fmt, user, progress)
    data = _whole_if_special(p, fmt)
    if data is NSYS:  # an Nsight Systems report (SQLite export or .nsys-rep)
        return _open_nsys(p, user)
    if data is SAMPLES_CSV:  # gpuscope's samples.csv: streamed into columns, never held whole
        return _open_samples_csv(p, user, progress)
    if isinstance(data, bytes):
        return _open_bytes(p, data, fmt, user, progress)
    from gpuscope.parsers import parse_log

    log = parse_log(p, fmt, held_key=held_key(user), name=str(p), progress=progress)
    return Source(path=p, kind="log", model=_model(user, log), log=log, log_path=p)


class _ReadByPath:
    """_whole_if_special's answer for a file its own reader reads by its path (nothing held whole)."""


SAMPLES_CSV = _ReadByPath()  # gpuscope's samples.csv: its streaming reader
NSYS = _ReadByPath()  # an Nsight Systems report: parsers/trace/nsys_rep.py


def _head(p: Path) -> bytes:
    """The first bytes of a file that says what it is (a samples.csv by its header)."""
    try:
        with open(p, "rb") as f:
            return f.read(HEAD * 16)
    except (OSError, ValueError) as e:
        raise read_error(p, e) from None


def _whole_if_special(p: Path, fmt: str | None) -> bytes | _ReadByPath | None:
    """The whole file, from the one open that read its head, when the head says it is read whole:
    UTF-16 (or 32) text (re-encoded, then read as any text), gzip, a trace or a samples file;
    None for a plain log (the parser reads it by its path, in chunks); NSYS for an Nsight Systems
    report (an SQLite export by its head, a .nsys-rep by its name), SAMPLES_CSV for a samples.csv."""
    from gpuscope.parsers.trace.nsys_rep import REP_SUFFIX
    from gpuscope.parsers.trace.tracefile import is_sqlite

    try:
        f = open(p, "rb")  # noqa: SIM115 - closed below, its errors mapped apart from the reading's
    except (OSError, ValueError) as e:
        raise read_error(p, e) from None
    with f:
        try:
            head = f.read(HEAD * 16)
        except (OSError, ValueError) as e:
            raise read_error(p, e) from None
        if fmt is None and (p.name.endswith(REP_SUFFIX) or is_sqlite(head)):
            return NSYS
        if not (utf16_bom(head) or head[:2] == GZIP_MAGIC or (fmt is None and _looks_special(head))):
            return None
        if not utf16_bom(head) and head[:2] != GZIP_MAGIC and _samples_csv(head):
            return SAMPLES_CSV
        try:
            return read_stream(f, "log", p, first=head)
        except (OSError, ValueError) as e:
            raise read_error(p, e) from None


def _looks_special(head: bytes) -> bool:
    """A profiler trace or a samples file (else a log, handed to the parser by its path)."""
    if head.lstrip(b"\xef\xbb\xbf \t\r\n")[:1] in (b"{", b"["):  # JSON: maybe a trace (tracefile decides)
        from gpuscope.parsers.trace.tracefile import is_trace

        if is_trace(head):
            return True
        from gpuscope.parsers.heads import (
            looks_like_prometheus,  # (no reader, so no pandas, for a log)
        )

        if looks_like_prometheus(head):
            return True
    text = head[:HEAD].decode("utf-8", errors="replace")
    if not _maybe_samples(text):
        return False
    from gpuscope.parsers.samples import looks_like_samples

    return looks_like_samples(text)


def _samples_csv(head: bytes) -> bool:
    """Whether a head that _looks_special is gpuscope's own samples.csv (read by its path)."""
    if head.lstrip(b"\xef\xbb\xbf \t\r\n")[:1] in (b"{", b"["):
        return False
    from gpuscope.parsers.samples import detect_samples

    return detect_samples(head[:HEAD].decode("utf-8", errors="replace").removeprefix("\ufeff")) == "gpuscope"


def _open_samples_csv(p: Path, user: RoleModel | None, progress=None) -> Source:
    from gpuscope.parsers.samples import read_samples_csv

    src = Source(path=p, kind="samples", model=_model(user),
                 no_log_reason=f"{p} is a samples file: it has no timing lines")
    src.samples = _kept(src, read_samples_csv(p, progress=progress), p)
    if src.samples is None:
        why = src.samples_read and src.samples_read.get("note")
        raise NoDataError(f"{p}: a samples file without one readable sample" + (f" ({why})" if why else ""))
    return src


def _maybe_samples(head: str) -> bool:
    """What every samples header has (parsers.samples.looks_like_samples decides): a dmon `#`
    line naming gpu, or a CSV line naming t_wall, timestamp or index; checked first so a
    log's --json never loads the sample readers (and pandas with them)."""
    lines = [ln.strip() for ln in head.splitlines()[:40] if ln.strip()][:11]
    first = lines[0] if lines else ""
    low = first.lower()
    if first.startswith("#"):
        return "gpu" in low
    if "," in first and ("t_wall" in low or "timestamp" in low or "index" in low):
        return True
    # a --query-gpu header after a scheduler's few lines (parsers.samples.query_preamble decides)
    return any(looks_like_query_header(ln) for ln in lines[1:])


def _open_bytes(p: Path, data: bytes, fmt: str | None, user: RoleModel | None, progress=None) -> Source:
    """A single file's content: a samples file or a timing log, told apart by content."""
    from gpuscope.parsers import parse_log
    from gpuscope.parsers.heads import (
        looks_like_prometheus,  # (not the reader: it needs msgspec, pandas)
    )
    from gpuscope.parsers.samples import looks_like_samples
    from gpuscope.parsers.trace.tracefile import is_trace

    data = utf8(data)
    if fmt is None and is_trace(data[:HEAD * 16]):
        return _open_trace(p, user, data)
    if data[:2] == GZIP_MAGIC:
        data = utf8(_gunzip(p, data))
    head = data[:HEAD].decode("utf-8", errors="replace")
    if fmt is None and looks_like_prometheus(data[:HEAD * 16]):  # a fleet's history (parsers.prometheus)
        src = Source(path=p, kind="samples", model=_model(user),
                     no_log_reason=f"{p} is a Prometheus query result: it has no timing lines")
        src.samples = _kept(src, _read_samples_text(p, data), p)
        return src
    if fmt is None and looks_like_samples(head):
        src = Source(path=p, kind="samples", model=_model(user),
                     no_log_reason=f"{p} is a samples file: it has no timing lines")
        src.samples = _kept(src, _read_samples_text(p, data), p)
        if src.samples is None:
            why = src.samples_read and src.samples_read.get("note")
            raise NoDataError(f"{p}: a samples file without one readable sample" + (f" ({why})" if why else ""))
        return src
    log = parse_log(data, fmt, held_key=held_key(user), name=str(p), progress=progress)
    return Source(path=p, kind="log", model=_model(user, log), log=log, log_path=p)


def _permission(p: Path, e: PermissionError) -> InputError:
    where = e.filename or p
    return InputError(f"{where}: permission denied" + (f" (a directory on the way to it, such as {Path(where).parent}, "
                                                       "lacks its execute bit or is not yours)"
                                                       if os.access(Path(where).parent, os.R_OK) else ""))


def _is_trace_folder(p: Path) -> bool:
    """A folder of profiler traces (tensorboard_trace_handler's, one per rank), not a run
    directory: no timing log, meta.json or samples.csv, and a trace inside."""
    from gpuscope.parsers.trace.tracefile import is_trace

    if any((p / n).exists() for n in (rundir.META, rundir.TIMING_LOG, rundir.SAMPLES)):
        return False
    try:
        if any(p.glob("*.log")):
            return False
    except OSError:
        return False
    return is_trace(p)


def _open_trace(p: Path, user: RoleModel | None, data: bytes | None = None) -> Source:
    """A profiler trace file (its bytes already read) or a folder of rank traces."""
    from gpuscope.parsers.trace.kineto import read_trace

    # a file's bytes are read once (here, to tell what it is) and named by its path in the reader's
    # messages; standard input (or a pipe) by its bytes
    if data is None:
        frames = read_trace(p)
    else:
        frames = read_trace(data, name=str(p) if p.is_file() else None)
    frames.source = str(p)
    src = Source(path=p, kind="trace", model=_model(user), trace=frames,
                 no_log_reason=f"{p} is a profiler trace: it has no timing lines")
    src.warnings += [n for n in frames.notes if n.startswith("rank not read")]  # a rank folder's cut file
    return src


def _open_nsys(p: Path, user: RoleModel | None) -> Source:
    from gpuscope.parsers.trace.nsys_rep import read_nsys

    return Source(path=p, kind="trace", model=_model(user), trace=read_nsys(p),
                  no_log_reason=f"{p} is an Nsight Systems report: it has no timing lines")


def _open_rundir(p: Path, fmt: str | None, user: RoleModel | None, progress=None) -> Source:
    for name in (rundir.TIMING_LOG, rundir.SAMPLES, rundir.META, rundir.SPANS):
        _require_regular(p / name)
    meta, dropped = clean_meta(rundir.read_meta(p))
    try:
        return _read_rundir(p, meta, dropped, fmt, user, progress)
    except (InputError, NoDataError) as e:
        if meta.get("status") == "running" and not e.hint:  # why it may hold nothing yet
            e.hint = rundir.running_note(p).split(": ", 1)[1]
        raise


def _read_rundir(p: Path, meta: dict, dropped: list[str], fmt: str | None, user: RoleModel | None,
                 progress=None) -> Source:
    from gpuscope.parsers import parse_log
    from gpuscope.parsers.log.logparse import find_log_in_dir

    src = Source(path=p, kind="rundir", model=_model(user), meta=RunMeta(meta))
    if dropped:
        src.warnings.append(f"{p / rundir.META}: {len(dropped)} field(s) of the wrong type left out "
                            f"({', '.join(dropped[:5])}" + (" ..." if len(dropped) > 5 else "") + ")")
    if meta.get("status") == "running":
        src.warnings.append(rundir.running_note(p))
    try:
        src.log_path = find_log_in_dir(p)
    except PermissionError as e:
        raise read_error(p, e) from None
    except InputError as e:
        if not (p / rundir.SAMPLES).is_file():
            raise
        src.no_log_reason = e.one_line()
    if src.log_path is not None:
        try:
            src.log = parse_log(str(src.log_path), fmt, held_key=held_key(user), progress=progress)
        except NoDataError as e:
            src.no_log_reason = e.one_line()
        else:
            src.model = _model(user, src.log)
    if (p / rundir.SAMPLES).is_file():
        src.samples = _kept(src, rundir.read_samples(p), p / rundir.SAMPLES)
    if src.samples_read and src.samples_read.get("note"):
        src.notes.append(f"samples.csv: {src.samples_read['note']}")
    from gpuscope.rundir_spans import read_spans

    src.spans = read_spans(p)
    _attach_traces(src, p)
    if src.spans is not None and src.spans.attrs.get("malformed_rows"):
        src.notes.append(f"{src.spans.attrs['malformed_rows']} spans.csv rows skipped "
                         "(no times, or an end before its start)")
    return src


def _require_regular(f: Path) -> None:
    """A run directory's own file, when there, is a regular file (or a link to one): a FIFO, a
    directory or a link to /dev/zero in its place is refused, not read as 'no timing lines'."""
    if not os.path.lexists(f):
        return
    try:
        kind = file_kind(f)
    except InputError:
        if os.path.islink(f):
            raise InputError(f"{f} is a link to nothing ({os.readlink(f)})") from None
        raise
    if kind != "file":
        kind = "a named pipe" if kind == "fifo" else kind
        raise InputError(f"{f} is {kind}, not a regular file (the file a run directory holds there)")


def _attach_traces(src: Source, p: Path) -> None:
    """Profiler traces the recorded program wrote into its run directory (e.g.
    tensorboard_trace_handler pointed there, or a traces/ folder inside): read with the run, so
    its events join the run's NVML samples on the epoch clock."""
    from gpuscope.parsers.trace.tracefile import trace_files

    for folder in (p, p / "traces"):
        try:
            found = trace_files(folder) if folder.is_dir() else []
        except OSError:
            found = []
        if found:
            from gpuscope.parsers.trace.kineto import read_trace

            src.trace = read_trace(folder if len(found) > 1 else found[0])
            src.notes.append(f"profiler trace read with the run: {', '.join(f.name for f in found[:3])}"
                             + (" ..." if len(found) > 3 else ""))
            return


def _nonempty(df: pd.DataFrame | None) -> pd.DataFrame | None:
    return df if df is not None and len(df) else None


def _kept(src: Source, df: pd.DataFrame | None, path: Path) -> pd.DataFrame | None:
    """The samples frame, or None when it holds no row; what reading it cost goes to
    `src.samples_read` either way (a file whose every row was unreadable says so)."""
    from gpuscope.parsers.samples import damage_note, reading_account

    if df is not None:
        src.samples_read = {"file": str(path), **reading_account(df), "note": damage_note(df)}
    return _nonempty(df)


def _read_samples_text(p: Path, data: bytes) -> pd.DataFrame:
    from gpuscope.parsers import read_samples
    from gpuscope.parsers.samples.prometheus import looks_like_prometheus, read_prometheus

    text = data.decode("utf-8", errors="replace")
    return read_prometheus(text) if looks_like_prometheus(text[:HEAD * 16]) else read_samples(p, text=text)


def _read_samples_file(p: Path) -> pd.DataFrame:
    """The --samples file (samples.csv, nvidia-smi dmon or query-gpu output, maybe gzipped)."""
    if p.is_dir():
        p = p / rundir.SAMPLES
    if not p.exists():
        raise InputError(f"--samples: no such file: {p}")
    if readable_file(p, "--samples: ") == "file" and _samples_csv(_head(p)):
        from gpuscope.parsers.samples import read_samples_csv

        return read_samples_csv(p)  # (streamed into columns, never held whole)
    data = utf8(read_path(p, "samples"))
    if data[:2] == GZIP_MAGIC:
        data = utf8(_gunzip(p, data, "samples"))
    return _read_samples_text(p, data)

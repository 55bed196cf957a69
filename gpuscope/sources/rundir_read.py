"""A run directory of `gpuscope run` or `record` (gpuscope.rundir): its timing log, NVML
samples, spans, meta.json and the profiler traces the program wrote there, as one Source."""

from __future__ import annotations

import os
from pathlib import Path

from gpuscope import rundir
from gpuscope.errors import InputError, NoDataError, read_error
from gpuscope.parsers import parse_log
from gpuscope.parsers.limits import file_kind
from gpuscope.parsers.log.logparse import find_log_in_dir
from gpuscope.parsers.trace.tracefile import trace_files
from gpuscope.rolemodel import held_key
from gpuscope.rundir_spans import read_spans
from gpuscope.sources.common import Want, kept, model_of
from gpuscope.sources.runmeta import RunMeta, clean_meta
from gpuscope.sources.source import Source


def open_rundir(p: Path, want: Want) -> Source:
    for name in (rundir.TIMING_LOG, rundir.SAMPLES, rundir.META, rundir.SPANS):
        _require_regular(p / name)
    meta, dropped = clean_meta(rundir.read_meta(p))
    try:
        return _read_rundir(p, meta, dropped, want)
    except (InputError, NoDataError) as e:
        if meta.get("status") == "running" and not e.hint:  # why it may hold nothing yet
            e.hint = rundir.running_note(p).split(": ", 1)[1]
        raise


def _read_rundir(p: Path, meta: dict, dropped: list[str], want: Want) -> Source:
    src = Source(path=p, kind="rundir", model=model_of(want.user), meta=RunMeta(meta))
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
            src.log = parse_log(str(src.log_path), want.fmt, held_key=held_key(want.user), progress=want.progress)
        except NoDataError as e:
            src.no_log_reason = e.one_line()
        else:
            src.model = model_of(want.user, src.log)
    if (p / rundir.SAMPLES).is_file():
        src.samples = kept(src, rundir.read_samples(p), p / rundir.SAMPLES)
    if src.samples_read and src.samples_read.get("note"):
        src.notes.append(f"samples.csv: {src.samples_read['note']}")
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
    for folder in (p, p / "traces"):
        try:
            found = trace_files(folder) if folder.is_dir() else []
        except OSError:
            found = []
        if found:
            # (lazy: the trace reader is loaded only for a run that holds a trace)
            from gpuscope.parsers.trace.kineto import read_trace

            src.trace = read_trace(folder if len(found) > 1 else found[0])
            src.notes.append(f"profiler trace read with the run: {', '.join(f.name for f in found[:3])}"
                             + (" ..." if len(found) > 3 else ""))
            return

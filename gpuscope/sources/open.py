"""`open_source`: a path (log file, run directory, samples file, `-` for standard input) ->
Source. The kind is told by content, by one ordered table of readers (gpuscope/sources/readers.py)
over the input's head, read once (gpuscope/sources/head.py); gzip-compressed files are read as
their content; the role model is loaded and the line rate resolved here, once, for every command."""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import TYPE_CHECKING

from gpuscope import rundir, safe_output
from gpuscope.errors import InputError, UsageError
from gpuscope.linerate import resolve_line_rate
from gpuscope.parsers import FORMATS
from gpuscope.parsers.limits import readable_file
from gpuscope.parsers.log.sumnsys import against_line_rate
from gpuscope.parsers.trace.nsys_rep import is_nsys, read_nsys
from gpuscope.rolemodel import RoleModel, user_model
from gpuscope.sources.common import Want, kept
from gpuscope.sources.head import STDIN, read_head
from gpuscope.sources.overlap import check_overlap
from gpuscope.sources.readers import is_samples_csv, open_head, read_samples_text
from gpuscope.sources.source import Source

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["STDIN", "open_source"]


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
    if fmt is not None and fmt not in FORMATS:
        raise UsageError(f"--format: unknown format {fmt!r} (choose {', '.join(FORMATS)})")
    if line_rate is not None and not (line_rate > 0 and math.isfinite(line_rate)):
        raise UsageError(f"--line-rate: must be a positive number of GB/s, got {line_rate}")
    for given in (path, samples, trace, None if isinstance(model, RoleModel) else model):
        safe_output.note_input(given)  # what no output of this command may be written over
    want = Want(fmt, user_model(model), progress)  # the user's --model, else None: picked per log once parsed
    try:
        with read_head(path) as head:
            src = open_head(head, want)
    except PermissionError as e:  # pathlib's is_dir()/exists() raise it (a folder without its x bit)
        raise _permission(Path(path), e) from None
    if src.table is not None:  # a benchmark tool's table: no clock to join --samples or --trace to (the verb says so)
        samples = trace = None
        if line_rate is not None:  # (an nsys copy summary's rates against the link the caller names)
            against_line_rate(src.table, line_rate)
    if samples is not None:
        src.samples = kept(src, _read_samples_file(Path(samples)), Path(samples))
    if trace is not None:
        src.trace = _read_trace_file(Path(trace))
    if samples is not None or trace is not None:
        check_overlap(src, {**({"samples": f"--samples {samples}"} if samples is not None else {}),
                            **({"trace": f"--trace {trace}"} if trace is not None else {})})
    src.line_rate_gbs, src.line_rate_source = resolve_line_rate(line_rate, src.meta.raw)
    return src


def _permission(p: Path, e: PermissionError) -> InputError:
    where = e.filename or p
    return InputError(f"{where}: permission denied" + (f" (a directory on the way to it, such as {Path(where).parent}, "
                                                       "lacks its execute bit or is not yours)"
                                                       if os.access(Path(where).parent, os.R_OK) else ""))


def _read_trace_file(t: Path):
    """The --trace: a PyTorch trace (a file or a folder of ranks) or an Nsight Systems report."""
    if not t.exists():
        raise InputError(f"--trace: no such file or directory: {t}")
    if not t.is_dir():
        readable_file(t, "--trace: ")
    if t.is_file() and is_nsys(t):
        return read_nsys(t)  # (its SQLite reader loaded inside: parsers/trace/nsys_rep.py)
    # (lazy: the trace reader loads pandas, which a command without --trace never needs)
    from gpuscope.parsers.trace.kineto import read_trace

    return read_trace(t)


def _read_samples_file(p: Path) -> pd.DataFrame:
    """The --samples file (samples.csv, nvidia-smi dmon or query-gpu output, maybe gzipped)."""
    if p.is_dir():
        p = p / rundir.SAMPLES
    if not p.exists():
        raise InputError(f"--samples: no such file: {p}")
    readable_file(p, "--samples: ")
    with read_head(p, cap="samples") as head:
        if is_samples_csv(head):
            from gpuscope.parsers.samples import read_samples_csv  # (lazy: pandas)

            return read_samples_csv(p)  # (streamed into columns, never held whole)
        return read_samples_text(p, head.plain())

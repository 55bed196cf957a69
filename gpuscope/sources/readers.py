"""Which reader opens an input: one ordered table, `READERS`, of (name, sniff, open).

    with read_head(path) as head:          # gpuscope/sources/head.py: the head read once
        src = open_head(head, Want(fmt, user, progress))

Each reader's `sniff(head)` says from the head alone (its first bytes, its path, gzip or not,
a folder or not) whether the input is its kind; the first reader whose sniff says yes opens it.
`--format` names a log format, so it skips every reader told by content (`by_content`) and the
log reader takes the file. A new kind of source is one entry here (its place in the order:
before every reader that would also take it, before `log`, which takes any file) plus its
parser and its evidence (docs/ARCHITECTURE.md "Where a new source goes").
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from gpuscope import rundir
from gpuscope.errors import NoDataError
from gpuscope.parsers import parse_log
from gpuscope.parsers.heads import looks_like_prometheus, looks_like_query_header
from gpuscope.parsers.log.benchtable import not_steps
from gpuscope.parsers.log.logparse import maybe_table, read_table
from gpuscope.parsers.trace.nsys_rep import REP_SUFFIX, read_nsys
from gpuscope.parsers.trace.tracefile import is_sqlite, is_trace
from gpuscope.rolemodel import held_key
from gpuscope.sources.common import Want, kept, model_of
from gpuscope.sources.head import HEAD, Head
from gpuscope.sources.rundir_read import open_rundir
from gpuscope.sources.source import Source

if TYPE_CHECKING:
    import pandas as pd

    from gpuscope.rolemodel import RoleModel


@dataclass(frozen=True)
class Reader:
    name: str
    sniff: Callable[[Head], bool]
    open: Callable[[Head, Want], Source]
    by_content: bool = True  # told apart by content: --format (the user's word: a log) skips it


def reader_for(head: Head, want: Want) -> Reader:
    """The first reader whose sniff takes this head."""
    for reader in READERS:
        if (want.fmt is None or not reader.by_content) and reader.sniff(head):
            return reader
    raise AssertionError(f"{head.path}: no reader (the log reader takes every file)")  # pragma: no cover


def open_head(head: Head, want: Want) -> Source:
    return reader_for(head, want).open(head, want)


# -- folders ------------------------------------------------------------------------------------

def _trace_folder(h: Head) -> bool:
    """A folder of profiler traces (tensorboard_trace_handler's, one per rank), not a run
    directory: no timing log, meta.json or samples.csv, and a trace inside."""
    p = h.path
    if not h.is_dir or any((p / n).exists() for n in (rundir.META, rundir.TIMING_LOG, rundir.SAMPLES)):
        return False
    try:
        if any(p.glob("*.log")):
            return False
    except OSError:
        return False
    return is_trace(p)


def open_trace(p: Path, user: RoleModel | None, data: bytes | None = None, *, what: str = "a profiler trace") -> Source:
    """A profiler trace file (its bytes already read) or a folder of rank traces."""
    # (lazy: the trace reader loads pandas, which a log never needs)
    from gpuscope.parsers.trace.kineto import read_trace

    # a file's bytes are read once (its head said what it is) and named by its path in the reader's
    # messages; standard input (or a pipe) by its bytes
    if data is None:
        frames = read_trace(p)
    else:
        frames = read_trace(data, name=str(p) if p.is_file() else None)
    frames.source = str(p)
    src = Source(path=p, kind="trace", model=model_of(user), trace=frames,
                 no_log_reason=f"{p} is {what}: it has no timing lines")
    src.warnings += [n for n in frames.notes if n.startswith("rank not read")]  # a rank folder's cut file
    return src


# -- files --------------------------------------------------------------------------------------

def _nsys(h: Head) -> bool:
    """An Nsight Systems report: a .nsys-rep by its name, an SQLite export by its magic; read
    by its path (a pipe or standard input is not: SQLite reads a file)."""
    return h.kind == "file" and (h.path.name.endswith(REP_SUFFIX) or is_sqlite(h.raw))


def _open_nsys(h: Head, want: Want) -> Source:
    rows = None
    if want.progress is not None:  # (the reader counts rows; the progress line tells bytes of the file)
        size, tell = h.path.stat().st_size, want.progress

        def rows(done: int, total: int) -> None:
            tell(int(size * done / total) if total > 0 else 0, size)
    frames = read_nsys(h.path, rows)
    return Source(path=h.path, kind="trace", model=model_of(want.user), trace=frames,
                  samples=frames.samples,  # (GPU_METRICS: the sample rules run beside the events)
                  no_log_reason=f"{h.path} is an Nsight Systems report: it has no timing lines")


def _trace(h: Head) -> bool:
    return is_trace(h.first())  # (a gzip file's first bytes: is_trace looks inside)


def _prometheus(h: Head) -> bool:
    return looks_like_prometheus(h.plain_first())  # a fleet's history (parsers.samples.prometheus)


def _open_prometheus(h: Head, want: Want) -> Source:
    src = Source(path=h.path, kind="samples", model=model_of(want.user),
                 no_log_reason=f"{h.path} is a Prometheus query result: it has no timing lines")
    src.samples = kept(src, read_samples_text(h.path, h.plain()), h.path)
    return src


def maybe_samples(head: str) -> bool:
    """What every samples header has (parsers.samples.looks_like_samples decides): a dmon `#`
    line naming gpu, a CSV line naming t_wall, timestamp or index, or nvidia-smi's table's banner
    and GPU-Util; checked first so a
    log's --json never loads the sample readers (and pandas with them)."""
    if ("NVIDIA-SMI" in head and "GPU-Util" in head) or "\u00b0C," in head:
        return True  # (nvidia-smi's table, gpustat's lines: parsers.samples.smi_table, .gpustat decide)
    lines = [ln.strip() for ln in head.splitlines()[:40] if ln.strip()][:11]
    first = lines[0] if lines else ""
    low = first.lower()
    if first.startswith("#"):
        return "gpu" in low or low.lstrip("# ").startswith("entity")  # (nvidia-smi dmon, dcgmi dmon)
    if "," in first and ("t_wall" in low or "timestamp" in low or "index" in low):
        return True
    # a --query-gpu header after a scheduler's few lines (parsers.samples.query_preamble decides)
    return any(looks_like_query_header(ln) for ln in lines[1:])


def _samples(h: Head) -> bool:
    """A samples file: nvidia-smi dmon or --query-gpu output, or gpuscope's samples.csv."""
    text = h.text()
    if not maybe_samples(text):
        return False
    from gpuscope.parsers.samples import looks_like_samples  # (lazy: pandas; a log never gets here)

    return looks_like_samples(text)


def is_samples_csv(h: Head) -> bool:
    """gpuscope's own samples.csv, read by its path (streamed into columns, never held whole)."""
    if not h.by_path or h.raw.lstrip(b"\xef\xbb\xbf \t\r\n")[:1] in (b"{", b"["):
        return False
    from gpuscope.parsers.samples import detect_samples  # (lazy: pandas)

    return detect_samples(h.raw[:HEAD].decode("utf-8", errors="replace").removeprefix("\ufeff")) == "gpuscope"


def _samples_csv(h: Head) -> bool:
    return _samples(h) and is_samples_csv(h)


def _open_samples_csv(h: Head, want: Want) -> Source:
    from gpuscope.parsers.samples import read_samples_csv  # (lazy: pandas)

    return _samples_source(h.path, want, lambda: read_samples_csv(h.path, progress=want.progress))


def _open_samples(h: Head, want: Want) -> Source:
    return _samples_source(h.path, want, lambda: read_samples_text(h.path, h.plain()))


def _samples_source(p: Path, want: Want, read: Callable[[], pd.DataFrame]) -> Source:
    src = Source(path=p, kind="samples", model=model_of(want.user),
                 no_log_reason=f"{p} is a samples file: it has no timing lines")
    src.samples = kept(src, read(), p)
    if src.samples is None:
        why = src.samples_read and src.samples_read.get("note")
        raise NoDataError(f"{p}: a samples file without one readable sample" + (f" ({why})" if why else ""))
    return src


def read_samples_text(p: Path, data: bytes) -> pd.DataFrame:
    """A samples file's whole text: a Prometheus answer, dmon, --query-gpu or samples.csv."""
    from gpuscope.parsers import read_samples  # (lazy: pandas)
    from gpuscope.parsers.samples.prometheus import read_prometheus

    text = data.decode("utf-8", errors="replace")
    return read_prometheus(text) if looks_like_prometheus(text[:HEAD * 16]) else read_samples(p, text=text)


def _table(h: Head) -> bool:
    """A benchmark tool's table, by its head's marker (parsers.log.logparse.maybe_table): opened
    as a table when it reads as one, else as the log it is (a log that ran nccl-tests first)."""
    return maybe_table(h.plain_first().decode("utf-8", errors="replace"))


def _open_table(h: Head, want: Want) -> Source:
    name = str(h.path)
    table = read_table(h.path if h.by_path else h.plain(), name=name)
    if table is None:  # the marker beside the log's own lines: the log, its table not looked for again
        return _open_log(h, want, tables=False)
    return Source(path=h.path, kind="table", model=model_of(want.user), table=table,
                  no_log_reason=not_steps(name, table))


def _open_log(h: Head, want: Want, *, tables: bool = True) -> Source:
    """A timing log: a plain file by its path (the parser reads it in chunks), else its text."""
    log = parse_log(h.path if h.by_path else h.plain(), want.fmt, held_key=held_key(want.user),
                    name=str(h.path), progress=want.progress, tables=tables)
    return Source(path=h.path, kind="log", model=model_of(want.user, log), log=log, log_path=h.path)


READERS: tuple[Reader, ...] = (
    Reader("trace folder", _trace_folder, lambda h, w: open_trace(h.path, w.user), by_content=False),
    Reader("run directory", lambda h: h.is_dir, lambda h, w: open_rundir(h.path, w), by_content=False),
    Reader("nsys", _nsys, _open_nsys),
    Reader("trace", _trace, lambda h, w: open_trace(h.path, w.user, h.stored())),
    Reader("prometheus", _prometheus, _open_prometheus),
    Reader("samples.csv", _samples_csv, _open_samples_csv),
    Reader("samples", _samples, _open_samples),
    Reader("table", _table, _open_table),  # a benchmark tool's table: its cells would read as steps
    Reader("log", lambda h: not h.is_dir, _open_log, by_content=False),
)

"""`gpuscope analyze DIR` of many ranks: find them, analyze each in its own process, combine.

A multi-rank folder is one of (checked in this order):
- a folder of two or more profiler traces (`*.json`, `*.json.gz` that are traces: one per rank,
  what torch.profiler's tensorboard_trace_handler writes for a distributed job);
- a folder of two or more run directories (meta.json, timing.log or samples.csv inside) or of
  folders of traces, one per rank.
Each rank is opened with the facade and analyzed as `gpuscope analyze RANK` would (the same
line rate for all), in a process pool (`workers`: default one per core, at most one per rank);
a rank that cannot be read is an error row, the others go on. gpuscope.analysis.ranks builds
the rows and the comparison.
"""

from __future__ import annotations

import os
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpuscope import rundir
from gpuscope.analysis import analyze
from gpuscope.analysis.ranks import combine, rank_row
from gpuscope.errors import GpuscopeError, NoDataError
from gpuscope.parsers.trace.tracefile import RANK_SUFFIXES, trace_files
from gpuscope.sources import open_source

if TYPE_CHECKING:
    from gpuscope.analysis.document import RankErrorDoc, RankRowDoc, RanksDoc

#: below this many bytes of input in all, and fewer ranks than PARALLEL_MIN_RANKS, the ranks are read in
#: this process (starting workers costs more); a rank, however small, costs ~0.1 CPU-s of fixed work (its
#: own analysis), so many small ranks start the pool too (issue 34, class 11: 200 ranks of 20 events)
PARALLEL_MIN_BYTES = 32 * 1024 * 1024
PARALLEL_MIN_RANKS = 16


def _is_run(p: Path) -> bool:
    """Whether `p` holds a run's files. A folder that cannot be searched (no execute bit) counts as
    one: opening it then says why it cannot be read (on Python 3.11 is_file raises there)."""
    try:
        return any((p / n).is_file() for n in (rundir.META, rundir.TIMING_LOG, rundir.SAMPLES))
    except OSError:
        return True


def rank_inputs(path: str | os.PathLike[str]) -> list[Path] | None:
    """The ranks of a multi-rank folder, in name order; None when `path` is not one."""

    p = Path(path)
    try:
        if not p.is_dir() or _is_run(p):
            return None
    except OSError:  # not reachable (a folder above without its execute bit): opening it says so
        return None
    try:
        traces = trace_files(p)
        if traces:  # beside them, files named as a rank's trace are ranks, read or not (issue 34, class 12)
            traces += [f for f in p.iterdir() if f.name.endswith(RANK_SUFFIXES) and f not in traces and f.is_file()]
    except OSError:
        return None
    if len(traces) >= 2:
        return sorted(traces)
    try:
        subs = sorted(d for d in p.iterdir() if d.is_dir())
    except OSError:
        return None
    ranks = [d for d in subs if _is_run(d) or _has_traces(d)]
    return ranks if len(ranks) >= 2 else None


def _has_traces(d: Path) -> bool:
    try:
        return bool(trace_files(d))
    except OSError:
        return False


def _bytes(paths: list[Path]) -> int:
    n = 0
    for p in paths:
        try:
            n += p.stat().st_size if p.is_file() else sum(f.stat().st_size for f in p.rglob("*") if f.is_file())
        except OSError:
            continue
    return n


def analyze_one(path: str, position: int, line_rate: float | None) -> RankRowDoc | RankErrorDoc:
    """One rank (in a worker process): its row, or an error row with the one-line reason."""

    t0 = time.perf_counter()
    try:
        src = open_source(path, line_rate=line_rate).not_a_table()
        row = rank_row(src, analyze(src), name=Path(path).name, position=position)
    except GpuscopeError as e:
        return {"name": Path(path).name, "rank": position, "error": e.one_line()}
    except MemoryError:
        return {"name": Path(path).name, "rank": position, "error": "out of memory reading this rank"}
    except Exception as e:  # noqa: BLE001 - one rank's defect never ends the folder (issue 34, class 6)
        return {"name": Path(path).name, "rank": position, "error": _internal(e)}
    row["seconds"] = time.perf_counter() - t0
    return row


def _internal(e: BaseException) -> str:
    """The one line of a defect met in one rank (gpuscope's own errors say theirs)."""
    text = str(e).splitlines()[0][:200] if str(e) else ""
    return f"internal error: {type(e).__name__}" + (f": {text}" if text else "") + " (GPUSCOPE_DEBUG=1 analyze it alone)"


def _result(future: Any, args: tuple[str, int, float | None]) -> RankRowDoc | RankErrorDoc:
    """A worker's row, or an error row when the worker itself died (killed, out of memory)."""
    try:
        row: RankRowDoc | RankErrorDoc = future.result()
        return row
    except Exception as e:  # noqa: BLE001 - BrokenProcessPool and the like: this rank's row says it
        return {"name": Path(args[0]).name, "rank": args[1], "error": _internal(e)}


def _worker_init() -> None:
    """A worker is gpuscope's too: no library warning of its own on the terminal (the
    command's quiet_libraries does not reach another process; GPUSCOPE_DEBUG=1 shows them),
    and Ctrl-C is the parent's to answer (one line, exit 130), not a traceback per worker."""
    import signal
    import warnings

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if not os.environ.get("GPUSCOPE_DEBUG"):
        warnings.simplefilter("ignore")


def _cores() -> int:
    """The cores this process may run on (a container's or taskset's share, not the host's)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def pool_size(paths: list[Path], workers: int | None = None) -> int:
    """Processes for `paths`: `workers` when given, else one per core once the ranks are many or
    large (PARALLEL_MIN_RANKS, PARALLEL_MIN_BYTES), else 1; never more than one per rank."""
    if workers is None:
        many = len(paths) >= PARALLEL_MIN_RANKS or _bytes(paths) >= PARALLEL_MIN_BYTES
        workers = _cores() if many else 1
    return max(1, min(len(paths), workers))


def analyze_ranks(paths: list[Path], *, workers: int | None = None, line_rate: float | None = None) -> RanksDoc:
    """The ranks document (gpuscope.analysis.ranks.combine) of the ranks at `paths`, with
    `workers` (processes used) and `seconds` (wall time of the reading and analysis)."""

    workers = pool_size(paths, workers)
    t0 = time.perf_counter()
    args = [(str(p), i, line_rate) for i, p in enumerate(paths)]
    if workers == 1:
        results = [analyze_one(*a) for a in args]
    else:
        import multiprocessing as mp

        ctx = mp.get_context("forkserver")  # no fork of a process with threads; workers fork from a warm server
        ctx.set_forkserver_preload(["gpuscope.ranks_run", "gpuscope.sources", "gpuscope.analysis",
                                    "gpuscope.analysis.trace_analysis", "gpuscope.parsers.trace.kineto"])
        with ProcessPoolExecutor(max_workers=workers, mp_context=ctx, initializer=_worker_init) as pool:
            futures = [pool.submit(analyze_one, *a) for a in args]
            results = [_result(f, a) for f, a in zip(futures, args, strict=True)]
    rows = [r for r in results if "error" not in r]
    errors = [r for r in results if "error" in r]
    if not rows:
        raise NoDataError(f"no rank could be analyzed: {errors[0]['name']}: {errors[0]['error']}")
    doc = combine(rows, errors)
    doc["workers"] = workers
    doc["seconds"] = time.perf_counter() - t0
    return doc

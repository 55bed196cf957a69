"""The analysis a run directory ends with: `gpuscope run` and `gpuscope record` open the run
directory they just wrote through the one source facade, analyze it and keep the result as
summary.json. A run whose output cannot be analyzed is still a good run: the reason is
returned, never raised."""

from __future__ import annotations

import os
import signal
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from gpuscope.analysis import AnalyzeOptions, analyze
from gpuscope.errors import GpuscopeError, InputError, NoDataError
from gpuscope.rundir import SUMMARY, RunDir, read_json_object, read_meta
from gpuscope.schemas import SUMMARY_REQUIRED, SUMMARY_SCHEMA, misfits
from gpuscope.sources import open_source

if TYPE_CHECKING:
    from collections.abc import Callable

    from gpuscope.analysis import Analysis


@dataclass
class Summary:
    analysis: Analysis | None
    error: str | None = None        # why there is no analysis (one line)
    no_data: bool = False           # the run printed nothing to analyze (not a failure)
    interrupted: int | None = None  # the signal that stopped the summary (summary.json not written)


class _Stopped(BaseException):
    """A stop signal while the summary is made (not an Exception: no handler swallows it)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


STOPS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


@contextmanager
def _stop_signals_raise():
    """While the summary is made, SIGINT, SIGTERM and SIGHUP raise _Stopped (instead of
    killing gpuscope silently or leaving meta.json saying nothing of it)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum, _frame):
        raise _Stopped(signum)

    old = {s: signal.signal(s, stop) for s in STOPS}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)


def summarize_run(path: str | os.PathLike[str], *, abc_bytes: int | None = None,
                  on_error: Callable[[str], None] | None = None) -> Summary:
    """Analyze the run directory at `path` and write its summary.json. `abc_bytes`: the bytes
    one record uploads, when the caller knows them (a workload run does). meta.json's
    `summary` says how it went: `summary.json`, `not written: <why>`, or `interrupted by
    SIGTERM: run gpuscope analyze <path>` (a stop signal while the summary was made; the
    Summary's `interrupted` holds it, for the caller's exit code)."""
    try:
        with _stop_signals_raise():
            s = _summarize(path, abc_bytes, on_error)
    except _Stopped as e:
        name = signal.Signals(e.signum).name
        _say_in_meta(path, f"interrupted by {name}: run gpuscope analyze {path}", on_error)
        return Summary(None, f"interrupted by {name} before summary.json was written", interrupted=e.signum)
    _say_in_meta(path, "summary.json" if s.analysis is not None else f"not written: {s.error}", on_error)
    return s


def _say_in_meta(path: str | os.PathLike[str], what: str, on_error) -> None:
    """meta.json's `summary` field (merged into the file as it is, replaced atomically)."""

    try:
        meta = read_meta(path)
    except GpuscopeError:
        return
    rd = RunDir(Path(path), on_error=on_error)
    rd.write_meta(**{**meta, "summary": what})


def _summarize(path, abc_bytes, on_error) -> Summary:
    try:
        result = analyze(open_source(path).not_a_table(), AnalyzeOptions(abc_bytes=abc_bytes))
    except NoDataError as e:
        return Summary(None, e.one_line(), no_data=True)
    except GpuscopeError as e:
        return Summary(None, e.one_line())
    except Exception as e:  # an analysis bug must not fail the run that produced the data
        return Summary(None, f"analysis failed: {type(e).__name__}: {e}")
    doc = dict(result.document())
    bad = check_summary(doc)
    if bad:  # never a summary.json that its own reader would call damaged
        return Summary(None, f"the analysis does not fit summary.json's schema ({bad})")
    if not RunDir(Path(path), on_error=on_error).write_json(SUMMARY, doc):
        return Summary(None, "summary.json could not be written")
    return Summary(result)


def check_summary(doc) -> str | None:
    """Why `doc` is no summary.json (schemas.SUMMARY_SCHEMA), or None when it fits."""

    if not isinstance(doc, dict):
        return f"a JSON {type(doc).__name__}, not an object"
    missing = [k for k in SUMMARY_REQUIRED if k not in doc]
    bad = misfits(doc, SUMMARY_SCHEMA)
    parts = ([f"no {', '.join(missing)}"] if missing else []) + ([f"wrong type: {', '.join(bad)}"] if bad else [])
    return "; ".join(parts) or None


def read_summary(path: str | os.PathLike[str]) -> tuple[dict, list[str]]:
    """(summary.json of a run directory, the fields left out as damaged). ({}, []) when there
    is none; unreadable JSON, JSON nested too deeply, not an object or without the required
    fields -> InputError (one line, exit 3); a field of the wrong type is left out and named."""

    p = Path(path) / SUMMARY if Path(path).is_dir() else Path(path)
    if not p.exists():
        return {}, []
    if not p.is_file():
        raise InputError(f"{p} is not a regular file")
    doc = read_json_object(p)
    bad = misfits(doc, SUMMARY_SCHEMA)
    kept = {k: v for k, v in doc.items() if k not in bad}
    missing = [k for k in SUMMARY_REQUIRED if k not in kept]
    if missing:
        raise InputError(f"{p}: not a gpuscope summary.json (no usable {', '.join(missing)})")
    return kept, bad

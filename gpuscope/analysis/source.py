"""Open what the user pointed at: a timing log file, or a run directory.

A run directory (docs/ARCHITECTURE.md) holds timing.log and maybe meta.json, samples.csv,
spans.csv; any missing piece is simply absent from the RunContext.
"""

from __future__ import annotations

import os
from pathlib import Path

from gpuscope.analysis.result import RunContext
from gpuscope.errors import InputError, NoDataError

TIMING_LOG_NAMES = ("timing.log",)


def _read_spans(p: Path):
    import pandas as pd

    try:
        df = pd.read_csv(p, on_bad_lines="skip")
    except pd.errors.EmptyDataError:
        return None
    except (OSError, ValueError, UnicodeDecodeError) as e:
        raise InputError(f"unreadable {p}: {' '.join(str(e).split())}") from None
    need = {"t_start", "t_end", "phase"}
    if not need <= set(df.columns):
        raise InputError(f"{p}: not a gpuscope spans.csv (needs columns {', '.join(sorted(need))})")
    return df


def open_source(path: str | os.PathLike[str]) -> RunContext:
    p = Path(path)
    if not p.exists():
        raise InputError(f"no such file or directory: {p}")
    if p.is_dir():
        from gpuscope import rundir

        log = next((p / n for n in TIMING_LOG_NAMES if (p / n).is_file()), None)
        if log is None:
            from gpuscope.parsers.logparse import (
                find_log_in_dir,  # the only *.log, or a clear InputError
            )

            log = find_log_in_dir(p)
        ctx = RunContext(path=p, kind="rundir", timing_log=log)
        ctx.meta = rundir.read_meta(p) or None
        if (p / rundir.SAMPLES).is_file():
            s = rundir.read_samples(p)
            ctx.samples = s if len(s) else None
        if (p / rundir.SPANS).is_file():
            ctx.spans = _read_spans(p / rundir.SPANS)
        return ctx
    if not p.is_file():
        raise InputError(f"not a regular file: {p}")
    if not os.access(p, os.R_OK):
        raise InputError(f"cannot read {p}: permission denied")
    return RunContext(path=p, kind="log", timing_log=p)


def load_source(path: str | os.PathLike[str], fmt: str | None = None, *, held_key: str = "mutex_held"):
    """(ParsedLog, RunContext) for a log file or a run directory."""
    from gpuscope.parsers import parse_log

    ctx = open_source(path)
    try:
        parsed = parse_log(str(ctx.timing_log), fmt, held_key=held_key)
    except NoDataError as e:
        if ctx.kind == "rundir":
            raise NoDataError(f"{ctx.timing_log}: {e}") from None
        raise
    return parsed, ctx

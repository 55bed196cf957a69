"""Sources joined on the epoch clock must cover the same time: a `--samples` capture or a
`--trace` from another day joined to a log (or to each other) would put every sample
"outside the phases" and every kernel nowhere. `check_overlap` refuses it (UsageError,
exit 2) with both spans named, in UTC."""

from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import numpy as np

from gpuscope.errors import UsageError

if TYPE_CHECKING:
    from gpuscope.sources.source import Source

SLACK_S = 300.0  # clocks of two machines, a capture started a little early or late


def _span(values) -> tuple[float, float] | None:
    x = np.asarray(values, dtype="float64")
    x = x[np.isfinite(x) & (x > 1e9)]  # epoch seconds after 2001 (relative times are no date)
    if not x.size:
        return None
    return float(x.min()), float(x.max())


def spans_of(src: Source) -> dict[str, tuple[float, float]]:
    """The epoch span of each part of the source that has one."""
    out: dict[str, tuple[float, float]] = {}
    if src.log is not None and src.log.count("components"):
        s = _span(src.log.columns("components")["ts"])
        if s:
            out["log"] = s
    if src.spans is not None and len(src.spans):
        s = _span(np.concatenate([src.spans["t_start"].to_numpy(), src.spans["t_end"].to_numpy()]))
        if s:
            out["spans"] = s
    if src.samples is not None and len(src.samples) and "t_wall" in src.samples:
        s = _span(src.samples["t_wall"].to_numpy())
        if s:
            out["samples"] = s
    tr = src.trace
    if tr is not None and tr.epoch_offset_s is not None:
        host = [t for h in tr.summary().spans().values() for t in h[:2]]  # host events' first and last starts
        ts = np.concatenate([tr.gpu["ts_us"].to_numpy(), np.asarray(host, dtype="float64")])
        if ts.size:
            s = _span(tr.epoch(ts))
            if s:
                out["trace"] = s
    return out


def _when(s: tuple[float, float]) -> str:
    a = datetime.fromtimestamp(s[0], UTC)
    b = datetime.fromtimestamp(s[1], UTC)
    end = b.strftime("%H:%M:%S") if a.date() == b.date() else b.strftime("%Y-%m-%d %H:%M:%S")
    return f"{a.strftime('%Y-%m-%d %H:%M:%S')} to {end} UTC"


def check_overlap(src: Source, given: dict[str, str]) -> None:
    """`given`: the parts the user joined to the source (`samples` / `trace`) -> what names
    them in the message (`--samples FILE`). Each must overlap some other part in time."""
    spans = spans_of(src)
    names = {"log": f"the log {src.log_path or src.path}", "spans": f"the run's spans.csv ({src.path})",
             "samples": f"the samples of {src.path}", "trace": f"the trace of {src.path}"}
    names.update(given)
    for part in given:
        mine = spans.get(part)
        others = {k: v for k, v in spans.items() if k != part}
        if mine is None and part == "samples" and others:
            _no_clock(names[part], *next(iter((names[k], v) for k, v in others.items())))
        if mine is None:
            continue
        if not others:
            continue
        if any(mine[0] <= o[1] + SLACK_S and o[0] <= mine[1] + SLACK_S for o in others.values()):
            continue
        k, o = next(iter(others.items()))
        gap = min(abs(mine[0] - o[1]), abs(o[0] - mine[1]))
        raise UsageError(f"{names[part]} covers {_when(mine)} but {names[k]} covers {_when(o)}: they do not "
                         f"overlap in time ({_gap(gap)} apart), so nothing in one can be placed in the other "
                         "(a capture of another run?)")


def _no_clock(samples: str, other: str, span: tuple[float, float]) -> None:
    """A capture without wall-clock time (nvidia-smi dmon without -o DT, relative times) joined to
    a part that has it: nothing in it can be placed in the other, and joining it would say nothing
    of that (issue 33 class 14)."""
    raise UsageError(f"{samples} has no wall-clock time (nvidia-smi dmon without -o DT?), so it cannot be lined "
                     f"up with {other} ({_when(span)}); capture with `nvidia-smi dmon -o DT` or a query-gpu "
                     "`timestamp` column, or analyze the capture alone")


def _gap(s: float) -> str:
    if s >= 86400:
        return f"{s / 86400:.1f} days"
    if s >= 3600:
        return f"{s / 3600:.1f} h"
    return f"{math.ceil(s / 60)} min"

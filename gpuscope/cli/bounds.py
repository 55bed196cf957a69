"""Every numeric option, checked once, here: finite, positive where it must be, bounded.

    line_rate: float | None = typer.Option(None, "--line-rate", callback=LINE_RATE.callback)

A value out of its bounds (nan, inf, 1e308, 0 or -5 where only a positive number makes sense)
is refused while the command line is read: one stderr line `gpuscope: --window must be ...,
got 1e+308` and exit 2 (gpuscope.cli.app turns click's UsageError into that line). The fast
analyze path (gpuscope/cli/fast.py) asks `ok()` and leaves a value out of bounds to typer, so
both paths say the same. The upper bounds are far beyond any real value and keep the arithmetic
that follows (a sleep, a window of samples, seconds to epoch time) finite. No typer at import
(the fast path reads `ok`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any


def _finite(value: Any) -> bool:
    try:
        return math.isfinite(float(value))
    except (TypeError, ValueError, OverflowError):
        return False


@dataclass(frozen=True)
class Bound:
    option: str
    low: float | None = None
    high: float | None = None
    low_open: bool = False  # above `low`, not at least
    unit: str = ""

    def ok(self, value: Any) -> bool:
        if value is None:
            return True
        try:
            v = float(value)
        except (TypeError, ValueError, OverflowError):
            return False
        if not math.isfinite(v):
            return False
        if self.low is not None and (v <= self.low if self.low_open else v < self.low):
            return False
        return self.high is None or v <= self.high

    def why(self, value: Any) -> str:
        u = f" {self.unit}" if self.unit else ""
        if _finite(value) and self.high is not None and float(value) > self.high:
            return f"{self.option} must be at most {self.high:g}{u}, got {value}"
        low = "" if self.low is None else f"{'above' if self.low_open else 'at least'} {self.low:g}{u}"
        if isinstance(value, int):  # (an integer option: always finite)
            return f"{self.option} must be {'0 or more' if self.low == 0 else low}, got {value}"
        return f"{self.option} must be {low + ' and ' if low else ''}finite, got {value}"

    def check(self, value: Any) -> Any:
        """`value` when it is within bounds (None too: the option's default); else a click
        UsageError, which the application says in one line with exit 2."""
        if not self.ok(value):
            # (click's UsageError: typer is loaded by the time a callback runs)
            from gpuscope.cli.app import UsageError

            raise UsageError(self.why(value))
        return value

    def callback(self, value: Any) -> Any:  # typer's option callback: (value) -> value
        return self.check(value)


DAY_S = 86_400.0
SECONDS_SPAN = 1e9  # ~31 years either side of the first phase: a window of any real run

LINE_RATE = Bound("--line-rate", 0, 10_000, low_open=True, unit="GB/s")
START = Bound("--start", -SECONDS_SPAN, SECONDS_SPAN, unit="s")
END = Bound("--end", -SECONDS_SPAN, SECONDS_SPAN, unit="s")
INTERVAL_MS = Bound("--interval", 5, 3_600_000, unit="ms")
REFRESH = Bound("--refresh", 0, 3600, low_open=True, unit="s")
WINDOW = Bound("--window", 0, DAY_S, low_open=True, unit="s")
SECONDS = Bound("--seconds", 0, 366 * DAY_S, low_open=True, unit="s")
BOOTSTRAP = Bound("--bootstrap", 100, 1_000_000)
SEED = Bound("--seed", 0, 2**63 - 1)
GENERAL_SHARE = Bound("--general-share", 0, 1)
SRS_CHUNK_LOG = Bound("--srs-chunk-log", 10, 30)
LOG_N = Bound("--log-n", 1, 40)  # (the backends say their own, smaller, limits)
PARTITIONS = Bound("--partitions", 1, 10**7)
WORKERS = Bound("--workers", 1, 256)
SYNTH_THREADS = Bound("--synth-threads", 1, 1024)  # (1e11 threads was a MemoryError)
CONTENTION = Bound("--contention", 0, 1024)
BUDGET_MIB = {o: Bound(o, 0, 2**30) for o in ("--host-budget-mib", "--pinned-budget-mib")}  # (0 is read: a budget no partition fits, exit 6)
RUN_SEED = Bound("--run-seed", 0, 2**63 - 1)
REPEATS = Bound("--repeats", 1, 10_000)
DEVICE = Bound("--device", 0, 1023)
BOOL_SHARE = Bound("--bool-share", 0, 1)

"""One clock for everything gpuscope records in-process.

Samples, workload spans and timing-log line stamps all use `Clock`: a monotonic
counter (time.perf_counter) anchored once to the wall clock, so that intervals never
jump with NTP and every stamp can still be written as an ISO-8601 time the parsers read.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime


class Clock:
    def __init__(self) -> None:
        self.wall0 = time.time()
        self.mono0 = time.perf_counter()

    def mono(self) -> float:
        return time.perf_counter()

    def wall(self, mono: float | None = None) -> float:
        """Wall-clock seconds since the epoch for a monotonic reading (default: now)."""
        if mono is None:
            mono = time.perf_counter()
        return self.wall0 + (mono - self.mono0)

    def iso(self, mono: float | None = None) -> str:
        return iso_from_epoch(self.wall(mono))


def iso_from_epoch(t: float) -> str:
    """`2026-11-30T12:00:00.123456Z` — the ISO prefix form the parsers read back."""
    return datetime.fromtimestamp(t, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


CLOCK = Clock()

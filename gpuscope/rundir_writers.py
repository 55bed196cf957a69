"""The run directory's appending writers: samples.csv, timing.log and spans.csv, each appended
from any thread and flushed at least every FLUSH_EVERY_S (the 0.5 s promise of
docs/ARCHITECTURE.md); a write error is reported once to the owning RunDir and the writer
stops, leaving what was written readable. Made by RunDir.samples_writer(), .timing_log() and
.spans_writer() (gpuscope.rundir).
"""

from __future__ import annotations

import math
import threading
import time
from pathlib import Path
from typing import Any, Protocol

from gpuscope.clock import CLOCK, Clock
from gpuscope.schemas import SAMPLE_COLUMNS, SPAN_COLUMNS, SPAN_PHASES


class RunDir(Protocol):
    """The owner a writer reports its first write error to (gpuscope.rundir.RunDir)."""

    def report(self, what: str, e: BaseException) -> None: ...


FLUSH_EVERY_S = 0.25  # well inside the 0.5 s promise


class _AppendWriter:
    """A text file appended from any thread, flushed at least every FLUSH_EVERY_S."""

    def __init__(self, path: Path, owner: RunDir | None, header: str | None = None) -> None:
        self.path = path
        self.owner = owner
        self.broken = False
        self._lock = threading.Lock()
        self._last_flush = time.monotonic()
        self._f = None
        try:
            self._f = open(path, "a", encoding="utf-8", newline="")  # noqa: SIM115
            if header is not None and self._f.tell() == 0:
                self._f.write(header)
                self._f.flush()
        except OSError as e:
            self._fail(e)

    def _fail(self, e: OSError) -> None:
        self.broken = True
        if self.owner is not None:
            self.owner.report(self.path.name, e)
        if self._f is not None:
            try:
                self._f.close()
            except OSError:
                pass
            self._f = None

    def _write(self, text: str, *, flush: bool = False) -> None:
        with self._lock:
            if self.broken or self._f is None:
                return
            try:
                self._f.write(text)
                now = time.monotonic()
                if flush or now - self._last_flush >= FLUSH_EVERY_S:
                    self._f.flush()
                    self._last_flush = now
            except OSError as e:
                self._fail(e)

    def flush(self) -> None:
        with self._lock:
            if self._f is None:
                return
            try:
                self._f.flush()
                self._last_flush = time.monotonic()
            except OSError as e:
                self._fail(e)

    def close(self) -> None:
        self.flush()
        with self._lock:
            if self._f is not None:
                try:
                    self._f.close()
                except OSError as e:
                    self._fail(e)
                self._f = None


def _fmt(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        if math.isnan(v):
            return ""
        return f"{v:.6f}" if abs(v) < 1e6 else f"{v:.3f}"
    return str(v)


class SamplesWriter(_AppendWriter):
    """samples.csv: the ARCHITECTURE.md columns, one row per sample per GPU."""

    def __init__(self, path: Path, owner: RunDir | None = None) -> None:
        super().__init__(path, owner, header=",".join(SAMPLE_COLUMNS) + "\n")
        self.rows = 0

    def write_row(self, row: dict[str, Any]) -> None:
        line = ",".join(_fmt(row.get(c)) for c in SAMPLE_COLUMNS) + "\n"
        self._write(line)
        self.rows += 1


class TimingLogWriter(_AppendWriter):
    """timing.log: each line prefixed with its ISO-8601 UTC time on gpuscope's clock."""

    def __init__(self, path: Path, owner: RunDir | None = None, clock: Clock = CLOCK) -> None:
        super().__init__(path, owner)
        self.clock = clock
        self.lines = 0

    def write_line(self, text: str, mono: float | None = None) -> None:
        text = text.rstrip("\r\n")
        # flushed per line: a child may print one line and go quiet for an hour
        self._write(f"{self.clock.iso(mono)} {text}\n", flush=True)
        self.lines += 1


class SpansWriter(_AppendWriter):
    """spans.csv (workload only): one row per phase interval, epoch seconds on gpuscope's clock."""

    def __init__(self, path: Path, clock: Clock = CLOCK, owner: RunDir | None = None) -> None:
        super().__init__(path, owner, header=",".join(SPAN_COLUMNS) + "\n")
        self.clock = clock
        self.rows = 0

    def span(self, t0: float, t1: float, gpu: int, worker: int, partition: int, phase: str) -> None:
        """One interval, t0/t1 on the clock's monotonic scale."""
        if phase not in SPAN_PHASES:
            raise ValueError(f"unknown span phase {phase!r}")
        self._write(f"{self.clock.wall(t0):.6f},{self.clock.wall(t1):.6f},{gpu},{worker},{partition},{phase}\n")
        self.rows += 1

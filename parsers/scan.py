"""The raw result of one pass over a log, before grouping: flat Python lists that the
scanners append to (never DataFrames row by row), plus the shared line readers for
TIMELINE and tracing lines, which every format reads."""

from __future__ import annotations

import numpy as np
import pandas as pd

from gpuscope.parsers import timeline_events, tracing
from gpuscope.parsers.linetime import LineTimes
from gpuscope.parsers.prefix import strip_ansi

MAX_LINE = 64 * 1024  # longer lines are not parsed (a marker in them is reported as skipped)
SKIP_TEXT = 120

# line kinds (meta column 2)
K_FREE = 0  # not tied to a tenure (CPU-side CUZK lines, tracing lines)
K_OPEN = 1  # opens a tenure (mutex_wait line)
K_HELD = 2  # closes a tenure (held line)
K_GPU = 3  # inside a tenure (gpu_tid lines, kv lines before the held line)
K_NTT = 4  # CUZK_NTT_H: inside a tenure, k-th one is GPU k

TL_FIELDS = (("line", np.int64), ("slot", np.int64), ("offset_ms", np.float64), ("event", object),
             ("job_id", object), ("partition", np.int64), ("worker", np.int64),
             ("synth_ms", np.float64), ("gpu_ms", np.float64))

SOURCES = ("CUZK_TIMING", "CUZK_NTT_H", "GPU_TIMING", "FIN_TIMING", "condensed", "kv", "lines")
SRC = {name: i for i, name in enumerate(SOURCES)}


class Scan:
    def __init__(self) -> None:
        self.times = LineTimes()
        # 8 ints per line that yields values, flat: line, slot, kind, gpu, worker, partition, n, src
        self.meta: list[int] = []
        self.names: list[str] = []
        self.values: list[float] = []
        self.held: list[tuple[int, float]] = []  # (meta row, held value)
        # one int per meta row for a format that decides kinds after the scan (lines: where
        # the line's whole is); empty for the others
        self.aux: list[int] = []
        self.tol: list[float] = []  # lines: per meta row, the printed rounding of its times (ms)
        self.notes: list[str] = []  # what the format assumed (lines: names read as seconds)
        # quantities (numbers that are not times: h2d_bytes, num_circuits), each tied to
        # the meta row of its line: row, name as spelled, value as printed
        self.qrow: list[int] = []
        self.qnames: list[str] = []
        self.qvalues: list[float] = []
        # (line, slot, offset, event, job, partition, worker, synth, gpu)
        self.timeline: list[tuple] = []
        self.skip_line: list[int] = []
        self.skip_reason: list[str] = []
        self.skip_text: list[str] = []
        self.timing_lines = 0
        self.final = False
        self.ts = None

    def finalize(self) -> None:
        """Turn the lists into arrays (times resolved per slot). Idempotent."""
        if self.final:
            return
        n = len(self.meta) // 8
        self.meta = np.fromiter(self.meta, dtype=np.int64, count=8 * n).reshape(n, 8)
        self.names = np.asarray(self.names, dtype=object)
        self.values = np.asarray(self.values, dtype=np.float64)
        self.qrow = np.asarray(self.qrow, dtype=np.int64)
        self.aux = np.asarray(self.aux, dtype=np.int64)
        self.tol = np.asarray(self.tol, dtype=np.float64)
        self.qnames = np.asarray(self.qnames, dtype=object)
        self.qvalues = np.asarray(self.qvalues, dtype=np.float64)
        self.ts = self.times.array()
        rows = self.timeline
        cols = list(zip(*rows, strict=True)) if rows else [()] * len(TL_FIELDS)
        self.timeline = {
            name: (np.asarray(col, dtype=object) if name in ("event", "job_id") else np.asarray(col, dtype=dt))
            for (name, dt), col in zip(TL_FIELDS, cols, strict=True)
        }
        self.times = None
        self.final = True

    def merge(self, o: Scan) -> None:
        """Append the scan of the text that follows this one (line numbers already absolute)."""
        self.finalize()
        o.finalize()
        base_slot = len(self.ts)
        base_row = len(self.meta)
        m = o.meta.copy()
        m[:, 1] += base_slot
        self.meta = np.concatenate([self.meta, m])
        self.names = np.concatenate([self.names, o.names])
        self.values = np.concatenate([self.values, o.values])
        self.qrow = np.concatenate([self.qrow, o.qrow + base_row])
        self.aux = np.concatenate([self.aux, o.aux])
        self.tol = np.concatenate([self.tol, o.tol])
        self.notes = sorted(set(self.notes) | set(o.notes))
        self.qnames = np.concatenate([self.qnames, o.qnames])
        self.qvalues = np.concatenate([self.qvalues, o.qvalues])
        self.ts = np.concatenate([self.ts, o.ts])
        self.held += [(r + base_row, v) for r, v in o.held]
        for name, col in o.timeline.items():
            self.timeline[name] = np.concatenate(
                [self.timeline[name], col + base_slot if name == "slot" else col])
        self.skip_line += o.skip_line
        self.skip_reason += o.skip_reason
        self.skip_text += o.skip_text
        self.timing_lines += o.timing_lines

    def has_values(self) -> bool:
        return len(self.meta) > 0 or len(self.timeline["line"] if self.final else self.timeline) > 0

    def __getstate__(self):
        self.finalize()
        st = dict(self.__dict__)
        codes, uniques = pd.factorize(self.names)  # component names repeat: ship codes
        st["names"] = (codes.astype(np.int32), np.asarray(uniques, dtype=object))
        return st

    def __setstate__(self, st):
        codes, uniques = st.pop("names")
        self.__dict__.update(st)
        self.names = uniques[codes] if len(codes) else np.asarray([], dtype=object)

    def skip(self, ln: int, reason: str, text: str) -> None:
        self.timing_lines += 1
        self.skip_line.append(ln)
        self.skip_reason.append(reason)
        self.skip_text.append(text[:SKIP_TEXT])

    def too_long(self, ln: int, line: str) -> None:
        self.skip(ln, f"line too long ({len(line)} chars > {MAX_LINE}); not parsed", line)

    def common(self, ln: int, line: str) -> bool | None:
        """TIMELINE and tracing lines. True/False: it was one (read or damaged) / was not
        a timing line after all; None: not one of these."""
        i = line.find(timeline_events.MARKER)
        if i >= 0:
            r = timeline_events.read_timeline(line[i + 9:])
            if type(r) is str:
                self.skip(ln, r, line)
            else:
                self.timing_lines += 1
                self.timeline.append((ln, self.times.slot(line), *r))
            return True
        if "_TIMING " in line:
            clean = strip_ansi(line) if "\x1b" in line else line
            at = tracing.find_tag(clean)
            if at >= 0:
                r = tracing.read_tracing(clean, at)
                if r is None:
                    return False
                if type(r) is str:
                    self.skip(ln, r, line)
                    return True
                source, names, values, worker, partition = r
                self.timing_lines += 1
                self.meta += (ln, self.times.slot(clean), K_FREE, -1, worker, partition,
                              len(names), SRC[source])
                self.names += names
                self.values += values
                return True
        return None


def count_lines(text: str) -> int:
    if not text:
        return 0
    n = text.count("\n")
    return n if text.endswith("\n") else n + 1


def split_lines(text: str) -> list[str]:
    """Lines without their terminators (\\n, \\r\\n); line k is index k-1."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if "\r" in text:
        lines = [ln[:-1] if ln.endswith("\r") else ln for ln in lines]
    return lines

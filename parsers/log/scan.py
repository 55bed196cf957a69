"""The raw result of one pass over a log, before grouping: flat Python lists that the
scanners append to (never DataFrames row by row), plus the shared line readers for
TIMELINE and tracing lines, which every format reads.

A log is read in chunks (parsers/log/reader.py); each chunk's Scan is finalized into arrays,
its names turned into integer codes of tables shared by the whole log (`Names`), and the
chunks are concatenated (`Scan.concat`). The compiled scanner (parsers/_scan.c) fills the
same arrays; lines it leaves to Python are read here and merged in line order
(`Scan.interleave`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from gpuscope import native
from gpuscope.native import PURE_ENV as PURE_ENV  # (re-exported: tests and tools set it)
from gpuscope.parsers.log import timeline_events, tracing
from gpuscope.parsers.log.linetime import LineTimes
from gpuscope.parsers.log.prefix import strip_ansi

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


class Names:
    """Strings as integer codes, in order of first appearance; shared by a log's chunks."""

    def __init__(self, names=()) -> None:
        self.index: dict[str, int] = {}
        self.list: list[str] = []
        for n in names:
            self.code(n)

    def code(self, name: str) -> int:
        c = self.index.get(name)
        if c is None:
            c = self.index[name] = len(self.list)
            self.list.append(name)
        return c

    def encode(self, names) -> np.ndarray:
        """Codes of a sequence of strings (new ones added in order of first appearance)."""
        if not len(names):
            return np.zeros(0, dtype=np.int32)
        index = self.index
        for n in dict.fromkeys(names):  # the distinct names, in order, at C speed
            if n not in index:
                index[n] = len(self.list)
                self.list.append(n)
        return np.fromiter(map(index.__getitem__, names), dtype=np.int32, count=len(names))

    def array(self) -> np.ndarray:
        return np.asarray(self.list, dtype=object)

    def __len__(self) -> int:
        return len(self.list)


class Tables:
    """The code tables of one log: component names, quantity names, TIMELINE events and job ids."""

    def __init__(self) -> None:
        self.names = Names()
        self.qnames = Names()


def _i64(x) -> np.ndarray:
    return np.asarray(x, dtype=np.int64)


class Scan:
    """One pass's result. Its columns are Python lists while the scanners append to them and
    numpy arrays after finalize() (hence typed Any: one attribute, two lives)."""

    def __init__(self, times: LineTimes | None = None) -> None:
        self.times: Any = times if times is not None else LineTimes()  # (None after finalize)
        # 8 ints per line that yields values, flat: line, slot, kind, gpu, worker, partition, n, src
        self.meta: Any = []
        self.names: Any = []
        self.values: Any = []
        self.held: Any = []  # (meta row, held value) pairs; after finalize (rows, values)
        # one int per meta row for a format that decides kinds after the scan (lines: where
        # the line's whole is); empty for the others
        self.aux: Any = []
        self.tol: Any = []  # lines: per meta row, the printed rounding of its times (ms)
        self.notes: list[str] = []  # what the format assumed (lines: names read as seconds)
        self.steps_per_record = 1  # lines: a log printing every K-th step (ParsedLog.steps_per_record)
        self.record_time_covers = False  # lines: the records' times cover those K steps (ParsedLog)
        # quantities (numbers that are not times: h2d_bytes, num_circuits), each tied to
        # the meta row of its line: row, name as spelled, value as printed
        self.qrow: Any = []
        self.qnames: Any = []
        self.qvalues: Any = []
        # (line, slot, offset, event, job, partition, worker, synth, gpu); after finalize a dict of columns
        self.timeline: Any = []
        self.skip_line: list[int] = []
        self.skip_reason: list[str] = []
        self.skip_text: list[str] = []
        self.timing_lines = 0
        self.final = False
        self.ts: Any = None
        # after finalize: codes into the tables' name lists (names / qnames are then None)
        self.codes: Any = None
        self.qcodes: Any = None
        self.tables: Any = None  # (a Tables after finalize)
        # format `lines`: the whole, how it was found, the components that are no parts
        self.whole: str | None = None
        self.whole_basis = ""
        self.not_parts: dict[str, str] = {}

    # -- arrays ------------------------------------------------------------------------

    def finalize(self, tables: Tables | None = None) -> None:
        """Turn the lists into arrays, names into codes of `tables` (a new one if None).
        Idempotent."""
        if self.final:
            return
        self.tables = tables = tables if tables is not None else Tables()
        n = len(self.meta) // 8
        self.meta = np.fromiter(self.meta, dtype=np.int64, count=8 * n).reshape(n, 8)
        self.codes = tables.names.encode(self.names)
        self.names = None
        self.values = np.asarray(self.values, dtype=np.float64)
        self.qrow = _i64(self.qrow)
        self.aux = _i64(self.aux)
        self.tol = np.asarray(self.tol, dtype=np.float64)
        self.qcodes = tables.qnames.encode(self.qnames)
        self.qnames = None
        self.qvalues = np.asarray(self.qvalues, dtype=np.float64)
        held = self.held
        self.held = (_i64([h[0] for h in held]), np.asarray([h[1] for h in held], dtype=np.float64))
        self.ts = self.times.array()
        rows = self.timeline
        cols = list(zip(*rows, strict=True)) if rows else [()] * len(TL_FIELDS)
        self.timeline = {
            name: (np.asarray(col, dtype=object) if name in ("event", "job_id") else np.asarray(col, dtype=dt))
            for (name, dt), col in zip(TL_FIELDS, cols, strict=True)
        }
        self.times = None
        self.final = True

    def value_names(self) -> np.ndarray:
        """The component name of every value (object array)."""
        return self.tables.names.array()[self.codes] if len(self.codes) else np.zeros(0, dtype=object)

    def quantity_names(self) -> np.ndarray:
        return self.tables.qnames.array()[self.qcodes] if len(self.qcodes) else np.zeros(0, dtype=object)

    @classmethod
    def concat(cls, scans: list[Scan], tables: Tables) -> Scan:
        """One Scan of consecutive pieces of a log (each finalized with `tables`; line
        numbers already absolute)."""
        scans = [s for s in scans if s is not None]
        out = cls()
        out.finalize(tables)
        if not scans:
            return out
        for s in scans:
            s.finalize(tables)
        slot_base = np.cumsum([0] + [len(s.ts) for s in scans[:-1]])
        row_base = np.cumsum([0] + [len(s.meta) for s in scans[:-1]])
        metas = []
        for s, b in zip(scans, slot_base, strict=True):
            m = s.meta
            if b and len(m):
                m = m.copy()
                m[:, 1] += b
            metas.append(m)
        out.meta = np.concatenate(metas) if metas else out.meta
        out.codes = np.concatenate([s.codes for s in scans])
        out.values = np.concatenate([s.values for s in scans])
        out.qrow = np.concatenate([s.qrow + b for s, b in zip(scans, row_base, strict=True)])
        out.qcodes = np.concatenate([s.qcodes for s in scans])
        out.qvalues = np.concatenate([s.qvalues for s in scans])
        out.aux = np.concatenate([s.aux for s in scans])
        out.tol = np.concatenate([s.tol for s in scans])
        out.held = (np.concatenate([s.held[0] + b for s, b in zip(scans, row_base, strict=True)]),
                    np.concatenate([s.held[1] for s in scans]))
        out.ts = np.concatenate([s.ts for s in scans])
        out.timeline = {
            name: np.concatenate([s.timeline[name] + b if name == "slot" else s.timeline[name]
                                  for s, b in zip(scans, slot_base, strict=True)])
            for name, _ in TL_FIELDS
        }
        notes: set[str] = set()
        for s in scans:
            notes |= set(s.notes)
            out.skip_line += s.skip_line
            out.skip_reason += s.skip_reason
            out.skip_text += s.skip_text
            out.timing_lines += s.timing_lines
        out.notes = sorted(notes)
        return out

    def has_values(self) -> bool:
        return len(self.meta) > 0 or len(self.timeline["line"] if self.final else self.timeline) > 0

    # -- reading -----------------------------------------------------------------------

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


def split_lines(text: str) -> list[str]:
    """Lines without their terminators (\\n, \\r\\n); line k is index k-1."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if "\r" in text:
        lines = [ln[:-1] if ln.endswith("\r") else ln for ln in lines]
    return lines



def compiled_scanner():
    """The compiled scanner module, or None (not built, or GPUSCOPE_PURE_SCANNER=1)."""
    return native.load("scan")

FIRST_CODES_HEAD = 4096


def first_codes(codes: np.ndarray, m: int) -> tuple[np.ndarray, np.ndarray]:
    """pandas.factorize of names given as codes into a table of m distinct names: the codes
    renumbered in order of first appearance (intp; `codes` itself where they are so numbered
    already) and, per new code, its code in the table. O(n) (one minimum.at, one take): a
    million names never become a million objects. (The head alone where it names all m: a
    log prints its names in its first lines, and minimum.at costs ~10 ns a name.)"""
    n = len(codes)
    if not n:
        return np.zeros(0, dtype=np.intp), np.zeros(0, dtype=np.intp)
    first = np.full(m, n, dtype=np.intp)
    head = codes[:FIRST_CODES_HEAD]  # (where the head holds every name, their first places are there)
    np.minimum.at(first, head, np.arange(len(head), dtype=np.intp))
    if len(head) < n and not bool((first < n).all()):
        np.minimum.at(first, codes, np.arange(n, dtype=np.intp))
    present = np.flatnonzero(first < n)
    order = present[np.argsort(first[present], kind="stable")]
    if len(order) == m and (order == np.arange(m)).all():
        return codes, order
    rank = np.full(m, -1, dtype=np.intp)
    rank[order] = np.arange(len(order), dtype=np.intp)
    return rank[codes], order


def factorize(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """pandas.factorize of an array of names: the same codes (order of first appearance) and
    uniques, in C where the compiled scanner is built (a name repeats as one str object, so
    a million of them cost no hash of a million strings)."""
    import pandas as pd

    mod = native.load("scan") if values.dtype == object else None
    if mod is None or not hasattr(mod, "factorize"):
        return pd.factorize(values)
    try:
        codes, uniq = mod.factorize(values)
    except TypeError:  # (unhashable objects: pandas says what it does with them)
        return pd.factorize(values)
    out = np.empty(len(uniq), dtype=object)
    out[:] = uniq
    return np.frombuffer(codes, dtype=np.intp), out


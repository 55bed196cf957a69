"""The `lines` format through the compiled shape splitter: the Python reader reads the first
line of each shape and every line its plans do not certainly replay; the rest of a shape's
lines are replayed in numpy (parsers/log/lines/vectorised.py). The result is the per-line scan's, to the
bit (tests/test_linereplay_paths.py).

How it stays the per-line scan: the Python reader (parsers/log/lines/read.py scan_line) reads, in
line order, exactly the lines that the per-line scan would read in full (and maybe a few
more, which its plans then replay as they would have), so the reader's State (the plans
of each shape, the keys printed with a unit, the names read as seconds) evolves as it does
there. A line between two of them is replayed with the plans its shape holds at that point,
tried in the same order, and only where a plan certainly replays it and no plan before it
might. A shape's plans change only when the reader reads a line of that shape (or a piece
of a line that has its skeleton); a plan stops replaying when its last bare key is printed
with a unit (a cut line): both are followed as they happen, in line order.

Lines the C splitter does not shape (quotes, control or non-ASCII bytes, TIMELINE, tracing
or MLLOG markers, very long lines), shapes with few lines, shapes holding a gate of a
framework's own reader, and a shape that keeps missing its plans are read by the Python
reader, line by line, at their place.
"""

from __future__ import annotations

import heapq
from types import ModuleType
from typing import Any

import numpy as np

from gpuscope.parsers.log import scan as sc
from gpuscope.parsers.log.lines import read as freeform
from gpuscope.parsers.log.lines.assemble import Replayed, assemble
from gpuscope.parsers.log.lines.line import (
    _MEMO_MAX,
    _SKELETON,
    MEAN_PM,
    NAME_AFTER,
    SHAPE_GATES,
    SLASH_PER,
    tokens,
)
from gpuscope.parsers.log.lines.plan import Plan
from gpuscope.parsers.log.lines.records import EVAL_AUX
from gpuscope.parsers.log.lines.vectorised import Layout, evaluate
from gpuscope.parsers.log.lines.vocabulary import EVAL
from gpuscope.parsers.log.linetime import LineTimes
from gpuscope.parsers.log.native import first_appearance
from gpuscope.parsers.log.reader import Chunk

MIN_LINES = 8    # a shape with fewer lines in a chunk: read by Python
MAX_MISSES = 16  # a shape whose plans miss more often in a chunk: the rest read by Python
EVENT = -1


class _Shape:
    """One shape's lines in one chunk and where its replay stands."""

    __slots__ = ("code", "skel", "rows", "msg", "choice", "plans", "readings", "misses", "eager", "version",
                 "layout", "clear_from")

    def __init__(self, code: int, skeleton: str, rows: np.ndarray, message: np.ndarray, layout: Layout | None):
        self.code, self.skel, self.rows, self.msg, self.layout = code, skeleton, rows, message, layout
        self.choice = np.full(len(rows), EVENT, dtype=np.int32)  # per line: index into plans, or EVENT
        self.plans: list = []      # the plans that replay some of its lines
        self.readings: list = []   # their readings (vectorised.Reading), by plan index
        self.misses = 0
        self.eager = layout is None
        self.version = 0
        self.clear_from = 0  # choice[clear_from:] is all EVENT


class ShapeScan:
    """Feeds chunks of a `lines` log; `result(tail)` is the whole log's Scan."""

    def __init__(self, module: ModuleType, py_scanner: Any, errors: str):
        self.shapes = module.Shapes()
        self.native = module
        self.py = py_scanner  # scanners.PyScanner (its State, tables and clock)
        self.tables: sc.Tables = py_scanner.tables
        self.errors = errors
        self.times = LineTimes(py_scanner.clock)
        self.skels: list[str] = []
        self.layouts: dict[int, Layout | None] = {}
        self.scans: list[sc.Scan] = []  # what the Python reader read, chunk by chunk
        self.replayed: list[Replayed] = []  # what the plans replayed

    # -- a chunk -----------------------------------------------------------------------------

    def feed(self, chunk: Chunk) -> bool:
        """Read one chunk; whether one of its lines holds a CuZK or condensed marker (detect.py's:
        the splitter flags them as it goes, for a format chosen by the log's head alone)."""
        buf = chunk.buf
        d = self.shapes.feed(buf, chunk.first)
        marker = bool(d["marker"])
        self.skels += d["shapes"]
        st = self.py.state
        cols: dict[str, np.ndarray] = {
            k: np.frombuffer(d[k], dtype=np.int32 if k in ("shape", "tsk") else (np.float64 if k == "ts" else np.int64))
            for k in ("ln", "start", "len", "msg", "shape", "tsk", "ts")}
        shape: np.ndarray = cols["shape"]
        special = np.flatnonzero(shape < 0)
        mv = memoryview(buf)
        texts = {int(r): str(mv[cols["start"][r]:cols["start"][r] + cols["len"][r]], "utf-8", self.errors)
                 for r in special.tolist()}
        pieces = sum(t.count("\r") + 1 for t in texts.values())
        normal = np.flatnonzero(shape >= 0)
        # (the shapes met, counted without a sort)
        kinds = int(np.count_nonzero(np.bincount(shape[normal]))) if len(normal) else 0
        if st.plans is None or len(st.plans) + kinds + pieces > _MEMO_MAX:
            # (no plans, or the reader may drop its plans on the way: it reads the chunk as it does)
            p = self.py.read(sc.split_lines(chunk.text(self.errors)), chunk.first)
            p.finalize(self.tables)
            self.scans.append(p)
            return marker
        _Chunk(self, buf, cols, texts, normal).run()
        return marker

    def result(self, tail: sc.Scan | None) -> sc.Scan:
        self.shapes = None  # (the splitter's buffers, a chunk's lines long: not held through assemble)
        out = assemble([*self.scans, *([tail] if tail is not None else [])], self.replayed, self.tables)
        self.scans, self.replayed = [], []
        first_appearance(out)
        return out

    def layout(self, code: int, line: str) -> Layout | None:
        """The shape's layout, or None: its lines are read by the Python reader one by one."""
        if code not in self.layouts:
            lay = Layout(line)
            self.layouts[code] = lay if lay.pos and not gated(self.skels[code]) else None
        return self.layouts[code]


class _Chunk:
    """The replay of one chunk: events (lines the Python reader reads) in line order."""

    def __init__(self, owner: ShapeScan, buffer: bytes | bytearray | memoryview, columns: dict, texts: dict[int, str], normal: np.ndarray):
        self.o, self.buf, self.cols, self.texts = owner, buffer, columns, texts
        self.mv = memoryview(buffer)
        self.st = owner.py.state
        self.p = owner.py.new_scan()  # what the Python reader reads
        self.heap: list[tuple[int, int, int, int]] = []  # (row, shape code, version, position)
        self.shapes: dict[int, _Shape] = {}
        self.by_skel: dict[str, _Shape] = {}
        self.by_bare: dict[str, set[int]] = {}
        self.static: list[int] = sorted(texts)  # rows the reader reads whatever the plans
        shape = columns["shape"]
        if len(normal):
            key = shape[normal]
            if key.max() < np.iinfo(np.int16).max:  # (numpy's stable sort of 16-bit keys is a radix sort)
                key = key.astype(np.int16)
            order = normal[np.argsort(key, kind="stable")]
            cuts = np.flatnonzero(np.diff(shape[order])) + 1
            for rows in np.split(order, cuts):
                code = int(shape[rows[0]])
                if len(rows) < MIN_LINES:
                    self.static += rows.tolist()
                    continue
                lay = owner.layout(code, self.text(int(rows[0])))
                s = _Shape(code, owner.skels[code], rows, columns["msg"][rows], lay)
                self.shapes[code] = s
                self.by_skel[s.skel] = s
            self.static.sort()

    def text(self, row: int) -> str:
        t = self.texts.get(row)
        if t is not None:
            return t
        a = int(self.cols["start"][row])
        return str(self.mv[a:a + int(self.cols["len"][row])], "ascii")

    # -- the replay ------------------------------------------------------------------------

    def run(self) -> None:
        for s in self.shapes.values():
            self.resolve(s, 0)
        static, k = self.static, 0
        heap = self.heap
        while True:
            while heap and heap[0][2] != self.shapes[heap[0][1]].version:
                heapq.heappop(heap)
            nxt = heap[0][0] if heap else None
            if k < len(static) and (nxt is None or static[k] < nxt):
                r = static[k]
                k += 1
                self.event(r, None, -1)
            elif nxt is not None:
                r, code, _v, pos = heapq.heappop(heap)
                self.event(r, self.shapes[code], pos)
            else:
                break
        self.emit()

    def event(self, row: int, shape: _Shape | None, position: int) -> None:
        line = self.text(row)
        units = len(self.st.unit_keys)
        # (a line the reader reads whatever the plans: the shapes whose plans it may change)
        watch = [(t, self.plans_now(t)) for t in (self.by_skel.get(k) for k in touched(line)) if t is not None] \
            if shape is None else []
        freeform.scan_line(self.p, self.st, int(self.cols["ln"][row]), line)
        if shape is not None:
            shape.misses += 1
            shape.eager |= shape.misses > MAX_MISSES
            self.resolve(shape, position + 1)
        for t, before in watch:
            if self.plans_now(t) != before:
                t.misses += 1
                t.eager |= t.misses > MAX_MISSES
                self.resolve(t, int(np.searchsorted(t.rows, row, side="right")))
        if len(self.st.unit_keys) != units:
            for key in list(self.by_bare):
                if key in self.st.unit_keys:
                    for code in self.by_bare.pop(key):
                        t = self.shapes[code]
                        self.resolve(t, int(np.searchsorted(t.rows, row, side="right")))

    def resolve(self, shape: _Shape, position: int) -> None:
        """Decide the shape's lines from `position` on with the plans it holds now; queue its next event."""
        shape.version += 1
        m = len(shape.rows)
        if position >= m:
            return
        kept = self.st.plans.get(shape.skel) if self.st.plans is not None else None
        live = [p for p in kept or () if p.last_bare is None or p.last_bare not in self.st.unit_keys]
        choice = shape.choice
        if position < shape.clear_from:
            choice[position:shape.clear_from] = EVENT
            shape.clear_from = position
        if shape.eager or not live:  # every line from q on is the reader's: no look at the others
            heapq.heappush(self.heap, (int(shape.rows[position]), shape.code, shape.version, position))
            return
        shape.clear_from = m
        if live:
            undecided = np.ones(m - position, dtype=bool)
            for plan in live:
                i = self.reading(shape, plan)
                if i is None:
                    break  # (a plan whose columns cannot be read: the reader decides from here)
                rd = shape.readings[i]
                take = undecided & rd.acc[position:]
                choice[position:][take] = i
                undecided &= ~rd.acc[position:] & ~rd.unk[position:]
                if plan.last_bare is not None:
                    self.by_bare.setdefault(plan.last_bare, set()).add(shape.code)
                if not undecided.any():
                    break
        miss = np.flatnonzero(choice[position:] == EVENT)
        if len(miss):
            pos = position + int(miss[0])
            heapq.heappush(self.heap, (int(shape.rows[pos]), shape.code, shape.version, pos))

    def plans_now(self, shape: _Shape) -> tuple | None:
        """What shape's plans are now (the reader inserts a plan in front, keeps a few)."""
        kept = self.st.plans.get(shape.skel) if self.st.plans is not None else None
        return None if kept is None else (id(kept), len(kept), id(kept[0]) if kept else 0)

    def reading(self, shape: _Shape, plan: Plan) -> int | None:
        for i, p in enumerate(shape.plans):
            if p is plan:
                return i if shape.readings[i] is not None else None
        assert shape.layout is not None  # (a shape without a layout is eager: Python reads it, no plan replays it)
        rd = evaluate(plan, shape.layout, self.buf, shape.msg, self.o.native, self.st)
        shape.plans.append(plan)
        shape.readings.append(rd)
        return len(shape.plans) - 1 if rd is not None else None

    # -- the result ------------------------------------------------------------------------

    def emit(self) -> None:
        freeform.set_notes(self.p, self.st)
        self.p.finalize(self.o.tables)
        self.o.scans.append(self.p)
        ln = self.cols["ln"]
        if len(ln) and ln[-1] < np.iinfo(np.int32).max:  # (line numbers and positions in 4 bytes)
            ln = ln.astype(np.int32)
        for s in self.shapes.values():
            for i, rd in enumerate(s.readings):
                if rd is None or rd.none:
                    continue
                pos = np.flatnonzero(s.choice == i).astype(np.int32)
                if len(pos):
                    rows = s.rows[pos]
                    code = rd.code[pos]
                    self.o.replayed.append(Replayed(
                        ln[rows], rd, pos, self.ts(rows) if rd.stamp is None else rd.stamp[pos],
                        code + EVAL_AUX if rd.flags & EVAL else code))
                rd.release()  # (what assemble reads stays: names, values, tolerance)

    def ts(self, rows: np.ndarray) -> np.ndarray:
        ts = self.cols["ts"][rows]  # (a copy: rows index it)
        py = np.flatnonzero(self.cols["tsk"][rows])
        if len(py):
            ts_of = self.o.times.ts_of
            for i in py.tolist():
                ts[i] = ts_of(self.text(int(rows[i])))
        return ts


def gated(message: str) -> bool:
    """Whether lines of this message's shape hold a gate of a framework's own reader (the
    reader's SHAPE_GATES, tried before any plan: a Keras or tqdm bar, a TensorFlow hook):
    those lines are read by the reader itself. The gates hold no digit, so whether one is
    in a line is the same for every line of a shape (the space: a prefix before it)."""
    text = " " + message
    if "[" in message and NAME_AFTER.search(message) is not None:
        return True  # (a time named after it in brackets: its tokens are rewritten, no layout holds them)
    if "\u00b1" in message and MEAN_PM.search(message) is not None:
        return True  # (a mean ± its std: rewritten too)
    if " / " in message and SLASH_PER.search(message) is not None:
        return True  # (`time / step`: rewritten to `time per step`)
    return any(g in text for g, *_ in SHAPE_GATES)


def touched(line: str) -> list[str]:
    """The skeletons whose plans reading `line` may add to (its pieces, its first 4096 chars)."""
    out = []
    for piece in freeform.pieces(line) if ("\r" in line or "it/s" in line or "s/it" in line) else (line,):
        q = piece[:4096] if len(piece) > sc.MAX_LINE else piece
        mt = tokens(q)
        if mt is not None:
            out.append(mt[0].translate(_SKELETON))
    return out

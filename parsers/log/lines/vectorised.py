"""A line plan (parsers/log/lines/plan.py) replayed over every line of one shape at once, in numpy.

Lines of one shape (parsers/_scan.c `Shapes`: the message with every digit written 0) have
their tokens at the same offsets of their message, so each number a plan reads sits at the
same bytes of every line. `Layout` finds, from one line of the shape, where each token's
characters lie; `evaluate` reads the plan's numbers of all the shape's lines (C `columns`) and
applies Plan.replay's checks to the columns: per line, certainly replayed (`acc`, with the
reading's columns), certainly missed, or unknown (a number `columns` does not read, which
Python's float() might: the line is read by Python).
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType

import numpy as np

from gpuscope.parsers.log.lines.line import _DIGITS, _SEP, message_start
from gpuscope.parsers.log.lines.plan import Plan
from gpuscope.parsers.log.lines.reading import ReaderState, WholeKeys
from gpuscope.parsers.log.lines.vocabulary import (
    HAS_BYTES,
    HELD,
    MAX_BYTES,
    MAX_COUNT,
    NAMED,
    P_NOQINT,
    P_NOSTAMP,
    P_Q,
    P_QINT,
    P_QPOS,
    P_SIZE,
    P_STAMP,
    P_TIME,
    P_TIMEDOT,
    ROUND_SLACK,
    SUMMED,
)
from gpuscope.parsers.numbers import MAX_MS

_HAS_DIGIT = frozenset("0123456789")
_EMPTY = np.zeros(0, dtype=np.int64)
_DROPPED = frozenset(chr(c) for c, v in _SEP.items() if v is None)


class Layout:
    """Where the tokens of a shape's lines lie: per token, the offsets of its characters in
    the message (a token may span a dropped bracket: `12)3`), and one line's token texts."""

    __slots__ = ("pos", "toks")

    def __init__(self, line: str):
        msg = line[message_start(line):] if line[:1] in _DIGITS else line
        kept = [i for i, ch in enumerate(msg) if ch not in _DROPPED]
        t = msg.translate(_SEP)
        self.pos: list[np.ndarray] = []
        self.toks: list[str] = t.split()
        i, n = 0, len(t)
        while i < n:
            if t[i] == " ":
                i += 1
                continue
            j = t.find(" ", i)
            j = n if j < 0 else j
            self.pos.append(np.asarray(kept[i:j], dtype=np.int64))
            i = j
        if len(self.pos) != len(self.toks):  # (other whitespace: not for the columns)
            self.pos = []


class Reading:
    """A plan's replay over a shape's lines: acc / unk masks and the readings' columns."""

    __slots__ = ("acc", "unk", "none", "names", "values", "qnames", "qvalues", "stamp", "code", "flags", "tol")

    acc: np.ndarray    # per line: the plan certainly replays it
    unk: np.ndarray    # per line: a number C does not read (Python decides)
    none: bool         # the reading is no timing line (no row)
    names: list[str]
    values: np.ndarray   # lines x names, ms
    qnames: list[str]
    qvalues: np.ndarray  # lines x quantities
    stamp: np.ndarray | None
    code: np.ndarray     # per line: the whole's code
    flags: int
    tol: float

    def release(self) -> None:
        """Drop the per-line masks, codes and stamps once the chunk's lines are placed (the
        Replayed rows took theirs): a million lines' replay holds its values, not these."""
        self.acc = self.unk = self.code = _EMPTY
        self.stamp = None


def _contiguous(positions: np.ndarray) -> bool:
    return len(positions) > 0 and int(positions[-1] - positions[0]) == len(positions) - 1


def is_count(values: np.ndarray) -> np.ndarray:
    return (values >= 0) & (values < 2.0 ** 53) & (np.floor(values) == values)


def stamp_ms(values: np.ndarray, factor: float | None) -> tuple[np.ndarray, np.ndarray]:
    """vocabulary.stamp_ms over a column: (ms, valid)."""
    if factor is None:
        ms = np.where((values >= 1e12) & (values < 1e13), values, values * 1e3)
    else:
        ms = values * factor
    return ms, (ms >= 1e12) & (ms < 1e13)


def evaluate(plan: Plan, layout: Layout, buffer: bytes | bytearray | memoryview, message: np.ndarray, native: ModuleType, state: ReaderState) -> Reading | None:
    """The plan over the lines whose messages start at `message` (offsets into `buffer`); None when
    the layout cannot hold its columns (Python reads the lines). `native`: the compiled
    scanner (its `columns` and `spelled`)."""
    m = len(message)
    r = Reading()
    r.flags, r.tol, r.none = plan.flags, plan.tol, True
    r.unk = np.zeros(m, dtype=bool)
    if plan.fieldless:
        r.acc = np.ones(m, dtype=bool)
        return r
    if plan.n != len(layout.toks) or not layout.pos:
        return None
    good = _fixed_text(plan, layout, buffer, message, native)
    if good is None:
        return None
    read = _numbers(plan, layout, buffer, message, native.columns)
    if read is None:
        return None
    nums, xs, oks, unk = read
    got = _apply_steps(plan, nums, xs, oks, good)
    if got is None:  # (an action this replay does not know: the Python reader reads these lines)
        return None
    names, cols, qn, qv, stamp = got
    # a number that did not read: unknown unless the line misses for another reason
    r.unk = unk & good
    r.acc = good & ~unk
    r.none = plan.none or (not names and not (plan.flags & HAS_BYTES))
    if r.none:
        return r
    r.names, r.qnames = names, qn
    r.values = np.stack(cols, axis=1) if cols else np.zeros((m, 0))
    r.qvalues = np.stack(qv, axis=1) if qv else np.zeros((m, 0))
    r.stamp = stamp
    r.code = np.full(m, plan.code, dtype=np.int64) if plan.code is not None else _whole(names, r.values, plan.eps, state)
    return r


def _fixed_text(plan: Plan, layout: Layout, buffer: bytes | bytearray | memoryview, message: np.ndarray, native: ModuleType) -> np.ndarray | None:
    """The lines whose fixed tokens and number prefixes holding digits are the plan's; None when
    the layout's tokens cannot hold them (every character checked in one C pass over the lines)."""
    pos: list[np.ndarray] = []
    want: list[str] = []
    fixed = plan.fixed if len(plan.fixed_idx) != 1 else (plan.fixed,)
    for j, text in zip(plan.fixed_idx, fixed or (), strict=True):
        if len(text) != len(layout.toks[j]):
            return None
        if _HAS_DIGIT.intersection(text):
            pos.append(layout.pos[j])
            want.append(text)
    for j, pre in plan.pres:
        if len(pre) > len(layout.toks[j]):
            return None
        if _HAS_DIGIT.intersection(pre):
            pos.append(layout.pos[j][: len(pre)])
            want.append(pre)
    if not want:
        return np.ones(len(message), dtype=bool)
    ok = native.spelled(buffer, message.tobytes(), np.concatenate(pos).astype(np.int64).tobytes(),
                        "".join(want).encode("ascii"))
    return np.frombuffer(ok, dtype=np.bool_)


def _numbers(plan: Plan, layout: Layout, buffer: bytes | bytearray | memoryview, message: np.ndarray, columns: Callable[..., tuple[bytes, bytes]]):
    """Every deciding number of every line in one C call: (their text in the layout, values
    m x k, read m x k, a line with any number unread); None when a number is not contiguous."""
    m = len(message)
    where: list[int] = []
    nums: list[str] = []
    for act, j, lp, stop, _a, _b in plan.steps:
        p = layout.pos[j][lp:stop]
        num = layout.toks[j][lp:stop]
        if act == P_Q and "/" in num:
            cut = num.index("/")
            num, p = num[:cut], p[:cut]
        if not _contiguous(p):
            return None
        where += (int(p[0]), len(p))
        nums.append(num)
    k = len(nums)
    if not k:
        return nums, None, None, np.zeros(m, dtype=bool)
    xb, okb = columns(buffer, message.tobytes(), np.asarray(where, dtype=np.int64).tobytes())
    xs = np.frombuffer(xb, dtype=np.float64).reshape(m, k)
    oks = np.frombuffer(okb, dtype=np.bool_).reshape(m, k)
    return nums, xs, oks, ~oks.all(axis=1)


def _apply_steps(plan: Plan, number_texts: list[str], numbers: np.ndarray, read_ok: np.ndarray, good: np.ndarray):
    """Each step's check (narrowing `good` in place) and what it reads: (time names, their ms
    columns, quantity names, their columns, the stamp in s or None); None for an unknown action."""
    names: list[str] = []
    cols: list[np.ndarray] = []
    qn: list[str] = []
    qv: list[np.ndarray] = []
    stamp = None
    for c, (act, _j, _lp, _stop, a, b) in enumerate(plan.steps):
        num, x, ok = number_texts[c], numbers[:, c], read_ok[:, c]
        if act == P_TIME or act == P_TIMEDOT:
            good &= ~((x < 0) | (x * b > MAX_MS))
            if act == P_TIMEDOT and "." not in num:
                good[:] = False
            names.append(a)
            cols.append(x * b)
        elif act == P_Q:
            good &= ~(np.abs(x) > MAX_COUNT)
            qn.append(a)
            qv.append(x)
        elif act == P_QPOS:
            good &= ~((x < 0) | (x > MAX_BYTES))
            qn.append(a)
            qv.append(x)
        elif act == P_QINT:
            good &= is_count(x) | ~ok
            qn.append(a)
            qv.append(x)
        elif act == P_NOQINT:
            good &= ~is_count(x) | ~ok
        elif act == P_SIZE:
            good &= ~((x < 0) | (x * b > MAX_BYTES))
            qn.append(a)
            qv.append(np.round(x * b))
        elif act == P_STAMP:
            ms, valid = stamp_ms(x, b)
            good &= valid | ~ok
            stamp = ms / 1e3
        elif act == P_NOSTAMP:
            _ms, valid = stamp_ms(x, b)
            good &= ~valid | ~ok
        else:
            return None
    return names, cols, qn, qv, stamp


def _whole(names: list[str], values: np.ndarray, eps: list[float], state: WholeKeys) -> np.ndarray:
    """plan.whole_code over the rows of `values` (one column per name), to the bit."""
    m, nt = values.shape
    if not nt:
        return np.full(m, -1, dtype=np.int64)
    if state.held is not None and state.held in names:
        return np.full(m, names.index(state.held) * 4 + HELD, dtype=np.int64)
    cands = [j for j, nm in enumerate(names) if state.info(nm)[3]]
    if cands:
        best = np.full(m, cands[0], dtype=np.int64)
        bv = values[:, cands[0]].copy()
        for j in cands[1:]:
            take = values[:, j] > bv
            best[take] = j
            bv[take] = values[take, j]
        return best * 4 + NAMED
    if nt < 3:
        return np.full(m, -1, dtype=np.int64)
    big = np.argmax(values, axis=1)
    vb = values[np.arange(m), big]
    total = 0.0 + values[:, 0]
    for j in range(1, nt):
        total = total + values[:, j]
    rest = total - vb
    tol = sum(eps) + ROUND_SLACK * vb
    hit = (np.abs(vb - rest) <= tol) & (vb > 0)
    return np.where(hit, big * 4 + SUMMED, -1).astype(np.int64)

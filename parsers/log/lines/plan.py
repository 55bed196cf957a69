"""Replaying the reading of a line (parsers/log/lines/line.py) on the next line of the same shape:
the same text but for its numbers. A Plan keeps, per number that decided something, what
it decided (a time and its unit, a quantity, a stamp); replay reads the new numbers and
checks that each decides the same way, else says MISS and the line is read in full. And
the whole of a line's times (whole_code), which both the reading and the replay find.

`state` is the reader's State (parsers/log/lines/line.py): its `info` (key -> key_info), `held`
(the held key or None) and `unit_keys` (keys printed with a unit in the value)."""

from __future__ import annotations

from gpuscope.parsers.log.lines.reading import LineReading, ReaderState, WholeKeys
from gpuscope.parsers.log.lines.vocabulary import (
    HAS_BYTES,
    HELD,
    MAX_BYTES,
    MAX_COUNT,
    NAMED,
    P_NOQINT,
    P_Q,
    P_QINT,
    P_QPOS,
    P_SIZE,
    P_STAMP,
    P_TIME,
    P_TIMEDOT,
    PAREN,
    ROUND_SLACK,
    SUMMED,
    is_count,
    stamp_ms,
)
from gpuscope.parsers.numbers import MAX_MS

MISS = object()  # replay: this line does not follow the plan
UNCACHEABLE = ("uncacheable",)  # in a reading's record: no plan can replay it


class Plan:
    """How a line of one shape was read, to read the next line of that shape without the
    token walk: the tokens without numbers must be equal, every number must read, and each
    number that decided something must decide it the same way; else replay says MISS."""

    __slots__ = ("n", "fixed", "fixed_idx", "getter", "pres", "steps", "last_bare", "flags", "none", "code", "eps",
                 "tol", "fieldless")

    def __init__(self, tokens: list[str], record: list, result: LineReading, state: ReaderState):
        import operator

        vals = {e[1] for e in record if e[0] == "value"}
        self.pres = tuple((e[1], e[2]) for e in record if e[0] == "value" and e[2])
        fixed = [j for j in range(len(tokens)) if j not in vals]
        self.n = len(tokens)
        self.fixed_idx = tuple(fixed)  # (parsers/log/lines/replay.py compares these tokens' digits)
        # itemgetter of one index gives the item, of several a tuple: compare like with like
        self.getter = operator.itemgetter(*fixed) if fixed else None
        self.fixed = self.getter(tokens) if self.getter is not None else None
        # (action, token, prefix length, end offset (-strip or None), a, b); the numbers of
        # one shape have the same digits after the point: their rounding is the plan's
        self.steps = tuple((e[0], e[1], len(e[2]), -e[3] if e[3] else None, e[4], e[5])
                           for e in record if e[0] not in ("value", "end"))
        self.eps = [e[6] for e in record if e[0] in (P_TIME, P_TIMEDOT)]
        self.tol = sum(self.eps)
        end = record[-1]
        self.last_bare, self.flags = end[1], end[2]
        self.none = result is None
        # no token formed a field: whether one does depends on no digit, so the next line of
        # this shape has none either (a warning, a progress bar): None without a look
        self.fieldless = not vals and result is None
        # the whole's index when no number can move it (the held key, or one name for a whole)
        self.code = None
        if result is not None and type(result) is tuple:
            names = result[0]
            wholes = [j for j, nm in enumerate(names) if state.info(nm)[3]]
            if result[5] >= 0 and result[5] % 4 == PAREN:
                self.code = result[5]  # (a lock's tenure with its parts in parentheses: by the words)
            elif state.held is not None and state.held in names:
                self.code = names.index(state.held) * 4 + HELD
            elif len(wholes) == 1:
                self.code = wholes[0] * 4 + NAMED
            elif not wholes and result[5] >= 0 and result[5] % 4 in (NAMED, PAREN):
                self.code = result[5]  # (named by the line's fixed words: a timer tree's root)
            elif not wholes and len(names) < 3:
                self.code = -1

    def replay(self, tokens: list[str], state: ReaderState):
        if self.fieldless:
            return None
        if len(tokens) != self.n:
            return MISS
        if self.getter is not None and self.getter(tokens) != self.fixed:
            return MISS
        for j, pre in self.pres:
            if not tokens[j].startswith(pre):
                return MISS
        if self.last_bare is not None and self.last_bare in state.unit_keys:
            return MISS  # now a cut line: read it in full
        names: list[str] = []
        values: list[float] = []
        qn: list[str] = []
        qv: list[float] = []
        stamp = None
        for act, j, lp, stop, a, b in self.steps:
            num = tokens[j][lp:stop]
            if act == P_Q and "/" in num:
                num = num.partition("/")[0]  # `step 12/40`
            # (the line has the plan's skeleton: its numbers are ASCII digits where the plan's
            # were, in the same form, so float() reads them as numbers.number would; only a
            # finite check remains: 9e308 has the skeleton of 1e308)
            try:
                x = float(num)
            except ValueError:
                return MISS
            if x - x != 0:
                return MISS
            if act == P_TIME or act == P_TIMEDOT:
                if x < 0 or x * b > MAX_MS or (act == P_TIMEDOT and "." not in num):
                    return MISS
                names.append(a)
                values.append(x * b)
            elif act == P_Q:
                if abs(x) > MAX_COUNT:
                    return MISS
                qn.append(a)
                qv.append(x)
            elif act == P_QPOS:
                if x < 0 or x > MAX_BYTES:
                    return MISS
                qn.append(a)
                qv.append(x)
            elif act == P_QINT:
                if not is_count(x):
                    return MISS
                qn.append(a)
                qv.append(x)
            elif act == P_NOQINT:
                if is_count(x):
                    return MISS
            elif act == P_SIZE:
                if x < 0 or x * b > MAX_BYTES:
                    return MISS
                qn.append(a)
                qv.append(float(round(x * b)))
            elif act == P_STAMP:
                ms = stamp_ms(x, b)
                if ms is None:
                    return MISS
                stamp = ms / 1e3
            elif stamp_ms(x, b) is not None:  # P_NOSTAMP
                return MISS
        if self.none or (not names and not (self.flags & HAS_BYTES)):
            return None
        code = self.code if self.code is not None else whole_code(names, values, self.eps, state)
        return names, values, qn, qv, stamp, code, self.flags, self.tol



def whole_code(names: list[str], values: list[float], eps: list[float], state: WholeKeys) -> int:
    """index * 4 + how (HELD / NAMED / SUMMED) of the line's whole, or -1."""
    nt = len(names)
    if not nt:
        return -1
    held = state.held
    if held is not None:
        for j, nm in enumerate(names):
            if nm == held:
                return j * 4 + HELD
    best = -1
    for j, nm in enumerate(names):
        if state.info(nm)[3] and (best < 0 or values[j] > values[best]):
            best = j
    if best >= 0:
        return best * 4 + NAMED
    if nt >= 3:
        big = max(range(nt), key=values.__getitem__)
        rest = sum(values) - values[big]
        tol = sum(eps) + ROUND_SLACK * values[big]
        if abs(values[big] - rest) <= tol and values[big] > 0:
            return big * 4 + SUMMED
    return -1

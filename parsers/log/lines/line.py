"""Reading one line of the `lines` format (parsers/log/lines/read.py describes the format): its
message after a time prefix, its tokens, and the plan of its shape. A line of a shape seen
before is replayed (parsers/log/lines/plan.py); a new shape is read in full (parsers/log/lines/fields.py,
which holds what counts as evidence of a duration). The words it knows are in
parsers/log/lines/vocabulary.py.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from gpuscope.parsers.log import oneoffs
from gpuscope.parsers.log.formats import FRAMEWORKS
from gpuscope.parsers.log.lines import frameworks
from gpuscope.parsers.log.lines.fields import Line
from gpuscope.parsers.log.lines.frameworks import NOT_MINE
from gpuscope.parsers.log.lines.nesting import nest, tenure
from gpuscope.parsers.log.lines.plan import MISS, UNCACHEABLE, Plan
from gpuscope.parsers.log.lines.trees import TreeState
from gpuscope.parsers.log.lines.vocabulary import UNIT_WORDS, is_word, key_info, stat_of

STAMPS_WHY = "the lines' stamps: the time between one line and the next agrees with it in seconds"
USE_PLANS = True  # replay the reading of lines of one shape (off: every line read in full; tests)
_PLANS_PER_SHAPE = 4
_MEMO_MAX = 50_000

_SEP = str.maketrans({"|": " ", ",": " ", ";": " ", "(": " ", "[": " ", "{": " ", "<": " ",
                      ">": " ", "\t": " ", ")": None, "]": None, "}": None, '"': None})
# a quote not between two digits is punctuation (`{'step': 3}`); one between digits
# (`9876'5432`, a digit-group mark) stays and makes the number unreadable
_LONE_QUOTE = re.compile(r"(?<![0-9])'|'(?![0-9])").sub
_DIGITS = frozenset("0123456789")
_HAS_DIGIT = re.compile(r"[0-9]").search
# a line's shape: every digit as 0 (a plan per shape and length of its numbers)
_SKELETON = str.maketrans("123456789", "000000000")


class _Memo(dict):
    """fn(key), computed once per key (a bounded dict: cleared past _MEMO_MAX keys)."""

    def __init__(self, compute: Callable[[str], Any]):
        super().__init__()
        self.fn = compute

    def __missing__(self, key: str):
        if len(self) > _MEMO_MAX:
            self.clear()
        r = self[key] = self.fn(key)
        return r


class State:
    """What one scan remembers across lines: key classes and word checks (memos), the
    plans of the line shapes seen, the keys printed with a unit in the value (cut-line
    check), the names read as seconds by assumption."""

    def __init__(self, held: str | None = None):
        self.held = held
        self.info = _Memo(key_info).__getitem__  # key -> key_info(key)
        self.word = _Memo(is_word).__getitem__  # token -> is_word(token)
        self.plans: dict[str, list[Plan]] | None = {} if USE_PLANS else None
        self.unit_keys: set[str] = set()
        self.seconds_assumed: dict[str, str] = {}  # name -> the format that gives its seconds
        self.ms_assumed: set[str] = set()
        self.mllog_open: dict = {}  # MLPerf intervals open: (name, epoch_num) -> start ms
        # components a framework's reader knows are no parts of a step, and why (llama.cpp's
        # model load: a one-off setup; Megatron's timers: a statistic over the ranks)
        self.known: dict[str, str] = {}
        # names whose time covers every step since the line before (TensorFlow's hook's seconds
        # since its last line): never multiplied by the steps a record stands for
        self.covering: set[str] = set()
        self.tree = TreeState()  # the timer tree being read (parsers/log/lines/trees.py)
        # names whose unit the lines' stamps give (parsers/log/stampunit.py, set before the scan),
        # and, while that is worked out, the unit-less time-named numbers read: (name, value)
        self.stamp_seconds: frozenset[str] = frozenset()
        self.unsourced: list[tuple[str, float]] | None = None

    def by_stamps(self, name: str, number: float) -> str:
        """Why a bare time-named `name` is seconds by the lines' stamps, or "" (noted, if asked)."""
        if name in self.stamp_seconds:
            return STAMPS_WHY
        if self.unsourced is not None:
            self.unsourced.append((name, number))
        return ""

    def scratch(self) -> State:
        """A fresh State with this one's held key (a fragment's reading that leaves this unchanged)."""
        return State(self.held)

    @staticmethod
    def tokens(text: str) -> list[str] | None:
        """A fragment's tokens (parsers/log/lines/nesting.py), or None when it holds no digit."""
        mt = tokens(text)
        return None if mt is None else mt[1]


def message_start(line: str) -> int:
    """Offset of the message after an ISO-8601 prefix (`2026-...T...Z `, `2026-... 09:00:19,123 `)."""
    if line[4:5] == "-" and line[7:8] == "-" and line[:4].isdigit():
        sp = line.find(" ")
        if sp < 0:
            return len(line)
        if line[10:11] == " ":  # date and time as two words
            sp2 = line.find(" ", sp + 1)
            return len(line) if sp2 < 0 else sp2 + 1
        return sp + 1
    return 0


# a time with its name after it in brackets (`2.1s [train], 0.3s [test]`): read as `train=2.1s`
NAME_AFTER = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?) ?((?:ms|us|\u00b5s|ns|s|sec|secs|min)\b) ?\[([A-Za-z][\w.-]{0,40})\]")


def _unit_before_bracket(msg: str) -> bool:
    """What every NAME_AFTER match holds: a unit's last letter (s, c or n) before the `[`, a space
    between or not (the search itself is ~15 us on a line of many numbers; this ~1)."""
    return "s[" in msg or "s [" in msg or "c[" in msg or "c [" in msg or "n[" in msg or "n [" in msg


def tokens(line: str) -> tuple[str, list[str]] | None:
    """A line's message and its tokens, or None when it holds no ASCII digit."""
    msg = line[message_start(line):] if line[:1] in _DIGITS else line
    if _HAS_DIGIT(msg) is None:
        return None
    if "[" in msg and _unit_before_bracket(msg) and NAME_AFTER.search(msg) is not None:  # (such shapes are read here: replay.gated)
        msg = NAME_AFTER.sub(r"\3=\1\2", msg)
    if "'" in msg:
        msg = _LONE_QUOTE("", msg)
    if "\u00b1" in msg:  # (a mean ± its std, the unit after the std: the mean in that unit)
        msg = MEAN_PM.sub(r"\1\2", msg)
    if " / " in msg:  # (`Average time / step: 0.027s`, accelerate: a time per step)
        msg = SLASH_PER.sub(r"\1 per ", msg)
    return msg, msg.translate(_SEP).split()


# a mean and its spread with one unit after both (`Generate time: 21.88 ± 1.20 ms`, OpenVINO
# GenAI's benchmark): the unit is the mean's too; the bare mean had read as seconds (1000x)
MEAN_PM = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?) ?\u00b1 ?\d+(?:\.\d+)? ?((?:ms|us|\u00b5s|ns|s|sec|secs|min)\b)")


# a `/` between a time word and a step word is `per` (`time / step`), never a line cut in two
# (not after a unit: `2.81 s / it` is tqdm's own, read as it is)
SLASH_PER = re.compile(r"\b(time|latency|duration) / (?=(?:step|steps|it|iter|iteration|batch)\b)", re.IGNORECASE)


# the frameworks' own shapes (parsers/log/formats.py FRAMEWORKS, read in parsers/log/lines/frameworks.py):
# (a text the line holds, its reader)
SHAPE_GATES = tuple((g, getattr(frameworks, f.reader)) for f in FRAMEWORKS if f.reader for g in f.gates) + tuple(
    (g, oneoffs.read_one_off) for g in oneoffs.GATES)  # (one-off lines: a compile, a build, bash's time)


def maybe_framework(line: str) -> bool:
    """A cheap test that holds for every line holding a gate of SHAPE_GATES (each gate holds
    one of these: tests/test_parsers_frameworks.py), so most lines skip the gates' loop."""
    return ("/" in line or " sec)" in line or ":::" in line or "Benchmarking" in line or "time:   [" in line
            or "..: " in line or "llama_" in line or "s to " in line or "% ]" in line or "\u2501 " in line
            or "function calls" in line or "Start:" in line or "End:" in line or "\u2500" in line or "#Reps" in line or " latency" in line
            or oneoffs.maybe(line))


def _framework(line: str, state: State):
    """The reading of a line of a framework's own shape, or NOT_MINE."""
    for gate, reader in SHAPE_GATES:
        if gate in line:
            r = reader(line, state)
            if r is not NOT_MINE:
                return r
    return NOT_MINE


def read_line(line: str, state: State):
    """_read_line, a mean printed with its std (`Generate time: 21.88 ± 1.20 ms`) named a statistic."""
    r = _read_line(line, state)
    return _means(line, r) if "\u00b1" in line and type(r) is tuple and r[0] else r


def _means(line: str, r: tuple) -> tuple:
    """A time printed as a mean ± its std (OpenVINO GenAI's benchmark, openvinotoolkit/openvino.genai#875)
    is a statistic of many calls, named so (`Generate_time.mean`: no step, never a part); the
    names whose value is such a mean, in the reading `r`. A time without ± on the line keeps its name."""
    means = {round(float(m.group(1)) * UNIT_WORDS[m.group(2)], 9) for m in MEAN_PM.finditer(line)}
    names = [f"{nm}.mean" if round(v, 9) in means and stat_of(nm) is None else nm
             for nm, v in zip(r[0], r[1], strict=False)] + list(r[0][len(r[1]):])
    return (names, *r[1:])


def _read_line(line: str, state: State):
    """One line -> (names, values_ms, quantity names, quantity values, stamp, whole code,
    flags, rounding), None (not a timing line), or a reason string (a damaged timing line).
    rounding: the printed rounding of its times summed, ms (half a unit of the last digit each).

    flags, for format detection: LINES_ONLY = something `kv` cannot read or reads wrong (a
    field in a `key: value` / `Label value` shape, a unit word, a counter, a metric or a
    time stamp in a `key=` field); HAS_BYTES = a byte count.

    Lines of one shape (the same text but for the numbers) are read once: the reading is
    kept as a plan (Plan) that the next line of that shape replays; whenever one of its
    numbers could change the reading (a time stamp's range, a negative time, an integer
    count), the line is read again in full. A line of a framework's own shape (a gate of
    parsers/log/formats.py FRAMEWORKS in it: a Keras or tqdm bar, a TensorFlow hook, MLPerf) is
    read by that framework's reader (parsers/log/lines/frameworks.py), never planned."""
    if maybe_framework(line):
        r = _framework(line, state)
        if r is not NOT_MINE:
            return r
    mt = tokens(line)
    if mt is None:
        return None
    msg, toks = mt
    plans = state.plans
    if plans is None:
        r = Line(toks, state, None).read()
        return tenure(msg, nest(msg, r, state) if "(" in msg else r, state)
    skel = msg.translate(_SKELETON)
    kept = plans.get(skel)
    if kept is not None:
        for plan in kept:
            r = plan.replay(toks, state)
            if r is not MISS:
                return r
    rec: list = []
    r = Line(toks, state, rec).read()
    if "(" in msg:
        r = nest(msg, r, state)
    r = tenure(msg, r, state)
    if rec and UNCACHEABLE not in rec:
        if kept is None:
            if len(plans) > _MEMO_MAX:
                plans.clear()
            plans[skel] = [Plan(toks, rec, r, state)]
        else:  # the same shape with other words (gpu0 / gpu1): keep a few
            kept.insert(0, Plan(toks, rec, r, state))
            del kept[_PLANS_PER_SHAPE:]
    return r

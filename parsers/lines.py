"""Timing lines as people print them (format `lines`), from any program.

    step=3 h2d_ms=231.7 compute_ms=647.2 step_ms=878.9 h2d_bytes=1610612736
    [epoch 0] step 12/40 loss: 6.9042 data: 131.2ms compute: 12.5ms step: 143.9ms
    iter 3: prep 48.211 ms, h2d 9.870 ms, kernel 20.004 ms, total 78.100 ms (printed_at=1764590000.1)
    Epoch 1 | batch 20 | loss 0.53 | fwd 12.1 ms | bwd 20.3 ms
    INFO step 7: data_time=0.120s compute_time=0.031s
    {"step": 3, "h2d_ms": 12.5}        epoch 3 took 1.2s        latency_us: 150

Fields: `key=value`, `key: value`, `key = value`, and `Label value` (a word followed by a
number). `| , ; ( ) [ ] { }` and quotes separate fields; a prefix time stamp is skipped.

Which numbers are times (components, milliseconds):
- a unit in the value (`12ms`, `0.3s`, `150us`, `2min`) or as the next word (`12 ms`,
  `1.2 seconds`), or in the key (`_ms`, `_us`, `_ns`, `_s`, `_sec`, `_msec`, `Ms` in
  camelCase, `time (ms): 12`); the value's unit wins over the key's;
- a bare number under a key that says time (`time`, `elapsed`, `latency`, `duration`,
  `took`, `runtime`, `wall`, or a `_time`-style name such as `data_time`) is read as
  **seconds** (what Python's time.time()/perf_counter() differences give, and what
  detectron2/mmengine/Hugging Face print under `time`, `data_time`, `train_runtime`); the
  assumption is listed in ParsedLog.notes;
- any other bare number is not a time: counters (`step`, `epoch`, `iter`, `batch`, ...),
  metrics (`loss`, `acc`, `lr`, ...), rates (`*_per_s`, `fps`, `throughput`), percentages,
  dates, versions and addresses are never components.

Quantities (ParsedLog.quantities, kept as printed): `*_bytes` / `bytes` keys; counters
(`step 12/40` keeps 12); any other integer in a `key=N` / `key: N` field (`ops=2000`).
A field `printed_at=`, `ts=`, `timestamp=` (or `time=`) holding epoch seconds (or
milliseconds) is the line's own time: it replaces the prefix's arrival time as its stamp.

A timing line has at least one time (or a byte count). Lines without one (warnings, prose,
progress bars) are noise, not damage. Damage (the line is skipped and counted): a key
with a time unit whose value is not a number (`h2d_ms=12q`, `step_ms=`), a byte count
that is not a number, a negative time, and a cut line: the line's last field is a bare
number under a key that carried a unit in the value on earlier lines (`step: 143`).

Records (one per timing line, or per step): consecutive lines that print the same
counters (`step=3` on two lines) form one record, any other line is a record of its own.
A line whose shape (counter keys and component names) occurs once, and shares no
component with a shape that repeats, is not a record (a `Loaded model in 3.2s` line among
steps): its components get record -1, like CPU-side lines.

The whole (the record's held time, `ParsedLog.whole`): the held key when the caller names
one present in the log; else a field named like a whole (`total`, `step`, `iter`,
`iteration`, `batch`, `elapsed`, `wall`, `took`, `duration`, `time`, `latency`, and
`step_time`, `total_time` ...; with a unit, so `step=3` stays a counter); else a field
that equals the sum of at least two other times on the line, within rounding (half a
unit of the last printed digit per value) plus 1%, on at least half of the lines that
print it. The whole stays a component (statistics); a record without it gets the sum of
its parts as held time (`ParsedLog.whole_basis` says which), and so does one whose whole
is below the sum of its parts by no more than the printed rounding (86.0 + 829.0 against a
step of 914.9). A whole printed on a line of its own ends a record that takes the lines
before it (as in kv).
"""

from __future__ import annotations

import math
import re
from collections import Counter

import numpy as np

from gpuscope.parsers import scan as sc
from gpuscope.parsers.fields import first_repeat
from gpuscope.parsers.fields import repeated as repeated_key
from gpuscope.parsers.numbers import LIMITS, MAX_MS, TIME_UNITS, beyond, digits, number, split_unit
from gpuscope.parsers.words import (
    BYTES,
    COUNTER,
    COUNTERS,
    METRIC,
    PLAIN,
    RATE,
    STAMP,
    STAMP_KEYS,
    TIMEK,
    key_class,
)

# -- tables --------------------------------------------------------------------------------

# value suffix -> ms (longest first)
VALUE_UNITS = TIME_UNITS
# a unit printed as its own word after the number
UNIT_WORDS = {
    "ms": 1.0, "msec": 1.0, "msecs": 1.0, "millisecond": 1.0, "milliseconds": 1.0,
    "us": 1e-3, "\u00b5s": 1e-3, "\u03bcs": 1e-3, "usec": 1e-3, "usecs": 1e-3,
    "microsecond": 1e-3, "microseconds": 1e-3,
    "ns": 1e-6, "nsec": 1e-6, "nanosecond": 1e-6, "nanoseconds": 1e-6,
    "s": 1e3, "sec": 1e3, "secs": 1e3, "second": 1e3, "seconds": 1e3,
    "min": 6e4, "mins": 6e4, "minute": 6e4, "minutes": 6e4,
}
# key suffix -> ms, matched on the lower-cased key (`_` and `-` alike)
KEY_UNITS = (("_seconds", 1e3), ("_secs", 1e3), ("_sec", 1e3), ("_msecs", 1.0), ("_msec", 1.0),
             ("_millis", 1.0), ("_usec", 1e-3), ("_nsec", 1e-6), ("_mins", 6e4), ("_min", 6e4),
             ("_ms", 1.0), ("_us", 1e-3), ("_ns", 1e-6), ("_s", 1e3))
# camelCase key suffix (elapsedMs, durationSec), matched as spelled
CAMEL_UNITS = (("Seconds", 1e3), ("Secs", 1e3), ("Sec", 1e3), ("Millis", 1.0), ("Ms", 1.0),
               ("Us", 1e-3), ("Ns", 1e-6))

WHOLE_WORDS = frozenset(("total", "step", "iter", "iteration", "batch", "elapsed", "wall",
                         "walltime", "took", "duration", "time", "latency", "e2e", "overall",
                         "loop", "round", "cycle"))
# a `Label value` / `Label: value` key read as seconds without a unit, when its number has a
# decimal point, although its name is no time word: the data-loading meter of the PyTorch
# examples' ProgressMeter (`Time  0.257 ( 0.257)  Data  0.175 ( 0.175)`), copied into
# countless training scripts, and timm's (`Time: 0.412s ... Data: 0.012 (0.015)`)
LABEL_SECONDS = frozenset(("data",))
PRONOUNS = frozenset(("it", "this", "that", "which", "and", "then", "we", "i"))
# a label word that names no part: the word before it does (`forward took 12ms`, `data time: 0.1s`)
FILLERS = frozenset(("in", "took", "takes", "taking", "after", "spent", "was", "is", "for", "of"))
GENERIC = frozenset(("time", "pass", "phase", "stage", "duration", "latency"))
LEVELS = frozenset(("INFO", "DEBUG", "WARN", "WARNING", "ERROR", "TRACE", "CRITICAL", "FATAL",
                    "NOTICE", "I", "W", "E", "D"))

# key classes
# value kinds
BARE, UNIT, FRAC, PCT, JUNK = range(5)
# field shapes: key=value, key: value (also `key = value`, JSON), Label value
EQ, COLON, LABEL = range(3)
# read_line flags
LINES_ONLY, HAS_BYTES = 1, 4
# plan steps (Plan): what a number decided
P_TIME, P_Q, P_QPOS, P_QINT, P_NOQINT, P_SIZE, P_STAMP, P_NOSTAMP, P_TIMEDOT = range(9)
# (P_TIMEDOT: a time read only because its number has a decimal point: `Data: 0.012`)
_UNCACHEABLE = ("uncacheable",)
_MISS = object()
# a size printed as a word after the number -> bytes
SIZE_WORDS = {"B": 1, "bytes": 1, "KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12, "KiB": 2**10, "MiB": 2**20,
              "GiB": 2**30, "TiB": 2**40}
# how a line's whole was found (aux code = index * 4 + how)
NAMED, SUMMED, HELD = 1, 2, 3

_SEP = str.maketrans({"|": " ", ",": " ", ";": " ", "(": " ", "[": " ", "{": " ", "<": " ",
                      ">": " ", "\t": " ", ")": None, "]": None, "}": None, '"': None})
# a quote not between two digits is punctuation (`{'step': 3}`); one between digits
# (`9876'5432`, a digit-group mark) stays and makes the number unreadable
_LONE_QUOTE = re.compile(r"(?<![0-9])'|'(?![0-9])").sub
_DIGITS = frozenset("0123456789")
_HAS_DIGIT = re.compile(r"[0-9]").search
# a line's shape: every digit as 0 (a plan per shape and length of its numbers)
_SKELETON = str.maketrans("123456789", "000000000")
_NUMSTART = frozenset("0123456789.-+")
_ROUND_SLACK = 0.01  # relative slack of the sum rule, beyond the printed rounding
USE_PLANS = True  # replay the reading of lines of one shape (off: every line read in full; tests)
_PLANS_PER_SHAPE = 4
_MEMO_MAX = 50_000
NAN = math.nan
MAX_BYTES = LIMITS["size"][1]
MAX_COUNT = LIMITS["count"][1]


def is_word(t: str) -> bool:
    c = t[0]
    return (c.isalpha() or c == "_") and t.replace("_", "").replace("-", "").replace(".", "").isalnum()


def _numeric_start(t: str) -> bool:
    c = t[0]
    if c in _DIGITS:
        return True
    return c in _NUMSTART and len(t) > 1 and (t[1] in _DIGITS or (t[1] == "." and t[2:3] in _DIGITS))


def parse_value(tok: str):
    """`12` -> (12.0, None, BARE, "12"); `12.5ms` -> (12.5, 1.0, UNIT, "12.5"); `12/40` ->
    (12.0, None, FRAC, ""); `97%` -> PCT; a number with an unknown tail -> JUNK. The last
    item is the number as printed (decimals() gives its rounding). Numbers are ASCII
    numerals (parsers.numbers.number): `٩٨`, `98_765`, `12..` are JUNK. One `:` and then one
    `.` after the number are punctuation (`epoch 3:`, `took 1.2s.`)."""
    if tok[-1:] == ":":
        tok = tok[:-1]
    if tok[-1:] == "." and tok[-2:-1] != ".":
        tok = tok[:-1]
    if not tok:
        return 0.0, None, JUNK, ""
    x = number(tok)
    if x is not None:
        return x, None, BARE, tok
    head, f = split_unit(tok, VALUE_UNITS)
    if f is not None:
        x = number(head)
        if x is not None:
            return x, f, UNIT, head
        return 0.0, None, JUNK, ""
    if tok.endswith("%"):
        return 0.0, None, PCT, ""
    a, sl, b = tok.partition("/")
    if sl and digits(a) and digits(b):
        return float(a), None, FRAC, tok
    return 0.0, None, JUNK, ""


def decimals(t: str) -> int:
    d = t.find(".")
    if d < 0 or "e" in t or "E" in t:
        return 0
    return len(t) - d - 1


def key_info(key: str):
    """(name without its unit, key unit factor or None, class, named like a whole)."""
    low = key.lower().replace("-", "_")
    name, factor = key, None
    for suf, f in KEY_UNITS:
        if low.endswith(suf) and len(low) > len(suf):
            name, factor = key[: -len(suf)], f
            low = low[: -len(suf)]
            break
    else:
        for suf, f in CAMEL_UNITS:
            if key.endswith(suf) and len(key) > len(suf) and key[-len(suf) - 1].islower():
                name, factor = key[: -len(suf)], f
                low = low[: -len(suf)]
                break
    cls = key_class(low)
    parts = low.split("_")
    whole = low in WHOLE_WORDS or (len(parts) == 2 and (
        (parts[1] in ("time", "total") and parts[0] in WHOLE_WORDS)
        or (parts[0] == "total" and parts[1] in ("time", "elapsed", "ms"))
        or parts[1] == "runtime"))  # Hugging Face's train_runtime / eval_runtime: the whole run
    return name, factor, cls, whole


class _Memo(dict):
    """fn(key), computed once per key (a bounded dict: cleared past _MEMO_MAX keys)."""

    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def __missing__(self, key):
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
        self.seconds_assumed: set[str] = set()


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


def read_line(line: str, st: State):
    """One line -> (names, values_ms, quantity names, quantity values, stamp, whole code,
    flags, rounding), None (not a timing line), or a reason string (a damaged timing line).
    rounding: the printed rounding of its times summed, ms (half a unit of the last digit each).

    flags, for format detection: LINES_ONLY = something `kv` cannot read or reads wrong (a
    field in a `key: value` / `Label value` shape, a unit word, a counter, a metric or a
    time stamp in a `key=` field); HAS_BYTES = a byte count.

    Lines of one shape (the same text but for the numbers) are read once: the reading is
    kept as a plan (Plan) that the next line of that shape replays; whenever one of its
    numbers could change the reading (a time stamp's range, a negative time, an integer
    count), the line is read again in full."""
    msg = line[message_start(line):] if line[:1] in _DIGITS else line
    if _HAS_DIGIT(msg) is None:
        return None
    if "'" in msg:
        msg = _LONE_QUOTE("", msg)
    toks = msg.translate(_SEP).split()
    plans = st.plans
    if plans is None:
        return _read_tokens(toks, st, None)
    skel = msg.translate(_SKELETON)
    kept = plans.get(skel)
    if kept is not None:
        for plan in kept:
            r = plan.replay(toks, st)
            if r is not _MISS:
                return r
    rec: list = []
    r = _read_tokens(toks, st, rec)
    if rec and _UNCACHEABLE not in rec:
        if kept is None:
            if len(plans) > _MEMO_MAX:
                plans.clear()
            plans[skel] = [Plan(toks, rec, r, st)]
        else:  # the same shape with other words (gpu0 / gpu1): keep a few
            kept.insert(0, Plan(toks, rec, r, st))
            del kept[_PLANS_PER_SHAPE:]
    return r


def _read_tokens(toks: list[str], st: State, rec: list | None):
    """read_line's reading of the tokens. Appends to `rec` what Plan needs to replay it:
    (action, token index, prefix, strip, a, b) per number that decides something, and
    ("value", index, prefix) per token holding a number or a label's text; _UNCACHEABLE when a number
    decided something a replay cannot check (damage, a number that does not read)."""
    n = len(toks)
    names: list[str] = []
    values: list[float] = []
    eps: list[float] = []
    qn: list[str] = []
    qv: list[float] = []
    stamp = None
    flags = 0
    damage = None
    last_bare = None  # spelled key of the line's last field when that was a bare number
    prev = None  # the plain word just before the current token
    sized = None  # the key of the field just read when a size followed its number (`copy 512 MiB`)
    info = st.info
    is_word = st.word
    note = rec.append if rec is not None else _noop
    i = 0
    while i < n:
        t = toks[i]
        i += 1
        before = prev
        prev = None
        size_of, sized = sized, None
        eq = t.find("=")
        if eq > 0:  # key=value
            key, v = t[:eq], t[eq + 1:]
            shape = EQ
            vt, pre = i - 1, t[:eq + 1]
            if not is_word(key):
                continue
            if not v:
                if i < n and _numeric_start(toks[i]):
                    v, vt, pre = toks[i], i, ""
                    i += 1
                else:
                    if _says_time(key, info):
                        damage = damage or f"{key[:30]}: no value (cut line?)"
                    continue
            elif not _numeric_start(v):
                if info(key)[1] is not None:  # a unit in the key: a time that is not a number
                    damage = damage or f"{key[:30]}: value {v[:20]!r} is not a number"
                elif info(key)[2] == BYTES:
                    damage = damage or f"{key[:30]}: value {v[:20]!r} is not a count"
                else:
                    note(("value", vt, pre))  # a label (`job=abc12`): its text does not matter
                continue
        elif t == "=" or t == ":":  # key = value, key : value
            if before is None or i >= n or not _numeric_start(toks[i]):
                continue
            key, v, shape, vt, pre = before, toks[i], COLON, i, ""
            before = None
            i += 1
        elif t[-1] == ":" and len(t) > 1:  # key: value
            key = t[:-1]
            if not is_word(key):
                continue
            if i >= n or not _numeric_start(toks[i]):
                if i >= n and names and _says_time(key, info):
                    damage = damage or f"{key[:30]}: no value (cut line?)"
                continue
            v, shape, vt, pre = toks[i], COLON, i, ""
            i += 1
        else:
            c = t.find(":")
            if 0 < c < len(t) - 1 and _numeric_start(t[c + 1:]) and is_word(t[:c]):  # key:value
                key, v, shape, vt, pre = t[:c], t[c + 1:], COLON, i - 1, t[:c + 1]
            elif i < n and _numeric_start(toks[i]) and is_word(t):  # Label value
                key, v, shape, vt, pre = t, toks[i], LABEL, i, ""
                i += 1
            else:
                if t not in LEVELS and is_word(t):
                    prev = t
                elif _unit_next(toks, i) and _has_any_digit(t):  # `data ٩٨ ms`, `data 98_765 ms`
                    note(_UNCACHEABLE)
                    damage = damage or f"{t[:30]!r} before {toks[i][:10]!r} is not a number"
                continue
        # -- a field: key and its value token v ---------------------------------------
        note(("value", vt, pre))
        kf_word = None
        if shape != EQ:
            low = key.lower()
            if before is not None and before.lower() in PRONOUNS:
                before = None
            if size_of is not None and (low in FILLERS or key in SIZE_WORDS):
                key = size_of  # `copy 512 MiB: 57.2 ms`, `upload 1.5 GiB in 170 ms`
            elif low in FILLERS:  # `forward took 12ms`; `epoch 3 took 1.2s`
                key = before if before is not None and before.lower() not in FILLERS else "took"
            elif low in GENERIC and before is not None and before.lower() not in FILLERS:
                key = f"{before}_{key}"  # `data time: 0.1s`
            elif low in UNIT_WORDS and low != "s" and before is not None:
                key, kf_word = before, UNIT_WORDS[low]  # `time (ms): 12`
        name, kf, cls, _whole = info(key)
        if kf is None:
            kf = kf_word
        x, vf, kind, num = parse_value(v)
        strip = len(v) - len(num)
        unit_word = False
        if kind == BARE and i < n:
            nxt = toks[i]
            w = UNIT_WORDS.get(nxt.rstrip(".:").lower())
            if w is not None:
                vf, kind, unit_word = w, UNIT, True
                i += 1
            elif nxt.rstrip(":") in SIZE_WORDS and cls != BYTES:
                if x >= 0 and x * SIZE_WORDS[nxt.rstrip(":")] > MAX_BYTES:
                    note(_UNCACHEABLE)
                    damage = damage or beyond(key, v, "size")
                    continue
                if x >= 0:
                    f = SIZE_WORDS[nxt.rstrip(":")]
                    note((P_SIZE, vt, pre, strip, f"{name}_bytes", f))
                    qn.append(f"{name}_bytes")  # a size, not a time: `copy 512 MiB`
                    qv.append(float(round(x * f)))  # (alone: no timing line)
                    if nxt[-1] != ":":
                        i += 1  # (`MiB:` is the next label: it belongs to this key)
                    sized = key
                    continue
                note(_UNCACHEABLE)
        if kind == JUNK:
            note(_UNCACHEABLE)
            if (shape != LABEL and (kf is not None or key in st.unit_keys)) or _unit_next(toks, i):
                damage = damage or f"{key[:30]}: value {v[:20]!r} is not a number"
            elif shape != LABEL and cls == BYTES:
                damage = damage or f"{key[:30]}: value {v[:20]!r} is not a count"
            last_bare = None
            continue
        last_bare = None
        if kind == PCT or cls == RATE:
            continue
        if kind == FRAC:
            if cls == COUNTER and x > MAX_COUNT:
                note(_UNCACHEABLE)
                damage = damage or beyond(key, v, "count")
            elif cls == COUNTER:
                note((P_Q, vt, pre, strip, key, None))
                qn.append(key)
                qv.append(x)
                flags |= LINES_ONLY
            continue
        if cls == BYTES:
            if kind != BARE or x < 0:
                damage = damage or f"{key[:30]}: value {v[:20]!r} is not a count"
            elif x > MAX_BYTES:
                note(_UNCACHEABLE)
                damage = damage or beyond(key, v, "size")
            else:
                note((P_QPOS, vt, pre, strip, key, None))
                qn.append(key)
                qv.append(x)
                flags |= HAS_BYTES
            continue
        factor = vf if vf is not None else kf
        if cls == STAMP or key.lower() in STAMP_KEYS:
            if _stamp_ms(x, factor) is not None:
                note((P_STAMP, vt, pre, strip, None, factor))
                stamp = _stamp_ms(x, factor) / 1e3
                flags |= LINES_ONLY
                continue
            note((P_NOSTAMP, vt, pre, strip, None, factor))
            if cls == STAMP:
                continue
        by_name = False
        if factor is None:
            # `Data  0.175` / `Data: 0.012 (0.015)` (ProgressMeter, timm): seconds when printed with a point
            by_name = shape != EQ and cls == PLAIN and key.lower() in LABEL_SECONDS and "." in num
            timed = cls == TIMEK or by_name
            # (`Time 3 files`: a count of something; `Time 0.25 Data 0.1`: the word is the next label)
            counted = shape == LABEL and i < n and is_word(toks[i]) and not (i + 1 < n and _numeric_start(toks[i + 1]))
            if timed and not counted:
                factor = 1e3  # a time-named key without a unit: seconds
                st.seconds_assumed.add(name)
            else:
                if cls == COUNTER and abs(x) > MAX_COUNT:
                    note(_UNCACHEABLE)
                    damage = damage or beyond(key, v, "count")
                elif cls == COUNTER:
                    note((P_Q, vt, pre, strip, key, None))
                    qn.append(key)
                    qv.append(x)
                elif shape != LABEL and cls == PLAIN:
                    if _count(x):
                        note((P_QINT, vt, pre, strip, key, None))
                        qn.append(key)
                        qv.append(x)
                    else:
                        note((P_NOQINT, vt, pre, strip, None, None))
                if cls == COUNTER or (shape == EQ and cls == METRIC):
                    flags |= LINES_ONLY  # kv cannot see it, or reads it as a time
                last_bare = key
                continue
        if x < 0:
            damage = damage or f"{key[:30]}: negative time {v[:20]!r}"
            continue
        if x * factor > MAX_MS:
            note(_UNCACHEABLE)
            damage = damage or beyond(key, v, "duration")
            continue
        if vf is not None:
            st.unit_keys.add(key)
        if shape != EQ or unit_word:
            flags |= LINES_ONLY
        e = 0.5 * 10.0 ** -decimals(num) * factor
        note((P_TIMEDOT if by_name else P_TIME, vt, pre, strip, name, factor, e))
        names.append(name)
        values.append(x * factor)
        eps.append(e)
    if last_bare is not None and last_bare in st.unit_keys and (names or qn):
        damage = damage or f"{last_bare[:30]}: value without its unit, unlike earlier lines (cut line?)"
    if damage is None:
        twice = first_repeat(names) or first_repeat(qn)
        if twice is not None:
            damage = repeated_key(twice)
    if damage is not None:
        note(_UNCACHEABLE)
        return damage
    note(("end", last_bare, flags))
    if not names and not (flags & HAS_BYTES):
        return None
    return names, values, qn, qv, stamp, whole_code(names, values, eps, st), flags, sum(eps)


def _noop(_x) -> None:
    pass


def _unit_next(toks: list[str], i: int) -> bool:
    """The token at i is a time unit printed as a word (what came before it meant a time)."""
    return i < len(toks) and toks[i].rstrip(".:").lower() in UNIT_WORDS


def _has_any_digit(t: str) -> bool:
    """A digit of any script (`٩`, `９`, `𝟏`) or an ASCII one."""
    return any(c.isdigit() for c in t)


def _count(x: float) -> bool:
    """A number that reads as a count (kept as a quantity under a plain key)."""
    return 0 <= x < 2**53 and x == int(x)


def _stamp_ms(x: float, factor: float | None) -> float | None:
    """Epoch milliseconds when a stamp-named field holds a point in time (2001..2286), else None."""
    if factor is None and 1e12 <= x < 1e13:
        return x  # epoch milliseconds, bare
    ms = x * (factor if factor is not None else 1e3)
    return ms if 1e12 <= ms < 1e13 else None


class Plan:
    """How a line of one shape was read, to read the next line of that shape without the
    token walk: the tokens without numbers must be equal, every number must read, and each
    number that decided something must decide it the same way; else replay says _MISS."""

    __slots__ = ("n", "fixed", "getter", "pres", "steps", "last_bare", "flags", "none", "code", "eps", "tol",
                 "fieldless")

    def __init__(self, toks: list[str], rec: list, result, st: State):
        import operator

        vals = {e[1] for e in rec if e[0] == "value"}
        self.pres = tuple((e[1], e[2]) for e in rec if e[0] == "value" and e[2])
        fixed = [j for j in range(len(toks)) if j not in vals]
        self.n = len(toks)
        # itemgetter of one index gives the item, of several a tuple: compare like with like
        self.getter = operator.itemgetter(*fixed) if fixed else None
        self.fixed = self.getter(toks) if fixed else None
        # (action, token, prefix length, end offset (-strip or None), a, b); the numbers of
        # one shape have the same digits after the point: their rounding is the plan's
        self.steps = tuple((e[0], e[1], len(e[2]), -e[3] if e[3] else None, e[4], e[5])
                           for e in rec if e[0] not in ("value", "end"))
        self.eps = [e[6] for e in rec if e[0] in (P_TIME, P_TIMEDOT)]
        self.tol = sum(self.eps)
        end = rec[-1]
        self.last_bare, self.flags = end[1], end[2]
        self.none = result is None
        # no token formed a field: whether one does depends on no digit, so the next line of
        # this shape has none either (a warning, a progress bar): None without a look
        self.fieldless = not vals and result is None
        # the whole's index when no number can move it (the held key, or one name for a whole)
        self.code = None
        if result is not None and type(result) is tuple:
            names = result[0]
            wholes = [j for j, nm in enumerate(names) if st.info(nm)[3]]
            if st.held is not None and st.held in names:
                self.code = names.index(st.held) * 4 + HELD
            elif len(wholes) == 1:
                self.code = wholes[0] * 4 + NAMED
            elif not wholes and len(names) < 3:
                self.code = -1

    def replay(self, toks: list[str], st: State):
        if self.fieldless:
            return None
        if len(toks) != self.n:
            return _MISS
        if self.getter is not None and self.getter(toks) != self.fixed:
            return _MISS
        for j, pre in self.pres:
            if not toks[j].startswith(pre):
                return _MISS
        if self.last_bare is not None and self.last_bare in st.unit_keys:
            return _MISS  # now a cut line: read it in full
        names: list[str] = []
        values: list[float] = []
        qn: list[str] = []
        qv: list[float] = []
        stamp = None
        for act, j, lp, stop, a, b in self.steps:
            num = toks[j][lp:stop]
            if act == P_Q and "/" in num:
                num = num.partition("/")[0]  # `step 12/40`
            x = number(num)
            if x is None:
                return _MISS
            if act == P_TIME or act == P_TIMEDOT:
                if x < 0 or x * b > MAX_MS or (act == P_TIMEDOT and "." not in num):
                    return _MISS
                names.append(a)
                values.append(x * b)
            elif act == P_Q:
                if abs(x) > MAX_COUNT:
                    return _MISS
                qn.append(a)
                qv.append(x)
            elif act == P_QPOS:
                if x < 0 or x > MAX_BYTES:
                    return _MISS
                qn.append(a)
                qv.append(x)
            elif act == P_QINT:
                if not _count(x):
                    return _MISS
                qn.append(a)
                qv.append(x)
            elif act == P_NOQINT:
                if _count(x):
                    return _MISS
            elif act == P_SIZE:
                if x < 0 or x * b > MAX_BYTES:
                    return _MISS
                qn.append(a)
                qv.append(float(round(x * b)))
            elif act == P_STAMP:
                ms = _stamp_ms(x, b)
                if ms is None:
                    return _MISS
                stamp = ms / 1e3
            elif _stamp_ms(x, b) is not None:  # P_NOSTAMP
                return _MISS
        if self.none or (not names and not (self.flags & HAS_BYTES)):
            return None
        code = self.code if self.code is not None else whole_code(names, values, self.eps, st)
        return names, values, qn, qv, stamp, code, self.flags, self.tol


def _says_time(key: str, info) -> bool:
    """The key says its value is a time: a unit suffix or a time name."""
    _, kf, cls, _ = info(key)
    return kf is not None or cls == TIMEK


def whole_code(names: list[str], values: list[float], eps: list[float], st: State) -> int:
    """index * 4 + how (HELD / NAMED / SUMMED) of the line's whole, or -1."""
    nt = len(names)
    if not nt:
        return -1
    held = st.held
    if held is not None:
        for j, nm in enumerate(names):
            if nm == held:
                return j * 4 + HELD
    best = -1
    for j, nm in enumerate(names):
        if st.info(nm)[3] and (best < 0 or values[j] > values[best]):
            best = j
    if best >= 0:
        return best * 4 + NAMED
    if nt >= 3:
        big = max(range(nt), key=values.__getitem__)
        rest = sum(values) - values[big]
        tol = sum(eps) + _ROUND_SLACK * values[big]
        if abs(values[big] - rest) <= tol and values[big] > 0:
            return big * 4 + SUMMED
    return -1


# -- the scan ------------------------------------------------------------------------------

def scan_lines(lines: list[str], held: str | None, first: int = 1, *, st: State | None = None,
               s: sc.Scan | None = None) -> sc.Scan:
    """Read every line; kinds are set afterwards by `finish` (records need the whole log).
    `st`: the State of the lines read before these (a log read in chunks), else a new one."""
    s = s if s is not None else sc.Scan()
    src = sc.SRC["lines"]
    times = s.times
    st = st if st is not None else State(held)
    meta, aux = s.meta, s.aux
    for i, line in enumerate(lines):
        ln = i + first
        if len(line) > sc.MAX_LINE:
            if read_line(line[:4096], st) is not None:
                s.too_long(ln, line)
            continue
        if "TIMELINE," in line or "_TIMING " in line:
            rows = len(meta)
            if s.common(ln, line) is not None:
                aux += [-1] * ((len(meta) - rows) // 8)
                s.tol += [0.0] * ((len(meta) - rows) // 8)
                continue
        r = read_line(line, st)
        if r is None:
            continue
        if type(r) is str:
            s.skip(ln, r, line)
            continue
        names, values, qn, qv, stamp, code, _flags, tol = r
        s.timing_lines += 1
        row = len(meta) // 8
        if qn:
            s.qrow += [row] * len(qn)
            s.qnames += qn
            s.qvalues += qv
        slot = times.slot(line)
        if stamp is not None:
            times.override(slot, stamp)
        meta += (ln, slot, sc.K_GPU, -1, -1, -1, len(names), src)
        aux.append(code)
        s.tol.append(tol)
        s.names += names
        s.values += values
    s.notes = sorted(st.seconds_assumed)
    return s


def sniff(lines: list[str], held: str | None = None) -> bool:
    """Format detection on a sample of a log that has no CuZK markers: True when these
    lines are read better as `lines` than as `kv` (see detect.py)."""
    from gpuscope.parsers.kv import read_kv

    st = State(held)
    votes_lines = votes_kv = 0
    for line in lines:
        if len(line) > 4096:
            line = line[:4096]
        r = read_line(line, st)
        k = read_kv(line, False, held or "") if "=" in line else None
        kv_names = set(k[0]) if k is not None and type(k) is not str else set()
        if held is not None and held in kv_names:
            return False  # the caller's held key is in the log: kv's records end at it
        if r is None or type(r) is str:
            if kv_names:
                votes_kv += 1  # kv reads times here (bare numbers under `key=`); lines does not
            continue
        names, _v, _qn, _qv, _stamp, code, flags, _tol = r
        if flags & LINES_ONLY:
            votes_lines += 1
        elif kv_names - set(names):
            votes_kv += 1
        elif code >= 0:
            votes_lines += 1  # kv would find no whole in it
    return votes_lines > 0 and votes_lines >= votes_kv


# -- records and the whole, over the whole log ---------------------------------------------

def finish(s: sc.Scan, held: str | None) -> None:
    """Choose the log's whole, group lines into records, set kinds and held values.
    Sets s.whole, s.whole_basis and s.notes (sentences). Vectorised: a million lines."""
    s.finalize()
    assumed = list(getattr(s, "notes", []) or [])
    notes: list[str] = []
    if assumed:
        notes.append(
            "printed without a unit, read as seconds: " + ", ".join(assumed)
            + " (a time-named key; Python's clocks and most training loggers print seconds)")
    s.whole, s.whole_basis = None, "no timing lines"
    meta = s.meta
    n = len(meta)
    if n == 0:
        s.notes = notes
        return

    kind = meta[:, 2]
    counts = meta[:, 6]
    mine = meta[:, 7] == sc.SRC["lines"]
    starts = np.concatenate(([0], np.cumsum(counts)[:-1])).astype(np.int64)
    aux = np.asarray(s.aux, dtype=np.int64)
    if len(aux) != n:  # cannot happen; never mis-assign records over it
        aux = np.full(n, -1, dtype=np.int64)
    names = s.value_names()
    values = s.values
    row_of = np.repeat(np.arange(n), counts)

    whole, basis = _choose_whole(names, aux, starts, row_of, n, held)
    s.whole, s.whole_basis = whole, basis
    is_whole = (names == whole) if whole is not None else np.zeros(len(names), dtype=bool)
    line_whole = np.full(n, np.nan)
    if is_whole.any():
        np.fmax.at(line_whole, row_of[is_whole], values[is_whole])
    parts = np.bincount(row_of, weights=np.where(is_whole, 0.0, values), minlength=n)
    has_whole = ~np.isnan(line_whole)

    gid = _split_at_wholes(_groups(s, n, mine), has_whole, mine)  # -1 for rows of other sources
    rec_group = _record_groups(gid, names, row_of, counts, s, whole)  # per group: is a record
    row_rec = np.zeros(n, dtype=bool)
    row_rec[mine] = rec_group[gid[mine]]
    # the whole printed on a line of its own (`total_ms=430` after the parts' lines): a record
    # ends at the line printing the whole, as in kv, and takes the timing lines before it
    alone = False
    if has_whole.any() and not has_whole[mine].all():
        n_whole = np.bincount(row_of[is_whole], minlength=n)
        alone = float(np.median((counts - n_whole)[has_whole])) == 0.0
    rows = np.flatnonzero(row_rec)  # the record rows, in log order
    g = gid[rows]
    if alone:  # a new record starts after each row printing the whole
        ends_before = np.concatenate(([False], has_whole[rows][:-1]))
        g = np.cumsum(ends_before)
    else:
        g = np.cumsum(np.concatenate(([True], g[1:] != g[:-1]))) - 1
    last = np.concatenate((g[1:] != g[:-1], [True])) if len(g) else g.astype(bool)
    complete_g = np.ones(int(g[-1]) + 1 if len(g) else 0, dtype=bool)
    if alone and len(g):
        w_g = np.zeros(len(complete_g), dtype=bool)
        np.logical_or.at(w_g, g, has_whole[rows])
        complete_g = w_g  # after the last whole line: cut off, incomplete
    kind[mine] = sc.K_FREE
    kind[rows] = sc.K_GPU
    held_rows = rows[last & complete_g[g]]
    kind[held_rows] = sc.K_HELD
    gw = np.full(len(complete_g), np.nan)
    np.fmax.at(gw, g, line_whole[rows])
    gp = np.bincount(g, weights=parts[rows], minlength=len(complete_g))
    # a whole below its parts by no more than the printed rounding is rounding, not an
    # inconsistent record (86.0 + 829.0 printed as a step of 914.9): it is taken as the parts
    tol = np.asarray(s.tol, dtype=np.float64) if len(s.tol) == n else np.zeros(n)
    gt = np.bincount(g, weights=tol[rows], minlength=len(complete_g))
    rounded = (gp > gw) & (gp - gw <= gt * (1 + 1e-9)) & complete_g
    gw = np.where(rounded, gp, gw)
    held_g = np.where(np.isnan(gw), gp, gw)[complete_g]
    s.held = (held_rows.astype(np.int64), np.asarray(held_g, dtype=np.float64))
    if whole is None:
        notes.append("no field is the whole of its line: a record's held time is the sum of its parts")
    elif alone:
        notes.append(f"the whole of a record: {basis}; it is printed on a line of its own, so a record "
                     "ends at that line and takes the timing lines before it")
    else:
        notes.append(f"the whole of a record: {basis}; a record without it: the sum of its parts")
    k = int(rounded.sum())
    if k:
        notes.append(f"{k} record{'s' if k != 1 else ''} printed a whole below the sum of its parts by no more "
                     "than the printed rounding: held time = the parts' sum")
    s.notes = notes


def _choose_whole(names, aux, starts, row_of, n, held):
    has = np.flatnonzero(aux >= 0) if n else aux
    if not len(has):
        return None, "no field is the whole"
    idx = starts[has] + aux[has] // 4
    how = aux[has] % 4
    cand = names[idx]
    for rule, what in ((HELD, "is the held key asked for"), (NAMED, "is named like a whole (total, step, elapsed, ...)")):
        sel = cand[how == rule]
        if len(sel):
            name, k = Counter(sel.tolist()).most_common(1)[0]
            return str(name), f"{str(name)!r} {what}, on {k} line{'s' if k != 1 else ''}"
    sel = cand[how == SUMMED]
    name, k = Counter(sel.tolist()).most_common(1)[0]
    lines_with = len(np.unique(row_of[names == name]))
    if k * 2 >= lines_with:
        return str(name), f"{str(name)!r} is the sum of the other times on {k} of {lines_with} lines that print it"
    return None, f"no field is the whole ({str(name)!r} is the sum of the others on only {k} of {lines_with} lines)"


def _counters(s):
    """The counter quantities (step, epoch, ...): row, name code, value, in log order."""
    import pandas as pd

    qn = s.quantity_names()
    if not len(qn):
        e = np.zeros(0, dtype=np.int64)
        return e, e, np.zeros(0)
    codes, uniq = pd.factorize(qn)
    is_counter = np.asarray([str(u).lower() in COUNTERS for u in uniq], dtype=bool)
    sel = is_counter[codes] if len(uniq) else np.zeros(0, dtype=bool)
    return s.qrow[sel], codes[sel].astype(np.int64), s.qvalues[sel]


def _split_at_wholes(gid, has_whole, mine):
    """A group that prints the whole on more than one of its rows is that many records, each
    ending at its whole: `Epoch: [0][  7/100]  Time  0.257 ...` repeats the epoch on every
    step's line, so the counters alone would make the epoch one record."""
    if not len(gid) or gid.max() < 0:
        return gid
    per = np.bincount(gid[mine & has_whole], minlength=int(gid.max()) + 1)
    multi = mine & (per[np.maximum(gid, 0)] >= 2)
    if not multi.any():
        return gid
    after_whole = np.concatenate(([False], has_whole[:-1]))
    same_as_prev = np.concatenate(([False], gid[1:] == gid[:-1]))
    start = mine & (~same_as_prev | (multi & after_whole))
    out = np.cumsum(start) - 1
    out[~mine] = -1
    return out


def _groups(s, n, mine):
    """Group id per row: consecutive rows of this format printing the same counters, in the
    same order, form one group; every other row is a group of its own (-1: other sources)."""
    crow, ccode, cval = _counters(s)
    cnt = np.bincount(crow, minlength=n) if len(crow) else np.zeros(n, dtype=np.int64)
    # same[r]: row r+1 prints the same counters as row r (compared element by element: the
    # counters of r+1 follow those of r in the arrays)
    same = np.zeros(n, dtype=bool)
    if len(crow):
        k = np.arange(len(crow))
        c_r = cnt[crow]
        nxt = k + c_r
        ok = (crow + 1 < n) & (nxt < len(crow))
        ok[ok] &= (crow[nxt[ok]] == crow[ok] + 1) & (cnt[np.minimum(crow[ok] + 1, n - 1)] == c_r[ok])
        eq = np.zeros(len(crow), dtype=bool)
        eq[ok] = (ccode[nxt[ok]] == ccode[ok]) & (cval[nxt[ok]] == cval[ok])
        bad = np.bincount(crow[~eq], minlength=n)
        same = (cnt > 0) & (bad == 0)
    prev_same = np.concatenate(([False], same[:-1] & mine[:-1] & mine[1:]))
    start = mine & ~prev_same
    gid = np.cumsum(start) - 1
    gid[~mine] = -1
    return gid


_HASH_SEED = 0x5EED_11E5


def _record_groups(gid, names, row_of, counts, s, whole):
    """Per group, whether it is a record: its shape (counter keys, component names) repeats;
    or it shares its counter keys and a component (not the whole) with a shape that
    repeats; or, when no shape repeats, it has a time. Shapes are compared by two 64-bit
    sums of random words over their names (sets)."""
    import pandas as pd

    ng = int(gid.max()) + 1 if len(gid) and gid.max() >= 0 else 0
    if ng == 0:
        return np.zeros(0, dtype=bool)
    rng = np.random.default_rng(_HASH_SEED)
    ncode, nuniq = pd.factorize(names) if len(names) else (np.zeros(0, dtype=np.int64), [])
    vg = gid[row_of] if len(names) else np.zeros(0, dtype=np.int64)
    keep = vg >= 0
    pairs = pd.unique(vg[keep] * max(len(nuniq), 1) + ncode[keep])  # (np.unique: 20x slower)
    pg, pc = pairs // max(len(nuniq), 1), pairs % max(len(nuniq), 1)
    rnd = rng.integers(1, 2**62, size=(max(len(nuniq), 1), 2), dtype=np.int64).view(np.uint64)
    h = np.zeros((ng, 2), dtype=np.uint64)
    np.add.at(h[:, 0], pg, rnd[pc, 0])
    np.add.at(h[:, 1], pg, rnd[pc, 1])
    has_names = np.bincount(pg, minlength=ng) > 0
    crow, ccode, _ = _counters(s)
    kh = np.zeros(ng, dtype=np.uint64)
    if len(crow):
        cg = gid[crow]
        ok = cg >= 0
        kp = pd.unique(cg[ok] * (int(ccode.max()) + 1) + ccode[ok])
        kg, kc = kp // (int(ccode.max()) + 1), kp % (int(ccode.max()) + 1)
        krnd = rng.integers(1, 2**62, size=int(ccode.max()) + 1, dtype=np.int64).view(np.uint64)
        np.add.at(kh, kg, krnd[kc])
    shape = pd.DataFrame({"k": kh, "a": h[:, 0], "b": h[:, 1]}).groupby(["k", "a", "b"], sort=False).ngroup()
    shape = shape.to_numpy()
    freq = np.bincount(shape)
    repeated = (freq[shape] >= 2) & has_names
    if not repeated.any():
        return has_names
    out = repeated.copy()
    lonely = np.flatnonzero(has_names & ~repeated)
    if len(lonely):
        # a one-off shape is a record when it shares its counter keys and a part with a repeated one
        rep_shapes = np.unique(shape[repeated])
        first_of = {int(sh): int(np.flatnonzero(shape == sh)[0]) for sh in rep_shapes}
        sets = _group_sets(set(lonely.tolist()) | set(first_of.values()), gid, row_of, names, whole)
        reps = [(kh[g], sets[g]) for g in first_of.values()]
        for g in lonely.tolist():
            out[g] = any(k == kh[g] and parts & sets[g] for k, parts in reps)
    return out


def _group_sets(wanted: set[int], gid, row_of, names, whole) -> dict[int, set]:
    """The component names (without the whole) of the wanted groups."""
    out: dict[int, set] = {g: set() for g in wanted}
    vg = gid[row_of]
    sel = np.flatnonzero(np.isin(vg, np.fromiter(wanted, dtype=np.int64)))
    for g, nm in zip(vg[sel].tolist(), names[sel].tolist(), strict=True):
        if nm != whole:
            out[g].add(nm)
    return out

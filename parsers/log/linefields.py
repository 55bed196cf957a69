"""The fields of one line's tokens, read in full (parsers/log/lineread.py tokenizes the line and
replays known shapes; this reads a new shape): where the fields are (`key=value`, `key:
value`, `key = value`, `Label value`), what each names (the whole label; a statistic as
`<quantity>.<stat>`), and which numbers are times, quantities or stamps.

Evidence of a duration, as read here: a unit beside the number (`12ms`, `12 ms`, `2.1s/it`),
a unit in its label (`time (ms): 12`, `latency_us: 3`) or in the line's header (`timers
(ms) | fwd: 41.0`), or a time word where its format documents the unit (seconds_by_format's;
zerolog's `took=`: ms). Nothing else makes a duration (`Duration: 500`). A unit followed by
`per <thing>` is a rate (`25.38 ms per token`), not a part; a time per step (`35ms/step`,
`0.31 sec/step`, `time per iteration (ms): 412`) is the step's whole."""

from __future__ import annotations

from gpuscope.parsers.log.fields import first_repeat
from gpuscope.parsers.log.fields import repeated as repeated_key
from gpuscope.parsers.log.linekeyless import KeylessTimes
from gpuscope.parsers.log.lineplan import UNCACHEABLE, whole_code
from gpuscope.parsers.log.linequant import Quantities
from gpuscope.parsers.log.linesteps import COVERS, runtime_steps
from gpuscope.parsers.log.linewords import (
    BARE,
    COLON,
    EQ,
    EVAL,
    EVAL_PREFIXES,
    EVAL_WORDS,
    FILLERS,
    FRAC,
    GENERIC,
    HAS_BYTES,
    JUNK,
    LABEL,
    LABEL_SECONDS,
    LEVELS,
    LINES_ONLY,
    MAX_COUNT,
    NAMED,
    P_NOQINT,
    P_Q,
    P_QINT,
    P_TIME,
    P_TIMEDOT,
    PCT,
    PRONOUNS,
    SIZE_WORDS,
    STAT_WORDS,
    UNIT,
    UNIT_WORDS,
    ZEROLOG_LEVELS,
    decimals,
    has_any_digit,
    is_count,
    is_help,
    is_setting,
    label_of,
    next_label,
    noop,
    numeric_start,
    parse_value,
    per_step,
    says_time,
    seconds_by_format,
    stat_of,
    undotted,
    unit_next,
    zerolog_event,
)
from gpuscope.parsers.log.parsed import EVAL_WHY
from gpuscope.parsers.log.words import BYTES, COUNTER, METRIC, PLAIN, RATE, STAMP, STAMP_KEYS, TIMEK
from gpuscope.parsers.numbers import MAX_MS, beyond

FORECASTS = frozenset(("eta", "remaining"))  # Keras' and many bars' time left: no time spent
# a configured duration's last word (`Measurement window: 5000 msec`, `timeout=30s`): a setting, no time spent
SETTINGS = frozenset(("window", "timeout", "deadline"))


class _NoWhole:
    """A reader State whose key_info names no whole among `timers` (for whole_code)."""

    def __init__(self, st, timers: set[str]):
        self.held, self._info, self._timers = st.held, st.info, timers

    def info(self, key: str):
        name, f, cls, whole = self._info(key)
        return name, f, cls, whole and key not in self._timers


class Line(Quantities, KeylessTimes):
    """The full reading of one line's tokens. Appends to `rec` what Plan needs to replay it:
    (action, token index, prefix, strip, a, b) per number that decides something, and
    ("value", index, prefix) per token holding a number or a label's text; UNCACHEABLE when
    a number decided something a replay cannot check (damage, a number that does not read)."""

    def __init__(self, toks: list[str], st, rec: list | None):  # (st: lineread.State)
        self.toks, self.n, self.st = toks, len(toks), st
        self.names: list[str] = []
        self.values: list[float] = []
        self.eps: list[float] = []
        self.qn: list[str] = []
        self.qv: list[float] = []
        self.stamp: float | None = None
        self.flags = 0
        self.damage: str | None = None
        self.last_bare: str | None = None  # key of the line's last field when that was a bare number
        self.prev: str | None = None  # the plain word just before the current token
        self.run: list[str] = []  # the plain words just before the current token
        self.sized: str | None = None  # the key just read when a size followed its number
        self.unit: float | None = None  # a unit in the line's header: `timers (ms) | fwd: 41.0`
        self.i = 0
        self.note = rec.append if rec is not None else noop
        # zerolog's console lines (gnark: `11:02:05 DBG prover done ... took=2345.678`): a bare
        # duration is in milliseconds, zerolog's default unit
        self.zerolog = self.n > 2 and toks[1] in ZEROLOG_LEVELS and toks[0][:1].isdigit()
        self.eval = bool(toks) and toks[0].rstrip(":").lower() in EVAL_WORDS and not (
            self.n > 1 and toks[1].rstrip(":") in LEVELS)  # (`Test | INFO | ...`: a logger's name, issue 33)
        self.event = zerolog_event(toks) if self.zerolog else ""
        # a timer tree's outermost End line (arkworks: `End: Groth16::Prover ......45.1ms`,
        # its children indented `··End:`): its time is the whole of the lines above it
        self.tree_root = bool(toks) and toks[0] == "End:"
        # Hugging Face's `train_steps_per_second` beside `train_runtime`: (prefix, rate)
        self.steps_rate: tuple[str, float] | None = None
        self.labels: set[str] = set()  # names made of a label's words, not printed as one key
        self.timers: set[str] = set()  # counter words read as a header's timers (DeepSpeed's `step:`)
        self.lead: str | None = None  # the record's counter (`step 1:`), before any time
        self.lead_named = False  # the lead is a label with its number (`phase 1:`), the time's name
        self.keyless_done = False

    def hurt(self, reason: str) -> None:
        if self.damage is None:
            self.damage = reason

    def read(self):
        if is_help(self.toks):
            return None  # `  --interval N   sample every N seconds, between 1 second and 60`: help text
        while self.i < self.n:
            f = self.field()
            if f is not None:
                self.take(*f)
        return self.result()

    # -- where the fields are -----------------------------------------------------------

    def field(self):
        """The field starting at token i: (key, value token, shape, value index, prefix,
        word before, words before, size key) or None; moves i past it."""
        toks, n = self.toks, self.n
        t = toks[self.i]
        self.i += 1
        i = self.i
        before, self.prev = self.prev, None
        run, self.run = self.run, []
        size_of, self.sized = self.sized, None
        eq = t.find("=")
        if eq > 0:  # key=value
            return self.eq_field(t, eq, size_of, run)
        if t == "=" or t == ":":  # key = value, key : value
            if before is None or i >= n or not numeric_start(toks[i]):
                return None
            self.i += 1  # (`prefill time = 812 ms`: the key is the word before, named with those before it)
            return before, toks[i], COLON, i, "", run[-2] if len(run) > 1 else None, run[:-1], size_of
        if t[-1] == ":" and len(t) > 1:  # key: value
            key = t[:-1]
            if not self.st.word(key):
                return None
            if i >= n or not numeric_start(toks[i]):
                if i >= n and self.names and says_time(key, self.st.info):
                    self.hurt(f"{key[:30]}: no value (cut line?)")
                return None
            self.i += 1
            return key, toks[i], COLON, i, "", before, run, size_of
        c = t.find(":")
        if 0 < c < len(t) - 1 and numeric_start(t[c + 1:]) and self.st.word(t[:c]):  # key:value
            return t[:c], t[c + 1:], COLON, i - 1, t[:c + 1], before, run, size_of
        if i < n and numeric_start(undotted(toks[i])) and (
                self.st.word(t) or (toks[i][:2] == ".." and not numeric_start(t))):  # Label value
            # (a timer tree's label may be any token: `End: Groth16::Prover ......45.1ms`)
            self.i += 1
            v = toks[i]
            lead = len(v) - len(undotted(v))  # `setup ......12.004s` (a timer tree's leader)
            return t, v[lead:], LABEL, i, v[:lead], before, run, size_of
        self.other(t, before, run)
        return None

    def eq_field(self, t: str, eq: int, size_of, run: list[str]):
        key, v = t[:eq], t[eq + 1:]
        vt, pre = self.i - 1, t[:eq + 1]
        if not self.st.word(key):
            return None
        if not v:
            if self.i < self.n and numeric_start(self.toks[self.i]):
                v, vt, pre = self.toks[self.i], self.i, ""
                self.i += 1
            else:
                if says_time(key, self.st.info):
                    self.hurt(f"{key[:30]}: no value (cut line?)")
                return None
        elif not numeric_start(v):
            info = self.st.info(key)
            if info[1] is not None:  # a unit in the key: a time that is not a number
                self.hurt(f"{key[:30]}: value {v[:20]!r} is not a number")
            elif info[2] == BYTES:
                self.hurt(f"{key[:30]}: value {v[:20]!r} is not a count")
            else:
                self.note(("value", vt, pre))  # a label (`job=abc12`): its text does not matter
            return None
        return key, v, EQ, vt, pre, None, run, size_of

    def other(self, t: str, before, run: list[str]) -> None:
        """A token that starts no field: a word of a label, a header unit, a per-step time
        without a key (`2.10s/it`, `0.31 sec/step`), or a number-like token before a unit."""
        toks, i = self.toks, self.i
        if t not in LEVELS and self.st.word(t):
            low = t.lower()
            if (low in UNIT_WORDS and low != "s" and before is not None and not self.names and self.unit is None
                    and (i >= self.n or toks[i] not in (":", "="))):  # (`latency (ns) : 7563436`: the label's unit)
                self.unit = UNIT_WORDS[low]  # `timers (ms) | fwd: 41.0 | bwd: 88.3` (a fixed token of the plan)
                return
            self.prev = t
            run.append(t)  # (the words before a field: at most the last four matter)
            if len(run) > 4:
                del run[0]
            self.run = run
            return
        if numeric_start(t):
            self.per_step(t, i)
            return
        if unit_next(toks, i) and has_any_digit(t):  # `data ٩٨ ms`, `data 98_765 ms`
            self.note(UNCACHEABLE)
            self.hurt(f"{t[:30]!r} before {toks[i][:10]!r} is not a number")

    # -- what a field is ----------------------------------------------------------------

    def take(self, key, v, shape, vt, pre, before, run, size_of) -> None:
        self.note(("value", vt, pre))
        kf_word = None
        printed_low = key.lower()
        if shape != EQ:
            printed = key
            key, kf_word = self.name_of(key, shape, before, run, size_of, pre)
            if key is None:
                return
            if key != printed:
                self.labels.add(key)  # (a name made of a label's words: `eval time =` -> eval_time)
        elif self.zerolog and self.event:
            key = f"{self.event}_{key}"  # gnark: `prover done ... took=2345.6` -> prover_took
            self.flags |= LINES_ONLY  # (kv would give every event's took one name)
        st = self.st
        name, kf, cls, _whole = st.info(key)
        if name.lower() in FORECASTS:
            return  # `ETA: 3s`, `remaining: 12s`: a forecast, no time spent
        if name.lower().replace(".", "_").rsplit("_", 1)[-1] in SETTINGS or is_setting(name):
            return  # `Measurement window: 5000 msec`, `timeout=30s`: a setting, no time spent
        if kf is None:
            kf = kf_word
        x, vf, kind, num = parse_value(v)
        strip = len(v) - len(num)
        unit_word = False
        if kind == BARE and self.i < self.n:
            nxt = self.toks[self.i]
            w = None if next_label(self.toks, self.i) else UNIT_WORDS.get(nxt.rstrip(".:").lower())
            if w is not None:
                vf, kind, unit_word = w, UNIT, True
                self.i += 1
                if self.interval(name, nxt, vt):
                    return
            elif nxt.rstrip(":") in SIZE_WORDS and cls != BYTES:
                self.size(key, name, v, x, nxt, vt, pre, strip)
                return
        if kind == JUNK:
            self.junk(key, v, shape, kf, cls)
            return
        if not self.placed(key, v, shape, kind, cls, num, printed_low):
            return
        self.last_bare = None
        if kind == PCT or (cls == RATE and not (per_step(name) and (kf or vf))):
            if cls == RATE and kind == BARE and name.lower().endswith("_steps_per_second"):
                self.note(UNCACHEABLE)  # (the steps it gives are no number of the line)
                self.steps_rate = (name[: -len("_steps_per_second")], x)
            return
        if vf is not None and self.i < self.n and self.toks[self.i].lower() == "per":
            return  # `25.38 ms per token`: a rate, not a part
        if kind == FRAC:
            self.counter_frac(key, v, x, cls, vt, pre, strip)
            return
        if cls == BYTES:
            self.byte_count(key, v, x, kind, vt, pre, strip)
            return
        factor = vf if vf is not None else kf
        if cls == STAMP or key.lower() in STAMP_KEYS or name.lower() in STAMP_KEYS:  # (`time_ms`: epoch ms)
            if self.stamped(x, factor, vt, pre, strip) or cls == STAMP:
                return
        by_name = False
        if factor is None and self.unit is not None and shape != EQ and cls == PLAIN:
            factor = self.unit  # the header's unit (`timers (ms) |`)
        elif factor is None and self.unit is not None and shape != EQ and cls == COUNTER and "." in num:
            # DeepSpeed's `time (ms) | fwd: 41.03 | bwd: 88.31 | step: 12.10`: `step` is its optimizer
            # step's timer, a part (no counter prints a decimal point), never the line's whole
            factor = self.unit
            self.timers.add(name)
            self.note(UNCACHEABLE)
        if factor is None:
            # `Data  0.175` / `Data: 0.012 (0.015)` (ProgressMeter, timm): seconds when printed with a point
            by_name = shape != EQ and cls == PLAIN and key.lower() in LABEL_SECONDS and "." in num
            factor = self.seconds(key, name, x, shape, cls, by_name, vt, pre, strip)
            if not factor:
                return
        self.time(name, x, factor, num, vt, pre, strip, by_name, v, key=key, vf=vf,
                  lines_only=shape != EQ or unit_word)

    def name_of(self, key: str, shape: int, before, run: list[str], size_of, pre: str = ""):
        """The name of a `key: value` or `Label value` field, and a unit its label gives
        (None: no field after all)."""
        low = key.lower()
        if pre[:2] == "..":  # a timer tree's `End: Compute C ......12.0ms`: the whole label
            return "_".join([*run, key]) if run else key, None
        if before is not None and before.lower() in PRONOUNS:
            before = None
        if size_of is not None and (low in FILLERS or key in SIZE_WORDS):
            return size_of, None  # `copy 512 MiB: 57.2 ms`, `upload 1.5 GiB in 170 ms`
        if low in FILLERS:  # `forward took 12ms`; `epoch 3 took 1.2s`
            return (before if before is not None and before.lower() not in FILLERS else "took"), None
        if low in UNIT_WORDS and before is not None and (low != "s" or before.lower() in GENERIC):
            # `time (ms): 12`, `Mean TTFT (ms): 52.3`, `duration (s): 12.3`
            return label_of(run[:-1], before, True) if run and run[-1] == before else before, UNIT_WORDS[low]
        if low in UNIT_WORDS:  # a unit is no name (`2.51 ns 2.51 ns`), but after a counter (`step: 0,
            # seconds: 18.665`) the label says the unit of the record's time
            lead = self.lead if shape == COLON and self.lead and not self.lead_named and not self.names else None
            return (f"{lead.lower()}_time" if lead else None), UNIT_WORDS[low]
        if low in ("deviation", "stddev", "std") and self.names and stat_of(self.names[-1]) is not None:
            # perf_analyzer's `Avg latency: 4992 usec (standard deviation 314 usec)`: the std of that quantity
            return f"{self.names[-1].rpartition('.')[0]}.std", None
        if (low in GENERIC or low in STAT_WORDS) and before is not None and before.lower() not in FILLERS:
            return label_of(run, key), None  # `data time: 0.1s`, `prompt eval time = 812 ms`
        if run and (shape == COLON or run[-1].lower() in STAT_WORDS):
            return label_of(run, key, shape == COLON), None  # `consumed samples: 640`, `p99 latency 30 ms`
        return key, None

    def interval(self, name: str, unit: str, vt: int) -> bool:
        """`time: [26.029 us 26.251 us 26.505 us]` (criterion: low, estimate, high): the
        estimate, a statistic of the time, not a part; True when read so."""
        toks, i = self.toks, self.i
        if not (i + 3 < self.n and toks[i + 1] == unit and toks[i + 3] == unit and numeric_start(toks[i])
                and numeric_start(toks[i + 2])):
            return False
        x, _, kind, num = parse_value(toks[i])
        if kind != BARE or parse_value(toks[i + 2])[2] != BARE:
            return False
        self.note(("value", i, ""))
        self.note(("value", i + 2, ""))
        self.i += 4
        self.time(f"{name}.estimate", x, UNIT_WORDS[unit.rstrip('.:').lower()], num, i, "", 0, False, toks[i])
        return True

    def junk(self, key: str, v: str, shape: int, kf, cls: int) -> None:
        self.note(UNCACHEABLE)
        if (shape != LABEL and (kf is not None or key in self.st.unit_keys)) or unit_next(self.toks, self.i):
            self.hurt(f"{key[:30]}: value {v[:20]!r} is not a number")
        elif shape != LABEL and cls == BYTES:
            self.hurt(f"{key[:30]}: value {v[:20]!r} is not a count")
        self.last_bare = None

    def seconds(self, key: str, name: str, x: float, shape: int, cls: int, by_name: bool, vt, pre, strip):
        """A field without a unit: its factor to ms where its name says time and its format gives the unit
        (zerolog's ms, seconds_by_format's s), else 0.0 (issue 33); else a counter or quantity, or ignored."""
        toks, i, n = self.toks, self.i, self.n
        # (`Time 3 files`: a count of something; `Time 0.25 Data 0.1`: the word is the next label)
        counted = shape == LABEL and i < n and self.st.word(toks[i]) and not (i + 1 < n and numeric_start(toks[i + 1]))
        if (cls == TIMEK or by_name) and not counted:
            if self.zerolog and shape == EQ:
                self.st.ms_assumed.add(name)
                return 1.0
            if why := seconds_by_format(name, shape, toks, i) or self.st.by_stamps(name, x):
                self.st.seconds_assumed[name] = why
                return 1e3
            self.last_bare = key  # (`Duration: 500`: no unit anywhere, no duration nor quantity)
            return 0.0
        if cls == COUNTER and abs(x) > MAX_COUNT:
            self.note(UNCACHEABLE)
            self.hurt(beyond(key, str(x), "count"))
        elif cls == COUNTER:
            self.note((P_Q, vt, pre, strip, key, None))
            self.qn.append(key)
            self.qv.append(x)
        elif shape != LABEL and cls == PLAIN:
            if is_count(x):
                self.note((P_QINT, vt, pre, strip, key, None))
                self.qn.append(key)
                self.qv.append(x)
            else:
                self.note((P_NOQINT, vt, pre, strip, None, None))
        if cls == COUNTER or (shape == EQ and cls == METRIC):
            self.flags |= LINES_ONLY  # kv cannot see it, or reads it as a time
        self.last_bare = key
        return 0.0

    def time(self, name: str, x: float, factor: float, num: str, vt, pre, strip, by_name: bool, v: str,
             key: str | None = None, vf=None, lines_only: bool = True) -> None:
        key = key if key is not None else name
        if x < 0:
            self.hurt(f"{key[:30]}: negative time {v[:20]!r}")
            return
        if x * factor > MAX_MS:
            self.note(UNCACHEABLE)
            self.hurt(beyond(key, v, "duration"))
            return
        if vf is not None:
            self.st.unit_keys.add(key)
        if lines_only:
            self.flags |= LINES_ONLY
        e = 0.5 * 10.0 ** -decimals(num) * factor
        self.note((P_TIMEDOT if by_name else P_TIME, vt, pre, strip, name, factor, e))
        self.names.append(name)
        self.values.append(x * factor)
        self.eps.append(e)

    def covered_steps(self) -> None:
        """Hugging Face's `train_runtime` beside `train_steps_per_second`: the steps it covers."""
        k = runtime_steps(self.names, self.values, *(self.steps_rate or ("", 0.0)))
        if k is not None:
            self.qn.append(COVERS)
            self.qv.append(k)

    def result(self):
        names, qn = self.names, self.qn
        if self.last_bare is not None and self.last_bare in self.st.unit_keys and (names or qn):
            self.hurt(f"{self.last_bare[:30]}: value without its unit, unlike earlier lines (cut line?)")
        if self.damage is None:
            twice = first_repeat(names) or first_repeat(qn)
            if twice is not None:
                self.damage = repeated_key(twice)
        if self.damage is not None:
            self.note(UNCACHEABLE)
            return self.damage
        # (an `eval_*` key as Hugging Face prints it, or `epoch 0: eval time 4213.5 ms`; not llama.cpp's `eval time =`)
        counted = self.lead is not None and not self.lead_named
        if self.eval or (names and all(nm.lower().startswith(EVAL_PREFIXES) and (counted or nm not in self.labels)
                                       for nm in names)):
            self.flags |= EVAL  # `Test: [10/100] Time ...`, `eval_runtime`: kept apart from the steps
            for nm in names if not self.eval else ():  # (an evaluation's own name: kept out of the statistics too)
                self.st.known.setdefault(nm, f"{EVAL_WHY} ({('an eval_* key', 'after the epoch counter')[counted]}): "
                                             "no step, never a part")
        self.note(("end", self.last_bare, self.flags))
        if self.steps_rate is not None:
            self.covered_steps()
        if not names and not (self.flags & HAS_BYTES):
            return None
        st = _NoWhole(self.st, self.timers) if self.timers else self.st
        code = NAMED if self.tree_root and len(names) == 1 else whole_code(names, self.values, self.eps, st)
        return names, self.values, qn, self.qv, self.stamp, code, self.flags, sum(self.eps)

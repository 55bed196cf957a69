"""The fields of one line's tokens, read in full (parsers/log/lines/line.py tokenizes the line and
replays known shapes; this reads a new shape): where the fields are (`key=value`, `key:
value`, `key = value`, `Label value`), what each names (the whole label; a statistic as
`<quantity>.<stat>`), and which numbers are times, quantities or stamps.

Evidence of a duration, as read here: a unit beside the number (`12ms`, `12 ms`, `2.1s/it`),
a unit in its label (`time (ms): 12`, `latency_us: 3`) or in the line's header (`timers
(ms) | fwd: 41.0`), or a time word where its format documents the unit (seconds_by_format's;
zerolog's `took=`: ms). Nothing else makes a duration (`Duration: 500`). A unit followed by
`per <thing>` is a rate (`25.38 ms per token`), not a part; a time per step (`35ms/step`,
`0.31 sec/step`, `time per iteration (ms): 412`) is the step's whole.

Line is one class in one module (a size exception of tests/test_layers.py): where the fields
are, what a field is, then the numbers that are no times (a size, a counter's `i/N`, a byte
count, a stamp) and the times no key names (`2.10s/it`; `step 1: 125.8 ms`).
"""

from __future__ import annotations

from gpuscope.parsers.log.fields import first_repeat
from gpuscope.parsers.log.fields import repeated as repeated_key
from gpuscope.parsers.log.lines.plan import UNCACHEABLE, whole_code
from gpuscope.parsers.log.lines.reading import ReaderState
from gpuscope.parsers.log.lines.steps import COVERS, runtime_steps
from gpuscope.parsers.log.lines.vocabulary import (
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
    PCT,
    PRONOUNS,
    SIZE_WORDS,
    STAT_WORDS,
    STEP_WORDS,
    UNIT,
    UNIT_WORDS,
    WEAK_FILLERS,
    ZEROLOG_LEVELS,
    decimals,
    has_any_digit,
    is_count,
    is_help,
    is_setting,
    label_of,
    lock_phrase,
    next_label,
    noop,
    numeric_start,
    parse_value,
    per_step,
    says_time,
    seconds_by_format,
    stamp_ms,
    stat_of,
    undotted,
    unit_next,
    zerolog_event,
)
from gpuscope.parsers.log.parsed import EVAL_WHY
from gpuscope.parsers.log.words import (
    BYTES,
    COUNTER,
    METRIC,
    PLAIN,
    RATE,
    STAMP,
    STAMP_KEYS,
    TIMEK,
    key_class,
)
from gpuscope.parsers.numbers import MAX_MS, beyond

FORECASTS = frozenset(("eta", "remaining"))  # Keras' and many bars' time left: no time spent
# a configured duration's last word (`Measurement window: 5000 msec`, `timeout=30s`): a setting, no time spent
SETTINGS = frozenset(("window", "timeout", "deadline"))


class _NoWhole:
    """A reader State whose key_info names no whole among `timers` (for whole_code)."""

    def __init__(self, state: ReaderState, timers: set[str]):
        self.held, self._info, self._timers = state.held, state.info, timers

    def info(self, key: str):
        name, f, cls, whole = self._info(key)
        return name, f, cls, whole and key not in self._timers


class Line:
    """The full reading of one line's tokens. Appends to `record` what Plan needs to replay it:
    (action, token index, prefix, strip, a, b) per number that decides something, and
    ("value", index, prefix) per token holding a number or a label's text; UNCACHEABLE when
    a number decided something a replay cannot check (damage, a number that does not read)."""

    def __init__(self, tokens: list[str], state: ReaderState, record: list | None):
        self.toks, self.n, self.st = tokens, len(tokens), state
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
        self.note = record.append if record is not None else noop
        # zerolog's console lines (gnark: `11:02:05 DBG prover done ... took=2345.678`): a bare
        # duration is in milliseconds, zerolog's default unit
        self.zerolog = self.n > 2 and tokens[1] in ZEROLOG_LEVELS and tokens[0][:1].isdigit()
        self.eval = bool(tokens) and tokens[0].rstrip(":").lower() in EVAL_WORDS and not (
            self.n > 1 and tokens[1].rstrip(":") in LEVELS)  # (`Test | INFO | ...`: a logger's name, issue 33)
        self.event = zerolog_event(tokens) if self.zerolog else ""
        # a timer tree's outermost End line (arkworks: `End: Groth16::Prover ......45.1ms`,
        # its children indented `··End:`): its time is the whole of the lines above it
        self.tree_root = bool(tokens) and tokens[0] == "End:"
        # Hugging Face's `train_steps_per_second` beside `train_runtime`: (prefix, rate)
        self.steps_rate: tuple[str, float] | None = None
        self.labels: set[str] = set()  # names made of a label's words, not printed as one key
        self.timers: set[str] = set()  # counter words read as a header's timers (DeepSpeed's `step:`)
        self.lead: str | None = None  # the record's counter (`step 1:`), before any time
        self.lead_named = False  # the lead is a label with its number (`phase 1:`), the time's name
        self.label_lead: str | None = None  # a line's label before its index (`Decode 0. ... latency: 6 ms`)
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

    def eq_field(self, token: str, equals_at: int, size_of: str | None, run: list[str]):
        key, v = token[:equals_at], token[equals_at + 1:]
        vt, pre = self.i - 1, token[:equals_at + 1]
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

    def other(self, token: str, before: str | None, run: list[str]) -> None:
        """A token that starts no field: a word of a label, a header unit, a per-step time
        without a key (`2.10s/it`, `0.31 sec/step`), or a number-like token before a unit."""
        toks, i = self.toks, self.i
        if token not in LEVELS and self.st.word(token):
            low = token.lower()
            if (low in UNIT_WORDS and low != "s" and before is not None and not self.names and self.unit is None
                    and (i >= self.n or toks[i] not in (":", "="))):  # (`latency (ns) : 7563436`: the label's unit)
                self.unit = UNIT_WORDS[low]  # `timers (ms) | fwd: 41.0 | bwd: 88.3` (a fixed token of the plan)
                return
            self.prev = token
            run.append(token)  # (the words before a field: at most the last four matter, and a label's unit)
            if len(run) > (5 if low in UNIT_WORDS or unit_next(toks, i) else 4):  # (`Min First Token latency (ns) :`)
                del run[0]
            self.run = run
            return
        if numeric_start(token):
            self.per_step(token, i)
            return
        if unit_next(toks, i) and has_any_digit(token):  # `data ٩٨ ms`, `data 98_765 ms`
            self.note(UNCACHEABLE)
            self.hurt(f"{token[:30]!r} before {toks[i][:10]!r} is not a number")

    # -- what a field is ----------------------------------------------------------------

    def take(self, key: str, value: str, shape: int, value_at: int, prefix: str, before: str | None, run: list[str], size_of: str | None) -> None:
        self.note(("value", value_at, prefix))
        kf_word = None
        printed_low = key.lower()
        if shape != EQ:
            printed = key
            key, kf_word = self.name_of(key, shape, before, run, size_of, prefix)
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
        x, vf, kind, num = parse_value(value)
        strip = len(value) - len(num)
        unit_word = False
        if kind == BARE and self.i < self.n:
            nxt = self.toks[self.i]
            w = None if next_label(self.toks, self.i) else UNIT_WORDS.get(nxt.rstrip(".:").lower())
            if w is not None:
                vf, kind, unit_word = w, UNIT, True
                self.i += 1
                if self.interval(name, nxt, value_at):
                    return
            elif nxt.rstrip(":") in SIZE_WORDS and cls != BYTES:
                self.size(key, name, value, x, nxt, value_at, prefix, strip)
                return
        if kind == JUNK:
            self.junk(key, value, shape, kf, cls)
            return
        if not self.placed(key, value, shape, kind, cls, num, printed_low):
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
            self.counter_frac(key, value, x, cls, value_at, prefix, strip)
            return
        if cls == BYTES:
            self.byte_count(key, value, x, kind, value_at, prefix, strip)
            return
        factor = vf if vf is not None else kf
        if cls == STAMP or key.lower() in STAMP_KEYS or name.lower() in STAMP_KEYS:  # (`time_ms`: epoch ms)
            if self.stamped(x, factor, value_at, prefix, strip) or cls == STAMP:
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
            factor = self.seconds(key, name, x, shape, cls, by_name, value_at, prefix, strip)
            if not factor:
                return
        self.time(name, x, factor, num, value_at, prefix, strip, by_name, value, key=key, value_factor=vf,
                  lines_only=shape != EQ or unit_word)

    def name_of(self, key: str, shape: int, before: str | None, run: list[str], size_of: str | None, prefix: str = ""):
        """The name of a `key: value` or `Label value` field, and a unit its label gives
        (None: no field after all)."""
        low = key.lower()
        if prefix[:2] == "..":  # a timer tree's `End: Compute C ......12.0ms`: the whole label
            return "_".join([*run, key]) if run else key, None
        if before is not None and before.lower() in PRONOUNS:
            before = None
        if size_of is not None and (low in FILLERS or key in SIZE_WORDS):
            return size_of, None  # `copy 512 MiB: 57.2 ms`, `upload 1.5 GiB in 170 ms`
        if low in FILLERS and (locked := lock_phrase(run)) is not None:
            return locked, None  # `worker 3 held the lock for 12 ms`: a tenure, not a bare `lock`
        if low in FILLERS:  # `forward took 12ms`; `epoch 3 took 1.2s`; `success. Took 8 s`: a sentence's end, no name
            return (before if before is not None and before.lower() not in FILLERS and before[-1:] != "." else "took"), None
        if low in UNIT_WORDS and before is not None and (low != "s" or any(w.lower() in GENERIC for w in run)):
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
        return (f"{self.label_lead}_{key}" if self.label_lead and low in GENERIC else key), None

    def interval(self, name: str, unit: str, value_at: int) -> bool:
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

    def junk(self, key: str, value: str, shape: int, key_factor: float | None, category: int) -> None:
        self.note(UNCACHEABLE)
        if (shape != LABEL and (key_factor is not None or key in self.st.unit_keys)) or unit_next(self.toks, self.i):
            self.hurt(f"{key[:30]}: value {value[:20]!r} is not a number")
        elif shape != LABEL and category == BYTES:
            self.hurt(f"{key[:30]}: value {value[:20]!r} is not a count")
        self.last_bare = None

    def seconds(self, key: str, name: str, number: float, shape: int, category: int, by_name: bool, value_at: int, prefix: str, strip: int) -> float:
        """A field without a unit: its factor to ms where its name says time and its format gives the unit
        (zerolog's ms, seconds_by_format's s), else 0.0 (issue 33); else a counter or quantity, or ignored."""
        toks, i, n = self.toks, self.i, self.n
        # (`Time 3 files`: a count of something; `Time 0.25 Data 0.1`: the word is the next label)
        counted = shape == LABEL and i < n and self.st.word(toks[i]) and not (i + 1 < n and numeric_start(toks[i + 1]))
        if (category == TIMEK or by_name) and not counted:
            if self.zerolog and shape == EQ:
                self.st.ms_assumed.add(name)
                return 1.0
            if why := seconds_by_format(name, shape, toks, i) or self.st.by_stamps(name, number):
                self.st.seconds_assumed[name] = why
                return 1e3
            self.last_bare = key  # (`Duration: 500`: no unit anywhere, no duration nor quantity)
            return 0.0
        if category == COUNTER and abs(number) > MAX_COUNT:
            self.note(UNCACHEABLE)
            self.hurt(beyond(key, str(number), "count"))
        elif category == COUNTER:
            self.note((P_Q, value_at, prefix, strip, key, None))
            self.qn.append(key)
            self.qv.append(number)
        elif shape != LABEL and category == PLAIN:
            if is_count(number):
                self.note((P_QINT, value_at, prefix, strip, key, None))
                self.qn.append(key)
                self.qv.append(number)
            else:
                self.note((P_NOQINT, value_at, prefix, strip, None, None))
        if category == COUNTER or (shape == EQ and category == METRIC):
            self.flags |= LINES_ONLY  # kv cannot see it, or reads it as a time
        self.last_bare = key
        return 0.0

    def time(self, name: str, number: float, factor: float, number_text: str, value_at: int, prefix: str, strip: int, by_name: bool, value: str,
             key: str | None = None, value_factor: float | None = None, lines_only: bool = True) -> None:
        key = key if key is not None else name
        if number < 0:
            self.hurt(f"{key[:30]}: negative time {value[:20]!r}")
            return
        if number * factor > MAX_MS:
            self.note(UNCACHEABLE)
            self.hurt(beyond(key, value, "duration"))
            return
        if value_factor is not None:
            self.st.unit_keys.add(key)
        if lines_only:
            self.flags |= LINES_ONLY
        e = 0.5 * 10.0 ** -decimals(number_text) * factor
        self.note((P_TIMEDOT if by_name else P_TIME, value_at, prefix, strip, name, factor, e))
        self.names.append(name)
        self.values.append(number * factor)
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

    # -- the numbers that are no times: a size printed after a number (`copy 512 MiB`), a counter's
    # `i/N`, a byte count, a time stamp; each is noted for the replay plan as a time is ----------

    def size(self, key: str, name: str, value: str, number: float, next_token: str, value_at: int, prefix: str, strip: int) -> None:
        """`copy 512 MiB`: a size, not a time (a byte quantity named `<name>_bytes`)."""
        f = SIZE_WORDS[next_token.rstrip(":")]
        if number < 0:
            self.note(UNCACHEABLE)
            return
        if number * f > MAX_BYTES:
            self.note(UNCACHEABLE)
            self.hurt(beyond(key, value, "size"))
            return
        self.note((P_SIZE, value_at, prefix, strip, f"{name}_bytes", f))
        self.qn.append(f"{name}_bytes")
        self.qv.append(float(round(number * f)))  # (alone: no timing line)
        if next_token[-1] != ":":
            self.i += 1  # (`MiB:` is the next label: it belongs to this key)
        self.sized = key

    def counter_frac(self, key: str, value: str, number: float, category: int, value_at: int, prefix: str, strip: int) -> None:
        """`step 12/40`: a counter keeps 12."""
        if category != COUNTER:
            return
        if number > MAX_COUNT:
            self.note(UNCACHEABLE)
            self.hurt(beyond(key, value, "count"))
            return
        self.note((P_Q, value_at, prefix, strip, key, None))
        self.qn.append(key)
        self.qv.append(number)
        self.flags |= LINES_ONLY

    def byte_count(self, key: str, value: str, number: float, kind: int, value_at: int, prefix: str, strip: int) -> None:
        if kind != BARE or number < 0:
            self.hurt(f"{key[:30]}: value {value[:20]!r} is not a count")
        elif number > MAX_BYTES:
            self.note(UNCACHEABLE)
            self.hurt(beyond(key, value, "size"))
        else:
            self.note((P_QPOS, value_at, prefix, strip, key, None))
            self.qn.append(key)
            self.qv.append(number)
            self.flags |= HAS_BYTES

    def stamped(self, number: float, factor: float | None, value_at: int, prefix: str, strip: int) -> bool:
        """A stamp-named field holding a point in time: the line's own time."""
        ms = stamp_ms(number, factor)
        if ms is not None:
            self.note((P_STAMP, value_at, prefix, strip, None, factor))
            self.stamp = ms / 1e3
            self.flags |= LINES_ONLY
            return True
        self.note((P_NOSTAMP, value_at, prefix, strip, None, factor))
        return False

    # -- the times that no key names: a time per step without a label (`2.10s/it`, `0.31 sec/step`),
    # a time with a unit after the record's counter (`step 1: 125.8 ms`; issue 33, class 2) -----------

    def per_step(self, token: str, next_at: int) -> None:
        """`2.10s/it`, `35ms/step`, `0.31 sec/step`, `120.4 ms/it`: the time of one step."""
        unit_tok = token
        if "/" not in token and next_at < self.n and "/" in self.toks[next_at]:
            unit_tok = token + self.toks[next_at]
        toks, n = self.toks, self.n
        if "/" not in unit_tok and next_at + 1 < n and toks[next_at].lower() in UNIT_WORDS and toks[next_at + 1][:1] == "/":
            # `2.84 s / it`, `0.5 s /it`: a time per step, spaced out
            per = toks[next_at + 1][1:] or (toks[next_at + 2] if next_at + 2 < n else "")
            if per.rstrip(".:").lower() in STEP_WORDS:
                self.i += 1 if toks[next_at + 1][1:] else 2
                unit_tok = token + toks[next_at] + "/" + per
        head, sl, per = unit_tok.partition("/")
        if not sl or per.rstrip(".:").lower() not in STEP_WORDS:
            self.note(("value", next_at - 1, ""))  # (a number that decides nothing: `(0.138)`, `12/500`)
            self.keyless(token, next_at)
            return
        x, vf, kind, num = parse_value(head)
        if kind != UNIT or vf is None:
            return
        if unit_tok != token:
            self.i += 1
        self.note(("value", next_at - 1, ""))
        self.time(f"time_per_{per.rstrip('.:').lower()}", x, vf, num, next_at - 1, "", len(token) - len(num), False, token)

    def keyless(self, token: str, next_at: int) -> None:
        """A time with a unit but no key after the record's counter (`step 1: 125.8 ms`,
        `Epoch 3: 0.89 sec`, `step 1 | loss 1.990 | 12.6 ms`, `prove 0: 3s913ms699.706us`):
        the time of that record, named `<counter>_time`. Only the first such time of a line,
        and only after a counter: a bare number stays nothing (a refusal beats a misread)."""
        if self.lead is None or self.keyless_done:
            return
        x, vf, kind, num = parse_value(token)
        unit_word = kind == BARE and next_at < self.n and self.toks[next_at].rstrip(".:").lower() in UNIT_WORDS
        if unit_word:
            vf, kind = UNIT_WORDS[self.toks[next_at].rstrip(".:").lower()], UNIT
        if kind != UNIT or vf is None:
            return
        if next_at + int(unit_word) < self.n and self.toks[next_at + int(unit_word)].lower() == "per":
            return  # `25.38 ms per token`: a rate
        self.keyless_done = True
        if unit_word:
            self.i += 1
        if not token.startswith(num) or self.lead_named:
            self.note(UNCACHEABLE)  # (a duration in several units, a name holding a number: no replay)
        name = self.lead if self.lead_named else f"{self.lead.lower()}_time"
        self.time(name, x, vf, num, next_at - 1, "", len(token) - len(num), False, token)

    def placed(self, key: str, value: str, shape: int, kind: int, category: int, number_text: str, printed_low: str) -> bool:
        """False for a value in several units that is no duration here; notes the record's counter."""
        if kind == BARE and printed_low in WEAK_FILLERS and key == "took":
            return False  # `11737 of 20000`, `In 1 gpu`, `is: 1000 MHz`: prose, a bare number is no time
        if kind == UNIT and not value.startswith(number_text):
            self.note(UNCACHEABLE)  # (`9m26.21s`, `0:00:10.736`: a duration in several units)
            if ":" in value and category != TIMEK and printed_low not in FILLERS:
                return False  # `H:MM:SS` under a key that says no time (`eta: 1 day, 3:36:30`): a clock, a forecast
        if self.lead is None and shape in (LABEL, COLON) and not self.names and kind in (BARE, FRAC) and "." not in number_text:
            if category == COUNTER or key_class(printed_low) == COUNTER:  # (`completed step: 0`: its last word)
                self.lead = key if category == COUNTER else printed_low  # `step 1:`, `Epoch 3`, `step 1/30:`
            elif category == PLAIN and kind == BARE and value.endswith(":") and "_" in key:
                # `preCommit phase 1: 3h51m36.3s` (lotus-bench): the number is part of the label
                self.lead, self.lead_named = f"{key}_{number_text}", True
            elif shape == LABEL and kind == BARE and value.endswith(".") and key.isalpha():
                # sglang's `Decode 0. Batch size: 1, latency: 0.00637 s`: the label names the line's
                # time (Decode_latency; the index is which decode), never a bare `latency`
                self.label_lead = key
        return True

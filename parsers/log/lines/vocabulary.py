"""The vocabulary of the `lines` format (parsers/log/lines/read.py): the words that say a number is a
time and in which unit, the words that name a whole, a statistic, a size; how one value
token reads (parse_value) and how one key reads (key_info). Pure tables and functions: no
state, no line is read here (parsers/log/lines/line.py reads lines)."""

from __future__ import annotations

import re
from collections.abc import Callable

from gpuscope.parsers.log.words import RATE, TIMEK, key_class
from gpuscope.parsers.numbers import LIMITS, TIME_UNITS, digits, number, split_unit

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
# decimal point and its running mean follows (seconds_by_format), although its name is no time
# word: the data-loading meter of the PyTorch examples' ProgressMeter (`Time  0.257 ( 0.257)
# Data  0.175 ( 0.175)`), copied into countless training scripts, and timm's (`Data: 0.012 (0.015)`)
LABEL_SECONDS = frozenset(("data",))
PRONOUNS = frozenset(("it", "this", "that", "which", "and", "then", "we", "i"))
# a label word that names no part: the word before it does (`forward took 12ms`, `data time: 0.1s`)
FILLERS = frozenset(("in", "took", "takes", "taking", "after", "spent", "was", "is", "for", "of"))
# a lock's tenure or wait told in a sentence (`worker 3 held the lock for 12 ms`, `acquired gpu lock
# after 5.2 ms`): the verb nearest the number says which, the noun which lock (lock_phrase)
LOCK_NOUNS = frozenset(("lock", "mutex", "semaphore"))
HOLD_VERBS = frozenset(("held", "holding", "hold", "holds", "kept", "keeping"))
WAIT_VERBS = frozenset(("waited", "waiting", "wait", "waits", "acquired", "acquiring", "acquire", "got", "took",
                        "obtained", "blocked", "queued"))
ARTICLES = frozenset(("the", "a", "an", "its", "their", "our", "my"))
# fillers that say no time by themselves (`11737 of 20000`, `In 1 gpu`): a bare number after one is none
WEAK_FILLERS = frozenset(("in", "was", "is", "for", "of"))
GENERIC = frozenset(("time", "pass", "phase", "stage", "duration", "latency", "done"))
# words that make a field a statistic of a quantity, not a part (`Mean TTFT (ms)`, `p99 latency`)
STAT_WORDS = frozenset(("mean", "median", "avg", "average", "min", "max", "std", "stddev", "deviation", "estimate",
                        "p50", "p75", "p90",
                        "p95", "p99", "p999", "percentile",
                        "minimum", "maximum", "p99.9", "smallest", "largest"))  # (`Maximum Latency: 5156863μs`, `P99.9: 3921919μs`)
# what a time per step is per (`35ms/step`, `2.10s/it`, `time per iteration (ms)`)
STEP_WORDS = frozenset(("step", "it", "iter", "iteration", "batch"))
LEVELS = frozenset(("INFO", "DEBUG", "WARN", "WARNING", "ERROR", "TRACE", "CRITICAL", "FATAL",
                    "NOTICE", "I", "W", "E", "D"))

# key classes
# value kinds
BARE, UNIT, FRAC, PCT, JUNK = range(5)
# field shapes: key=value, key: value (also `key = value`, JSON), Label value
EQ, COLON, LABEL = range(3)
# read_line flags
LINES_ONLY, HAS_BYTES, EVAL = 1, 4, 8  # (EVAL: an evaluation line, no training step)
# plan steps (Plan): what a number decided
P_TIME, P_Q, P_QPOS, P_QINT, P_NOQINT, P_SIZE, P_STAMP, P_NOSTAMP, P_TIMEDOT = range(9)
# (P_TIMEDOT: a time read only because its number has a decimal point: `Data: 0.012`)
# a size printed as a word after the number -> bytes
SIZE_WORDS = {"B": 1, "bytes": 1, "KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12, "KiB": 2**10, "MiB": 2**20,
              "GiB": 2**30, "TiB": 2**40}
# how a line's whole was found (aux code = index * 4 + how; PAREN: a lock's tenure printed with its
# parts in parentheses after it, parsers/log/lines/nesting.py)
PAREN, NAMED, SUMMED, HELD = 0, 1, 2, 3

_DIGITS = frozenset("0123456789")
_NUMSTART = frozenset("0123456789.-+")
ROUND_SLACK = 0.01  # relative slack of the sum rule, beyond the printed rounding
MAX_BYTES = LIMITS["size"][1]
MAX_COUNT = LIMITS["count"][1]


def is_word(token: str) -> bool:
    c = token[0]
    return (c.isalpha() or c == "_") and token.replace("_", "").replace("-", "").replace(".", "").isalnum()


def numeric_start(token: str) -> bool:
    if not token:
        return False
    c = token[0]
    if c in _DIGITS:
        return True
    return c in _NUMSTART and len(token) > 1 and (token[1] in _DIGITS or (token[1] == "." and token[2:3] in _DIGITS))


def parse_value(token: str):
    """`12` -> (12.0, None, BARE, "12"); `12.5ms` -> (12.5, 1.0, UNIT, "12.5"); `12/40` ->
    (12.0, None, FRAC, ""); `97%` -> PCT; a number with an unknown tail -> JUNK. The last
    item is the number as printed (decimals() gives its rounding). Numbers are ASCII
    numerals (parsers.numbers.number): `٩٨`, `98_765`, `12..` are JUNK. One `:` and then one
    `.` after the number are punctuation (`epoch 3:`, `took 1.2s.`)."""
    if token[-1:] == ":":
        token = token[:-1]
    if token[-1:] == "." and token[-2:-1] != ".":
        token = token[:-1]
    if not token:
        return 0.0, None, JUNK, ""
    x = number(token)
    if x is not None:
        return x, None, BARE, token
    head, f = split_unit(token, VALUE_UNITS)
    if f is not None:
        x = number(head)
        if x is not None:
            return x, f, UNIT, head
        both = compound(token)
        return (both[0], both[1], UNIT, both[2]) if both is not None else (0.0, None, JUNK, "")
    if token.endswith("%"):
        return 0.0, None, PCT, ""
    both = compound(token)
    if both is not None:
        return both[0], both[1], UNIT, both[2]
    a, sl, b = token.partition("/")
    if sl and digits(a) and digits(b):
        return float(a), None, FRAC, token
    return 0.0, None, JUNK, ""


# a duration in several units (Go's `9m26.21s`, `1h2m3s`, `3s913ms699.706us`): at least two pieces
_PIECES = re.compile(r"(\d+(?:\.\d+)?)(h|ms|us|\u00b5s|\u03bcs|ns|m|s)")
_PIECE_MS = {"h": 3.6e6, "m": 6e4, "s": 1e3, "ms": 1.0, "us": 1e-3, "\u00b5s": 1e-3, "\u03bcs": 1e-3, "ns": 1e-6}
_ORDER = ("h", "m", "s", "ms", "us", "\u00b5s", "\u03bcs", "ns")
# Python's timedelta (`0:00:10.736000`, `2:03:04`): an unpadded hour (a clock pads it: `09:41:05`)
_HMS = re.compile(r"(\d):([0-5]\d):([0-5]\d(?:\.\d+)?)")


def compound(token: str) -> tuple[float, float, str] | None:
    """(value, factor to ms, the number whose digits give the rounding) of a duration printed
    in several units (`9m26.21s` -> (566.21, 1e3, "26.21"); `0:00:10.736` -> (10.736, 1e3,
    "10.736")), or None. The pieces in falling order of unit, each unit once."""
    if ":" in token:
        m = _HMS.fullmatch(token)
        if m is None:
            return None
        return int(m.group(1)) * 3600 + int(m.group(2)) * 60 + float(m.group(3)), 1e3, m.group(3)
    pieces = _PIECES.findall(token)
    if len(pieces) < 2 or "".join(a + u for a, u in pieces) != token:
        return None
    ranks = [_ORDER.index(u) for _, u in pieces]
    if any(b <= a for a, b in zip(ranks, ranks[1:], strict=False)) or any("." in a for a, _ in pieces[:-1]):
        return None
    ms = sum(float(a) * _PIECE_MS[u] for a, u in pieces)
    last, unit = pieces[-1]
    return ms / _PIECE_MS[unit], _PIECE_MS[unit], last


def decimals(text: str) -> int:
    d = text.find(".")
    if d < 0 or "e" in text or "E" in text:
        return 0
    return len(text) - d - 1


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
    if cls != RATE and (low.endswith("per") or "Per" in name[1:]):
        cls = RATE  # camelCase rates: `RunningAvgSamplesPerSec`, `CurrSamplesPerSec`
    parts = low.split("_")
    whole = low in WHOLE_WORDS or (len(parts) == 2 and (
        (parts[1] in ("time", "total") and (parts[0] in WHOLE_WORDS or parts[0] == "proof"))
        or (parts[0] == "total" and parts[1] in ("time", "elapsed", "ms", "latency"))
        or parts[1] == "runtime")) or per_step(low) or (  # (train_runtime: Hugging Face's whole run)
        parts[:2] == ["time", "taken"] and parts[2:3] == ["for"])  # (evalscope's `Time taken for tests`)
    return name, factor, cls, whole


def per_step(lowered: str) -> bool:
    """A name that ends in `per <step>` (`elapsed_time_per_iteration`, `time_per_step`): a
    time per step, the step's whole (with a unit; without one it stays a rate)."""
    parts = lowered.lower().split("_")
    if "." in parts[-1] and parts[-1].rpartition(".")[2] in STAT_WORDS:
        parts[-1] = parts[-1].rpartition(".")[0]  # (`time_per_step.average`: a statistic of it)
    return len(parts) >= 2 and parts[-2] == "per" and parts[-1] in STEP_WORDS


def stat_of(name: str) -> str | None:
    """The statistic a component name is of (`TTFT.mean` -> mean, `latency_p99` -> p99), or None."""
    low = name.lower()
    dot = low.rfind(".")
    if dot > 0 and low[dot + 1:] in STAT_WORDS:
        return low[dot + 1:]
    for w in low.split("_"):
        if w in STAT_WORDS:
            return w
    return None



def unit_next(tokens: list[str], at: int) -> bool:
    """The token at i is a time unit printed as a word (what came before it meant a time)."""
    return at < len(tokens) and tokens[at].rstrip(".:").lower() in UNIT_WORDS


def has_any_digit(token: str) -> bool:
    """A digit of any script (`٩`, `９`, `𝟏`) or an ASCII one."""
    return any(c.isdigit() for c in token)


def is_count(number: float) -> bool:
    """A number that reads as a count (kept as a quantity under a plain key)."""
    return 0 <= number < 2**53 and number == int(number)


def stamp_ms(number: float, factor: float | None) -> float | None:
    """Epoch milliseconds when a stamp-named field holds a point in time (2001..2286), else None."""
    if factor is None and 1e12 <= number < 1e13:
        return number  # epoch milliseconds, bare
    ms = number * (factor if factor is not None else 1e3)
    return ms if 1e12 <= ms < 1e13 else None


# first words of evaluation lines and prefixes of evaluation fields: no training steps
EVAL_WORDS = frozenset(("test", "val", "valid", "validation", "validating", "eval", "evaluation", "evaluating"))
EVAL_PREFIXES = ("eval_", "val_", "test_", "valid_", "validation_")
ZEROLOG_LEVELS = frozenset(("TRC", "DBG", "INF", "WRN", "ERR", "FTL"))
# words that are no part of a field's name (`the load time: 3 s`)
_NOT_NAME = FILLERS | PRONOUNS | frozenset(("the", "a", "an", "per"))


def lock_phrase(run: list[str]) -> str | None:
    """`held the lock` -> lock_held, `acquired gpu lock` -> gpu_lock_wait, `released the lock after
    holding it` -> lock_held: the words before a filler (`for`, `after`) that name a lock and, nearest
    the number, a verb of holding or of waiting; None when they do not (a bare `lock` says neither)."""
    words = [w.lower() for w in run]
    verb_at = next((i for i in range(len(words) - 1, -1, -1) if words[i] in HOLD_VERBS or words[i] in WAIT_VERBS), None)
    noun_at = next((i for i in range(len(words) - 1, -1, -1) if words[i] in LOCK_NOUNS), None)
    if verb_at is None or noun_at is None:
        return None
    if noun_at > verb_at:  # `held the gpu lock`: the words between the verb and the noun qualify it
        phrase = [w for w in words[verb_at + 1:noun_at + 1] if w not in ARTICLES and w not in FILLERS and w not in PRONOUNS and w.isalnum()]
    else:  # `released the lock after holding it`: the lock named before the verb
        phrase = [words[noun_at]]
    return "_".join(phrase + ["held" if words[verb_at] in HOLD_VERBS else "wait"])


def label_of(run: list[str], key: str, whole: bool = False) -> str:
    """A key's name with the words printed before it: the whole label (`whole`: a `key:` or
    `key =` field: `consumed samples: 640`, `prompt eval time = 812 ms`), else only for a
    generic key (`data time 0.1 s`); a statistic's as `<quantity>.<statistic>` (`Mean TTFT`
    -> TTFT.mean)."""
    if run and run[-1].lower() == "per" and key.lower() in STEP_WORDS:  # `elapsed time per iteration (ms)`
        ws = [w for w in run[-3:-1] if w.lower() not in _NOT_NAME]
        stat = next((w.lower() for w in ws if w.lower() in STAT_WORDS), "")  # (`Average time / step`: a statistic)
        return "_".join([*[w for w in ws if w.lower() not in STAT_WORDS], "per", key.lower()]) + (f".{stat}" if stat else "")
    at = next((j for j in range(len(run) - 1, max(len(run) - 3, 0), -1) if run[j].lower() == "per"), 0)
    if at and run[at - 1].lower() not in _NOT_NAME:
        # `Average latency per output token: 1.10 s` (vLLM's 2023 benchmark_serving): a time per
        # token (latency_per_output_token.average), never a part named `output_token`
        per = label_of(run[:at], "per", True)
        stat = per.rpartition(".")[2] if "." in per else ""
        thing = "_".join([*run[at + 1:], key])
        return f"{per.rpartition('.')[0] if stat else per}_{thing}" + (f".{stat}" if stat else "")
    words: list[str] = []
    # (a label opening with a time word keeps its `for`: evalscope's `Time taken for tests (s)`)
    timed = whole and len(run) > 1 and run[-4:][0].lower() in GENERIC
    for w in reversed(run[-4:]):
        if (w.lower() in _NOT_NAME and not (timed and w.lower() in ("for", "of"))) or w in LEVELS:
            break
        # (a label word's closing period is punctuation: sglang's `Prefill. latency: 5.0 ms`)
        words.insert(0, w[:-1] if len(w) > 1 and w[-1] == "." and w[-2].isalpha() else w)
    stats = [w.lower() for w in words if w.lower() in STAT_WORDS]
    if key.lower() in STAT_WORDS and words:  # `TTFT mean: 52 ms`
        return f"{words[-1]}.{key.lower()}"
    if stats:
        rest = [w for w in words if w.lower() not in STAT_WORDS]
        return ".".join(("_".join([*rest, key]), stats[0]))
    return "_".join([*words, key]) if whole or key.lower() in GENERIC else key


def zerolog_event(tokens: list[str]) -> str:
    """A zerolog line's event: the last word of its message (`constraint system solver done`
    -> solver), which names what its `took=` timed."""
    words = []
    for t in tokens[2:]:
        if "=" in t:
            break
        if (t.isalpha() or _DOTTED.fullmatch(t)) and t.lower() not in _DONE:
            words.append(t.replace(".", "_"))  # (`bs1.MultiExp done MSMG1 4156677` -> bs1_MultiExp)
    return words[-1] if words else ""


# a dotted identifier naming an event (`krs2.MultiExp`); `MSMG1`, `2322982`: no names
_DOTTED = re.compile(r"[A-Za-z][A-Za-z0-9]*(?:\.[A-Za-z][A-Za-z0-9]*)+")


_DONE = frozenset(("done", "finished", "completed", "complete", "ok", "end", "ended"))


def undotted(token: str) -> str:
    """A value token without a timer tree's leader dots (`......12.004s` -> `12.004s`)."""
    if token[:2] == "..":
        return token.lstrip(".") or token
    return token


def noop(_anything: object) -> None:
    pass


def says_time(key: str, info: Callable[[str], tuple]) -> bool:
    """The key says its value is a time: a unit suffix or a time name (`info`: key_info)."""
    _, kf, cls, _ = info(key)
    return kf is not None or cls == TIMEK


# help text: a line opening with an option (`--interval`, `-i`): its numbers are no measurements
def is_help(tokens: list[str]) -> bool:
    t = tokens[0] if tokens else ""
    return (t[:2] == "--" and t[2:3].isalpha()) or (len(t) == 2 and t[0] == "-" and t[1].isalpha())


#: settings a program echoes (MLPerf LoadGen's `min_duration (ms): 600000`): bounds it was given
SETTING_NAMES = frozenset(("min_duration", "max_duration", "target_duration", "target_latency",
                           "min_duration_ms", "max_duration_ms", "target_latency_ns",
                           "latency_limit"))  # (perf_analyzer's `Latency limit: 0 msec`: a bound it was given)


def is_setting(name: str) -> bool:
    return name.lower().replace(" ", "_").replace("-", "_") in SETTING_NAMES


def next_label(tokens: list[str], at: int) -> bool:
    """Whether toks[i] is a label of its own (`seconds: 18.665` after `step: 0,`): a word ending
    in `:` with a number after it, not the unit of the number before it."""
    return tokens[at][-1:] == ":" and at + 1 < len(tokens) and numeric_start(tokens[at + 1])


# issue 33 class 3: a bare number under a time word is a duration only when its program's
# format gives the unit. These conventions print seconds, documented by each program; any
# other bare time-named number (`Duration: 500`, `Total Latency: 236.9`, `time=607.278`) is no
# duration: the line is read without it (Line.seconds, lines.py's docstring).
RUNTIME_WHY = "Hugging Face's Trainer prints its *_runtime in seconds"
WALL_WHY = "fairseq's progress lines print wall and train_wall in seconds"
D2_WHY = "detectron2's and mmengine's loggers print time and data_time in seconds"
METER_WHY = "the PyTorch examples' ProgressMeter (`Time 0.250 ( 0.412)`: value and running mean) prints seconds"
_FAIRSEQ_WALLS = frozenset(("wall", "train_wall", "valid_wall"))


def seconds_by_format(name: str, shape: int, toks: list[str], i: int) -> str:
    """Why a bare number under the time-named `name` is seconds by its program's documented
    format (`toks`: the line's tokens, `i`: the one after the value), or "" when nothing gives
    its unit. Would fire falsely on a program of its own printing `Time 12 (13)` in ms under a
    ProgressMeter's shape: that shape (Capitalised `Time`/`Data`, value and running mean) is
    the ImageNet example's, copied with its seconds (tests/test_unitless_rule.py)."""
    low = name.lower()
    if low.endswith("_runtime") and shape != LABEL:
        return RUNTIME_WHY  # (`{'train_runtime': 245.78, ...}`)
    if low in _FAIRSEQ_WALLS and shape == EQ:
        return WALL_WHY  # (`... train_wall=31, gb_free=10.2, wall=33`)
    if low in ("time", "data_time") and shape == COLON and "data_time:" in toks:
        return D2_WHY  # (`iter: 19 ... time: 0.4512  data_time: 0.0123  lr: ...`)
    if name in ("Time", "Data") and shape != EQ and i < len(toks) and numeric_start(toks[i]):
        return METER_WHY
    return ""

"""The frameworks' own line shapes that the shared field reader (parsers/log/lines/fields.py) cannot
read alone, each read here by one function that parsers/log/formats.py's FRAMEWORKS table names
(its `reader`) and parsers/log/lines/line.py calls for a line holding one of the entry's `gates`.

Each reader takes (line, State) and returns what line.read_line returns (a reading
tuple, None for no timing line, a damage reason) or NOT_MINE: the line is not of its shape
after all, and the shared field reader reads it. What each shape means, from the
framework's own formatting code and docs:

- Keras' Progbar (`1875/1875 [====] - 5s 2ms/step - loss: ...`; Keras 3 draws `━━━━`; TF's
  verbose=2 prints `1875/1875 - 4s - loss: ... - 4s/epoch - 2ms/step`): the line that ends
  an epoch (i == N) gives the epoch's elapsed time (the whole) and the mean time per step
  (`step.mean`, a statistic, not a part); it covers N steps (quantity `covers_steps`). A
  line before the end (i < N, a redraw) prints an ETA, no time spent: no timing line.
- tqdm / PyTorch Lightning bars (`Epoch 0: 2%| | 20/1000 [00:00<00:44, 22.10it/s, ...]`):
  the rate is of one iteration (`it/s`: 1/x s per iteration; `s/it`: x s), tqdm's smoothed
  mean: the record's `time_per_it`; the bar's `n` is the counter `iter`, whose advance from
  redraw to redraw is how many steps a redraw stands for (parsers/log/lines/steps.py). A bar
  without a rate yet (`?it/s`) has no time; a `Validation` / `Sanity Checking` bar is an
  evaluation line. In a log that prints its own timing lines beside a bar (a data loader's
  bar among step lines), the bar's redraws are no steps (parsers/log/lines/records.py).
- TensorFlow's hooks: LoggingTensorHook prints `loss = 0.41, step = 100 (0.320 sec)`, the
  seconds since its last line (every_n_iter steps): `elapsed`, the whole, with the counter
  `step`; StepCounterHook prints `global_step/sec: 312.5`, a rate: 1/x s per step, read as
  `step.mean` (a statistic: no step of its own).
- Megatron-LM's timers (`(min, max) time across ranks (ms):` and one line per timer,
  `    forward-backward .....: (401.23, 402.10)`, each a per-step mean over the log interval):
  the minimum and maximum over the ranks of each timer (`forward-backward.min`, `.max`), in
  ms, statistics of one timer, never parts (the timers nest: forward-backward holds
  forward-compute); the max is the slowest rank's, the one the step waits for. A
  timer line is known by its own text (four spaces, the name padded with dots to 48 columns,
  `: `), the format Megatron prints only under that header, whose unit is always ms: no state
  from the header line (a line without digits, which a scan may skip unread). The third
  form, `times across ranks (ms):` (--timing-log-option all), prints each timer's name on a
  line of its own and then `     rank  0: 401.20` lines: a rank's line does not carry the
  timer it belongs to, so it is not read (the min/max forms are; no time is misread).
- llama.cpp's print_timings (`llama_print_timings:` in older builds, `llama_perf_context_print:`
  / `llama_perf_sampler_print:` in newer ones): `<label> time = <v> ms [/ <n> tokens|runs
  (<x> ms per token, <y> tokens per second)]`, one line per label: `<label>_time` in ms.
  `load time` is the model's load (llama.cpp times its loading once, before any token): a
  one-off setup, no part of a step and never a host stall (ParsedLog.not_parts says so);
  sample time is the sampler's, prompt eval and eval the model's passes over the prompt and
  over the generated tokens: GPU or CPU work the text does not split (no role); `ms per
  token` and `tokens per second` are rates, never read; total is the whole.
- criterion (`fib 20  time: [26.029 us 26.251 us 26.505 us]`, its `Benchmarking ...:
  Warming up for 3.0000 s` progress): a benchmark report, low / estimate / high of each
  benchmark's time per iteration: statistics, no timed steps; none of its lines is a timing
  line (parsers/log/formats.py refuses the log with that reason).
- MLPerf `:::MLLOG` events (parsers/log/mllog.py): an interval's end is a timing line.
- Timer trees (plonky2's TimingTree, tracing-forest's spans: parsers/log/lines/trees.py): the root
  is the whole of its tree, its children its parts, deeper nodes parts of their parent.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from gpuscope.parsers.log.lines.plan import whole_code
from gpuscope.parsers.log.lines.reading import ReaderState
from gpuscope.parsers.log.lines.trees import read_tree
from gpuscope.parsers.log.lines.vocabulary import (
    EVAL,
    EVAL_WORDS,
    LINES_ONLY,
    MAX_COUNT,
    NAMED,
    UNIT_WORDS,
)
from gpuscope.parsers.log.mllog import read_mllog
from gpuscope.parsers.numbers import MAX_MS

NOT_MINE = object()  # not this shape: the shared field reader reads the line
# a tqdm bar's reading: its time per iteration, its counter, its total (-1: none printed);
# parsers/log/lines/bars.py bar_rows finds bars by them
BAR_TIME, BAR_COUNTER, BAR_TOTAL = "time_per_it", "iter", "iter_of"

_UNIT_MS = {"s": 1e3, "ms": 1.0, "us": 1e-3, "\u00b5s": 1e-3, "ns": 1e-6}


def _reading(state: ReaderState, names: list[str], values: list[float], eps: list[float], quantity_names: Sequence[str] = (), quantity_values: Sequence[float] = ()):
    if any(v < 0 or v > MAX_MS for v in values):
        return "a time beyond any duration"
    return names, values, list(quantity_names), list(quantity_values), None, whole_code(names, values, eps, state), LINES_ONLY, sum(eps)


def _half_unit(number_text: str, factor: float) -> float:
    d = number_text.find(".")
    return 0.5 * 10.0 ** -(len(number_text) - d - 1 if d >= 0 else 0) * factor


# -- Keras ---------------------------------------------------------------------------------

# (Keras 3's bar on a terminal colours its done and to-do parts: ANSI codes between the `━`)
# a bar (`[====]`, Keras 3's `━━━━`), or verbose=2's ` - 4s - ` (its elapsed seconds right after)
_KERAS = re.compile(r"^\s*(\d{1,9})/(\d{1,9})\s+(?:\[[=>.]*\]|(?:\x1b\[[\d;]*m|\u2501)+|- (?=\d+(?:\.\d+)?(?:s|ms|us) - ))\s?")
_KERAS_ELAPSED = re.compile(r"(?<![\w./])(\d+(?:\.\d+)?)(s|ms|us)(?![\w/])")
_KERAS_PER = re.compile(r"(?<![\w./])(\d+(?:\.\d+)?)(s|ms|us|\u00b5s)/(step|sample)\b")


def read_keras(line: str, state: ReaderState):
    m = _KERAS.match(line)
    if m is None:
        return NOT_MINE
    i, n = int(m.group(1)), int(m.group(2))
    rest = line[m.end():]
    if i < n or "ETA" in rest:
        return None  # a redraw before the epoch's end: its seconds are an ETA, no time spent
    # (mine or not never depends on a number: a line of another program's shape is never read
    # here, whatever its numbers, so a replayed plan of that shape reads it as this would)
    per = _KERAS_PER.search(rest)
    ela = _KERAS_ELAPSED.search(rest)
    if per is None and ela is None:
        return None
    names, values, eps = [], [], []
    if ela is not None:
        f = _UNIT_MS[ela.group(2)]
        names.append("elapsed")
        values.append(float(ela.group(1)) * f)
        eps.append(_half_unit(ela.group(1), f))
    qn, qv = [], []
    if per is not None:
        f = _UNIT_MS[per.group(2)]
        names.append(f"{per.group(3)}.mean")
        values.append(float(per.group(1)) * f)
        eps.append(_half_unit(per.group(1), f))
        if per.group(3) == "step" and 0 < n <= MAX_COUNT:
            qn, qv = ["covers_steps"], [float(n)]
    return _reading(state, names, values, eps, qn, qv)


KERAS_ETA_ONLY = ("Keras progress-bar redraws before an epoch's end only ({example}): an ETA is a forecast of "
                  "the time left, not a time spent; the epoch's end line (`1875/1875 [====] - 5s 2ms/step`: its "
                  "elapsed seconds and mean ms/step) would tell, and is read")


def keras_eta_only(head: str, limit: int = 2000) -> str | None:
    """Why a log without one timing line is refused when its lines are Keras' redraws before
    an epoch's end (i < N: an ETA, no time spent), else None."""
    for line in head.split("\n", limit)[:limit]:
        for piece in line.split("\r"):
            m = _KERAS.match(piece)
            if m is not None and int(m.group(1)) < int(m.group(2)):
                example = " ".join(piece.split())
                example = example if len(example) <= 60 else example[:57] + "..."
                return KERAS_ETA_ONLY.format(example=f"`{example}`")
    return None


# -- tqdm / Lightning ----------------------------------------------------------------------

# `n/total [elapsed<remaining, rate` (or, without a total, `123it [00:03, 38.20it/s]`)
_TQDM = re.compile(r"(?<![\w.])(\d{1,12})(?:/(\d{1,12}|\?)|it)\s?\[[\d:]+(?:<[\d:?]+)?,\s*(\d+(?:\.\d+)?|\?)"
                   r"(it/s|s/it)\b")


def read_tqdm(line: str, state: ReaderState):
    m = _TQDM.search(line)
    if m is None:
        return NOT_MINE
    rate = m.group(3)
    if rate == "?":
        return None  # no rate yet: no time
    x = float(rate)
    if not 0 < x < math.inf:
        return None
    num = rate
    if m.group(4) == "it/s":
        ms = 1e3 / x
        e = abs(1e3 / max(x - _half_unit(num, 1.0), 1e-12) - ms)
    else:
        ms = x * 1e3
        e = _half_unit(num, 1e3)
    n = float(m.group(1))
    if n > MAX_COUNT:
        return None
    total = m.group(2)
    of = float(total) if total is not None and total != "?" and float(total) <= MAX_COUNT else -1.0
    r = _reading(state, [BAR_TIME], [ms], [e], [BAR_COUNTER, BAR_TOTAL], [n, of])
    first = line[:m.start()].split(maxsplit=1)
    if first and type(r) is tuple and (first[0].rstrip(":").lower() in EVAL_WORDS or first[0] == "Sanity"):
        r = (*r[:6], r[6] | EVAL, r[7])  # Lightning's `Validation DataLoader 0:` / `Sanity Checking` bars
    return r


# -- cProfile / pstats --------------------------------------------------------------------

_CPROFILE_TOTAL = re.compile(r"^\s*\d+ function calls(?: \(\d+ primitive calls\))? in \d+(?:\.\d+)? seconds\s*$")


def read_cprofile(line: str, state: ReaderState):
    """pstats' `4869394 function calls (4863767 primitive calls) in 19.107 seconds`: the
    profiled run's total over all its calls (Lightning's AdvancedProfiler prints one per
    action), no step and no part of one: no timing line."""
    return None if _CPROFILE_TOTAL.match(line) else NOT_MINE


# -- TensorFlow ----------------------------------------------------------------------------

_TF_RATE = re.compile(r"global_step/sec: (\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)\s*$")
_TF_HOOK = re.compile(r"\((\d+(?:\.\d+)?) sec\)\s*$")
_TF_STEP = re.compile(r"(?<![\w])(?:global_step|step) = (\d{1,15})(?![\d.])")


def read_tensorflow(line: str, state: ReaderState):
    m = _TF_RATE.search(line)
    if m is not None:
        x = float(m.group(1))
        if not 0 < x < math.inf:
            return None
        return _reading(state, ["step.mean"], [1e3 / x], [abs(1e3 / max(x - _half_unit(m.group(1), 1.0), 1e-12) - 1e3 / x)])
    m = _TF_HOOK.search(line)
    if m is None or " = " not in line[:m.start()]:
        return NOT_MINE
    qn, qv = [], []
    c = _TF_STEP.search(line, 0, m.start())
    if c is not None and int(c.group(1)) <= MAX_COUNT:
        qn, qv = ["step"], [float(c.group(1))]
    state.covering.add("elapsed")  # (the hook's seconds since its last line: every step between)
    return _reading(state, ["elapsed"], [float(m.group(1)) * 1e3], [_half_unit(m.group(1), 1e3)], qn, qv)


# -- Megatron-LM's timers ------------------------------------------------------------------

# under `(min, max) time across ranks (ms):` / `max time across ranks (ms):`, one line per timer:
# four spaces, the name and a space padded with dots to 48 columns, `: `, `(min, max)` or max
_MEGATRON_TIMER = re.compile(r"^    (\S(?:.*?\S)?) (\.+): (?:\((\d+(?:\.\d+)?), (\d+(?:\.\d+)?)\)|(\d+(?:\.\d+)?))\s*$")
MEGATRON_PAD = 48
MEGATRON_MAX_WHY = ("a statistic (max over the ranks: the slowest rank's time, the one the step waits for), "
                    "not a part")
MEGATRON_MIN_WHY = "a statistic (min over the ranks: the fastest rank's time), not a part"


def read_megatron_timers(line: str, state: ReaderState):
    m = _MEGATRON_TIMER.match(line)
    if m is None or len(m.group(1)) + 1 + len(m.group(2)) != MEGATRON_PAD:
        return NOT_MINE
    name = m.group(1)
    if m.group(5) is not None:
        names, nums = [f"{name}.max"], [m.group(5)]
    else:
        names, nums = [f"{name}.min", f"{name}.max"], [m.group(3), m.group(4)]
    if names[-1] not in state.known:
        state.known[names[-1]] = MEGATRON_MAX_WHY
        if len(names) == 2:
            state.known[names[0]] = MEGATRON_MIN_WHY
    return _reading(state, names, [float(x) for x in nums], [_half_unit(x, 1.0) for x in nums])


# -- llama.cpp -----------------------------------------------------------------------------

_LLAMA = re.compile(r"^llama_(?:print_timings|perf_\w+_print):\s+([a-z][a-z ]{0,40}?) time\s+=\s+(\d+(?:\.\d+)?) ms"
                    r"(?:\s+/\s+\d+ (?:tokens|runs)(?:\s+\(\s*\d+(?:\.\d+)? ms per token(?:,\s+\d+(?:\.\d+)? tokens "
                    r"per second)?\))?)?\s*$")
SETUP_WHY = "a one-off setup (llama.cpp's model load, timed once before any token): no part of a step, never a host stall"


def read_llama_cpp(line: str, state: ReaderState):
    m = _LLAMA.match(line)
    if m is None:
        return NOT_MINE
    label = "_".join(m.group(1).split())
    name = f"{label}_time"
    if label == "load":
        state.known[name] = SETUP_WHY
    return _reading(state, [name], [float(m.group(2))], [_half_unit(m.group(2), 1.0)])


# -- criterion -----------------------------------------------------------------------------

_UNITS = "|".join(sorted((re.escape(u) for u in UNIT_WORDS), key=len, reverse=True))
_CRITERION = re.compile(rf"\btime:\s+\[[-+\d.]+ (?:{_UNITS}) [-+\d.]+ (?:{_UNITS}) [-+\d.]+ (?:{_UNITS})\]")


_CRITERION_PROGRESS = re.compile(r"^Benchmarking .+: (?:Warming up for [\d.]+ s|Collecting \d+ samples in estimated "
                                 r"[\d.]+ s)")


def read_criterion(line: str, state: ReaderState):
    if _CRITERION_PROGRESS.match(line) is not None or _CRITERION.search(line) is not None:
        return None  # its progress and its statistics: no timing line
    return NOT_MINE


# -- MLPerf --------------------------------------------------------------------------------

def read_mlperf(line: str, state: ReaderState):
    r = read_mllog(line, state.mllog_open)
    if r is None or isinstance(r, str):
        return r
    name, ms, stamp = r
    return [name], [ms], [], [], stamp, -1, LINES_ONLY, 1.0


# -- DeepSpeed's FLOPS profiler ---------------------------------------------------------------

# its summary's latencies (profiling/flops_profiler: `fwd latency:   76.67 ms`, `iter latency` their
# sum, the whole) and, in its aggregated profile, each module's (`fwd latency - {'BertModel':
# '34.29 ms', ...}`): a profile of the step, never parts of it
_FLOPS_LATENCY = re.compile(r"^(fwd|bwd|step|iter) latency:\s+(\d+(?:\.\d+)?) (s|ms|us|\u00b5s|ns)\s*$")
_FLOPS_MODULES = re.compile(r"^\s*(?:fwd|bwd) latency\s+- \{")


def read_flops_profiler(line: str, st):
    if _FLOPS_MODULES.match(line) is not None:
        return None  # (the aggregated profile: module latencies, a summary of the step's forward)
    m = _FLOPS_LATENCY.match(line)
    if m is None:
        return NOT_MINE
    f = _UNIT_MS[m.group(3)]
    r = _reading(st, [f"{m.group(1)}_latency"], [float(m.group(2)) * f], [_half_unit(m.group(2), f)])
    return r if type(r) is str or m.group(1) != "iter" else (*r[:5], NAMED, *r[6:])  # (iter: the whole)


# -- timer trees (plonky2's TimingTree, tracing-forest): parsers/log/lines/trees.py ------------

def read_timer_tree(line: str, state: ReaderState):
    return read_tree(line, state, NOT_MINE)

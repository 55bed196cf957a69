"""Which values of a `lines` log are no parts of their record's sum (parsers/log/lines/records.py
asks once the names are known): statistics (`TTFT.mean`, `latency_p99`), a part nested in
another printed on the same line (`bwd_allreduce` beside `bwd`), and the names a framework's
reader knows are none (its State's `known`, with why: a one-off setup, a part nested in its
parent, a time printed outside a lock's tenure)."""

from __future__ import annotations

import numpy as np

from gpuscope.arrays import distinct
from gpuscope.parsers.log.lines.vocabulary import stat_of


def not_parts(codes: np.ndarray, ulist: list[str], row_of: np.ndarray, n: int,
              known: dict[str, str] | None = None) -> tuple[np.ndarray, np.ndarray, dict[str, str]]:
    """Per value, whether it is no part of its line's sum: a statistic (`TTFT.mean`,
    `latency_p99`), a part nested in another part printed on the same line (`bwd_allreduce`
    beside `bwd`) or a name a framework's reader knows is none (`known`: name -> why, its
    word winning over the names' guess); per row, whether it prints statistics only; and
    per such name, why. The names: codes into ulist, in order of first appearance."""

    none = np.zeros(len(codes), dtype=bool)
    if not len(codes):
        return none, np.zeros(n, dtype=bool), {}
    stat_u = np.asarray([stat_of(u) is not None for u in ulist], dtype=bool)
    is_stat = stat_u[codes]
    if stat_u.any():  # (no name a statistic: no line opens with one)
        # a line that opens with a statistic is statistics throughout: perf_analyzer's `Avg request
        # latency: 4232 usec (overhead 51 usec + queue 25 usec + ...)` is the mean's breakdown
        first = np.flatnonzero(np.concatenate(([True], row_of[1:] != row_of[:-1])))
        stat_first = np.zeros(n, dtype=bool)
        stat_first[row_of[first[is_stat[first]]]] = True
        is_stat = is_stat | stat_first[row_of]
    parent = _parents(ulist)
    nested = none.copy()
    if (parent >= 0).any():
        child = np.flatnonzero(parent[codes] >= 0)
        present = distinct(row_of * len(ulist) + codes)
        nested[child] = np.isin(row_of[child] * len(ulist) + parent[codes[child]], present)
    if is_stat.any():
        not_stat = np.bincount(row_of, weights=(~is_stat).astype(np.float64), minlength=n)
        stat_row = (np.bincount(row_of, minlength=n) > 0) & (not_stat == 0)
    else:  # (no statistic: no row of statistics only, and no per-value weights)
        stat_row = np.zeros(n, dtype=bool)
    why = {u: f"a statistic ({stat_of(u)}), not a part" for u, st in zip(ulist, stat_u, strict=True) if st}
    for c in distinct(codes[is_stat & ~stat_u[codes]]).tolist():
        why.setdefault(ulist[c], "a part of a statistic (its line opens with one), not a step's part")
    for c in distinct(codes[nested]).tolist():
        why.setdefault(ulist[c], f"nested in {ulist[int(parent[c])]!r}, printed beside it")
    out = is_stat | nested
    where = {u: c for c, u in enumerate(ulist)}
    known = {**_deepspeed(where), **_megatron(where), **(known or {})}
    for name, reason in known.items():
        if name in where and (at := codes == where[name]).any():
            out |= at
            why[name] = reason
    return out, stat_row, why


# ZeRO's optimizer timers (deepspeed/runtime/zero: OPTIMIZER_*_TIMER), timed inside the engine's `step`
_ZERO_TIMERS = ("optimizer_allgather", "optimizer_gradients", "optimizer_step")


def _deepspeed(where: dict[str, int]) -> dict[str, str]:
    """DeepSpeed's wall_clock_breakdown timers printed on lines of their own: a micro-step's
    timer (`forward_microstep`) lies inside its global timer (`forward`, which spans every
    micro-step of the step; with gradient accumulation 1 it repeats it), ZeRO's optimizer
    timers inside `step`: never summed beside them. Only where the global timer is printed too
    (a log of micro-step timers alone keeps them as its parts)."""
    out = {}
    for name in where:
        base = name[:-10] if name.endswith("_microstep") else ""
        if base in where:
            out[name] = (f"nested in {base!r} (DeepSpeed's micro-step timer: the global timer spans every "
                         "micro-step of its step), never counted beside it")
        elif name in _ZERO_TIMERS and "step" in where:
            out[name] = "nested in 'step' (ZeRO's optimizer timer, inside the engine's step): never counted beside it"
    return out


# Megatron-LM's timers as its training_log prints them on one line (`time (ms) | forward-compute: 58.16
# | backward-compute: 42.66 | ... | optimizer: 57.50 | batch-generator: 5.24`): which runs inside which
# (megatron/schedules.py: the schedule's forward-backward around each micro-batch's forward-compute,
# which reads its batch-generator, and backward-compute and the pipeline's sends and receives;
# training.py: backward-reduce-model-grads around the optimizer's gradient all-reduces). The
# optimizer's own timers (optimizer-inner-step in optimizer) nest by their names (_parents).
_MEGATRON_NEST = (
    ("forward-backward", ("forward-compute", "backward-compute", "batch-generator", "forward-recv", "forward-send",
                          "backward-recv", "backward-send", "forward-send-backward-recv",
                          "backward-send-forward-recv", "forward-backward-send-forward-backward-recv")),
    ("forward-compute", ("batch-generator",)),
    ("backward-reduce-model-grads", ("backward-params-all-reduce", "backward-layernorm-all-reduce",
                                     "backward-embedding-all-reduce", "backward-sequence-parallel-all-reduce")),
)


def _megatron(where: dict[str, int]) -> dict[str, str]:
    """Megatron-LM's timers printed beside the timer they run inside (_MEGATRON_NEST): never
    summed beside it. Only where that timer is printed too (its name, with Megatron's hyphens)."""
    out: dict[str, str] = {}
    for parent, kids in _MEGATRON_NEST:
        if parent in where:
            for kid in kids:
                if kid in where:
                    out.setdefault(kid, f"nested in {parent!r} (Megatron-LM's timer runs inside it), never counted beside it")
    return out


# words of a name that make a time printed once a setup (`Load time: 18507.00 ms`)
SETUP_WORDS = frozenset(("load", "loading", "init", "initialization", "startup", "warmup", "compile", "compilation"))
SETUP_WHY = "a one-off setup (printed once, beside statistics only): no step, no part of one"


def one_off_setups(codes: np.ndarray, ulist: list[str], row_of: np.ndarray, stat_row: np.ndarray,
                   timed: np.ndarray, why: dict[str, str]) -> np.ndarray:
    """Per row, whether it prints a one-off setup: in a text whose other timed rows print
    statistics only (OpenVINO GenAI's benchmark: `Load time: 18507.00 ms`, then means ± std),
    a row of one time named like a setup (SETUP_WORDS), its name printed once. Adds why for
    those names. Beside steps a load line is left as it was read (a per-step `load_ms=12` is a
    part; the input that would make this fire falsely), and so is a text without statistics."""
    none = np.zeros(len(stat_row), dtype=bool)
    other = timed & ~stat_row & (np.bincount(row_of, minlength=len(stat_row)) > 0)
    if not stat_row.any() or not other.any() or int(other.sum()) * 4 > int(stat_row.sum()):
        return none
    per_row = np.bincount(row_of, minlength=len(stat_row))
    per_name = np.bincount(codes, minlength=len(ulist))
    rows = np.flatnonzero(other)
    sel = np.isin(row_of, rows)
    if (per_row[rows] != 1).any() or (per_name[codes[sel]] != 1).any():
        return none
    names = [ulist[c] for c in codes[sel].tolist()]
    if not all(set(_words(nm)) & SETUP_WORDS for nm in names):
        return none
    for nm in names:
        why[nm] = SETUP_WHY
    none[rows] = True
    return none


def _parents(names: list[str]) -> np.ndarray:
    """Per name, the code of another name it refines, else -1: the other's words are some of
    its own, in order, starting with its first word (`bwd_allreduce` in `bwd`; DeepSpeed's
    `bwd_inner_microstep` in `bwd_microstep`); the longest such. Statistics are no parents.
    Looked up by word tuples (at most 31 per name), so many names cost linear time."""
    index: dict[tuple[str, ...], int] = {}
    words = [_words(nm) for nm in names]
    for j, w in enumerate(words):
        if stat_of(names[j]) is None:
            index.setdefault(tuple(w), j)
    out = np.full(len(names), -1, dtype=np.int64)
    for k, w in enumerate(words):
        rest = w[1:6]
        best = 0
        for mask in range(1 << len(rest)):
            sub = (w[0], *(x for b, x in enumerate(rest) if mask >> b & 1))
            j = index.get(sub, -1)
            if j >= 0 and j != k and best < len(sub) < len(w):
                out[k], best = j, len(sub)
    return out


def _words(name: str) -> list[str]:
    return [w for w in name.lower().replace("-", "_").replace(".", "_").split("_") if w] or [name]

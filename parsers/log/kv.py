"""The article's condensed form and the generic `key=value` timing format.

    mutex_wait_ms=1149 | barrier_wait_ms=0
    ntt_kernels=287ms | msm=634ms | batch_add=401 | tail_msm=198
    mutex_held_ms=1634 | total_fn=4215ms

Fields are separated by `|`, commas or whitespace. A value's unit comes from its suffix
(`ms`, `s`, `us`, `ns`) or else from the key's suffix (`_ms`, `_s`, `_us`, `_ns`). The
component name drops the key's unit suffix. In the condensed form every field is a time
(the article's keys: a bare number is milliseconds; a value that is not one is damage). In
the generic format a number is a time only when its text says so: a unit in the value or
the key, or the held key the caller named (milliseconds, kv's default unit). A bare number
under any other key is no time and is skipped: counters, metrics, rates, stamps, sizes,
ranks and config dumps (`loss=0.5`, `epoch=3`, `world_size=8`, `tokens_per_sec=812.5`,
`Namespace(workers=2, batchSize=64)`), and a time word without a unit too (`elapsed=12`,
`time=607.278`: seconds as often as ms, issue 33); a non-numeric value of a key without a
time unit is a label and ignored (`job=abc`).

A `*_bytes` key or a count key (parsers.model.COUNT_QUANTITIES: num_circuits) with a plain
number is a quantity, not a time: kept as printed (`h2d_bytes=1610612736`).

A time that is a running total (on at least 4 lines, never falling, starting below two of
its median increments: fairseq's cumulative `wall=`) is read as its differences line to line,
as in the `lines` format, and said so in the notes.

Records: a record ends at a line carrying the held key; lines after the last held line
form an incomplete record. With no held key anywhere in the log, each line is a record.
"""

from __future__ import annotations

import numpy as np

from gpuscope.parsers.log import scan as sc
from gpuscope.parsers.log.fields import (
    first_repeat,
    kv_tokens,
    number,
    repeated,
    split_key_unit,
    value_with_unit,
)
from gpuscope.parsers.log.parsed import is_quantity_key
from gpuscope.parsers.log.runtotals import running_totals
from gpuscope.parsers.log.words import is_stamp
from gpuscope.parsers.numbers import MAX_MS, beyond, quantity_damage


def _a_word(v: str) -> bool:
    """A value that starts as no number does (`<class`, `pass`): a label, even where its last
    letters read as a unit (`s`); `nan`/`inf` with a unit stay a damaged time."""
    return not v[:1].isdigit() and v[:1] not in "+-." and not v.lower().startswith(("nan", "inf"))


def read_kv(text: str, strict: bool, held: str = ""):
    """Line text -> (names, values_ms, quantity names, quantity values), None (no timing
    fields), or a reason string (damage: a time that is not a number or is negative, a name
    printed twice)."""
    names: list[str] = []
    values: list[float] = []
    qnames: list[str] = []
    qvalues: list[float] = []
    for t in kv_tokens(text):
        k, eq, v = t.partition("=")
        if not eq:
            continue  # prefix words, labels without '='
        if not k or not k.replace("_", "a").replace(".", "a").replace("-", "a").isalnum():
            if strict:
                return f"unreadable field {t[:40]!r}"
            continue
        if is_quantity_key(k):
            x = number(v)
            bad = quantity_damage(k, v, x)
            if bad is not None or x is None:  # (x None is damage: quantity_damage said why)
                return bad
            qnames.append(k)
            qvalues.append(x)
            continue
        name, key_factor = split_key_unit(k)
        x, val_factor = value_with_unit(v)
        if not strict and key_factor is None and val_factor is None and x is not None and name != held:
            continue  # `loss=0.5`, `world_size=8`: no unit; `time=607.278`, `epoch_time=150.973`: a time
            # word gives no unit either (issue 33: never assumed ms, 1000x off for a Python clock's seconds)
        if x is None:
            if not strict and key_factor is None and name != held and _a_word(v):
                continue  # `type=<class ...>`, `status=pass`: a label ending like a unit, no damaged time
            if strict or key_factor is not None or val_factor is not None or name == held:
                return f"{k[:30]}: value {v[:20]!r} is not a number"
            continue
        if x < 0:
            return f"{k[:30]}: negative time {v[:20]!r}"
        factor = val_factor if val_factor is not None else (key_factor or 1.0)
        if x * factor > MAX_MS:
            if not strict and is_stamp(name, x * factor):
                continue  # `ts_ms=1764590000123`: the line's time stamp, no duration
            return beyond(k, v, "duration")
        names.append(name)
        values.append(x * factor)
    if not names and not qnames:
        return None
    twice = first_repeat(names) or first_repeat(qnames)
    if twice is not None:
        return repeated(twice)
    return names, values, qnames, qvalues


def scan_kv(lines: list[str], idx, held: str, *, strict: bool, source: str, first: int = 1,
            lineno=None, s=None):
    """Read key=value lines; kinds: K_HELD for a line carrying the held key, else K_GPU
    (a member of the record the next held line closes). With no held key anywhere, every
    line is its own record (all K_HELD, held value unknown). Line numbers: i + first, or
    lineno[i] when given; into `s` (a new Scan when None)."""
    s = s if s is not None else sc.Scan()
    src = sc.SRC[source]
    slot = s.times.slot
    for i in idx:
        line = lines[i]
        ln = i + first if lineno is None else lineno[i]
        if len(line) > sc.MAX_LINE:
            s.too_long(ln, line)
            continue
        if "TIMELINE," in line or "_TIMING " in line:
            if s.common(ln, line) is not None:
                continue
        r = read_kv(line, strict, held)
        if r is None:
            continue
        if type(r) is str:
            s.skip(ln, r, line)
            continue
        names, values, qnames, qvalues = r
        s.timing_lines += 1
        if qnames:
            s.qrow += [len(s.meta) // 8] * len(qnames)
            s.qnames += qnames
            s.qvalues += qvalues
        if held in names:
            kind = sc.K_HELD
            s.held.append((len(s.meta) // 8, values[names.index(held)]))
        else:
            kind = sc.K_GPU
        s.meta += (ln, slot(line), kind, -1, -1, -1, len(names), src)
        s.names += names
        s.values += values
    return s


def lines_are_records(s) -> None:
    """Running totals (fairseq's cumulative `wall=33, 66, 99`) become their differences, as in
    the `lines` format (parsers/log/runtotals.py, which parsers/log/lines/records.py uses); then, with no held key
    anywhere in the log, every key=value line with a time is a record of its own (a line
    with quantities only is tied to no record)."""
    s.finalize()
    counts = s.meta[:, 6]
    mine = np.repeat(s.meta[:, 7] == sc.SRC["kv"], counts)
    totals = running_totals(s.value_names(), s.values, mine) if mine.any() else []
    if totals:
        s.notes.append("a running total, read as its differences line to line: " + ", ".join(totals)
                       + " (it grows by about the same on every line from about one step's worth)")
    if len(s.held[0]):
        return
    kind = s.meta[:, 2]
    gpu_line = kind == sc.K_GPU
    timed = s.meta[:, 6] > 0
    kind[gpu_line & timed] = sc.K_HELD
    kind[gpu_line & ~timed] = sc.K_FREE

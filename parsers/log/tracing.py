"""Rust `tracing` lines with GPU_TIMING / FIN_TIMING (cuzk-core engine.rs), e.g.

    2026-03-01T12:00:02.500000Z  INFO cuzk_core::engine: FIN_TIMING finalizer partition worker_id=0 partition=Some(3) finish_ms=410 total_ms=413

Every `<key>_ms=<n>` becomes component `<tag>.<key>` (`fin_timing.finish`); `worker_id=`
and `partition=` (`Some(3)`, `3` or `None`) fill the worker and partition columns.
"""

from __future__ import annotations

from gpuscope.parsers.log.fields import first_repeat, number, repeated
from gpuscope.parsers.numbers import duration_damage

MARKER = "_TIMING "
TAGS = {"GPU": ("GPU_TIMING", "gpu_timing."), "FIN": ("FIN_TIMING", "fin_timing.")}


def find_tag(line: str) -> int:
    """Index of `GPU_TIMING ` / `FIN_TIMING ` in the line, or -1."""
    i = line.find(MARKER)
    while i >= 0:
        if line[i - 3:i] in TAGS and (i == 3 or not line[i - 4].isalnum()):
            return i - 3
        i = line.find(MARKER, i + 1)
    return -1


def _int_of(v: str) -> int | None:
    if v.startswith("Some(") and v.endswith(")"):
        v = v[5:-1]
    elif v == "None":
        return -1
    x = number(v)
    return None if x is None or x != int(x) or abs(x) >= 1 << 62 else int(x)


def read_tracing(line: str, at: int):
    """(source, names, values, worker, partition), None (no time values), or a reason (a
    value that is not a number, a negative time, a key printed twice)."""
    source, prefix = TAGS[line[at:at + 3]]
    names: list[str] = []
    values: list[float] = []
    worker = partition = -1
    seen_ids: set[str] = set()
    for t in line[at + 11:].split():
        if "=" not in t:
            continue  # message words
        k, _, v = t.partition("=")
        if k[-3:] == "_ms":
            x = number(v)
            if (why := duration_damage(k, v, x)) is not None:
                return why
            assert x is not None  # (duration_damage refused None)
            names.append(prefix + k[:-3])
            values.append(x)
        elif k == "worker_id" or k == "partition":
            w = _int_of(v)
            if w is None:
                return f"{k}: {v[:20]!r} is not a number"
            if k in seen_ids:
                return repeated(k)
            seen_ids.add(k)
            if k == "worker_id":
                worker = w
            else:
                partition = w
    if not names:
        return None
    twice = first_repeat(names)
    if twice is not None:
        return repeated(twice)
    return source, names, values, worker, partition

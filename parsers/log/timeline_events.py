"""TIMELINE lines (cuzk-core engine.rs): `TIMELINE,<offset_ms>,<event>,<job_id>,<detail>`,
detail being `partition=<p>`, `partition=<p>,synth_ms=<ms>`, `monolithic`,
`worker=<w>[,partition=<p>][,gpu_ms=<ms>]`."""

from __future__ import annotations

import math

from gpuscope.parsers.numbers import MAX_MS, beyond, digits, number

MARKER = "TIMELINE,"
NAN = math.nan


def read_timeline(text: str):
    """Text after `TIMELINE,` -> (offset, event, job, partition, worker, synth, gpu) or a
    reason (damage: a value that is not a number, a negative synth_ms / gpu_ms, a detail
    key printed twice)."""
    parts = text.rstrip().split(",")
    if len(parts) < 3:
        return "TIMELINE line with fewer than 3 fields (truncated?)"
    offset = number(parts[0])
    if offset is None:
        return f"TIMELINE offset {parts[0][:20]!r} is not a number"
    if abs(offset) > MAX_MS:
        return beyond("TIMELINE offset", parts[0], "duration")
    event = parts[1]
    if not event.isidentifier():
        event = event.strip()
        if not event or not event.replace("_", "").isalnum():
            return f"TIMELINE event {event[:20]!r} is not an event name"
    job = parts[2].strip()
    partition = worker = -1
    synth = gpu = NAN
    seen: set[str] = set()
    for item in parts[3:]:
        k, eq, v = item.partition("=")
        if not eq:
            if item.strip() in ("", "monolithic"):
                continue
            return f"TIMELINE detail {item[:30]!r} is not key=value"
        if k in seen:
            return f"TIMELINE {k[:20]}: printed twice in one line"
        seen.add(k)
        try:
            if k == "partition":
                partition = _int(v)
            elif k == "worker":
                worker = _int(v)
            elif k == "synth_ms":
                synth = _finite(v)
            elif k == "gpu_ms":
                gpu = _finite(v)
            else:
                _finite(v)
        except (ValueError, OverflowError):
            return f"TIMELINE {k[:20]}: value {v[:20]!r} is not a number"
    if synth < 0 or gpu < 0:
        return f"TIMELINE {'synth_ms' if synth < 0 else 'gpu_ms'}: negative time"
    if synth > MAX_MS or gpu > MAX_MS:
        k = "synth_ms" if synth > MAX_MS else "gpu_ms"
        return beyond(f"TIMELINE {k}", str(synth if k == "synth_ms" else gpu), "duration")
    return offset, event, job, partition, worker, synth, gpu


def _int(v: str) -> int:
    """An ASCII integer an int64 column holds (int() also takes `٣` and `1_0`)."""
    if not digits(v[1:] if v[:1] in ("-", "+") else v):
        raise ValueError(v)
    x = int(v)
    if not -(1 << 62) < x < 1 << 62:
        raise ValueError(v)
    return x


def _finite(v: str) -> float:
    x = number(v)
    if x is None:
        raise ValueError(v)
    return x

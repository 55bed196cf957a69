"""TIMELINE lines (cuzk-core engine.rs): `TIMELINE,<offset_ms>,<event>,<job_id>,<detail>`,
detail being `partition=<p>`, `partition=<p>,synth_ms=<ms>`, `monolithic`,
`worker=<w>[,partition=<p>][,gpu_ms=<ms>]`."""

from __future__ import annotations

import math

from parsers.fields import number

MARKER = "TIMELINE,"
NAN = math.nan


def read_timeline(text: str):
    """Text after `TIMELINE,` -> (offset, event, job, partition, worker, synth, gpu) or a reason."""
    parts = text.rstrip().split(",", 3)
    if len(parts) < 3:
        return "TIMELINE line with fewer than 3 fields (truncated?)"
    offset = number(parts[0])
    if offset is None:
        return f"TIMELINE offset {parts[0][:20]!r} is not a number"
    event = parts[1].strip()
    if not event or not event.replace("_", "").isalnum():
        return f"TIMELINE event {event[:20]!r} is not an event name"
    job = parts[2].strip()
    partition = worker = -1
    synth = gpu = NAN
    if len(parts) == 4:
        for item in parts[3].split(","):
            item = item.strip()
            if not item or item == "monolithic":
                continue
            k, eq, v = item.partition("=")
            if not eq:
                return f"TIMELINE detail {item[:30]!r} is not key=value"
            x = number(v)
            if x is None:
                return f"TIMELINE {k[:20]}: value {v[:20]!r} is not a number"
            if k == "partition":
                partition = int(x)
            elif k == "worker":
                worker = int(x)
            elif k == "synth_ms":
                synth = x
            elif k == "gpu_ms":
                gpu = x
    return offset, event, job, partition, worker, synth, gpu

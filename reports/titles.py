"""Titles of the pictures and traces: what a reader needs to tell two timelines apart."""

from __future__ import annotations


def timeline_title(name: str, *, mode: str | None = None, records: int | None = None,
                   log_n: int | None = None, units: str = "partitions", unit: str | None = None,
                   steps_per_record: int = 1) -> str:
    """`gpuscope timeline: <name> (pageable host memory, 16 partitions, log-n 24)`; `units` /
    `unit`: what the records are called, and one of them (the role model's vocabulary:
    partitions, steps, ...; `1 step`, never `1 steps`); `steps_per_record`: a log printing every
    K-th step, whose records each stand for K steps (said, with the steps in all)."""
    bits = []
    if mode == "record":
        bits.append("gpuscope record")
    elif mode:
        bits.append(f"{mode} host memory")
    if records:
        bits.append(f"{records} {unit if records == 1 and unit else units}" + (
            f", each standing for {steps_per_record} steps: {records * steps_per_record:,} in all"
            if steps_per_record > 1 else ""))
    if log_n:
        bits.append(f"log-n {log_n}")
    return f"gpuscope timeline: {name}" + (f" ({', '.join(bits)})" if bits else "")


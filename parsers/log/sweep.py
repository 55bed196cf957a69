"""A sweep over sizes printed one time a size (halo2's KZG proving times,
privacy-ethereum/zkevm-circuits#60): `K-8 - 28 ms`, `K-15 - 630 ms`, ... `K-24 - 272.58 s`.
Each line is a configuration of its own, never a step of one run: the `lines` reader reads
none of them (the label holds the size), and the refusal says what the text is
(logparse.no_timing_lines) instead of naming the prose line nearest to it.

Would fire falsely on per-device lines (`GPU-0 - 28 ms`, `GPU-1 - 29 ms`): so it needs the
sizes and the times both rising on every line, the last time at least ten times the first
(a device's index rises, its times stay alike: tests/test_unitless_sweep.py)."""

from __future__ import annotations

import re

from gpuscope.parsers.numbers import TIME_UNITS

# `K-8 - 28 ms`, `K=15: 630ms`, `n 1024 | 3.93 s`: a label, its size, a separator, a time with its unit
_ROW = re.compile(r"^\s*([A-Za-z][A-Za-z_]{0,15})\s?[-=_ ]\s?(\d{1,9})\s*[-:|]\s*(\d+(?:\.\d+)?)\s?([a-zµμ]{1,4})\s*$")
MIN_ROWS = 3


def sweep_of(head: str) -> str | None:
    """`a sweep over K (K-8, K-15, K-18, ...)` when the head's lines of that shape (one label)
    print rising sizes with rising times, else None."""
    rows: dict[str, list[tuple[int, float, str]]] = {}
    for line in head.split("\n", 2000)[:2000]:
        m = _ROW.match(line)
        unit = dict(TIME_UNITS).get(m.group(4)) if m else None
        if m is not None and unit is not None:
            rows.setdefault(m.group(1), []).append((int(m.group(2)), float(m.group(3)) * unit, line.strip()))
    for label, r in rows.items():
        sizes, times = [s for s, _t, _l in r], [t for _s, t, _l in r]
        rising = all(b > a for a, b in zip(sizes, sizes[1:], strict=False)) and all(
            b > a for a, b in zip(times, times[1:], strict=False))
        if len(r) >= MIN_ROWS and rising and times[0] > 0 and times[-1] >= 10 * times[0]:
            shown = ", ".join(repr(ln) for _s, _t, ln in r[:3])
            return f"a sweep over {label} ({shown}, ...): one time a configuration, each larger, not steps of one run"
    return None

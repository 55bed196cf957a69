"""The lines' own stamps as the evidence of a unit (issue 33 class 3): a stamped logger's line
per epoch, `epoch_time=150.973` (dk-liang/CLTR#15), prints no unit, but its lines are ~150 s
apart. A bare time-named number is read as seconds when, over the head of the log, the time
between one line printing it and the next agrees with it in seconds (within 5% and the stamps'
resolution) on at least three pairs and three in four of them.

Would fire falsely on a per-line time in ms that happened to equal the stamps' gaps in seconds:
three pairs of equal numbers 1000x apart in unit do not happen by chance; a time that covers
less than the gap (an evaluation between epochs) does not agree, and is no duration
(tests/test_unitless_stamps.py)."""

from __future__ import annotations

import math
import re
from functools import lru_cache

from gpuscope.parsers.log.lines.line import State, read_line
from gpuscope.parsers.log.prefix import PrefixClock

HEAD_LINES = 500
MIN_PAIRS = 3
_TIME_WORD = re.compile(r"time|elapsed|took|latency|duration|wall|data").search  # (of the line lowered: ~8x (?i)'s speed)
_SKELETON = str.maketrans("123456789", "000000000")


def stamp_seconds(lines: list[str], held: str | None = None) -> frozenset[str]:
    """The names of bare time-named numbers whose unit the lines' stamps give (seconds)."""
    head = tuple(ln[:4096].rsplit("\r", 1)[-1] for ln in lines[:HEAD_LINES])  # (as the scan: a cap, a bar's last redraw)
    return _stamp_seconds(head, held)


@lru_cache(maxsize=1)  # (format detection's sample and the scan's head: the same lines, read once)
def _stamp_seconds(head: tuple[str, ...], held: str | None) -> frozenset[str]:
    clock = PrefixClock()
    stamps = [clock.ts(line) for line in head]
    if sum(not math.isnan(t) for t in stamps) < MIN_PAIRS + 1:
        return frozenset()
    st = State(held)
    st.plans = None  # (every line read in full: a replayed line would note nothing)
    st.unsourced = []
    seen: dict[str, list[tuple[float, float]]] = {}
    quiet: set[str] = set()  # the shapes read once without a unit-less time: not read again
    for line, ts in zip(head, stamps, strict=True):
        if math.isnan(ts) or not _TIME_WORD(line.lower()):
            continue  # (no stamp, or no word a unit-less time could be named by)
        shape = line.translate(_SKELETON)
        if shape in quiet:
            continue
        st.unsourced.clear()
        read_line(line, st)
        if not st.unsourced:
            quiet.add(shape)
        for name, x in st.unsourced:
            seen.setdefault(name, []).append((ts, x))
    coarse = all(math.isnan(t) or t == int(t) for t in stamps)  # (stamps to the second)
    slack = 1.0 if coarse else 0.002
    out = set()
    for name, got in seen.items():
        pairs = [(b[0] - a[0], b[1]) for a, b in zip(got, got[1:], strict=False) if b[0] > a[0]]
        agree = sum(abs(x - gap) <= 0.05 * gap + slack for gap, x in pairs)
        if len(pairs) >= MIN_PAIRS and agree * 4 >= len(pairs) * 3:
            out.add(name)
    return frozenset(out)

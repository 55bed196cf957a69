"""The quantities of a line's fields (parsers/log/lines/fields.py Line inherits them): a size printed
after a number (`copy 512 MiB`), a counter's `i/N`, a byte count, a time stamp. None of them
is a time; each is noted for the replay plan (parsers/log/lines/plan.py) as linefields notes a time."""

from __future__ import annotations

from typing import Any

from gpuscope.parsers.log.lines.plan import UNCACHEABLE
from gpuscope.parsers.log.lines.vocabulary import (
    BARE,
    HAS_BYTES,
    LINES_ONLY,
    MAX_BYTES,
    MAX_COUNT,
    P_NOSTAMP,
    P_Q,
    P_QPOS,
    P_SIZE,
    P_STAMP,
    SIZE_WORDS,
    stamp_ms,
)
from gpuscope.parsers.log.words import COUNTER
from gpuscope.parsers.numbers import beyond


class Quantities:
    """Methods of Line (parsers/log/lines/fields.py) for the numbers that are no times."""

    # (set by Line: what these methods read and write)
    note: Any
    hurt: Any
    qn: list
    qv: list
    i: int
    sized: str | None
    flags: int
    stamp: float | None

    def size(self, key: str, name: str, v: str, x: float, nxt: str, vt, pre, strip) -> None:
        """`copy 512 MiB`: a size, not a time (a byte quantity named `<name>_bytes`)."""
        f = SIZE_WORDS[nxt.rstrip(":")]
        if x < 0:
            self.note(UNCACHEABLE)
            return
        if x * f > MAX_BYTES:
            self.note(UNCACHEABLE)
            self.hurt(beyond(key, v, "size"))
            return
        self.note((P_SIZE, vt, pre, strip, f"{name}_bytes", f))
        self.qn.append(f"{name}_bytes")
        self.qv.append(float(round(x * f)))  # (alone: no timing line)
        if nxt[-1] != ":":
            self.i += 1  # (`MiB:` is the next label: it belongs to this key)
        self.sized = key

    def counter_frac(self, key: str, v: str, x: float, cls: int, vt, pre, strip) -> None:
        """`step 12/40`: a counter keeps 12."""
        if cls != COUNTER:
            return
        if x > MAX_COUNT:
            self.note(UNCACHEABLE)
            self.hurt(beyond(key, v, "count"))
            return
        self.note((P_Q, vt, pre, strip, key, None))
        self.qn.append(key)
        self.qv.append(x)
        self.flags |= LINES_ONLY

    def byte_count(self, key: str, v: str, x: float, kind: int, vt, pre, strip) -> None:
        if kind != BARE or x < 0:
            self.hurt(f"{key[:30]}: value {v[:20]!r} is not a count")
        elif x > MAX_BYTES:
            self.note(UNCACHEABLE)
            self.hurt(beyond(key, v, "size"))
        else:
            self.note((P_QPOS, vt, pre, strip, key, None))
            self.qn.append(key)
            self.qv.append(x)
            self.flags |= HAS_BYTES

    def stamped(self, x: float, factor, vt, pre, strip) -> bool:
        """A stamp-named field holding a point in time: the line's own time."""
        ms = stamp_ms(x, factor)
        if ms is not None:
            self.note((P_STAMP, vt, pre, strip, None, factor))
            self.stamp = ms / 1e3
            self.flags |= LINES_ONLY
            return True
        self.note((P_NOSTAMP, vt, pre, strip, None, factor))
        return False

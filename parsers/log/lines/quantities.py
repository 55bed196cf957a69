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

    def size(self, key: str, name: str, value: str, number: float, nxt: str, value_at: int, prefix: str, strip: int) -> None:
        """`copy 512 MiB`: a size, not a time (a byte quantity named `<name>_bytes`)."""
        f = SIZE_WORDS[nxt.rstrip(":")]
        if number < 0:
            self.note(UNCACHEABLE)
            return
        if number * f > MAX_BYTES:
            self.note(UNCACHEABLE)
            self.hurt(beyond(key, value, "size"))
            return
        self.note((P_SIZE, value_at, prefix, strip, f"{name}_bytes", f))
        self.qn.append(f"{name}_bytes")
        self.qv.append(float(round(number * f)))  # (alone: no timing line)
        if nxt[-1] != ":":
            self.i += 1  # (`MiB:` is the next label: it belongs to this key)
        self.sized = key

    def counter_frac(self, key: str, value: str, number: float, cls: int, value_at: int, prefix: str, strip: int) -> None:
        """`step 12/40`: a counter keeps 12."""
        if cls != COUNTER:
            return
        if number > MAX_COUNT:
            self.note(UNCACHEABLE)
            self.hurt(beyond(key, value, "count"))
            return
        self.note((P_Q, value_at, prefix, strip, key, None))
        self.qn.append(key)
        self.qv.append(number)
        self.flags |= LINES_ONLY

    def byte_count(self, key: str, value: str, number: float, kind: int, value_at: int, prefix: str, strip: int) -> None:
        if kind != BARE or number < 0:
            self.hurt(f"{key[:30]}: value {value[:20]!r} is not a count")
        elif number > MAX_BYTES:
            self.note(UNCACHEABLE)
            self.hurt(beyond(key, value, "size"))
        else:
            self.note((P_QPOS, value_at, prefix, strip, key, None))
            self.qn.append(key)
            self.qv.append(number)
            self.flags |= HAS_BYTES

    def stamped(self, number: float, factor: float | None, value_at: int, prefix: str, strip: int) -> bool:
        """A stamp-named field holding a point in time: the line's own time."""
        ms = stamp_ms(number, factor)
        if ms is not None:
            self.note((P_STAMP, value_at, prefix, strip, None, factor))
            self.stamp = ms / 1e3
            self.flags |= LINES_ONLY
            return True
        self.note((P_NOSTAMP, value_at, prefix, strip, None, factor))
        return False

"""Per-line times, one slot per timing line, resolved as the lines are read.

An ISO-8601 prefix (tracing, docker -t, kubectl --timestamps, gpuscope's own timing.log) is
read as its minute's epoch seconds (cached per minute) plus the seconds it prints:
`base + float("SS.ffffff")`, the same sum in the Python scanner and in the compiled one
(parsers/_scan.c), so both give the same floats. Other prefixes (journald, kubectl
`[pod/...]`, compose `svc | `, ANSI-wrapped) go through PrefixClock.
"""

from __future__ import annotations

import math

import numpy as np

from gpuscope.parsers.log.prefix import PrefixClock

NAN = math.nan

# which first characters give NaN without a look at the clock (a line that starts with its
# marker has no prefix): the generic rule, and the CuZK reader's for its TIMELINE lines
NO_PREFIX = frozenset(("C", "T", " ", ""))
NO_PREFIX_TIMELINE = frozenset(("T", " ", ""))


class LineTimes:
    def __init__(self, clock: PrefixClock | None = None):
        self.clock = clock or PrefixClock()
        self.values: list[float] = []  # one per slot
        self.own: list[tuple[int, float]] = []  # (slot, epoch s): a time the line itself prints
        self._zulu = self.clock._iso  # (minute key, "Z") -> the minute's epoch seconds

    def iso(self, tok: str) -> float:
        """Epoch seconds of an ISO-8601 token (`2026-11-30T14:00:00.123456Z`), NaN if unreadable."""
        base = self._zulu.get((tok[:17], "Z"))
        if base is not None and tok[-1:] == "Z" and len(tok) <= 57:
            num = tok[17:-1]
            if num[:2].isdigit() and "," not in num:
                try:
                    secs = float(num)
                except ValueError:
                    secs = NAN
                if 0.0 <= secs < 61.0:
                    return base + secs
        return self.clock._iso_at(tok, 0)

    def ts_of(self, line: str, no_prefix: frozenset = NO_PREFIX) -> float:
        """The time of a line's prefix (NaN without one); `no_prefix`: the first characters
        that mean no prefix without asking the clock."""
        if line[10:11] == "T" and line[4:5] == "-":
            sp = line.find(" ")
            return self.iso(line[:sp] if sp > 0 else line)
        if line[:1] in no_prefix:
            return NAN
        return self.clock.ts(line)

    def slot(self, line: str, no_prefix: frozenset = NO_PREFIX) -> int:
        """Reserve a slot holding this line's time; returns its index."""
        vals = self.values
        vals.append(self.ts_of(line, no_prefix))
        return len(vals) - 1

    def override(self, slot: int, ts: float) -> None:
        """The line prints its own time (`printed_at=`): it wins over its prefix's."""
        self.own.append((slot, ts))

    def array(self) -> np.ndarray:
        out = np.asarray(self.values, dtype=np.float64)
        for slot, ts in self.own:
            out[slot] = ts
        return out

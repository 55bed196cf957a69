"""Per-line times, collected during a scan and converted in bulk at the end.

ISO-8601 prefixes (the common case: tracing, docker -t, kubectl --timestamps, gpuscope's
timing.log) are gathered as strings and converted by one pandas call; other prefixes
(journald, kubectl `[pod/...]`, compose `svc | `, ANSI-wrapped) go through PrefixClock.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from gpuscope.parsers.prefix import PrefixClock

NAN = math.nan
_EPOCH = pd.Timestamp("1970-01-01", tz="UTC")


class LineTimes:
    def __init__(self, clock: PrefixClock | None = None):
        self.clock = clock or PrefixClock()
        self.values: list[float] = []  # one per slot
        self.iso_tok: list[str] = []
        self.iso_slot: list[int] = []
        self.own: list[tuple[int, float]] = []  # (slot, epoch s): a time the line itself prints

    def slot(self, line: str) -> int:
        """Reserve a slot holding this line's time; returns its index."""
        vals = self.values
        n = len(vals)
        if line[10:11] == "T" and line[4:5] == "-":
            sp = line.find(" ")
            self.iso_tok.append(line[:sp] if sp > 0 else line)
            self.iso_slot.append(n)
            vals.append(NAN)
            return n
        c = line[:1]
        if c == "C" or c == "T" or c == " " or c == "":
            vals.append(NAN)
        else:
            vals.append(self.clock.ts(line))
        return n

    def override(self, slot: int, ts: float) -> None:
        """The line prints its own time (`printed_at=`): it wins over its prefix's."""
        self.own.append((slot, ts))

    def array(self) -> np.ndarray:
        out = np.asarray(self.values, dtype=np.float64)
        if self.iso_tok:
            dt = pd.to_datetime(pd.Series(self.iso_tok, dtype=object), format="ISO8601",
                                utc=True, errors="coerce")
            secs = np.array((dt - _EPOCH).dt.total_seconds(), dtype=np.float64)  # writable copy
            bad = np.flatnonzero(np.isnan(secs))
            iso = self.clock._iso_at
            for k in bad:  # forms pandas does not take (comma decimals, a trailing ']')
                secs[k] = iso(self.iso_tok[k], 0)
            out[np.asarray(self.iso_slot, dtype=np.int64)] = secs
        for slot, ts in self.own:
            out[slot] = ts
        return out

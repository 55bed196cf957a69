"""Line prefixes that carry a time: ISO-8601 / RFC 3339 (tracing, docker -t, kubectl
--timestamps, gpuscope's own timing.log), journald's short format, kubectl's `[pod/...]`
prefix and docker compose's `service | ` prefix.

`PrefixClock.ts(line)` returns epoch seconds or NaN. Conventions (documented in
docs/ARCHITECTURE.md):

- ISO times without an offset are UTC (gpuscope writes UTC with `Z`).
- journald's short format (`Nov 30 14:30:00 host unit[pid]: ...`) has no year and no
  zone: it is read as local time of the machine running gpuscope (what journalctl
  prints), in the current year; a time more than a day in the future is taken to be from
  the previous year (a December log read in January).
"""

from __future__ import annotations

import math
import re
from datetime import UTC, datetime, timedelta, timezone

NAN = math.nan
_MONTHS = {m: i for i, m in enumerate(
    ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"), 1)}
ANSI = re.compile(r"\x1b\[[0-9;?]{0,32}[A-Za-z]")
_COMPOSE = re.compile(r"[\w.-]{1,64}[ \t]{1,64}\|[ \t]")


def strip_ansi(line: str) -> str:
    return ANSI.sub("", line) if "\x1b" in line else line


class PrefixClock:
    """Reads the time a line's prefix carries, caching per minute / per second."""

    def __init__(self, now: datetime | None = None):
        self._iso: dict[tuple[str, str], float] = {}
        self._jd: dict[str, float] = {}
        self._now = now or datetime.now()

    def ts(self, line: str) -> float:
        c = line[:1]
        if "0" <= c <= "9":
            if line[4:5] == "-" and line[13:14] == ":":
                return self._iso_at(line, 0)
            return NAN
        if c == "" or c == " ":
            return NAN
        return self._slow(line, 0)

    def _slow(self, line: str, depth: int) -> float:
        if depth > 2:
            return NAN
        c = line[:1]
        if "0" <= c <= "9":
            if line[4:5] == "-" and line[13:14] == ":":
                return self._iso_at(line, 0)
            return NAN
        if c == "\x1b":
            return self._slow(strip_ansi(line[:200]), depth + 1)
        if line[3:4] == " " and line[:3] in _MONTHS:
            return self._journald(line)
        if c == "[":
            j = line.find("] ", 0, 256)
            if j > 0:
                return self._slow(line[j + 2:].lstrip(" "), depth + 1)
            return NAN
        if " | " in line[:80] or "\t| " in line[:80]:
            m = _COMPOSE.match(line)
            if m:
                return self._slow(line[m.end():].lstrip(" "), depth + 1)
        return NAN

    def _iso_at(self, line: str, off: int) -> float:
        key = line[off:off + 17]  # YYYY-MM-DDTHH:MM:
        if len(key) < 17 or key[10] not in "T " or key[16] != ":":
            return NAN
        end = off + 17
        n = len(line)
        # the seconds/fraction/offset token ends at whitespace, ']' or end of line
        sp = line.find(" ", end, end + 40)
        if sp < 0:
            sp = min(n, end + 40)
        tail = line[end:sp].rstrip("]\t")
        tz = ""
        if tail.endswith("Z") or tail.endswith("z"):
            num = tail[:-1]
            tz = "Z"
        else:
            i = max(tail.rfind("+"), tail.rfind("-"))
            if i > 0:
                num, tz = tail[:i], tail[i:]
            else:
                num = tail
        if "," in num:
            num = num.replace(",", ".")
        if not num[:2].isdigit():
            return NAN
        try:
            secs = float(num)
        except ValueError:
            return NAN
        if not 0.0 <= secs < 61.0:
            return NAN
        base = self._iso.get((key, tz))
        if base is None:
            base = _iso_minute(key, tz)
            self._iso[(key, tz)] = base
        return base + secs

    def _journald(self, line: str) -> float:
        key = line[:15]  # "Nov 30 14:30:00"
        base = self._jd.get(key)
        if base is None:
            base = self._journald_base(key)
            self._jd[key] = base
        if line[15:16] == "." and base == base:
            sp = line.find(" ", 16, 40)
            frac = line[15:sp] if sp > 0 else ""
            if frac[1:].isdigit():
                return base + float("0" + frac)
        return base

    def _journald_base(self, key: str) -> float:
        try:
            month = _MONTHS[key[:3]]
            day = int(key[4:6])
            hh, mm, ss = int(key[7:9]), int(key[10:12]), int(key[13:15])
            if key[9] != ":" or key[12] != ":":
                return NAN
            year = self._now.year
            dt = datetime(year, month, day, hh, mm, ss)
            if dt > self._now + timedelta(days=1):
                dt = dt.replace(year=year - 1)
            return dt.timestamp()  # naive -> local time
        except (KeyError, ValueError, OverflowError, OSError):
            return NAN


def _iso_minute(key: str, tz: str) -> float:
    try:
        if not (key[:4].isdigit() and key[5:7].isdigit() and key[8:10].isdigit()
                and key[11:13].isdigit() and key[14:16].isdigit()):
            return NAN
        if tz in ("", "Z"):
            zone = UTC
        else:
            sign = -1 if tz[0] == "-" else 1
            digits = tz[1:].replace(":", "")
            if len(digits) != 4 or not digits.isdigit():
                return NAN
            zone = timezone(sign * timedelta(hours=int(digits[:2]), minutes=int(digits[2:])))
        dt = datetime(int(key[:4]), int(key[5:7]), int(key[8:10]), int(key[11:13]),
                      int(key[14:16]), tzinfo=zone)
        return dt.timestamp()
    except (ValueError, OverflowError):
        return NAN

"""The one number reader of every format: what a printed number is, and where its value
stops being a measurement.

A number is an ASCII numeral in the one form the formats print (C's printf, Python's
str/repr/format, Rust's Display, Go's fmt):

    [+-]? ( digits [ . digits* ] | . digits ) ( [eE] [+-]? digits )?

Nothing else is a number, even where Python's float() reads it: digits of other scripts
(Arabic-Indic `٩٨٧`, fullwidth `９８`, mathematical `𝟏`), `_` between digits (`98_765`),
surrounding blanks, `inf`, `nan`, `infinity`, a second point (`12..`), a quote or an
apostrophe between digits (`9876'5432`). The compiled scanner (parsers/_scan.c,
parse_number) reads exactly this grammar, so both scanners agree.

A number that reads may still be no measurement: a finite value beyond any plausible one
of its kind (`h2d_ms=1e308`) is damage, as a value that does not read is. LIMITS holds the
bounds, per kind of value:

    duration    0 .. 1e11 ms (about 3 years; a whole run, a cumulative wall clock fit)
    size        0 .. 2**64 bytes
    rate        0 .. 1e18 per second (bytes, FLOPs, tokens, samples)
    count       0 .. 2**53 (an index, a counter, a step: exact in a float)
    percent     0 .. 100

API (small on purpose; every reader of printed numbers uses it):

    number(text)            -> float | None   the numeral's value, None for anything else
    digits(text)            -> bool           text is ASCII digits only (an unsigned integer)
    within(x, kind)         -> bool           lo <= x <= hi for that kind (LIMITS)
    value(text, kind)       -> float | None   number() then within()
    split_unit(text, units) -> (head, factor) the longest matching suffix of `units` split off
    beyond(key, text, kind) -> str            the damage reason for a value out of bounds
    TIME_UNITS, SIZE_UNITS                    value suffixes -> milliseconds / bytes
"""

from __future__ import annotations

_START = frozenset("0123456789+-.")
_END = frozenset("0123456789.")

MAX_MS = 1e11
LIMITS: dict[str, tuple[float, float]] = {
    "duration": (0.0, MAX_MS),
    "size": (0.0, float(2**64)),
    "rate": (0.0, 1e18),
    "count": (0.0, float(2**53)),
    "percent": (0.0, 100.0),
}
_UNIT_OF = {"duration": "ms", "size": "bytes", "rate": "/s", "count": "", "percent": "%"}

# value suffixes the formats print, longest first so `ms` wins over `s`
TIME_UNITS: tuple[tuple[str, float], ...] = (
    ("msecs", 1.0), ("msec", 1.0), ("usecs", 1e-3), ("usec", 1e-3), ("nsecs", 1e-6), ("nsec", 1e-6),
    ("secs", 1e3), ("sec", 1e3), ("mins", 6e4), ("min", 6e4), ("ms", 1.0), ("us", 1e-3),
    ("\u00b5s", 1e-3), ("\u03bcs", 1e-3), ("ns", 1e-6), ("s", 1e3))
SIZE_UNITS: tuple[tuple[str, float], ...] = (
    ("KiB", 2.0**10), ("MiB", 2.0**20), ("GiB", 2.0**30), ("TiB", 2.0**40), ("KB", 1e3), ("MB", 1e6),
    ("GB", 1e9), ("TB", 1e12), ("B", 1.0))


def number(text: str) -> float | None:
    """The value of an ASCII numeral in the formats' one form (module docstring), or None."""
    if not text or text[0] not in _START or text[-1] not in _END or "_" in text or not text.isascii():
        return None
    try:
        x = float(text)
    except ValueError:
        return None
    if x - x != 0.0:  # inf (1e999): no measurement
        return None
    return x


def digits(text: str) -> bool:
    """ASCII digits only, at least one (`str.isdigit` also takes `٣` and `²`)."""
    return text.isdigit() and text.isascii()


def within(x: float, kind: str) -> bool:
    lo, hi = LIMITS[kind]
    return lo <= x <= hi


def value(text: str, kind: str) -> float | None:
    """number(text) when it lies within the bounds of `kind`, else None."""
    x = number(text)
    return x if x is not None and within(x, kind) else None


def split_unit(text: str, units: tuple[tuple[str, float], ...]) -> tuple[str, float | None]:
    """`12.5ms` -> ("12.5", 1.0); `512MiB` with SIZE_UNITS -> ("512", 1048576.0); no
    suffix of `units` -> (text, None). The head is not checked: pass it to number()."""
    for suffix, factor in units:
        if text.endswith(suffix) and len(text) > len(suffix):
            return text[: -len(suffix)], factor
    return text, None


def beyond(key: str, text: str, kind: str) -> str:
    """The damage reason of a value that reads but lies outside its kind's bounds."""
    lo, hi = LIMITS[kind]
    unit = _UNIT_OF[kind]
    return f"{key[:30]}: value {text[:20]!r} is beyond any {kind} ({lo:g}..{hi:g}{(' ' + unit) if unit else ''})"


def duration_damage(key: str, text: str, x: float | None) -> str | None:
    """The damage reason of a duration printed as `text` and read as `x` (ms): not a number,
    negative, or beyond any duration; None when it holds."""
    if x is None:
        return f"{key[:30]}: value {text[:20]!r} is not a number"
    if x < 0:
        return f"{key[:30]}: negative time {text[:20]!r}"
    return beyond(key, text, "duration") if x > MAX_MS else None


def quantity_damage(key: str, text: str, x: float | None) -> str | None:
    """The damage reason of a quantity (`*_bytes` a size, any other a count) printed as `text`
    and read as `x`: not a number or negative, or beyond its kind's bounds; None when it holds."""
    if x is None or x < 0:
        return f"{key[:30]}: value {text[:20]!r} is not a count"
    kind = "size" if key.endswith("bytes") else "count"
    return None if within(x, kind) else beyond(key, text, kind)

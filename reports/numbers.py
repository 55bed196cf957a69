"""How every report writes a number: one set of formatters for the console tables (analyze,
compare, run) so the same figure reads the same everywhere. A missing value (None, NaN,
inf) is "-"."""

from __future__ import annotations

import math
from numbers import Real
from typing import Any


def is_num(v: Any) -> bool:
    """A finite real number (numpy scalars too; not a bool)."""
    return isinstance(v, Real) and not isinstance(v, bool) and math.isfinite(v)


def ms(v: Any, nd: int = 1) -> str:
    """Milliseconds with a thousands separator: 1,634.0."""
    return f"{v:,.{nd}f}" if is_num(v) else "-"


def cms(v: Any) -> str:
    """Compact milliseconds: no decimals from 100 ms up (1,634; 98.5)."""
    if not is_num(v):
        return "-"
    return f"{v:,.0f}" if abs(v) >= 100 else f"{v:.1f}"


def rms(v: Any) -> str:
    """Compact milliseconds for ranges, without a thousands separator (1634; 98.5)."""
    if not is_num(v):
        return "-"
    return f"{v:.0f}" if abs(v) >= 100 else f"{v:.1f}"


def num(v: Any, nd: int = 3) -> str:
    return f"{v:.{nd}f}" if is_num(v) else "-"


def pct(v: Any, nd: int = 1) -> str:
    """A share 0..1 as a percentage: 0.596 -> 59.6%."""
    return f"{v * 100:.{nd}f}%" if is_num(v) else "-"


def signed_pct(v: Any) -> str:
    """A relative error as a signed percentage: -0.041 -> -4.1%."""
    return f"{v * 100:+.1f}%" if is_num(v) else "-"


def secs(v: Any, nd: int = 2) -> str:
    """Seconds with `nd` decimals; a duration too short for them is written in milliseconds
    with two significant digits (4.1 ms, 0.32 ms: not 0.00 s, which would say it is zero, nor
    0.00032 s, which a reader has to count the zeros of)."""
    if not is_num(v):
        return "-"
    if v and abs(v) < 0.5 * 10.0 ** -nd:
        m = v * 1e3
        d = max(0, 1 - math.floor(math.log10(abs(m))))  # two significant digits, never 6.5e-02
        return f"{round(m, d):.{d}f} ms"
    return f"{v:,.{nd}f} s"


def gbs(v: Any) -> str:
    return f"{v:.1f} GB/s" if is_num(v) else "-"

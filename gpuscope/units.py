"""Sizes as users type them, one rule for every option that takes bytes (--abc-bytes,
bandwidth --sizes): K/M/G/T and KiB/MiB/GiB/TiB are binary (1536M = 1.5G = 1.5 GiB),
KB/MB/GB/TB are decimal (1.5GB = 1,500,000,000), B and plain digits are bytes.
Documented in docs/CLI.md."""

from __future__ import annotations

import re

from gpuscope.errors import UsageError

_SIZE = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*([kmgt]?)(i?b?)\s*$", re.IGNORECASE)
_POW = {"": 0, "k": 1, "m": 2, "g": 3, "t": 4}
EXAMPLE = "e.g. 1536M, 1.5G, 1.5GB, 1610612736"


def parse_size(text: str, option: str = "size") -> int:
    """Bytes from `1536M`, `1.5G`, `1.5GiB`, `1610612736`, `1.6GB` (see the module rule).
    UsageError naming `option` for anything else or a size that is not positive."""
    m = _SIZE.match(text or "")
    if not m:
        raise UsageError(f"{option}: bad size {text!r} ({EXAMPLE})")
    value, unit, suffix = float(m.group(1)), m.group(2).lower(), m.group(3).lower()
    base = 1000 if suffix == "b" and unit else 1024  # MB, GB: decimal; M, MiB, plain B: binary
    n = int(round(value * base ** _POW[unit]))
    if n <= 0:
        raise UsageError(f"{option}: bad size {text!r}: must be positive")
    return n

"""Units: sizes as users type them and as messages print them (`fmt_bytes`), and what a PCIe
link can carry.

Sizes: one rule for every option that takes bytes (--abc-bytes, bandwidth --sizes):
K/M/G/T and KiB/MiB/GiB/TiB are binary (1536M = 1.5G = 1.5 GiB), KB/MB/GB/TB are decimal
(1.5GB = 1,500,000,000), B and plain digits are bytes. Documented in docs/CLI.md."""

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


# Per-lane raw rate (GT/s) and encoding efficiency per PCIe generation.
_PCIE_GEN = {1: (2.5, 8 / 10), 2: (5.0, 8 / 10), 3: (8.0, 128 / 130), 4: (16.0, 128 / 130),
             5: (32.0, 128 / 130), 6: (64.0, 242 / 256)}


def pcie_link_rate_gbs(gen: int | None, width: int | None) -> float | None:
    """Theoretical one-direction payload-free line rate of a PCIe link in GB/s (1e9)."""
    if not gen or not width or gen not in _PCIE_GEN:
        return None
    gts, eff = _PCIE_GEN[gen]
    return gts * eff / 8.0 * width


def fmt_bytes(n: int) -> str:
    """Bytes as messages say them: `1.50 GiB`, `12.0 MiB`, `512 B`."""
    if n >= 1 << 30:
        return f"{n / (1 << 30):.2f} GiB"
    if n >= 1 << 20:
        return f"{n / (1 << 20):.1f} MiB"
    return f"{n} B"

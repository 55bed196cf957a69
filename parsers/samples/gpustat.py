"""gpustat's output (`gpustat -i 1 > gpus.txt`, or its lines pasted): each round a host line
with the time, then a line per GPU:

    server1                      Mon Dec  7 10:00:01 2026  550.54.15
    [0] NVIDIA H100 80GB HBM3 | 38°C,  47 % | 40211 / 81559 MB | python/41234(40202M)

read as the --query-gpu capture it shows (timestamp, index, temperature.gpu, utilization.gpu,
and power.draw where `-P` printed it: parsers.samples.read_query_gpu reads the CSV this writes).
Its % is utilization.gpu. Its memory column is left unread (gpustat prints MiB under "MB"; no
figure of gpuscope's needs it). A GPU line without a time line before it has no time: the
capture is refused, saying so."""

from __future__ import annotations

import re

from gpuscope.errors import NoDataError
from gpuscope.parsers.samples.smi_table import CTIME

_HOST = re.compile(rf"^\S+\s+({CTIME})\s+\d+\.\d+")
_GPU = re.compile(r"^\[(\d{1,3})\] [^|]+\|\s*(-?\d+)'?\u00b0?C,\s*(\d+|\?\?)\s*%(?:,\s*(\d+|\?\?)\s*/\s*\d+\s*W)?\s*\|")
HEADER = "timestamp, index, temperature.gpu, utilization.gpu [%], power.draw [W]"


def looks_like_gpustat(head: str) -> bool:
    """A host line with its time, then a `[0] name | 38°C,  47 % |` line."""
    lines = [ln for ln in head.splitlines()[:12] if ln.strip()]
    return any(_HOST.match(a) and _GPU.match(b) for a, b in zip(lines, lines[1:], strict=False))


def as_query_csv(text: str, name: str) -> tuple[str, int]:
    """The rounds as --query-gpu CSV text, and how many GPU-like lines could not be read."""
    out = [HEADER]
    when, unread = "", 0
    for line in text.splitlines():
        h = _HOST.match(line)
        if h is not None:
            when = " ".join(h.group(1).split())
            continue
        g = _GPU.match(line)
        if g is None:
            unread += line.startswith("[")
            continue
        if not when:
            unread += 1
            continue
        idx, temp, util, power = g.groups()
        out.append(", ".join((when, idx, temp, "N/A" if util == "??" else util,
                              "N/A" if power in (None, "??") else power)))
    if len(out) == 1:
        raise NoDataError(f"{name}: gpustat output, but no GPU line of it after a time line ({unread} without)")
    return "\n".join(out) + "\n", unread

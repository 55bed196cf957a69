"""nvidia-smi's own table (`nvidia-smi -l 1 > smi.txt`, the capture most people have): each
round a time line (`Mon Dec  7 10:00:01 2026`, which -l prints above every table), then one row
pair per GPU:

    |   0  NVIDIA H100 80GB HBM3          On  |   00000000:19:00.0 Off |                    0 |
    | N/A   38C    P0            152W /  700W |   40211MiB /  81559MiB |     47%      Default |

read as the --query-gpu capture it is the picture of (timestamp, index, temperature.gpu,
power.draw, memory.used, utilization.gpu: parsers.samples.read_query_gpu reads the CSV this
writes, one way to read those columns). GPU-Util is the same figure as --query-gpu's
utilization.gpu (the share of the last sample period a kernel ran, not of the SMs busy), and
the table carries no PCIe figure. A table without its time line (one `nvidia-smi`, or `watch
nvidia-smi`) has no time: refused, with the capture that would tell. The processes table is
not read."""

from __future__ import annotations

import re

from gpuscope.errors import NoDataError

# the row after a GPU's name row: temperature, performance state, power draw / cap, memory
# used / total, GPU-Util (N/A where the board does not say)
_STATE = re.compile(r"^\|\s*(?:\d+%|N/A)?\s+(\d+|N/A)C\s+P(\d+|N/A)\s+(\d+(?:\.\d+)?|N/A)W\s*/\s*"
                    r"(?:\d+(?:\.\d+)?|N/A)W\s*\|\s*(\d+)MiB\s*/\s*\d+MiB\s*\|\s*(\d+|N/A)\s*%")
# the GPU's name row: its index first (`|   0  NVIDIA H100 ...`)
_NAME = re.compile(r"^\|\s+(\d{1,3})\s+\S")
# a time as C's ctime writes it (`Mon Dec  7 10:00:01 2026`): the line -l prints above each table,
# and gpustat's host line's
CTIME = (r"(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) (?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) "
         r"[ \d]\d \d\d:\d\d:\d\d \d{4}")
_WHEN = re.compile(rf"^{CTIME}\s*$")
HEADER = "timestamp, index, temperature.gpu, power.draw [W], memory.used [MiB], utilization.gpu [%]"


def looks_like_smi_table(head: str) -> bool:
    """nvidia-smi's table: its banner and the GPU-Util column's header."""
    return "NVIDIA-SMI" in head and "GPU-Util" in head and "|====" in head


def as_query_csv(text: str, name: str) -> tuple[str, int]:
    """The table's rounds as --query-gpu CSV text, and how many GPU rows could not be read (a
    state row of another shape: counted, never guessed). NoDataError when no round has a time."""
    out = [HEADER]
    when, gpu, unread, untimed = "", None, 0, 0
    for line in text.splitlines():
        if _WHEN.match(line.strip()):
            when = " ".join(line.split())
            continue
        if line.startswith("| Processes"):
            gpu = None
            continue
        m = _NAME.match(line)
        if m is not None and "MiB" not in line:
            gpu = m.group(1)
            continue
        if gpu is None or not line.startswith("|"):
            continue
        s = _STATE.match(line)
        if s is None:
            unread += "MiB" in line  # (a GPU's state row nvidia-smi printed in another shape)
        elif not when:
            untimed += 1
        else:
            temp, _p, power, mem, util = s.groups()
            out.append(", ".join((when, gpu, temp, power, mem, util)))
        gpu = None
    if len(out) == 1:
        if untimed:
            raise NoDataError(
                f"{name}: nvidia-smi's table without the time line `nvidia-smi -l` prints above each: its "
                f"{untimed} GPU row(s) have no time, so no rate or idle gap can be read from them; capture "
                "with `nvidia-smi --query-gpu=timestamp,index,utilization.gpu,power.draw,memory.used "
                "--format=csv -l 1`, `nvidia-smi -l 1`, or `gpuscope record` (PCIe and SM activity too)")
        raise NoDataError(f"{name}: nvidia-smi's table, but no GPU row of it could be read ({unread} of another "
                          "shape)")
    return "\n".join(out) + "\n", unread

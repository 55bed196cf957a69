"""The live view of LiveState: a Rich panel (one block per GPU) on a terminal, plain lines elsewhere.

Block per GPU: SM / DRAM / tensor activity (GPM), utilization.gpu, PCIe RX and TX against the
line rate, power, SM and memory clocks, the current state with its share of the last window,
a strip of that window (one cell per bin, oldest left) and the running first finding. State
words are analyze's (reports.activity_console.CLASS_TEXT); the cells' letters are in the legend.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from gpuscope.live.state import GpuView
from gpuscope.reports.activity_console import CLASS_TEXT
from gpuscope.reports.safe_text import visible

WORDS: dict[str, str] = dict(CLASS_TEXT)
CELL = {"computing": ("C", "green"), "both": ("B", "cyan"), "transferring": ("T", "yellow"),
        "idle_quiet": ("q", "red"), "idle": ("i", "magenta"), "unknown": ("?", "bright_black"), "": (" ", "")}
BAR_W = 20


def _pct(x: float | None) -> str:
    return "  -  " if x is None or not math.isfinite(x) else f"{100 * x:4.0f}%"


def _num(x: float | None, fmt: str, unit: str) -> str:
    return "-" if x is None or not math.isfinite(x) else f"{x:{fmt}} {unit}"


def _bar(frac: float | None, width: int = BAR_W) -> str:
    if frac is None or not math.isfinite(frac):
        return "·" * width
    n = int(round(max(0.0, min(1.0, frac)) * width))
    return "█" * n + "·" * (width - n)


def _share_text(v: GpuView) -> str:
    if not v.shares:
        return "no classed interval yet"
    top = [kv for kv in sorted(v.shares.items(), key=lambda kv: -kv[1]) if kv[1] >= 0.005][:3]
    return ", ".join(f"{c} {100 * s:.0f}%" for c, s in top) + f" of the last {v.window_s:.0f} s"


def plain_line(v: GpuView, finding: str | None = None) -> str:
    """One line per GPU and refresh (stdout not a terminal): the figures as key=value words."""
    lt = v.latest
    parts = [f"gpu={v.gpu}", f"state={v.state}",
             "sm=" + _num(lt.get("sm_active"), ".2f", "").strip(),
             "dram=" + _num(lt.get("dram_active"), ".2f", "").strip(),
             "tensor=" + _num(lt.get("tensor_active"), ".2f", "").strip(),
             "util_pct=" + _num(lt.get("gpu_util_pct"), ".0f", "").strip(),
             "rx_gbs=" + _num(lt.get("rx_gbs"), ".2f", "").strip(),
             "tx_gbs=" + _num(lt.get("tx_gbs"), ".2f", "").strip(),
             "power_w=" + _num(lt.get("power_w"), ".0f", "").strip(),
             "sm_clock_mhz=" + _num(lt.get("sm_clock_mhz"), ".0f", "").strip()]
    parts += [f"{c}={100 * s:.0f}%" for c, s in sorted(v.shares.items(), key=lambda kv: -kv[1])]
    line = " ".join(parts)
    if finding:
        line += f" | {visible(finding)}"
    return line


def gpu_block(v: GpuView, finding: str | None = None):
    """One GPU's Rich renderable."""
    from rich.table import Table
    from rich.text import Text

    lt, rate = v.latest, v.line_rate_gbs
    t = Table.grid(padding=(0, 1))
    t.add_column(justify="right", style="bold")
    t.add_column()
    t.add_column(justify="right")
    for label, key in (("SM", "sm_active"), ("DRAM", "dram_active"), ("tensor", "tensor_active")):
        t.add_row(label, _bar(lt.get(key)), _pct(lt.get(key)))
    util = lt.get("gpu_util_pct")
    t.add_row("util.gpu", _bar(util / 100 if util is not None else None), _pct(util / 100 if util is not None else None))
    for label, key in (("PCIe RX", "rx_gbs"), ("PCIe TX", "tx_gbs")):
        x = lt.get(key)
        t.add_row(label, _bar(x / rate if x is not None and rate > 0 else None),
                  f"{_num(x, '.2f', 'GB/s')} of {rate:.0f}")
    t.add_row("power", _num(lt.get("power_w"), ".0f", "W"),
              f"SM {_num(lt.get('sm_clock_mhz'), '.0f', 'MHz')}, mem {_num(lt.get('mem_clock_mhz'), '.0f', 'MHz')}")
    letter, style = CELL.get(v.state, CELL["unknown"])
    state = Text.assemble(("now: ", "bold"), (WORDS.get(v.state, v.state), style))
    strip = Text()
    for c in v.strip:
        ch, st = CELL.get(c, CELL["unknown"])
        strip.append(ch, style=st)
    rows: list[Table | Text] = [Text(f"GPU {v.gpu} {visible(v.name)}".rstrip(), style="bold"), t, state,
            Text(_share_text(v)), Text.assemble(("history ", "bold"), strip)]
    if finding:
        rows.append(Text.assemble(("first finding: ", "bold"), visible(finding)))
    if math.isfinite(v.age_s) and v.age_s > 2.0:
        rows.append(Text(f"no sample for {v.age_s:.0f} s", style="yellow"))
    from rich.console import Group

    return Group(*rows)


def panel(views: Sequence[GpuView], finding: str | None, title: str):
    from rich.console import Group
    from rich.panel import Panel
    from rich.text import Text

    legend = Text("  ".join(f"{CELL[c][0]} {c}" for c in ("computing", "both", "transferring", "idle_quiet",
                                                            "idle", "unknown")), style="dim")
    blocks = [gpu_block(v) for v in views] or [Text("waiting for samples")]
    tail = [Text.assemble(("first finding: ", "bold"), visible(finding))] if finding else []
    return Panel(Group(*blocks, *tail, legend), title=visible(title), title_align="left")

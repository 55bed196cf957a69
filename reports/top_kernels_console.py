"""The top-kernels table of a trace for the terminal (and, through reports.html, the page):
the analysis' `top_kernels` rows (gpuscope.analysis.evidence.trace.top_kernels), most GPU time first."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich import box
from rich.table import Table

from gpuscope.reports.numbers import cms, num, pct
from gpuscope.reports.safe_text import LiteralTable, text

if TYPE_CHECKING:
    from gpuscope.analysis.document import TopKernelDoc

SHOWN = 10


def top_kernels_table(rows: list[TopKernelDoc], limit: int = SHOWN) -> Table | None:
    if not rows:
        return None
    t = LiteralTable(title="Top kernels (by total GPU time)", title_justify="left", box=box.SIMPLE_HEAD,
                     pad_edge=False, collapse_padding=True)
    t.add_column("kernel", no_wrap=True)  # short names (<= 38 characters) fit 80 columns whole
    for col in ("count", "total ms", "share", "median us"):
        t.add_column(col, justify="right", no_wrap=True)
    for r in rows[:limit]:
        t.add_row(text(r["short_name"] or r["name"]), f"{r['count']:,}", cms(r["total_ms"]),
                  pct(r["share"]), num(r["median_us"], 1))
    more = f"; {len(rows) - limit} more in --json (top_kernels, with the whole names)" if len(rows) > limit else ""
    t.caption = "share: of all kernel time (kernel durations summed over every stream)" + more
    t.caption_justify = "left"
    return t

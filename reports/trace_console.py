"""Console tables of a profiler trace's analysis (gpuscope.analysis.trace_analysis): what the
GPU did over the traced span, every copy by direction and host-memory kind, the streams,
the longest idle gaps with what the host was doing, and the record_function phases.
Input: the document's `trace` part (gpuscope.analysis.document.TraceDoc), so the console and --json
show the same numbers."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich import box
from rich.console import RenderableType
from rich.table import Table
from rich.text import Text

from gpuscope.linerate import source_text
from gpuscope.reports.numbers import cms, is_num, ms, num, pct, secs
from gpuscope.reports.safe_text import LiteralTable, name, visible
from gpuscope.reports.top_kernels_console import top_kernels_table

if TYPE_CHECKING:
    from gpuscope.analysis.document import (
        TraceActivityDoc,
        TraceDoc,
        TraceGapDoc,
        TraceMemcpyDoc,
        TracePhaseDoc,
        TraceStreamDoc,
    )

MAX_GAPS = 5
MAX_PHASES = 12


def _table(title: str) -> Table:
    return LiteralTable(title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False,
                        collapse_padding=True)


def trace_header(doc: TraceDoc, source: str) -> Text:
    tr, act = doc["trace"], doc["activity"]
    devs = ", ".join(f"{d['name'] or 'GPU'} {d['device']}" for d in tr["devices"])
    t = Text()
    t.append(visible(source), style="bold")
    t.append(visible(f" — profiler trace ({tr['reader']}), {len(tr['ranks'] or [0])} rank(s): {devs}")
             + "\n")
    t.append(f"{tr['events']:,} events over {secs(act['span_s'], 3)}; "
             f"{tr['skipped_events']} skipped" + ("; the file was cut short" if tr["truncated"] else ""))
    for n in tr["notes"]:
        t.append("\n" + visible(f"note: {n}"))
    return t


def activity_table(act: TraceActivityDoc) -> Table:
    res = act["resolution"]
    t = _table("GPU activity over the traced span" + (f", {res}" if res else ""))
    t.add_column("figure")
    t.add_column("value", justify="right")
    n = len(act["devices"])  # rank/GPU timelines: several are never summed without saying so
    t.add_row("span" if n < 2 else "span (wall clock)", secs(act["span_s"], 3))
    if n > 1:
        t.add_row(f"timelines (rank x GPU): {n}", "shares below: their mean")
    t.add_row("busy computing (kernels, memsets, DtoD)", pct(act["busy_fraction"]))
    t.add_row("  kernels", pct(act["kernel_fraction"]))
    t.add_row("copying to/from the host or a peer", pct(act["copy_fraction"]))
    t.add_row("  copies of any kind", pct(act["memcpy_fraction"]))
    t.add_row("  copies under kernels", pct(act["copy_kernel_overlap_fraction"]))
    gaps = act["idle_gaps"]
    t.add_row("idle (no kernel, copy or memset)", pct(act["idle_fraction"]))
    t.add_row("idle gaps", f"{gaps['count']:,}")
    if gaps["count"]:
        t.add_row("  total" if n < 2 else f"  total, summed over the {n} timelines", secs(gaps["total_s"], 3))
        if n > 1 and is_num(gaps["total_s"]):
            t.add_row("  per timeline (mean)", secs(gaps["total_s"] / n, 3))
        t.add_row("  longest", secs(gaps["longest_s"], 3))
        if gaps["by_cause_s"]:
            t.add_row("  by cause:" if n < 2 else "  by cause (summed):", "")
    for cause, s in sorted(gaps["by_cause_s"].items(), key=lambda kv: -(kv[1] or 0)):
        t.add_row(f"    {cause.replace('_', ' ')}", secs(s, 3))
    return t


def memcpy_table(rows: list[TraceMemcpyDoc], line_rate: float | None, line_rate_source: str | None = None) -> Table | None:
    """The copies, each host copy kind against the line rate (named with where it came from)."""
    if not rows:
        return None
    whence = f": {source_text(line_rate_source)}" if line_rate_source else ""
    t = _table(f"Copies (line rate {round(line_rate, 1):g} GB/s{whence})" if line_rate is not None and is_num(line_rate)
               else "Copies")
    for col in ("direction", "host memory", "count", "GB", "ms", "GB/s", "of line", "ms at line"):
        t.add_column(col, justify="left" if col in ("direction", "host memory") else "right", no_wrap=True)
    for r in rows:
        t.add_row(str(r["direction"]), str(r["host_memory"]), f"{r['count']:,}",
                  num((r["bytes"] or 0) / 1e9, 2), cms(r["ms"]), num(r["gbs"], 1),
                  pct(r.get("line_rate_share"), 0), cms(r.get("ms_at_line_rate")))
    return t


MAX_STREAMS = 40  # streams listed one per row


def streams_table(rows: list[TraceStreamDoc]) -> Table | None:
    if not rows:
        return None
    t = _table("Streams")
    for col in ("rank", "device", "stream", "kernels", "kernel ms", "median us", "copies", "in use"):
        t.add_column(col, justify="right", no_wrap=True)
    shown = rows
    if len(rows) > MAX_STREAMS:  # thousands of streams: the busiest listed, the rest summed in one row
        order = sorted(range(len(rows)), key=lambda i: (-(rows[i]["busy_ms"] or 0.0), i))
        keep = set(order[:MAX_STREAMS])
        shown = [r for i, r in enumerate(rows) if i in keep]
    for r in shown:
        t.add_row(str(r["rank"]), str(r["device"]), str(r["stream"]), f"{r['kernels']:,}",
                  cms(r["kernel_ms"]), num(r["kernel_median_us"], 1), f"{r['memcpy_count']:,}",
                  pct(r["busy_fraction"]))
    rest = [r for r in rows if not any(r is s for s in shown)] if len(shown) < len(rows) else []
    if rest:
        t.add_row("", "", f"{len(rest):,} more", f"{sum(r['kernels'] for r in rest):,}",
                  cms(sum(r["kernel_ms"] or 0.0 for r in rest)), "", f"{sum(r['memcpy_count'] for r in rest):,}",
                  "", style="italic")
        t.caption = f"the {MAX_STREAMS} busiest streams; {len(rest):,} more summed in the last row (--json lists every one)"
        t.caption_justify = "left"
    return t


def gaps_table(rows: list[TraceGapDoc]) -> Table | None:
    if not rows:
        return None
    t = _table("Longest GPU idle gaps, and what the host was doing")
    for col in ("at s", "ms", "cause", "host across the gap", "phase"):  # names break between words
        t.add_column(col, justify="right" if col in ("at s", "ms") else "left",
                     no_wrap=col in ("at s", "ms", "cause"))
    for r in rows[:MAX_GAPS]:
        op = r["host_op"]
        on = f"thread {op['thread']}, " if op and op.get("thread") else ""  # (the trace's own thread names: Nsight's)
        host = f"{op['name']} ({op['cat']}, {on}{pct(op['covered_fraction'], 0)} of the gap)" if op else "-"
        t.add_row(num(r["offset_s"], 3), ms(r["ms"], 2), str(r["cause"] or "-").replace("_", " "),
                  name(host), name(r["annotation"] or "-"))
    return t


def phases_table(rows: list[TracePhaseDoc]) -> Table | None:
    if not rows:
        return None
    t = _table("Phases (record_function ranges; roles guessed from their names)")
    for col in ("phase", "role", "count", "wall\nms", "GPU busy\nms", "GPU\nbusy", "of\nspan"):
        t.add_column(col, justify="left" if col in ("phase", "role") else "right", no_wrap=col != "phase")
    for r in rows[:MAX_PHASES]:
        t.add_row(name(r["phase"]), str(r["role"] or "-"), f"{r['count']:,}",
                  cms(r["wall_ms"]), cms(r["gpu_busy_ms"]), pct(r["gpu_busy_fraction"], 0),
                  pct(r["share_of_span"], 0))
    if len(rows) > MAX_PHASES:
        t.caption = f"{len(rows) - MAX_PHASES} more in --json"
    return t


def trace_renderables(doc: TraceDoc, line_rate: float | None, line_rate_source: str | None = None) -> list[RenderableType]:
    """The trace's tables, in reading order (the header and findings are the caller's)."""
    parts = [activity_table(doc["activity"]),
             memcpy_table(doc["memcpy"], line_rate, line_rate_source),
             streams_table(doc["kernels"]), top_kernels_table(doc["top_kernels"]), gaps_table(doc["idle_gaps"]),
             phases_table(doc["phases"])]
    return [p for p in parts if p is not None]

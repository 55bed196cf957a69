"""A benchmark table (the `benchmark_table` document of parsers/log/benchtable.py: Google
Benchmark, nccl-tests, criterion) -> console: what it is, the table as the tool printed it
(each cell with its unit), the tool's own summary lines and failed runs, and the statement
that no steps, split or idle diagnosis come from it. Pure: doc -> rich renderables."""

from __future__ import annotations

import math
from typing import Any

from rich import box
from rich.console import Console
from rich.text import Text

from gpuscope.reports.safe_text import LiteralTable, visible

MAX_ROWS = 200  # (--json lists every row)


def cell(v: Any, unit: Any) -> str:
    """A value as the tool printed it, with its unit (`2.51 ns`, `17.13`, `float`, `-`)."""
    if v is None:
        return "-"
    if isinstance(v, str):
        return v
    if isinstance(v, float) and not math.isfinite(v):
        return "-"
    s = str(v) if isinstance(v, int) else (f"{v:.4g}" if abs(v) >= 1e6 or (v and abs(v) < 1e-3) else f"{v:g}")
    if unit == "/s":
        return s + "/s"
    return f"{s} {unit}" if unit else s


def _groups(cols: list[dict]) -> list[tuple[str, list[int]]]:
    """The tables to print: the columns of no group with the first group's, then the first
    column with each further group's (nccl-tests: out-of-place, then in-place)."""
    names = list(dict.fromkeys(str(c["group"]) for c in cols if c.get("group")))
    plain = [i for i, c in enumerate(cols) if not c.get("group")]
    if not names:
        return [("", plain)]
    out = [(names[0], plain + [i for i, c in enumerate(cols) if c.get("group") == names[0]])]
    out += [(g, plain[:1] + [i for i, c in enumerate(cols) if c.get("group") == g]) for g in names[1:]]
    return out


def bench_tables(doc: dict) -> list[LiteralTable]:
    cols = doc.get("columns") or []
    rows = (doc.get("rows") or [])[:MAX_ROWS]
    first = "name" if not cols or cols[0].get("name") != "size" else ""
    out = []
    for group, idx in _groups(cols):
        t = LiteralTable(title=group.replace("_", "-") or None, title_justify="left", box=box.SIMPLE_HEAD,
                         pad_edge=False, collapse_padding=True)
        if first:
            t.add_column(first, overflow="fold")
        for i in idx:
            c = cols[i]
            head = str(c.get("name", "")).split(".", 1)[1] if group and c.get("group") == group else str(c.get("name"))
            t.add_column(visible(head + (f" ({c['unit']})" if c.get("unit") else "")),
                         justify="left" if c.get("kind") == "text" else "right")
        for r in rows:
            vals, units = r.get("values") or [], r.get("units") or []
            cells = [cell(vals[i] if i < len(vals) else None,
                          None if cols[i].get("unit") else (units[i] if i < len(units) else None)) for i in idx]
            name = [visible(str(r.get("name", "")))] if first else []
            t.add_row(*name, *(visible(c) for c in cells))
        out.append(t)
    rest = len(doc.get("rows") or []) - MAX_ROWS
    if rest > 0 and out:
        out[-1].caption = f"{rest:,} more rows (--json lists every one)"
    return out


def render_bench_table(doc: dict, source: str, console: Console) -> None:
    console.print(Text(visible(f"{source} — {doc.get('what', 'a benchmark table')}"), style="bold"))
    for line in (doc.get("header") or [])[:8]:
        console.print(Text(visible(line), style="dim"))
    for t in bench_tables(doc):
        console.print(t)
    for s in doc.get("summary") or []:
        unit = f" {s['unit']}" if s.get("unit") else ""
        verdict = f" {s['verdict']}" if s.get("verdict") else ""
        console.print(Text(visible(f"{s.get('name')}: {cell(s.get('value'), None)}{unit}{verdict}")))
    for e in doc.get("errors") or []:
        console.print(Text(visible(f"{e.get('name')}: {e.get('message')}"), style="yellow"))
    for n in doc.get("notes") or []:
        console.print(Text(visible(n), style="dim"))
    console.print(Text(visible(f"This is {doc.get('statement', 'a benchmark table')}."), style="bold"))
    console.print()

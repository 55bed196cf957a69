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
    s = str(v) if isinstance(v, int) else (f"{v:.4g}" if abs(v) >= 1e10 or (v and abs(v) < 1e-3) else f"{v:.15g}")
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


def _chunks(widths: list[int], lead: int, room: int) -> list[list[int]]:
    """The columns (by position) of each table to print, each fitting `room` characters with
    the leading name/size column (`lead` wide, repeated in each); at least one column each."""
    out: list[list[int]] = [[]]
    used = lead
    for k, w in enumerate(widths):
        if out[-1] and used + w > room:
            out.append([])
            used = lead
        out[-1].append(k)
        used += w
    return out


def bench_tables(doc: dict, width: int = 200) -> list[LiteralTable]:
    """The tables to print, none wider than `width`: a column is never cut short nor dropped
    (a number cut to `1342177…` reads as another number); columns that do not fit go to a
    further table that repeats the row's name or size."""
    cols = doc.get("columns") or []
    rows = (doc.get("rows") or [])[:MAX_ROWS]
    first = "name" if not cols or cols[0].get("name") != "size" else ""
    out = []
    for group, idx in _groups(cols):
        heads, body = [], []
        for i in idx:
            c = cols[i]
            head = str(c.get("name", "")).split(".", 1)[1] if group and c.get("group") == group else str(c.get("name"))
            unit = str(c.get("unit") or "")
            said = unit and (head.endswith(unit) or f"({unit})" in head)  # (`Time (%)`: its unit in its name)
            heads.append(visible(head + (f" ({unit})" if unit and not said else "")))
        for r in rows:
            vals, units = r.get("values") or [], r.get("units") or []
            body.append([visible(cell(vals[i] if i < len(vals) else None,
                                      None if cols[i].get("unit") else (units[i] if i < len(units) else None)))
                         for i in idx])
        names = [visible(str(r.get("name", ""))) for r in rows] if first else []
        lead_w = min(max((len(n) for n in names), default=4), max(12, width // 3)) + 2 if first else 0
        if not first and idx:  # nccl-tests: the size leads every part
            lead_w = max(len(b[0]) for b in body) + 2 if body else 10
        # a number's column is not wrapped, its header neither; a text column's header wraps by word
        cell_w = [max([len(h)] if cols[idx[k]].get("kind") != "text" else [len(w) for w in h.split()] or [1],
                      default=1) for k, h in enumerate(heads)]
        cell_w = [max([cell_w[k], 1] + [len(b[k]) for b in body]) + 2 for k in range(len(heads))]
        keep = [] if first else [0]
        parts = _chunks(cell_w[len(keep):], lead_w if keep or first else 0, width - 1)
        for p, part in enumerate(parts):
            ks = keep + [k + len(keep) for k in part]
            title = group.replace("_", "-") or None
            t = LiteralTable(title=(f"{title} ({p + 1}/{len(parts)})" if title and len(parts) > 1 else title),
                             title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True)
            if first:
                t.add_column(first, overflow="fold", max_width=lead_w - 2)
            for k in ks:
                text = cols[idx[k]].get("kind") == "text"
                t.add_column(heads[k], justify="left" if text else "right", overflow="fold",
                             min_width=cell_w[k] - 2, no_wrap=not text)
            for b, n in zip(body, names or [""] * len(body), strict=True):
                t.add_row(*([n] if first else []), *(b[k] for k in ks))
            out.append(t)
    rest = len(doc.get("rows") or []) - MAX_ROWS
    if rest > 0 and out:
        out[-1].caption = f"{rest:,} more rows (--json lists every one)"
    return out


def render_bench_table(doc: dict, source: str, console: Console) -> None:
    console.print(Text(visible(f"{source} — {doc.get('what', 'a benchmark table')}"), style="bold"))
    for line in (doc.get("header") or [])[:8]:
        console.print(Text(visible(line), style="dim"))
    for part in [{**doc, **(doc.get("section") or {})}, *(doc.get("sections") or [])]:  # (nsys stats: a table a report)
        said = " ".join(str(x) for x in (part.get("title"), f"({part['report']})" if part.get("report") else "") if x)
        if said and (doc.get("sections") or doc.get("section")):
            console.print(Text(visible(said), style="bold"))
        for t in bench_tables(part, console.width):
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

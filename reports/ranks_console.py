"""The ranks document (gpuscope.analysis.ranks.combine) -> console tables.

One table with a row per rank (busy, idle and its causes, step time, compute per step,
collectives and their overlap with compute, copies, the rank's first finding), then the
stragglers in sentences, then the ranks that could not be read. Pure: doc -> rich renderables.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from rich import box
from rich.console import Console
from rich.text import Text

from gpuscope.reports.safe_text import LiteralTable, visible

if TYPE_CHECKING:
    from gpuscope.analysis.document import RanksDoc


def _pct(x: Any) -> str:
    return "-" if not isinstance(x, int | float) or not math.isfinite(x) else f"{100 * x:.1f}%"


def _ms(x: Any, nd: int = 1) -> str:
    return "-" if not isinstance(x, int | float) or not math.isfinite(x) else f"{x:.{nd}f}"


def _causes(row: dict) -> str:
    by = row.get("idle_by_cause_s") or {}
    top = sorted(((k, v) for k, v in by.items() if isinstance(v, int | float) and v > 0), key=lambda kv: -kv[1])[:1]
    return ", ".join(f"{k.replace('_', ' ')} {1e3 * v:.0f}" for k, v in top) + " ms" if top else "-"


def _copies(row: dict) -> str:
    parts = []
    for c in row.get("copies") or []:
        if "count" in c:
            gb = (c.get("bytes") or 0) / 1e9
            parts.append(f"{c['direction']} {gb:.2f} GB {_ms(c.get('gbs'))} GB/s")
        elif c.get("mean_gbs") is not None:
            parts.append(f"{c['direction']} {c['mean_gbs']:.2f} GB/s")
    return ", ".join(parts[:3]) or "-"


def _runs(doc: RanksDoc) -> bool:
    """Whether the inputs are separate runs (not ranks of one job): each row is then named by its
    run, never numbered as a rank (a runs/ folder is no job)."""
    return not doc.get("one_job", True)


def _who(doc: RanksDoc, r: dict) -> str:
    return visible(str(r.get("name"))) if _runs(doc) else str(r.get("rank"))


def ranks_table(doc: RanksDoc) -> LiteralTable:
    traces = doc.get("inputs") == "traces"
    what = "Ranks" if doc.get("one_job", True) else "Separate runs, not ranks of one job"
    t = LiteralTable(title=f"{what} ({doc.get('count')} {doc.get('inputs')}, read by {doc.get('workers')} "
                           f"process{'es' if doc.get('workers') != 1 else ''} in {doc.get('seconds', 0):.2f} s)",
                     title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True)
    for h in ("run" if _runs(doc) else "rank", "busy", "idle", "idle by cause", "steps", "step ms"):
        t.add_column(h, justify="left" if h in ("idle by cause", "run") else "right")
    if traces:
        for h in ("compute ms/step", "collectives ms/step", "overlap"):
            t.add_column(h, justify="right")
    else:
        t.add_column("busy s", justify="right")
    for r in doc.get("table") or []:
        cells = [_who(doc, r), _pct(r.get("busy_fraction")),
                 _pct(r.get("idle_fraction")), _causes(r), str(r.get("steps") or "-"), _ms(r.get("step_ms"))]
        if traces:
            c = r.get("collectives") or {}
            cells += [_ms(r.get("compute_ms_per_step")), _ms(c.get("ms_per_step")), _pct(c.get("overlap_fraction"))]
        else:
            cells.append(_ms((r.get("compute_ms") or math.nan) / 1e3, 2))
        t.add_row(*cells)
    return t


def copies_table(doc: RanksDoc) -> LiteralTable:
    unit = "run" if _runs(doc) else "rank"
    t = LiteralTable(title=f"Copies and first finding per {unit}", title_justify="left", box=box.SIMPLE_HEAD,
                     pad_edge=False, collapse_padding=True)
    t.add_column(unit, justify="left" if _runs(doc) else "right")
    t.add_column("copies (by direction)")
    t.add_column("first finding")
    for r in doc.get("table") or []:
        t.add_row(_who(doc, r), _copies(r), visible(str(r.get("first_finding") or "-")))
    return t


def render_ranks(doc: RanksDoc, console: Console) -> None:
    console.print(ranks_table(doc))
    console.print(copies_table(doc))
    if not _runs(doc):  # (separate runs are named in their tables)
        names = [f"{r.get('rank')}: {r.get('name')}" for r in doc.get("table") or []]
        console.print(Text(visible("Ranks read from " + ", ".join(names)), style="dim"))
    coll = doc.get("collectives") or {}
    if coll.get("kinds"):
        console.print(Text(f"Collectives: {', '.join(coll['kinds'])}; median overlap with compute "
                           f"{_pct(coll.get('overlap_fraction_median'))}"))
    strag = doc.get("stragglers") or []
    if not doc.get("one_job", True):
        console.print(Text(visible(f"Not ranks of one job: {doc.get('one_job_evidence')}. Each is analyzed on "
                                   "its own (per-run figures, nothing summed); no straggler is named."), style="bold"))
    elif strag:
        for s in strag:
            console.print(Text(visible(s["summary"]), style="bold"))
    elif doc.get("count", 0) >= 2:
        rule = doc.get("rule") or {}
        console.print(Text(f"No straggler: no rank's {str(rule.get('metric', '')).replace('_', ' ')} or step time is "
                           f"{rule.get('ratio', 1.1):.2f}x the others' median, nor does one wait that much less "
                           "in the collectives."))
    for d in doc.get("shared_devices") or []:
        console.print(Text(
            f"Device {d['device']} is named by {'runs' if _runs(doc) else 'ranks'} "
            f"{', '.join(str(r) for r in d['ranks'])}: if it is one GPU "
            f"they share (a trace does not name its host), it was busy {_pct(d.get('busy_fraction'))} of the "
            f"{d['span_s']:.3f} s span and idle {d['idle_s']:.3f} s: the union of their activity "
            f"({d['busy_s']:.3f} s), not the sum ({d['summed_busy_s']:.3f} s); the per-rank figures above are "
            "each rank's own timeline."))
    for note in doc.get("notes") or []:
        if not str(note).startswith("not ranks of one job"):  # (said in bold above)
            console.print(Text(visible(f"note: {note}"), style="dim"))
    for e in doc.get("errors") or []:
        who = f"run {e.get('name')}" if _runs(doc) else f"rank {e.get('rank')} ({e.get('name')})"
        console.print(Text(visible(f"{who}: not analyzed: {e.get('error')}"),
                           style="yellow"))
    console.print()

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
    from gpuscope.analysis.document import RankRowDoc, RanksDoc


def _pct(x: Any) -> str:
    return "-" if not isinstance(x, int | float) or not math.isfinite(x) else f"{100 * x:.1f}%"


def _ms(x: Any, nd: int = 1) -> str:
    return "-" if not isinstance(x, int | float) or not math.isfinite(x) else f"{x:.{nd}f}"


def _causes(row: RankRowDoc) -> str:
    by = row["idle_by_cause_s"]
    top = sorted(((k, v) for k, v in by.items() if isinstance(v, int | float) and v > 0), key=lambda kv: -kv[1])[:1]
    return ", ".join(f"{k.replace('_', ' ')} {1e3 * v:.0f}" for k, v in top) + " ms" if top else "-"


def _copies(row: RankRowDoc) -> str:
    parts = []
    if row["collectives"] is not None:  # a traced rank: its copies by direction and host memory
        for c in row["copies"]:
            parts.append(f"{c['direction']} {(c['bytes'] or 0) / 1e9:.2f} GB {_ms(c['gbs'])} GB/s")
    else:  # a run: the mean PCIe rate of its samples
        parts += [f"{c['direction']} {c['mean_gbs']:.2f} GB/s" for c in row["copies"] if c["mean_gbs"] is not None]
    return ", ".join(parts[:3]) or "-"


def _runs(doc: RanksDoc) -> bool:
    """Whether the inputs are separate runs (not ranks of one job): each row is then named by its
    run, never numbered as a rank (a runs/ folder is no job)."""
    return not doc["one_job"]


def _who(doc: RanksDoc, r: RankRowDoc) -> str:
    return visible(str(r["name"])) if _runs(doc) else str(r["rank"])


def ranks_table(doc: RanksDoc) -> LiteralTable:
    traces = doc["inputs"] == "traces"
    what = "Ranks" if doc["one_job"] else "Separate runs, not ranks of one job"
    t = LiteralTable(title=f"{what} ({doc['count']} {doc['inputs']}, read by {doc.get('workers')} "
                           f"process{'es' if doc.get('workers') != 1 else ''} in {doc.get('seconds', 0):.2f} s)",
                     title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True)
    for h in ("run" if _runs(doc) else "rank", "busy", "idle", "idle by cause", "steps", "step ms"):
        t.add_column(h, justify="left" if h in ("idle by cause", "run") else "right")
    if traces:
        for h in ("compute ms/step", "collectives ms/step", "overlap"):
            t.add_column(h, justify="right")
    else:
        t.add_column("busy s", justify="right")
    for r in doc["table"]:
        cells = [_who(doc, r), _pct(r["busy_fraction"]),
                 _pct(r["idle_fraction"]), _causes(r), str(r["steps"] or "-"), _ms(r["step_ms"])]
        if traces:
            c = r["collectives"]
            cells += [_ms(r["compute_ms_per_step"]), _ms(c["ms_per_step"] if c else None),
                      _pct(c["overlap_fraction"] if c else None)]
        else:
            cells.append(_ms((r["compute_ms"] or math.nan) / 1e3, 2))
        t.add_row(*cells)
    return t


def copies_table(doc: RanksDoc) -> LiteralTable:
    unit = "run" if _runs(doc) else "rank"
    t = LiteralTable(title=f"Copies and first finding per {unit}", title_justify="left", box=box.SIMPLE_HEAD,
                     pad_edge=False, collapse_padding=True)
    t.add_column(unit, justify="left" if _runs(doc) else "right")
    t.add_column("copies (by direction)")
    t.add_column("first finding")
    for r in doc["table"]:
        t.add_row(_who(doc, r), _copies(r), visible(str(r["first_finding"] or "-")))
    return t


def render_ranks(doc: RanksDoc, console: Console) -> None:
    console.print(ranks_table(doc))
    console.print(copies_table(doc))
    if not _runs(doc):  # (separate runs are named in their tables)
        names = [f"{r['rank']}: {r['name']}" for r in doc["table"]]
        console.print(Text(visible("Ranks read from " + ", ".join(names)), style="dim"))
    coll = doc["collectives"]
    if coll["kinds"]:
        console.print(Text(f"Collectives: {', '.join(coll['kinds'])}; median overlap with compute "
                           f"{_pct(coll['overlap_fraction_median'])}"))
    strag = doc["stragglers"]
    if not doc["one_job"]:
        console.print(Text(visible(f"Not ranks of one job: {doc['one_job_evidence']}. Each is analyzed on "
                                   "its own (per-run figures, nothing summed); no straggler is named."), style="bold"))
    elif strag:
        for s in strag:
            console.print(Text(visible(s["summary"]), style="bold"))
    elif doc["count"] >= 2:
        rule = doc["rule"]
        console.print(Text(f"No straggler: no rank's {rule['metric'].replace('_', ' ')} or step time is "
                           f"{rule['ratio']:.2f}x the others' median, nor does one wait that much less "
                           "in the collectives."))
    for d in doc.get("shared_devices") or []:
        console.print(Text(
            f"Device {d['device']} is named by {'runs' if _runs(doc) else 'ranks'} "
            f"{', '.join(str(r) for r in d['ranks'])}: if it is one GPU "
            f"they share (a trace does not name its host), it was busy {_pct(d['busy_fraction'])} of the "
            f"{d['span_s']:.3f} s span and idle {d['idle_s']:.3f} s: the union of their activity "
            f"({d['busy_s']:.3f} s), not the sum ({d['summed_busy_s']:.3f} s); the per-rank figures above are "
            "each rank's own timeline."))
    for note in doc["notes"]:
        if not str(note).startswith("not ranks of one job"):  # (said in bold above)
            console.print(Text(visible(f"note: {note}"), style="dim"))
    for e in doc["errors"]:
        who = f"run {e['name']}" if _runs(doc) else f"rank {e['rank']} ({e['name']})"
        console.print(Text(visible(f"{who}: not analyzed: {e['error']}"),
                           style="yellow"))
    console.print()

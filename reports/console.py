"""Analysis -> rich renderables for the terminal. Pure: each function takes the Analysis and
returns a renderable (or a list of them); `render_summary` prints them on a Console.

Words come from the model's vocabulary (gpuscope.rolemodel.vocabulary_of): GPU-lock tenures
and partitions for the CuZK model, steps / iterations / records for any other program. A
figure that cannot be computed is printed as `-` with the reason, never as 0 or nan. Every
string from the input (names, paths, summaries that embed them) is shown literally
(reports.safe_text: no markup read, control characters made visible)."""

from __future__ import annotations

from collections.abc import Sequence
from types import SimpleNamespace
from typing import TYPE_CHECKING

from rich import box
from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text

from gpuscope.analysis.document import split_part
from gpuscope.reports.activity_console import activity_renderables, samples_header
from gpuscope.reports.numbers import cms, is_num, ms, num, pct, secs
from gpuscope.reports.safe_text import LiteralTable, name, text, visible
from gpuscope.reports.trace_console import trace_header, trace_renderables
from gpuscope.rolemodel import GUESSED, vocabulary_of

if TYPE_CHECKING:
    from gpuscope.analysis.document import SplitRole
    from gpuscope.analysis.result import Analysis, Diagnosis, LogPart

BAR_WIDTH = 30
ROLE_SHORT = {"gpu_compute": "gpu", "cpu_stall": "stall", "contention": "wait"}
SEVERITY_STYLE = {"high": "bold red", "medium": "yellow", "low": "cyan", "info": "dim"}


def bar(share, width: int = BAR_WIDTH) -> str:
    if not is_num(share) or share <= 0:
        return ""
    n = min(width, max(1, round(share * width)))
    return "█" * n


def log_of(a: Analysis) -> LogPart:
    """The timing log's part: the log sections are drawn only for a source that has one."""
    if a.log is None:
        raise ValueError("no timing log: the log's sections are drawn only for a source with timing lines")
    return a.log


def _table(title: str) -> Table:
    return LiteralTable(title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False,
                        collapse_padding=True)


def header(a: Analysis) -> Text:
    lg = log_of(a)
    inc = lg.split.get("inconsistent_records", 0)
    v = vocabulary_of(a)
    t = Text()
    t.append(visible(a.source), style="bold")
    t.append(visible(f" — format {lg.format}, model {a.model_name}") + "\n")
    t.append(
        v.long(lg.records)
        + (f" ({inc} inconsistent)" if inc else "")
        + (f", each standing for {lg.steps_per_record} (the log's counter advances by {lg.steps_per_record}: "
           f"{lg.records * lg.steps_per_record:,} in all)" if lg.steps_per_record > 1 and lg.records else "")
        + (f", {lg.incomplete_records} cut off at the end" if lg.incomplete_records else "")
        + f"; {lg.timing_lines:,} timing lines of {lg.total_lines:,}; {lg.skipped_lines} skipped"
    )
    for note in lg.read_notes:  # what the parser assumed: shown, never kept to itself
        t.append("\nread: ", style="dim")
        t.append(visible(note), style="dim")
    return t


def split_table(a: Analysis) -> RenderableType:
    lg = log_of(a)
    s = lg.split
    v = vocabulary_of(a)
    held = lg.split_table["held_ms"].astype("float64") if len(lg.split_table) else None
    unknown = held is not None and bool((held != held).all())  # every record without a held time
    total = "held time unknown" if unknown else f"{ms(s.get('held_ms'), 0)} ms"
    t = _table(f"{v.Whole} split ({lg.records} {v.records}, {total})")
    t.add_column("part")
    t.add_column("ms", justify="right")
    t.add_column("share", justify="right")
    t.add_column("")
    # d2h (read-backs) only where the log has them: the split of a log without keeps its four rows
    parts: tuple[SplitRole, ...] = (("h2d", "gpu_compute", "cpu_stall", "d2h", "other") if s["d2h_ms"]
                                    else ("h2d", "gpu_compute", "cpu_stall", "other"))
    # a part no component of the program's log has a role for was never printed: not a measured 0
    roles = set(lg.stats_table["role"].tolist()) if len(lg.stats_table) and "role" in lg.stats_table else set()
    for part in parts:
        part_ms, share = split_part(s, part)
        if not v.cuzk and part != "other" and part not in roles and not part_ms:
            t.add_row(part, "not printed", "", "")
            continue
        value = "-" if unknown and part == "other" else ms(part_ms)  # other = held - parts
        t.add_row(part, value, pct(share), bar(share))
    whole = "held" if v.cuzk else f"{v.held} (whole)"
    t.add_row(whole, "-" if unknown else ms(s.get("held_ms")), pct(1.0 if s.get("held_ms") else float("nan")), "",
              style="bold")
    if s.get("inconsistent_records"):
        return Group(t, text(
            f"{s['inconsistent_records']} inconsistent {v.record}(s): parts > held; their other is 0 "
            "and they stay in the sums"
        ))
    return t


MAX_COMPONENT_ROWS = 60  # components listed one per row; the rest summed in one


def components_table(a: Analysis) -> Table:
    lg = log_of(a)
    comps = lg.stats_table  # (gpuscope.analysis.evidence.log.table.Table: no pandas for the console of a log)
    t = _table("Components (ms; per-GPU lines count once per GPU)")
    t.add_column("component")  # a name too long for the column breaks between its words (safe_text.name)
    t.add_column("role", no_wrap=True)
    for col in ("count", "sum", "mean", "median", "p10", "p90", "cv"):
        t.add_column(col, justify="right", no_wrap=True)
    t.caption = "roles: gpu = gpu_compute, stall = cpu_stall, wait = contention; info = aggregate, never summed"
    m = getattr(a, "model", None)
    if m is not None and getattr(m, "name", None) == GUESSED:
        t.caption = ("roles: gpu = gpu_compute, stall = cpu_stall (host-side work the GPU waits for), "
                     "- = no role (its time is in other); whole = each record's whole\n" + _guessed(m, comps.index.tolist()[:MAX_COMPONENT_ROWS]))
    for outer, spec in (getattr(m, "contains", None) or {}).items():  # its sum holds the inner's time too
        if comps.has(outer) and comps.has(spec.inner):
            role = ROLE_SHORT.get(spec.remainder_role, spec.remainder_role)
            t.caption += f"\n{outer} includes {spec.inner}: the split counts {outer} - {spec.inner} as {role}"
    t.caption_justify = "left"
    cuzk = m is None or getattr(getattr(m, "vocabulary", None), "cuzk", True)
    short = ROLE_SHORT if cuzk else {**ROLE_SHORT, "held": "whole"}  # a step is no GPU-lock tenure
    rows = list(zip(comps.index.tolist(), comps.records(), strict=True))
    for comp, r in rows[:MAX_COMPONENT_ROWS]:
        t.add_row(name(comp), short.get(r["role"], r["role"]), f"{int(r['count']):,}", cms(r["sum_ms"]), cms(r["mean_ms"]),
                  ms(r["median_ms"]), cms(r["p10_ms"]), cms(r["p90_ms"]), num(r["cv"], 2))
    rest = rows[MAX_COMPONENT_ROWS:]
    if rest:  # a log of thousands of names: the rest summed in one row, and said so
        t.add_row(f"{len(rest):,} more", "", f"{sum(int(r['count']) for _, r in rest):,}",
                  cms(sum(r["sum_ms"] for _, r in rest)), "", "", "", "", "", style="italic")
        t.caption += f"\n{len(rest):,} more components summed in the last row (--json or --csv lists every one)"
    return t


def _guessed(model, components) -> str:
    """`roles guessed from the names: h2d <- 'h2d', ...` for a guessed model."""
    parts = []
    for c in components:
        how = model.how.get(str(c))
        if how is None:
            continue
        word = how.split("'")[1] if how.startswith("guessed from name '") else None
        role = model.role_of(str(c)) or "-"
        if how.startswith("a one-off setup"):  # (the parser's word: llama.cpp's model load)
            parts.append(f"{c} = {role} (a one-off setup, once: no step's part, no stall)")
            continue
        parts.append(f"{c} = {ROLE_SHORT.get(role, role)} (name {word!r})" if word else f"{c} = {role}")
    out = ["roles guessed from the names: " + ", ".join(parts)] if parts else []
    out.append(f"whole: {model.held_how}" if model.held else model.held_how)
    return "; ".join(out) + "; --model FILE.toml sets them"


def timeline_table(a: Analysis) -> Table | None:
    lg = log_of(a)
    tl = lg.timeline
    if not tl.get("source"):
        return None
    v = vocabulary_of(a)
    lock = v.lock
    src = "TIMELINE events" if tl["source"] == "TIMELINE" else (
        "GPU-lock tenures (time stamps)" if lock else f"{v.records} (time stamps)")
    t = _table(f"Timeline (from {src})")
    t.add_column("figure")
    t.add_column("value", justify="right")
    t.add_row("wall time", secs(tl.get("wall_s")))
    if lock or tl["source"] == "TIMELINE":
        t.add_row("GPU busy (merged intervals)", secs(tl.get("gpu_busy_s")))
        t.add_row("GPU busy fraction", pct(tl.get("gpu_busy_fraction")))
    else:  # a step's interval is not GPU busy time: the loop may wait for data inside it
        t.add_row(f"time inside {v.records} (merged)", secs(tl.get("gpu_busy_s")))
        t.add_row(f"share of the span inside {v.records}", pct(tl.get("gpu_busy_fraction")))
    has_gpu = "gpu_compute" in set(lg.stats_table["role"].tolist()) if len(lg.stats_table) else False
    if is_num(tl.get("gpu_compute_fraction")) and (lock or has_gpu):
        label = "GPU compute fraction (CUDA-timed parts)" if lock else "GPU compute fraction (gpu_compute / span)"
        t.add_row(label, pct(tl.get("gpu_compute_fraction")))
    gaps = "idle gaps" if lock or tl["source"] == "TIMELINE" else f"gaps between {v.records}"
    t.add_row(gaps, f"{tl.get('idle_gaps', 0):,}")
    if tl.get("idle_gaps"):
        t.add_row("  total", secs(tl.get("idle_total_s")))
        t.add_row("  largest", secs(tl.get("idle_largest_s")))
    t.add_row(v.units, str(tl.get("partitions", 0)))
    if is_num(tl.get("synth_s")):
        t.add_row("synthesis (merged)", secs(tl.get("synth_s")))
        t.add_row("synthesis overlapping GPU", pct(tl.get("synth_overlap_fraction")))
        t.add_row("synthesis parallelism (max)", str(tl.get("synth_parallelism")))
    for w, d in (tl.get("workers") or {}).items():
        n = d.get("intervals")
        t.add_row(f"worker {w} busy", f"{pct(d.get('busy_fraction'))} ({n} interval{'' if n == 1 else 's'})")
    return t


def bounds_table(a: Analysis) -> RenderableType:
    lg = log_of(a)
    b = lg.bounds
    v = vocabulary_of(a)
    t = _table("Bounds")
    t.add_column("bound")
    t.add_column("seconds", justify="right")
    t.add_column("basis")
    if not is_num(b.get("gpu_floor_s")):
        gpu_basis = str(b.get("gpu_basis"))
    else:
        gpu_basis = f"{ms(b.get('gpu_per_partition_ms'), 0)} ms x {b.get('partitions')} {v.units} ({b.get('gpu_basis')})"
    t.add_row("GPU floor", secs(b.get("gpu_floor_s")), gpu_basis)
    cpu_basis = "-"
    if is_num(b.get("cpu_per_partition_ms")):
        cpu_basis = f"{ms(b.get('cpu_per_partition_ms'), 0)} ms x {b.get('partitions')} {v.units}"
        if is_num(b.get("synth_floor_s")) and is_num(b.get("cpu_work_floor_s")):
            cpu_basis += (f" (slower of synthesis {secs(b.get('synth_floor_s'))}, "
                          f"CPU work {secs(b.get('cpu_work_floor_s'))})")
    t.add_row("CPU floor", secs(b.get("cpu_floor_s")), cpu_basis)
    t.add_row("observed", secs(b.get("observed_s")), str(b.get("observed_basis")))
    cap = []
    binding = b.get("binding")
    # which floor binds needs both: with the other unknown, it is only the floor that is known
    other = "cpu" if binding == "gpu" else "gpu"
    which = (f"{binding.upper()} floor binds" if binding and is_num(b.get(f"{other}_floor_s"))
             else f"only the {str(binding).upper()} floor is known (the {other.upper()} floor is not)")
    if binding and is_num(b.get("observed_over_floor")):
        line = (f"{which}; observed is {num(b.get('observed_over_floor'), 2)}x it "
                f"({secs(b.get('gap_to_floor_s'))} above)")
        if binding != "gpu" and is_num(b.get("observed_over_gpu_floor")):
            line += f"; {num(b.get('observed_over_gpu_floor'), 2)}x the GPU floor"
        cap.append(line + ".")
    elif binding:
        why = ("the observed time is unknown" if not is_num(b.get("observed_s"))
               else f"the floor is {secs(b.get(binding + '_floor_s'))}")
        cap.append(f"{which}; no ratio to it: {why}.")
    elif not v.cuzk:
        cap.append(f"no floor: the {v.records} have no GPU compute part and no host-side part to bound them.")
    cap.extend(f"assumed: {x}" for x in b.get("assumptions", []))
    if cap:
        return Group(t, text("\n".join(cap)))
    return t


def pcie_table(a: Analysis) -> Table | None:
    lg = log_of(a)
    if lg.pcie is None or lg.pcie.empty:
        return None
    t = _table(f"PCIe and SM activity by phase (line rate {round(a.options.line_rate_gbs, 1):g} GB/s; "
               f"phases from {lg.pcie_info['phases_from'] if lg.pcie_info is not None else None})")
    # RX avg: the bytes the readings moved inside the phase over its time (a burst inside a longer
    # phase shows there, not in the median); GB each: per interval of the phase
    for col in ("phase", "samples", "RX med", "RX avg", "GB each", "TX med", "avg / line", "SM active"):
        t.add_column(col, justify="left" if col == "phase" else "right")
    for r in lg.pcie.itertuples():
        t.add_row("(outside)" if r.phase == "(none)" else name(r.phase), str(r.samples),
                  num(r.rx_gbs_median, 2), num(getattr(r, "rx_gbs_mean", None), 2),
                  num(getattr(r, "gb_per_phase_median", None), 3), num(r.tx_gbs_median, 2),
                  pct(getattr(r, "rx_mean_share_of_line_rate", None), 0), pct(r.sm_active_median, 0))
    skipped = lg.pcie_info["skipped_sample_rows"] if lg.pcie_info is not None else 0
    note = (a.samples_read or {}).get("note")
    if note:
        t.caption = f"samples: {note}"
        t.caption_justify = "left"
    elif skipped:
        t.caption = f"{skipped:,} malformed sample row(s) skipped"
    return t


def records_table(a: Analysis) -> Table:
    """One row per record; the parts under the role words of the components table (gpu =
    gpu_compute, stall = cpu_stall, wait = contention), so 80 columns hold it whole."""
    lg = log_of(a)
    v = vocabulary_of(a)
    t = _table(f"{v.Records} (ms; per-GPU parts averaged over the {v.record}'s GPUs)")
    for col in ("#", "lines", "gpus", "held", "h2d", "gpu", "stall", "other", "wait"):
        t.add_column(col, justify="left" if col == "lines" else "right", no_wrap=True)
    sp = lg.split_table
    t.add_column("note", min_width=12 if len(sp) and bool(sp["inconsistent"].any()) else None)
    t.caption = ("gpu = gpu_compute, stall = cpu_stall, wait = contention; other = held - the parts; "
                 "inconsistent (+N): the parts exceed held by N ms, other shown as 0")
    t.caption_justify = "left"
    for r in (SimpleNamespace(**d) for d in sp.records()):
        note = f"inconsistent (+{r.excess_ms:,.0f})" if r.inconsistent else ""
        t.add_row(str(r.record), f"{r.first_line}-{r.last_line}", str(r.n_gpus), ms(r.held_ms, 0),
                  ms(r.h2d_ms, 0), ms(r.gpu_compute_ms, 0), ms(r.cpu_stall_ms, 0), ms(r.other_ms, 0),
                  ms(r.contention_ms, 0), note, style="red" if r.inconsistent else None)
    return t


def diagnoses_block(findings: Sequence[Diagnosis], verbose: bool = False) -> RenderableType:
    """The findings, ranked: each with its recommendation, the evidence pieces it used and (verbose)
    every figure of its evidence."""
    if not findings:
        return text("Diagnosis: nothing stands out (no rule fired).")
    parts: list[RenderableType] = [Text("Diagnosis", style="bold")]
    for d in findings:
        line = Text()
        line.append(f"[{d.severity.upper()}] ", style=SEVERITY_STYLE.get(d.severity, ""))
        line.append(visible(f"{d.id}: "), style="bold")
        line.append(visible(d.summary))
        parts.append(line)
        parts.append(text(f"    -> {d.recommendation}"))
        used = d.evidence.get("pieces")
        if isinstance(used, list) and used:  # the evidence it used: kind[:direction]:source[:gpu]
            parts.append(text(f"    from {', '.join(map(str, used))}", style="dim"))
        if verbose:
            for k, v in d.evidence.items():
                if k != "pieces":
                    parts.append(text(f"       {k} = {evidence_value(v)}", style="dim"))
    return Group(*parts)


def evidence_value(v) -> str:
    """An evidence figure as a reader needs it: whole numbers whole (1610612736, not
    1610612736.0), others to the digits they carry (55.48, 0.164, not 55.4808836503483);
    lists and mappings item by item; strings as they are; unknown (None, NaN) as -."""
    if v is None:
        return "-"
    if isinstance(v, bool | str):
        return str(v)
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k}: {evidence_value(x)}" for k, x in v.items()) + "}"
    if isinstance(v, list | tuple):
        return "[" + ", ".join(evidence_value(x) for x in v) + "]"
    if not is_num(v):
        return "-" if isinstance(v, float) else str(v)
    if float(v).is_integer() and abs(v) < 1e15:
        return f"{int(v)}"
    if abs(v) >= 10:
        return f"{v:.2f}".rstrip("0").rstrip(".")
    return f"{v:.3g}"


def summary_renderables(a: Analysis, *, records: bool = False, verbose: bool = False) -> list[RenderableType]:
    trace_parts: list[RenderableType] = []
    activity_parts: list[RenderableType] = []
    lg = a.log if a.log is not None and a.log.timing_lines else None  # no timing lines: no log section
    doc = a.document() if a.samples is not None or a.trace is not None else None  # (built once, drawn from)
    if doc is not None and doc["samples"] is not None and doc["samples"]["activity"] is not None:
        act = doc["samples"]["activity"]
        activity_parts = activity_renderables(act)
        if lg is None and a.trace is None:  # samples and nothing else
            skipped = a.malformed_sample_rows
            note = (a.samples_read or {}).get("note")
            return [samples_header(act, a.source, skipped, note), *activity_parts,
                    diagnoses_block(a.findings, verbose=verbose)]
    if doc is not None and doc["trace"] is not None:
        tdoc = doc["trace"]
        trace_parts = trace_renderables(tdoc, a.options.line_rate_gbs, a.options.line_rate_source)
        if lg is None:  # a trace and nothing else: no log section
            return [trace_header(tdoc, a.source), *trace_parts, *activity_parts,
                    diagnoses_block(a.findings, verbose=verbose)]
    if lg is None:  # (a source with neither timing lines, samples nor a trace never reaches a report)
        return [diagnoses_block(a.findings, verbose=verbose)]
    out: list[RenderableType] = [header(a)]
    if lg.records:
        out.append(split_table(a))
    out.append(components_table(a))
    for extra in (timeline_table(a), pcie_table(a)):
        if extra is not None:
            out.append(extra)
    if lg.records or lg.timeline.get("source"):
        out.append(bounds_table(a))
    if records and len(lg.split_table):
        out.append(records_table(a))
    out.extend(activity_parts)
    out.extend(trace_parts)
    out.append(diagnoses_block(a.findings, verbose=verbose))
    return out


def render_summary(analysis: Analysis, console: Console, *, records: bool = False, verbose: bool = False) -> None:
    for i, r in enumerate(summary_renderables(analysis, records=records, verbose=verbose)):
        if i:
            console.print()
        console.print(r)

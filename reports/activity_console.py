"""Console tables of the GPU activity read from NVML samples (gpuscope.analysis.evidence.samples.activity):
how busy the SMs were, the idle gaps, what each moment was (computing, moving bytes, idle
with PCIe quiet), PCIe against the line rate, memory, power, clocks and their throttle
reasons, the link. Input: the document's `samples.activity` (gpuscope.analysis.document.SamplesActivityDoc),
so the console and --json agree."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich import box
from rich.console import RenderableType
from rich.table import Table
from rich.text import Text

from gpuscope.analysis.names import SM_IDLE
from gpuscope.reports.numbers import is_num, num, pct, secs
from gpuscope.reports.safe_text import LiteralTable, visible

if TYPE_CHECKING:
    from gpuscope.analysis.document import SamplesActivityDoc, SamplesGpuDoc

SOURCE_TEXT: dict[str | None, str] = {"gpm_sm_active": "GPM SM activity", "utilization": "utilization.gpu (a kernel ran, not how busy)"}
CLASS_TEXT = (("computing", "computing"), ("both", "computing and moving bytes"),
              ("transferring", "moving bytes, SMs idle"), ("idle_quiet", "idle, PCIe quiet (host not feeding it)"),
              ("idle", "idle, PCIe not measured"), ("unknown", "not measured"))


def _table(title: str) -> Table:
    return LiteralTable(title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False,
                        collapse_padding=True)


def samples_header(doc: SamplesActivityDoc, source: str, skipped_rows: int = 0, note: str | None = None) -> Text:
    """The first lines of a report on samples alone; `note`: what reading them cost
    (parsers.samples.damage_note), said instead of the bare count of skipped rows."""
    t = Text()
    t.append(visible(source), style="bold")
    gpus = doc.get("gpus") or []
    t.append(f" — NVML samples, {len(gpus)} GPU(s), {secs(doc.get('wall_s'))} recorded; no timing lines\n")
    t.append(f"activity from {SOURCE_TEXT.get(doc.get('source'), doc.get('source') or '-')}, "
             f"one reading every {secs(doc.get('resolution_s'), 2)}"
             + (f"; {skipped_rows:,} malformed sample rows skipped" if skipped_rows and not note else ""))
    if note:
        t.append("\n" + visible(note))
    for n in doc.get("notes") or []:
        t.append("\n" + visible(f"note: {n}"))
    return t


def activity_table(doc: SamplesGpuDoc, gpu: str | None = None) -> Table:
    src = SOURCE_TEXT.get(doc.get("source"), doc.get("source") or "-")
    who = f"GPU {gpu} activity" if gpu is not None else "GPU activity"
    t = _table(f"{who} from NVML samples ({src}, every {secs(doc.get('resolution_s'), 2)})")
    t.add_column("figure")
    t.add_column("whole recording", justify="right")
    t.add_column("working time", justify="right")
    act = doc.get("active") or {}
    gaps, agaps = doc.get("idle_gaps") or {}, act.get("idle_gaps") or {}
    t.add_row("span", secs(doc.get("wall_s")), secs(act.get("working_s")))
    busy = "SM activity (mean)" if doc.get("source") != "utilization" else "busy by utilization.gpu (mean)"
    t.add_row(busy, pct(doc.get("busy_fraction")), pct(act.get("busy_fraction")))
    if doc.get("copy_fraction") is not None or act.get("copy_fraction") is not None:
        t.add_row("copying (PCIe RX or TX busy)", pct(doc.get("copy_fraction")), pct(act.get("copy_fraction")))
    word = "SM activity" if doc.get("source") != "utilization" else "utilization.gpu"
    t.add_row(f"idle ({word} < {SM_IDLE:.0%})", pct(doc.get("idle_fraction")), pct(act.get("idle_fraction")))
    t.add_row("idle gaps", _count(gaps), _count(agaps))
    t.add_row("  idle gaps total", secs(gaps.get("total_s")) if gaps else "-",
              secs(agaps.get("total_s")) if agaps else "-")
    t.add_row("  longest idle gap", secs(gaps.get("longest_s")) if gaps else "-",
              secs(agaps.get("longest_s")) if agaps else "-")
    if is_num(gaps.get("leading_s")) and gaps.get("leading_s"):
        t.add_row("  before the first work", secs(gaps.get("leading_s")), "")
    classes, aclasses = doc.get("classes") or {}, act.get("classes") or {}
    if any(classes.get(k) or aclasses.get(k) for k, _ in CLASS_TEXT):
        t.add_row("time by state", "", "")
    for key, label in CLASS_TEXT:
        if classes.get(key) or aclasses.get(key):
            t.add_row(f"  {label}", pct(classes.get(key)), pct(aclasses.get(key)))
    pauses = act.get("pauses") or {}
    if pauses.get("count"):
        t.add_row("pauses (no work >= 1 s)", "", f"{pauses['count']} ({secs(pauses.get('total_s'))})")
    return t


def _count(g: dict[str, Any]) -> str:
    return f"{g.get('count', 0):,}" if g else "-"


def device_table(doc: SamplesGpuDoc, gpu: str | None = None) -> Table:
    t = _table("PCIe, memory, power, clocks" + (f" of GPU {gpu}" if gpu is not None else ""))
    t.add_column("figure")
    t.add_column("value", justify="right")
    pc = doc.get("pcie") or {}
    if pc:
        rate = pc.get("line_rate_gbs")
        for d, label in (("rx", "PCIe RX (H2D)"), ("tx", "PCIe TX (D2H)")):
            r = pc.get(d) or {}
            t.add_row(f"{label} p50 / p90 / max GB/s",
                      f"{num(r.get('p50_gbs'), 2)} / {num(r.get('p90_gbs'), 2)} / {num(r.get('max_gbs'), 2)}")
        near = pc.get("time_near_line_rate_s")
        t.add_row(f"time near the line rate ({num(rate, 1)} GB/s)", "none" if near == 0 else secs(near))
    mem = doc.get("memory") or {}
    if is_num(mem.get("used_max_mib")):
        t.add_row("device memory used (max)", f"{mem['used_max_mib']:,.0f} MiB"
                  + (f" of {mem['total_mib']:,.0f} ({pct(mem.get('fraction'))})" if is_num(mem.get("total_mib")) else ""))
    pw = doc.get("power") or {}
    if is_num(pw.get("median_w")):
        t.add_row("power median / max", f"{pw['median_w']:.0f} / {pw.get('max_w', 0):.0f} W")
    ck = doc.get("clocks") or {}
    sm = ck.get("sm_mhz") or {}
    if is_num(sm.get("median")):
        busy = ck.get("sm_busy_median_mhz")
        t.add_row("SM clock median (busy) / max", f"{num(busy, 0) if is_num(busy) else '-'} / {num(ck.get('sm_max_mhz'), 0)} MHz")
    th = doc.get("throttle") or {}
    if th.get("recorded"):
        reasons = th.get("reasons") or {}
        text = ", ".join(f"{k.replace('_', ' ')} {pct(v.get('busy_fraction'), 0)} of busy time"
                         for k, v in reasons.items() if v.get("busy_s")) or "none while busy"
        t.add_row("clock-event reasons", text)
    else:
        t.add_row("clock-event reasons", "not recorded")
    link = doc.get("link") or {}
    if link.get("gen_max"):
        t.add_row("PCIe link now / max", f"Gen{link.get('gen_now')} x{link.get('width_now')} / "
                  f"Gen{link.get('gen_max')} x{link.get('width_max')}" + (" (downgraded)" if link.get("downgraded") else ""))
    return t


def pipes_line(act: dict[str, Any]) -> Text | None:
    """What the units did while the SMs worked (GPM), one line under the activity table."""
    p = act.get("pipes") or {}
    names = (("dram_active", "DRAM"), ("tensor_active", "tensor"), ("fp16_active", "FP16"),
             ("fp32_active", "FP32"), ("fp64_active", "FP64"), ("sm_occupancy", "SM occupancy"))
    parts = [f"{label} {pct(p[k], 0)}" for k, label in names if is_num(p.get(k))]
    if not parts:
        return None
    return Text(f"while computing ({secs(p.get('computing_s'))}): " + ", ".join(parts) + "\n")


def activity_renderables(doc: SamplesActivityDoc) -> list[RenderableType]:
    if not doc.get("gpus"):
        return [Text("GPU activity: no samples to read.")]
    per = doc.get("per_gpu") or {}
    if len(per) < 2:
        line = pipes_line(doc.get("active") or {})
        return [activity_table(doc), *([line] if line else []), device_table(doc)]
    out: list[RenderableType] = [Text(f"{len(per)} GPUs, each on its own (nothing summed over them)\n")]
    for gpu, fig in per.items():  # every GPU named, its own figures: nothing summed over GPUs
        line = pipes_line(fig.get("active") or {})
        out += [activity_table(fig, gpu), *([line] if line else []), device_table(fig, gpu)]
    return out

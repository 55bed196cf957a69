"""Console tables of the GPU activity read from NVML samples (gpuscope.analysis.evidence.samples.activity):
how busy the SMs were, the idle gaps, what each moment was (computing, moving bytes, idle
with PCIe quiet), PCIe against the line rate, memory, power, clocks and their throttle
reasons, the link. Input: the document's `samples.activity` (gpuscope.analysis.document.SamplesActivityDoc),
so the console and --json agree."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich import box
from rich.console import RenderableType
from rich.table import Table
from rich.text import Text

from gpuscope.analysis.names import SM_IDLE
from gpuscope.reports.numbers import is_num, num, pct, secs
from gpuscope.reports.safe_text import LiteralTable, visible

if TYPE_CHECKING:
    from gpuscope.analysis.document import (
        ActiveDoc,
        ActiveIdleGapsDoc,
        ClassesDoc,
        ClassName,
        PipeName,
        SamplesActivityDoc,
        SamplesGpuDoc,
        SamplesIdleGapsDoc,
    )

SOURCE_TEXT: dict[str | None, str] = {"gpm_sm_active": "GPM SM activity", "utilization": "utilization.gpu (a kernel ran, not how busy)"}
CLASS_TEXT: tuple[tuple[ClassName, str], ...] = (("computing", "computing"), ("both", "computing and moving bytes"),
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
    act = doc.get("active")  # (None: no GPU work, no working time)
    gaps, agaps = doc.get("idle_gaps"), act["idle_gaps"] if act else None
    t.add_row("span", secs(doc.get("wall_s")), secs(act["working_s"] if act else None))
    busy = "SM activity (mean)" if doc.get("source") != "utilization" else "busy by utilization.gpu (mean)"
    t.add_row(busy, pct(doc.get("busy_fraction")), pct(act["busy_fraction"] if act else None))
    acopy = act["copy_fraction"] if act else None
    if doc.get("copy_fraction") is not None or acopy is not None:
        t.add_row("copying (PCIe RX or TX busy)", pct(doc.get("copy_fraction")), pct(acopy))
    word = "SM activity" if doc.get("source") != "utilization" else "utilization.gpu"
    t.add_row(f"idle ({word} < {SM_IDLE:.0%})", pct(doc.get("idle_fraction")), pct(act["idle_fraction"] if act else None))
    t.add_row("idle gaps", _count(gaps), _count(agaps))
    t.add_row("  idle gaps total", secs(gaps["total_s"]) if gaps else "-",
              secs(agaps["total_s"]) if agaps else "-")
    t.add_row("  longest idle gap", secs(gaps["longest_s"]) if gaps else "-",
              secs(agaps["longest_s"]) if agaps else "-")
    lead = gaps.get("leading_s") if gaps else None
    if is_num(lead) and lead:
        t.add_row("  before the first work", secs(lead), "")
    classes, aclasses = doc.get("classes"), act["classes"] if act else None
    if any(_share(classes, k) or _share(aclasses, k) for k, _ in CLASS_TEXT):
        t.add_row("time by state", "", "")
    for key, label in CLASS_TEXT:
        if _share(classes, key) or _share(aclasses, key):
            t.add_row(f"  {label}", pct(_share(classes, key)), pct(_share(aclasses, key)))
    pauses = act["pauses"] if act else None
    if pauses and pauses["count"]:
        t.add_row("pauses (no work >= 1 s)", "", f"{pauses['count']} ({secs(pauses['total_s'])})")
    return t


def _share(classes: ClassesDoc | None, key: ClassName) -> float | None:
    return classes[key] if classes else None


def _count(g: SamplesIdleGapsDoc | ActiveIdleGapsDoc | None) -> str:
    return f"{g['count']:,}" if g else "-"


def device_table(doc: SamplesGpuDoc, gpu: str | None = None) -> Table:
    t = _table("PCIe, memory, power, clocks" + (f" of GPU {gpu}" if gpu is not None else ""))
    t.add_column("figure")
    t.add_column("value", justify="right")
    pc = doc.get("pcie")
    if pc:
        rate = pc["line_rate_gbs"]
        for r, label in ((pc["rx"], "PCIe RX (H2D)"), (pc["tx"], "PCIe TX (D2H)")):
            t.add_row(f"{label} p50 / p90 / max GB/s",
                      f"{num(r['p50_gbs'], 2)} / {num(r['p90_gbs'], 2)} / {num(r['max_gbs'], 2)}")
        near = pc["time_near_line_rate_s"]
        t.add_row(f"time near the line rate ({num(rate, 1)} GB/s)", "none" if near == 0 else secs(near))
    mem = doc.get("memory")
    if mem and is_num(mem["used_max_mib"]):
        t.add_row("device memory used (max)", f"{mem['used_max_mib']:,.0f} MiB"
                  + (f" of {mem['total_mib']:,.0f} ({pct(mem['fraction'])})" if is_num(mem["total_mib"]) else ""))
    pw = doc.get("power")
    if pw and is_num(pw["median_w"]):
        t.add_row("power median / max", f"{pw['median_w']:.0f} / {pw['max_w']:.0f} W")
    ck = doc.get("clocks")
    if ck and is_num(ck["sm_mhz"]["median"]):
        busy = ck["sm_busy_median_mhz"]
        t.add_row("SM clock median (busy) / max", f"{num(busy, 0) if is_num(busy) else '-'} / {num(ck['sm_max_mhz'], 0)} MHz")
    th = doc.get("throttle")
    if th and th["recorded"]:
        reasons = th.get("reasons") or {}
        text = ", ".join(f"{k.replace('_', ' ')} {pct(v['busy_fraction'], 0)} of busy time"
                         for k, v in reasons.items() if v["busy_s"]) or "none while busy"
        t.add_row("clock-event reasons", text)
    else:
        t.add_row("clock-event reasons", "not recorded")
    link = doc.get("link")
    if link and link.get("gen_max"):
        t.add_row("PCIe link now / max", f"Gen{link.get('gen_now')} x{link.get('width_now')} / "
                  f"Gen{link.get('gen_max')} x{link.get('width_max')}" + (" (downgraded)" if link.get("downgraded") else ""))
    return t


PIPE_TEXT: tuple[tuple[PipeName, str], ...] = (
    ("dram_active", "DRAM"), ("tensor_active", "tensor"), ("fp16_active", "FP16"), ("fp32_active", "FP32"),
    ("fp64_active", "FP64"), ("sm_occupancy", "SM occupancy"))


def pipes_line(act: ActiveDoc | None) -> Text | None:
    """What the units did while the SMs worked (GPM), one line under the activity table."""
    p = act["pipes"] if act else None
    parts = [f"{label} {pct(p.get(k), 0)}" for k, label in PIPE_TEXT if is_num(p.get(k))] if p else []
    if not p or not parts:
        return None
    return Text(f"while computing ({secs(p['computing_s'])}): " + ", ".join(parts) + "\n")


def activity_renderables(doc: SamplesActivityDoc) -> list[RenderableType]:
    if not doc.get("gpus"):
        return [Text("GPU activity: no samples to read.")]
    per = doc.get("per_gpu") or {}
    if len(per) < 2:
        line = pipes_line(doc.get("active"))
        return [activity_table(doc), *([line] if line else []), device_table(doc)]
    out: list[RenderableType] = [Text(f"{len(per)} GPUs, each on its own (nothing summed over them)\n")]
    for gpu, fig in per.items():  # every GPU named, its own figures: nothing summed over GPUs
        line = pipes_line(fig.get("active"))
        out += [activity_table(fig, gpu), *([line] if line else []), device_table(fig, gpu)]
    return out

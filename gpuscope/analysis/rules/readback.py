"""Read-backs (device-to-host copies) that a program's timing lines print: `d2h_bound`.

Fires when the d2h-role time (a component named d2h, dtoh, download, readback, to_host,
to_cpu, or given the role by a TOML model) is at least D2H_SHARE_LOW of the record time.
With NVML samples joined to the phases, the TX rate during the read-backs says how fast they
crawled against the line rate: below SLOW_SHARE of it, a pageable destination is the likely
cause (the samples cannot see the memory kind; a profiler trace names it).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from gpuscope.analysis.core import Diagnosis
from gpuscope.analysis.evidence.log.rule_input import NAN, RuleInput, floats, rnd
from gpuscope.analysis.evidence.samples.pcie import resolved_by_samples
from gpuscope.analysis.rules.engine import LOG, Finding, link_when_near_line, rule
from gpuscope.arrays import median

if TYPE_CHECKING:
    from gpuscope.analysis.evidence import Evidence

D2H_SHARE_HIGH, D2H_SHARE_MEDIUM, D2H_SHARE_LOW = 0.4, 0.2, 0.1
SLOW_SHARE = 0.5   # TX during the read-backs below this share of the line rate: not the link


def _tx_during(inp: RuleInput) -> tuple[float, bool, int] | None:
    """(median TX GB/s over the d2h-role phases, resolved by the samples, samples) or None."""
    p = inp.pcie
    if p is None or p.empty:
        return None
    rows = p[[inp.model.role_of(str(ph)) == "d2h" for ph in p["phase"]]]
    rows = rows[rows["samples"] > 0]
    if not len(rows):
        return None
    r = rows.sort_values("samples", ascending=False).iloc[0]
    return float(r["tx_gbs_median"]), resolved_by_samples(r), int(r["samples"])


def _rate_elsewhere(ev: Evidence) -> tuple[float, str, str | None] | None:
    """(GB/s, basis, host memory kind or None) of the read-backs from the finer evidence beside the
    log: a trace's DtoH copies (exact, with the memory kind), else the samples' TX (the readings
    inside resolved bursts; readings at the line rate are a lower bound that needs no resolution)."""
    for p in ev.get("copies", direction="DtoH", source="trace"):
        if p.figures.get("gbs") is not None:
            return float(p.figures["gbs"]), "the profiler trace's DtoH copies", p.figures.get("host_memory")
    if ev.activity is not None:
        for ga in ev.activity.gpus:
            tx = ga.fig.pcie.tx
            b = tx["bursts"]
            inside = b["interior_gbs_median"] or NAN
            if b["resolved"] and math.isfinite(inside):
                return float(inside), "PCIe TX inside the read-backs (samples)", None
            top = tx["max_gbs"]
            if tx["near_line_rate_s"] > 0 and top is not None and math.isfinite(top):
                return float(top), "PCIe TX readings at the line rate (samples; a lower bound)", None
    return None


@rule("d2h_bound", needs=LOG, uses=("copies",), emits={"d2h_bound": "readback"}, cause=link_when_near_line("readback"),
      supersedes=("download_bound_pageable",), also=("samples", "trace"))
def d2h_bound_rule(ev: Evidence) -> list[Finding]:
    """The read-back rule: the log's d2h time, its rate from the finest evidence there is."""
    return [(d, float(d.evidence.get("d2h_share") or 0.0)) for d in d2h_bound(ev.log_input, _rate_elsewhere(ev))]


def d2h_bound(inp: RuleInput, elsewhere: tuple[float, str, str | None] | None = None) -> list[Diagnosis]:
    t = inp.totals
    share = t.get("d2h_share", NAN)
    if not len(inp.split) or share is None or math.isnan(share) or share < D2H_SHARE_LOW:
        return []
    sev = "high" if share >= D2H_SHARE_HIGH else "medium" if share >= D2H_SHARE_MEDIUM else "low"
    v = inp.model.vocabulary
    d2h = floats(inp.split, "d2h_ms")
    line = inp.options.line_rate_gbs
    ev: dict = {"d2h_components": [c for c in inp.wide.columns if inp.model.role_of(c) == "d2h"],
                "d2h_share": rnd(share, 4), "d2h_ms": rnd(t["d2h_ms"]), "held_ms": rnd(t["held_ms"]),
                "d2h_median_ms": rnd(float(median(d2h))), "line_rate_gbs": line,
                "line_rate_source": inp.options.line_rate_source,
                "copies_could_hide_under_compute": inp.copies_could_hide_under_compute("d2h_ms")}
    summary = (f"Read-backs (device to host) take {share:.1%} of the {v.whole} ({t['d2h_ms']:.0f} of "
               f"{t['held_ms']:.0f} ms, median {float(median(d2h)):.0f} ms per {v.record})")
    tx = _tx_during(inp)
    slow, kind = None, None
    if tx is not None:
        gbs, resolved, n = tx
        ev.update(pcie_tx_gbs_during_d2h=rnd(gbs, 2), pcie_tx_share_of_line_rate=rnd(gbs / line, 3) if line else NAN,
                  pcie_tx_resolved_by_samples=resolved, pcie_tx_samples=n)
        if resolved and line and math.isfinite(gbs):
            slow = gbs < SLOW_SHARE * line
            summary += f", PCIe TX {gbs:.1f} GB/s during them, {gbs / line:.0%} of the {round(line, 1):g} GB/s line rate"
    if elsewhere is not None and line and (slow is None or elsewhere[2] is not None):
        gbs, basis, kind = elsewhere
        slow = gbs < SLOW_SHARE * line
        ev.update(rate_gbs=rnd(gbs, 2), rate_basis=basis, host_memory=kind)
        summary += f"; {gbs:.1f} GB/s by {basis}, {gbs / line:.0%} of the {round(line, 1):g} GB/s line rate"
        if kind is not None:
            summary += f", into {kind} host memory"
    summary += "."
    if slow and kind is None:
        summary += " A crawl like this is the mark of a pageable destination (likely: the samples cannot see the memory kind)."
        ev["could_not_see"] = "the host memory kind of the destination: a profiler trace names it"
    if slow:
        rec = ("Read back into a reused pinned buffer (torch.empty(..., pin_memory=True) and "
               "copy_(src, non_blocking=True); CUDA: cudaHostAlloc once), read back less or less often, or keep "
               "the result on the GPU.")
    elif slow is False:
        rec = ("The read-backs already run near the line rate: read back less (only what the host needs), less "
               "often, or overlap them with compute on a side stream.")
    else:
        ev["could_not_see"] = ("the read-backs' rate: NVML samples joined to the timing lines (gpuscope record) or a "
                               "profiler trace measure it")
        rec = ("Read back less or less often, keep the result on the GPU, and read into a reused pinned buffer "
               "(pageable destinations crawl at a few GB/s).")
    return [Diagnosis("d2h_bound", sev, summary, ev, rec)]

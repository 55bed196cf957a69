"""Diagnoses from NVML samples alone (gpuscope.analysis.evidence.samples.activity), most important first.

Each rule reads one GPU's figures (Activity.to_json's per-GPU object) and returns a
Diagnosis with its evidence and, in evidence["could_not_see"], what the samples cannot
tell; thresholds are the constants below (docs/ANALYZE.md "From NVML samples alone").
Steady-state rules judge the working time: the active span minus its pauses. A finding on
several GPUs is one diagnosis naming them, with the worst GPU's numbers. Order: severity,
then the share of the working time the finding explains.

    rule_findings(activity, rule, sample_context(activity, upload_gbs=None, phases=None))
    gpuscope.analysis.rules.registry.sample_diagnoses(activity, ...)   # every sample rule, ranked

`upload_gbs` / `download_gbs`: the program's own bytes/time rate (a log's h2d_bytes over
its upload time); it wins over the samples, which cannot resolve short copies. `phases`
(PHASE_SCHEMA): timing-line phases; the starvation finding then names the phase that lines
up with the idle time (idle_overlap.idle_by_component).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from gpuscope.analysis.core import SEVERITY_ORDER, Diagnosis
from gpuscope.analysis.evidence.samples import samplegrid as sg
from gpuscope.analysis.rules.device import (
    Finding,
    SampleRule,
    finite,
    link_downgraded,
    memory_nearly_full,
    rnd,
)

if TYPE_CHECKING:
    from gpuscope.analysis.evidence.samples.activity import Activity

MIN_READINGS = 5                         # activity readings below this: too short to judge
MIN_WORK_READINGS = 3                    # readings inside the working time below this: no starvation verdict
STARVED_BUSY_HIGH, STARVED_BUSY_MEDIUM = 0.10, 0.20  # mean and median activity of the working time
STARVED_MIN_QUIET = 0.5                  # ... with PCIe quiet at least this share of it
IDLE_BETWEEN, IDLE_BETWEEN_HIGH = 0.5, 0.6  # beside GPM: no kernel resident this share of the working time ...
FULL_WHEN_RESIDENT = 0.75                # ... while SM activity >= this x utilization.gpu: idle between steps
TINY_KERNELS_RATIO = 0.1                 # SM activity < this x utilization.gpu: kernels fill few SMs
UNDERUSED_BUSY = 0.5                     # gpu_underused below this mean activity (>= STARVED_BUSY_MEDIUM)
SLOW_COPY_SHARE = 0.5                    # a copy below this share of the line rate: the copy path binds
COPY_SHARE_HIGH, COPY_SHARE_MEDIUM, COPY_SHARE_LOW = 0.4, 0.2, 0.1  # burst time / working time
COPY_SM_LOW = 0.5                        # SM activity during the copies below this: SMs wait on them
LINK_SHARE_MEDIUM, LINK_SHARE_LOW = 0.25, 0.10  # time at >= NEAR_LINE_SHARE of the line / working
PAUSE_SHARE = 0.2                        # pauses / active span
STARTUP_MIN_S, STARTUP_SHARE = 2.0, 0.2  # no GPU work before the first sign of it


def _limit(f: dict) -> str:
    res = f.get("resolution_s")
    res_t = f"{res:.2g} s" if finite(res) else "its"
    if f.get("source") == "utilization":
        return (f"utilization.gpu only says a kernel ran during each {res_t} window: it cannot tell busy from "
                "barely busy, nor which host work the GPU waited on")
    return (f"GPM SM activity averages each {res_t} window: idle gaps shorter than that are invisible, and the "
            "samples cannot say which host work the GPU waited on")


def _quiet(a: dict) -> tuple[float | None, bool]:
    """(share of the measured working time with PCIe quiet, whether PCIe was measured at all)."""
    measured = a.get("pcie_measured_share")
    if not finite(measured) or measured < 0.5:
        return None, False
    return a.get("pcie_quiet_share"), True


def _idle_quiet(a: dict) -> float:
    """Of the time the SMs idled, the share with PCIe quiet too (1.0 when they never idled): the
    computing time's quiet PCIe says nothing of what the SMs waited for (copies filling the idle half)."""
    c = a.get("classes") or {}
    q, x = c.get("idle_quiet", 0.0), c.get("transferring", 0.0)
    return q / (q + x) if finite(q) and finite(x) and q + x > 0 else 1.0


def pct(x: float) -> str:
    """A share as a percentage with the digits it needs (0.05% stays visible)."""
    if not finite(x):
        return "?"
    return f"{x:.2%}" if 0 < abs(x) < 0.01 else f"{x:.1%}" if abs(x) < 0.1 else f"{x:.0%}"


def _what(f: dict) -> str:
    return "utilization.gpu (time a kernel ran)" if f["source"] == "utilization" else "SM activity"


def _working(f: dict) -> dict | None:
    """The active-span figures when the GPU did any work outside pauses, else None."""
    a = f["active"]
    return a if a is not None and a["working_s"] else None


def _median_activity(g: sg.Grid, working: np.ndarray) -> float:
    ok = np.isfinite(g.activity)
    ok &= working
    x = sg.take(g.activity, ok)
    return float(np.median(x, overwrite_input=not np.may_share_memory(x, g.activity))) if x.size else float("nan")


# -- rules: (figures, grid, working mask, context) -> Finding | None --------------------------

def no_gpu_activity(f: dict, g: sg.Grid, working: np.ndarray, ctx: dict) -> Finding | None:
    if f["active"] is not None:
        return None
    ev = {"wall_s": rnd(f["wall_s"]), "readings": f["readings"], "source": f["source"], "could_not_see": _limit(f)}
    io = " and PCIe stayed quiet" if f["pcie"]["source"] else " (PCIe not measured)"
    return (Diagnosis("no_gpu_activity", "high",
                      f"No sign of GPU work in {f['wall_s']:.1f} s of samples: {_what(f)} never passed "
                      f"{sg.SM_TRACE:.0%}{io}.",
                      ev, "Check that the program uses this GPU (CUDA_VISIBLE_DEVICES, its device index) and "
                          "does not fall back to the CPU."), 1.0)


def _steady(f: dict, g: sg.Grid, working: np.ndarray) -> tuple | None:
    """(active figures, mean and median activity, PCIe quiet share, whether PCIe was measured,
    whether it was quiet enough: >= STARVED_MIN_QUIET or not measured) of the working time."""
    a = _working(f)
    if a is None:
        return None
    quiet, measured = _quiet(a)
    calm = not measured or (finite(quiet) and quiet >= STARVED_MIN_QUIET and _idle_quiet(a) >= STARVED_MIN_QUIET)
    return a, a["busy_fraction"], _median_activity(g, working), quiet, measured, calm


def _starved(busy: float, med: float) -> bool:
    return finite(busy) and busy < STARVED_BUSY_MEDIUM and finite(med) and med < STARVED_BUSY_MEDIUM


def _idle_between(f: dict, a: dict, busy: float) -> float | None:
    """Beside GPM: the share of the working time no kernel ran (1 - utilization.gpu) when the kernels
    that ran kept the SMs busy (SM activity >= FULL_WHEN_RESIDENT x it): idle between steps, not
    under-filled (an HF Trainer fed by a slow collator: SM 20%, kernels resident 23%). None for tiny
    kernels, an idle share < IDLE_BETWEEN, or readings that show the gaps themselves."""
    util = a.get("utilization_busy_fraction")
    if f["source"] != "gpm_sm_active" or not finite(util) or util <= 0 or not finite(busy):
        return None
    if not finite(a.get("idle_fraction")) or a["idle_fraction"] >= IDLE_BETWEEN:
        return None
    return 1.0 - util if 1.0 - util >= IDLE_BETWEEN and busy >= FULL_WHEN_RESIDENT * util else None


def gpu_starved(f: dict, g: sg.Grid, working: np.ndarray, ctx: dict) -> Finding | None:
    st = _steady(f, g, working)
    between = None if st is None else _idle_between(f, st[0], st[1])
    if st is None or not ((_starved(st[1], st[2]) or between is not None) and st[5]):
        return None
    a, busy, med, quiet, measured, _ = st
    res = f.get("resolution_s")
    if finite(res) and res > 0 and a["working_s"] < MIN_WORK_READINGS * res:
        return _too_few_readings(f, a, busy, res), 0.0
    # without PCIe figures a slow copy cannot be ruled out: never more than medium
    sev = "high" if busy < STARVED_BUSY_HIGH and measured else "medium"
    if between is not None and between >= IDLE_BETWEEN_HIGH and measured:
        sev = "high"  # the SMs full while kernels ran: the idle share is what the GPU loses
    util = a.get("utilization_busy_fraction")
    gaps = a["idle_gaps"]
    ev = {"working_s": rnd(a["working_s"]), "busy_fraction": rnd(busy, 4), "busy_median": rnd(med, 4),
          "pcie_quiet_share": rnd(quiet), "pcie_measured": measured, "idle_fraction": rnd(a["idle_fraction"]),
          "idle_gaps": {k: rnd(gaps[k]) if k != "count" else gaps[k] for k in ("count", "total_s", "longest_s")},
          "rx_gbs_median": rnd(f["pcie"]["rx"]["p50_gbs"]), "source": f["source"],
          "resolution_s": rnd(f["resolution_s"]), "busy_fraction_of_recording": rnd(f["busy_fraction"], 4),
          "thresholds": {"busy_high": STARVED_BUSY_HIGH, "busy_medium": STARVED_BUSY_MEDIUM,
                         "pcie_quiet_min": STARVED_MIN_QUIET, "idle_below": sg.SM_IDLE}}
    what = "input pipeline, CPU preprocessing, synchronisation or kernel-launch overhead"
    tiny = (f["source"] == "gpm_sm_active" and finite(util) and util >= 0.03 and busy < TINY_KERNELS_RATIO * util)
    if finite(util) and f["source"] != "utilization":
        ev["utilization_busy_fraction"] = rnd(util)
    if tiny:
        what = (f"kernels were resident {pct(util)} of the time yet kept {pct(busy)} of the SMs busy: many tiny "
                "kernels, each shorter than its launch (launch- or synchronisation-bound)")
    io = (f"PCIe quiet {pct(quiet)} of that time" if measured else "PCIe not measured")
    summary = (f"GPU starved by the host: {_what(f)} averaged {pct(busy)} over the {a['working_s']:.1f} s it "
               f"was in use, {io} ({what})")
    if between is not None and not tiny:
        ev["no_kernel_share"] = rnd(between)
        summary = (f"GPU starved by the host: kernels ran only {pct(1 - between)} of the {a['working_s']:.1f} s it was "
                   f"in use and kept the SMs busy while they ran ({_what(f)} {pct(busy)}), {io}: it idles between "
                   f"steps ({pct(between)} of the time), its kernels do not under-fill it ({what})")
    if not measured:  # an idle GPU waiting on slow copies looks the same without PCIe figures
        summary = (f"GPU mostly idle, cause not visible: {_what(f)} averaged {pct(busy)} over the "
                   f"{a['working_s']:.1f} s it was in use, and PCIe was not measured, so waiting for the host "
                   "cannot be told from waiting for slow copies (pageable uploads or read-backs)")
    if finite(a["idle_fraction"]) and a["idle_fraction"] >= 0.95:
        summary += f"; under {sg.SM_IDLE:.0%} for {pct(a['idle_fraction'])} of it."
    elif gaps["count"]:
        summary += (f"; {gaps['count']} idle gap(s) under {sg.SM_IDLE:.0%}, {gaps['total_s']:.1f} s in all, "
                    f"longest {gaps['longest_s']:.2f} s.")
    else:
        summary += "."
    lines_up = ctx.get("idle_by_component")
    if lines_up is not None and len(lines_up):
        top = lines_up.iloc[0]
        ev["lines_up_with"] = [{"phase": r.phase, "idle_s": rnd(r.idle_weighted_s), "share_of_idle": rnd(r.share_of_idle)}
                               for r in lines_up.head(5).itertuples()]
        summary += f" The idle time lines up with `{top.phase}` ({pct(top.share_of_idle)} of it)."
    ev["could_not_see"] = _limit(f) + ("" if lines_up is not None and len(lines_up) else
                                        "; timing lines or a profiler trace say which part of the program it is")
    if not measured:
        ev["could_not_see"] += "; without PCIe figures a slow copy cannot be ruled out"
    rec = ("Feed the GPU faster than it computes: move input preparation off the critical path (DataLoader "
           "workers, prefetching), overlap CPU work with GPU work, and drop per-step synchronisations "
           "(.item(), cudaDeviceSynchronize). To tell the input pipeline from other host work, time the loader (the "
           "wait for the next batch, a framework's data time) or take a profiler trace; more loader workers help only "
           "the first.")
    if tiny:
        rec = ("Launch fewer, larger kernels: fuse element-wise ops (e.g. torch.compile in PyTorch), capture the loop in a CUDA "
               "graph, batch more work per launch, and avoid a host read-back (.item()) per op.")
    if not measured:
        rec = ("Record it with PCIe figures (gpuscope record, or nvidia-smi dmon -s t) or take a profiler trace to tell "
               "a host-side stall from slow copies; advice follows from which it is.")
        return Diagnosis("gpu_idle_unexplained", sev, summary, ev, rec), 1.0 - busy
    return Diagnosis("gpu_starved", sev, summary, ev, rec), 1.0 - busy


def _too_few_readings(f: dict, a: dict, busy: float, res: float) -> Diagnosis:
    """The GPU worked for fewer readings than a verdict needs: say so instead of a cause."""
    n = a["working_s"] / res
    summary = (f"The GPU worked {a['working_s']:.1f} s, about {n:.0f} reading(s) {res:.2f} s apart, with "
               f"{_what(f)} averaging {pct(busy)}: too few readings to tell a host-side stall from copies or "
               "short kernels at this resolution.")
    ev = {"working_s": rnd(a["working_s"]), "resolution_s": rnd(res), "readings_in_work": rnd(n, 1),
          "min_readings": MIN_WORK_READINGS, "busy_fraction": rnd(busy, 4), "source": f["source"],
          "could_not_see": _limit(f)}
    rec = ("Sample faster (gpuscope record samples every 20 ms; nvidia-smi dmon -d 1 is one reading a second) "
           "or record a longer stretch of the program.")
    return Diagnosis("too_few_readings", "info", summary, ev, rec)


def gpu_underused(f: dict, g: sg.Grid, working: np.ndarray, ctx: dict) -> Finding | None:
    st = _steady(f, g, working)
    if st is None or not (finite(st[1]) and st[1] < UNDERUSED_BUSY and not _starved(st[1], st[2]) and st[5]):
        return None
    if _idle_between(f, st[0], st[1]) is not None:  # idle between steps: gpu_starved's
        return None
    a, busy, med, quiet, measured, _ = st
    util = a.get("utilization_busy_fraction")
    ev = {"working_s": rnd(a["working_s"]), "busy_fraction": rnd(busy, 4), "busy_median": rnd(med, 4),
          "utilization_busy_fraction": rnd(util), "pcie_quiet_share": rnd(quiet), "source": f["source"],
          "could_not_see": _limit(f)}
    kern = f" while kernels were resident {util:.0%} of the time" if finite(util) and f["source"] != "utilization" else ""
    io = "PCIe quiet" if measured else "PCIe not measured"
    summary = (f"GPU lightly loaded: {_what(f)} {pct(busy)} (median {pct(med)}) over {a['working_s']:.1f} s of "
               f"work{kern}, {io}: kernels too small to fill the GPU, or gaps between them.")
    rec = ("Give each launch more work (a larger batch), fuse small kernels (CUDA graphs; torch.compile in PyTorch) and "
           "avoid a synchronisation per step; a profiler trace shows the gaps between kernels.")
    if f["source"] == "utilization":
        # utilization.gpu is the time a kernel ran, not how full it kept the SMs: what is missing is
        # time, so these are gaps between kernels; small kernels would read near 100%
        cause = ("PCIe quiet, so host-side work or synchronisation (a trace would tell launch gaps from input "
                 "stalls)" if measured else
                 "PCIe not measured, so host-side work cannot be told from slow copies")
        summary = (f"GPU idle between kernels: {_what(f)} {pct(busy)} (median {pct(med)}) over "
                   f"{a['working_s']:.1f} s of work; {cause}.")
        ev["could_not_see"] += ("; utilization.gpu cannot say how full the kernels kept the SMs (SM activity from "
                                "GPM, gpuscope record, does)")
        rec = ("Find what the GPU waits for between kernels: a profiler trace names the gaps, and a recording with "
               "PCIe figures (gpuscope record, or nvidia-smi dmon -s t) tells slow copies from host work.")
    return Diagnosis("gpu_underused", "low", summary, ev, rec), 1.0 - busy


def _copy_rule(direction: str, verb: str, ident: str, log_key: str) -> SampleRule:
    def rule(f: dict, g: sg.Grid, working: np.ndarray, ctx: dict) -> Finding | None:
        a = _working(f)
        if a is None:
            return None
        st = f["pcie"][direction]
        b = st["bursts"]
        line = f["pcie"]["line_rate_gbs"]
        share_time = b["total_s"] / a["working_s"]
        log_rate = ctx.get(log_key)
        if finite(log_rate):
            rate, basis = float(log_rate), "the program's own bytes/time"
        elif b["resolved"] and finite(b["interior_gbs_median"]):
            rate, basis = float(b["interior_gbs_median"]), "readings inside the copies"
        else:
            return None
        if _other_way(g, direction, line):
            return None
        sm_during = b["sm_activity_during"]
        # whether the SMs waited on the copies: readable only where the copies outlast the readings
        sm_seen = b["resolved"] and finite(sm_during)
        if not (line and rate < SLOW_COPY_SHARE * line and share_time >= COPY_SHARE_LOW
                and (not sm_seen or sm_during < COPY_SM_LOW)):
            return None
        from gpuscope.analysis.rules.coarse import coarse_trickle
        if basis.startswith("readings") and (coarse := coarse_trickle(f, a, b, rate, direction)):
            return coarse
        sev = "high" if share_time >= COPY_SHARE_HIGH else "medium" if share_time >= COPY_SHARE_MEDIUM else "low"
        ev = {"rate_gbs": rnd(rate, 2), "rate_basis": basis, "line_rate_gbs": rnd(line, 2),
              "line_rate_source": f["pcie"]["line_rate_source"], "share_of_line_rate": rnd(rate / line),
              "copy_s": rnd(b["total_s"]), "share_of_working_time": rnd(share_time), "copies": b["count"],
              "gb_per_copy_median": rnd(b["gb_per_burst_median"]), "copy_median_s": rnd(b["median_s"]),
              "sm_activity_during": rnd(sm_during), "interior_readings": b["interior_readings"],
              "pcie_resolution_s": rnd(f["pcie"]["resolution_s"], 4),
              "could_not_see": ("the samples cannot see the host memory kind: staging from pageable memory is the "
                                "usual cause of copies at this rate, but many small copies or a slow producer look "
                                "alike; a profiler trace names each copy's memory kind"
                                + ("" if sm_seen else "; the copies are shorter than the readings, so whether "
                                                      "they overlapped compute is not known"))}
        head = ("Read-back-bound into pageable memory (likely)" if direction == "tx" else
                f"{verb.capitalize()}-bound from pageable memory (likely)")
        during = "SM activity" if f["source"] != "utilization" else "utilization.gpu"
        summary = (f"{head}: {b['count']} copies took "
                   f"{b['total_s']:.1f} s, {share_time:.0%} of the working time, at {rate:.1f} GB/s "
                   f"({basis}), {rate / line:.0%} of the {line:.1f} GB/s line rate"
                   + (f", while {during} was {sm_during:.0%}." if sm_seen else "."))
        if direction == "tx":
            rec = ("Read back into a reused pinned buffer (torch.empty(..., pin_memory=True) and copy_(src, "
                   "non_blocking=True); CUDA: one cudaHostAlloc buffer), read back less or less often, or keep the "
                   "result on the GPU.")
            return Diagnosis(ident, sev, summary, ev, rec), share_time
        rec = (f"Pin the {verb} buffers (torch: pin_memory=True / .pin_memory(); CUDA: a reusable cudaHostAlloc "
               f"pool, or cudaHostRegister once) so the copy runs near the line rate, and overlap it with "
               f"compute (non_blocking copies on a side stream).")
        return Diagnosis(ident, sev, summary, ev, rec), share_time
    return rule


def _other_way(g: sg.Grid, direction: str, line_rate_gbs: float) -> bool:
    """Whether the bytes in this direction's bursts went the other way: the other direction
    carried more during them (a DMA read of host memory sends its read requests on TX: an upload
    at 10 GB/s RX shows ~1 GB/s of TX; that TX is not a read-back)."""
    this, other = (g.rx, g.tx) if direction == "rx" else (g.tx, g.rx)
    # (the bursts cover exactly the intervals at or above the busy share: a burst is a run of them)
    ok = this >= sg.PCIE_BUSY_SHARE * line_rate_gbs
    ok &= np.isfinite(this)
    ok &= np.isfinite(other)
    if not ok.any():
        return False
    return sg.masked_dot(other, g.dt, ok) > sg.masked_dot(this, g.dt, ok)


def link_bound(f: dict, g: sg.Grid, working: np.ndarray, ctx: dict) -> Finding | None:
    a = _working(f)
    if a is None:
        return None
    p = f["pcie"]
    near = p["time_near_line_rate_s"] / a["working_s"]
    if near < LINK_SHARE_LOW:
        return None
    sev = "medium" if near >= LINK_SHARE_MEDIUM else "low"
    ev = {"time_near_line_rate_s": rnd(p["time_near_line_rate_s"]), "share_of_working_time": rnd(near),
          "line_rate_gbs": rnd(p["line_rate_gbs"], 2), "threshold_gbs": rnd(p["near_line_rate_threshold_gbs"], 2),
          "rx_max_gbs": rnd(p["rx"]["max_gbs"], 2), "tx_max_gbs": rnd(p["tx"]["max_gbs"], 2),
          "could_not_see": ("copies shorter than a reading count only where a reading caught them at full rate: "
                            "the time at the line rate is a lower bound")}
    summary = (f"PCIe at the line rate {p['time_near_line_rate_s']:.2f} s, {near:.0%} of the working time "
               f"(readings >= {p['near_line_rate_threshold_gbs']:.1f} GB/s of {p['line_rate_gbs']:.1f}): those "
               "copies already run as fast as the link allows.")
    rec = ("Send fewer bytes (keep data resident on the GPU, compress, transfer only what changed) or overlap "
           "the copies with compute on a second stream; a faster link is the only other cure.")
    return Diagnosis("link_bound", sev, summary, ev, rec), near


def long_pauses(f: dict, g: sg.Grid, working: np.ndarray, ctx: dict) -> Finding | None:
    a = f["active"]
    if a is None or not a["span_s"]:
        return None
    p = a["pauses"]
    share = p["total_s"] / a["span_s"]
    if not p["count"] or share < PAUSE_SHARE:
        return None
    ev = {**{k: rnd(v) if isinstance(v, float) else v for k, v in p.items()}, "span_s": rnd(a["span_s"]),
          "share_of_span": rnd(share), "could_not_see": "what the host did meanwhile"}
    # one stretch is one-off host work (a profiler starting, a first compilation); recurring ones cost every time
    sev = "low" if p["count"] >= 2 else "info"
    stretches = "one stretch" if p["count"] == 1 else f"{p['count']} stretches"
    summary = (f"The GPU sat idle for {p['total_s']:.1f} s in {stretches} between bursts of work "
               f"({share:.0%} of the {a['span_s']:.1f} s it was in use; longest {p['longest_s']:.1f} s, "
               f"{p['longest_at_s']:.1f} s into the recording).")
    rec = ("One-off host work holds the GPU: a profiler starting, checkpointing, evaluation, JIT compilation or "
           "a data loader restarting; move it off the training path or overlap it.")
    return Diagnosis("long_pauses", sev, summary, ev, rec), share


def startup_idle(f: dict, g: sg.Grid, working: np.ndarray, ctx: dict) -> Finding | None:
    lead, wall = f["idle_gaps"]["leading_s"], f["wall_s"]
    if f["active"] is None or lead < STARTUP_MIN_S or not wall or lead / wall < STARTUP_SHARE:
        return None
    ev = {"leading_s": rnd(lead), "wall_s": rnd(wall), "share_of_recording": rnd(lead / wall),
          "trailing_s": rnd(f["idle_gaps"]["trailing_s"]), "could_not_see": "what the program did before"}
    return (Diagnosis("startup_idle", "info",
                      f"No GPU work for the first {lead:.1f} s ({lead / wall:.0%} of the recording): process start, "
                      "imports, CUDA context and model set-up. The working-time figures (activity.active) leave it out.",
                      ev, "Leave start-up out when judging throughput, or warm up before timing."), lead / wall)


UPLOAD_BOUND = _copy_rule("rx", "upload", "upload_bound_pageable", "upload_gbs")
DOWNLOAD_BOUND = _copy_rule("tx", "download", "download_bound_pageable", "download_gbs")


STATIC_RULES = (link_downgraded, memory_nearly_full)  # judged even on a recording too short for the rest


def sample_context(activity: Activity, *, upload_gbs: float | None = None, download_gbs: float | None = None,
                   phases: pd.DataFrame | None = None) -> dict:
    """What the sample rules read beside the figures: the program's own rates, and which timing-line
    phase lines up with the idle time."""
    ctx: dict = {"upload_gbs": upload_gbs, "download_gbs": download_gbs}
    if phases is not None and len(phases):
        from gpuscope.analysis.evidence.samples.idle_overlap import idle_by_component

        ctx["idle_by_component"] = idle_by_component(phases, activity)
    return ctx


def rule_findings(activity: Activity, rule: SampleRule, ctx: dict) -> list[Finding]:
    """One sample rule over every GPU: one finding naming the GPUs it holds on (the worst GPU's numbers)."""
    hits: list[tuple[int, Diagnosis, float]] = []
    for ga in activity.gpus:
        if ga.figures["readings"] < MIN_READINGS and rule not in STATIC_RULES:
            continue
        got = rule(ga.figures, ga.grid, ga.working, ctx)
        if got is not None:
            hits.append((ga.gpu, *got))
    return [_merge(hits, len(activity.gpus))] if hits else []


def too_few_samples(activity: Activity) -> list[Finding]:
    hits = []
    for ga in activity.gpus:
        f = ga.figures
        if f["readings"] >= MIN_READINGS:
            continue
        d = Diagnosis("too_few_samples", "info",
                      f"Only {f['readings']} activity reading(s) over {f['wall_s']:.2f} s: too few to judge "
                      "how busy the GPU was.", {"readings": f["readings"], "wall_s": rnd(f["wall_s"]),
                                                "min_readings": MIN_READINGS},
                      "Record longer than a second (the sampler reads SM activity ~10 times a second).")
        hits.append((ga.gpu, d, 0.0))
    return [_merge(hits, len(activity.gpus))] if hits else []


def _merge(hits: list[tuple[int, Diagnosis, float]], n_gpus: int) -> tuple[Diagnosis, float]:
    """One diagnosis for a finding on several GPUs: the worst GPU's, naming the others."""
    hits = sorted(hits, key=lambda h: (SEVERITY_ORDER.get(h[1].severity, 9), -h[2]))
    gpu, d, impact = hits[0]
    if n_gpus == 1:
        return d, impact
    ev = {**d.evidence, "gpu": gpu, "gpus": sorted(h[0] for h in hits),
          "per_gpu": {str(h[0]): {"severity": h[1].severity, "summary": h[1].summary} for h in hits}}
    others = "" if len(hits) == 1 else f" (also on GPU {', '.join(str(h[0]) for h in hits[1:])})"
    return Diagnosis(d.id, d.severity, f"GPU {gpu}: {d.summary}{others}", ev, d.recommendation), impact

"""The samples' starvation rules (no_gpu_activity, gpu_starved, gpu_underused) and the thresholds every
sample rule shares (sample_copies, link, copies, pauses read them from here).

Each per-GPU check reads one GPU's figures (evidence.samples.figures.GpuFigures) and returns a
Diagnosis with its evidence and, in evidence["could_not_see"], what the samples cannot
tell; thresholds are the constants below (docs/ANALYZE.md "From NVML samples alone").
Steady-state rules judge the working time: the active span minus its pauses. A finding on
several GPUs is one diagnosis naming them, with the worst GPU's numbers. Order: severity,
then the share of the working time the finding explains.

    run_rules(collect(activity=activity, upload_gbs=None, phases=None))   # every rule, ranked (rules.registry)

`upload_gbs` / `download_gbs`: the program's own bytes/time rate (a log's h2d_bytes over
its upload time); it wins over the samples, which cannot resolve short copies. `phases`
(PHASE_SCHEMA): timing-line phases; the starvation finding then names the phase that lines
up with the idle time (idle_overlap.idle_by_component).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from gpuscope.analysis.core import Diagnosis
from gpuscope.analysis.evidence.samples import samplegrid as sg
from gpuscope.analysis.rules.device import Finding, finite, rnd
from gpuscope.analysis.rules.engine import LOG, SAMPLES, TRACE, rule
from gpuscope.analysis.rules.per_gpu import MIN_READINGS, per_gpu  # noqa: F401 (MIN_READINGS: documented here)
from gpuscope.arrays import median

if TYPE_CHECKING:
    from gpuscope.analysis.evidence import Evidence
    from gpuscope.analysis.evidence.samples.context import SampleContext
    from gpuscope.analysis.evidence.samples.figures import ActiveFigures, GpuFigures

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


def _limit(f: GpuFigures) -> str:
    res = f.resolution_s
    res_t = f"{res:.2g} s" if finite(res) else "its"
    if f.source == "utilization":
        return (f"utilization.gpu only says a kernel ran during each {res_t} window: it cannot tell busy from "
                "barely busy, nor which host work the GPU waited on")
    return (f"GPM SM activity averages each {res_t} window: idle gaps shorter than that are invisible, and the "
            "samples cannot say which host work the GPU waited on")


def _quiet(a: ActiveFigures) -> tuple[float | None, bool]:
    """(share of the measured working time with PCIe quiet, whether PCIe was measured at all)."""
    measured = a.pcie_measured_share
    if not finite(measured) or measured < 0.5:
        return None, False
    return a.pcie_quiet_share, True


def _idle_quiet(a: ActiveFigures) -> float:
    """Of the time the SMs idled, the share with PCIe quiet too (1.0 when they never idled): the
    computing time's quiet PCIe says nothing of what the SMs waited for (copies filling the idle half)."""
    c = a.classes or {}
    q, x = c.get("idle_quiet", 0.0), c.get("transferring", 0.0)
    return q / (q + x) if finite(q) and finite(x) and q + x > 0 else 1.0


def pct(x: float) -> str:
    """A share as a percentage with the digits it needs (0.05% stays visible)."""
    if not finite(x):
        return "?"
    return f"{x:.2%}" if 0 < abs(x) < 0.01 else f"{x:.1%}" if abs(x) < 0.1 else f"{x:.0%}"


def _what(f: GpuFigures) -> str:
    return "utilization.gpu (time a kernel ran)" if f.source == "utilization" else "SM activity"


def _working(f: GpuFigures) -> ActiveFigures | None:
    """The active-span figures when the GPU did any work outside pauses, else None."""
    a = f.active
    return a if a is not None and a.working_s else None


def _median_activity(g: sg.Grid, working: np.ndarray) -> float:
    ok = np.isfinite(g.activity)
    ok &= working
    x = sg.take(g.activity, ok)
    return float(median(x, overwrite=not np.may_share_memory(x, g.activity))) if x.size else float("nan")


# -- rules: (figures, grid, working mask, context) -> Finding | None --------------------------

def no_gpu_activity(f: GpuFigures, g: sg.Grid, working: np.ndarray, ctx: SampleContext) -> Finding | None:
    if f.active is not None:
        return None
    ev = {"wall_s": rnd(f.wall_s), "readings": f.readings, "source": f.source, "could_not_see": _limit(f)}
    io = " and PCIe stayed quiet" if f.pcie.source else " (PCIe not measured)"
    return (Diagnosis("no_gpu_activity", "high",
                      f"No sign of GPU work in {f.wall_s:.1f} s of samples: {_what(f)} never passed "
                      f"{sg.SM_TRACE:.0%}{io}.",
                      ev, "Check that the program uses this GPU (CUDA_VISIBLE_DEVICES, its device index) and "
                          "does not fall back to the CPU."), 1.0)


def _steady(f: GpuFigures, g: sg.Grid, working: np.ndarray) -> tuple | None:
    """(active figures, mean and median activity, PCIe quiet share, whether PCIe was measured,
    whether it was quiet enough: >= STARVED_MIN_QUIET or not measured) of the working time."""
    a = _working(f)
    if a is None:
        return None
    quiet, measured = _quiet(a)
    calm = not measured or (finite(quiet) and quiet >= STARVED_MIN_QUIET and _idle_quiet(a) >= STARVED_MIN_QUIET)
    return a, a.busy_fraction, _median_activity(g, working), quiet, measured, calm


def _starved(busy: float, med: float) -> bool:
    return finite(busy) and busy < STARVED_BUSY_MEDIUM and finite(med) and med < STARVED_BUSY_MEDIUM


def _idle_between(f: GpuFigures, a: ActiveFigures, busy: float) -> float | None:
    """Beside GPM: the share of the working time no kernel ran (1 - utilization.gpu) when the kernels
    that ran kept the SMs busy (SM activity >= FULL_WHEN_RESIDENT x it): idle between steps, not
    under-filled (an HF Trainer fed by a slow collator: SM 20%, kernels resident 23%). None for tiny
    kernels, an idle share < IDLE_BETWEEN, or readings that show the gaps themselves."""
    util = a.utilization_busy_fraction
    if f.source != "gpm_sm_active" or not finite(util) or util <= 0 or not finite(busy):
        return None
    if not finite(a.idle_fraction) or a.idle_fraction >= IDLE_BETWEEN:
        return None
    return 1.0 - util if 1.0 - util >= IDLE_BETWEEN and busy >= FULL_WHEN_RESIDENT * util else None


def gpu_starved(f: GpuFigures, g: sg.Grid, working: np.ndarray, ctx: SampleContext) -> Finding | None:
    st = _steady(f, g, working)
    between = None if st is None else _idle_between(f, st[0], st[1])
    if st is None or not ((_starved(st[1], st[2]) or between is not None) and st[5]):
        return None
    a, busy, med, quiet, measured, _ = st
    res = f.resolution_s
    if finite(res) and res > 0 and a.working_s < MIN_WORK_READINGS * res:
        return _too_few_readings(f, a, busy, res), 0.0
    # without PCIe figures a slow copy cannot be ruled out: never more than medium
    sev = "high" if busy < STARVED_BUSY_HIGH and measured else "medium"
    if between is not None and between >= IDLE_BETWEEN_HIGH and measured:
        sev = "high"  # the SMs full while kernels ran: the idle share is what the GPU loses
    util = a.utilization_busy_fraction
    gaps = a.idle_gaps
    ev = {"working_s": rnd(a.working_s), "busy_fraction": rnd(busy, 4), "busy_median": rnd(med, 4),
          "pcie_quiet_share": rnd(quiet), "pcie_measured": measured, "idle_fraction": rnd(a.idle_fraction),
          "idle_gaps": {k: rnd(gaps[k]) if k != "count" else gaps[k] for k in ("count", "total_s", "longest_s")},
          "rx_gbs_median": rnd(f.pcie.rx["p50_gbs"]), "source": f.source,
          "resolution_s": rnd(f.resolution_s), "busy_fraction_of_recording": rnd(f.busy_fraction, 4),
          "thresholds": {"busy_high": STARVED_BUSY_HIGH, "busy_medium": STARVED_BUSY_MEDIUM,
                         "pcie_quiet_min": STARVED_MIN_QUIET, "idle_below": sg.SM_IDLE}}
    what = "input pipeline, CPU preprocessing, synchronisation or kernel-launch overhead"
    tiny = (f.source == "gpm_sm_active" and finite(util) and util >= 0.03 and busy < TINY_KERNELS_RATIO * util)
    if finite(util) and f.source != "utilization":
        ev["utilization_busy_fraction"] = rnd(util)
    if tiny:
        what = (f"kernels were resident {pct(util)} of the time yet kept {pct(busy)} of the SMs busy: many tiny "
                "kernels, each shorter than its launch (launch- or synchronisation-bound)")
    io = (f"PCIe quiet {pct(quiet)} of that time" if measured else "PCIe not measured")
    summary = (f"GPU starved by the host: {_what(f)} averaged {pct(busy)} over the {a.working_s:.1f} s it "
               f"was in use, {io} ({what})")
    if between is not None and not tiny:
        ev["no_kernel_share"] = rnd(between)
        summary = (f"GPU starved by the host: kernels ran only {pct(1 - between)} of the {a.working_s:.1f} s it was "
                   f"in use and kept the SMs busy while they ran ({_what(f)} {pct(busy)}), {io}: it idles between "
                   f"steps ({pct(between)} of the time), its kernels do not under-fill it ({what})")
    if not measured:  # an idle GPU waiting on slow copies looks the same without PCIe figures
        summary = (f"GPU mostly idle, cause not visible: {_what(f)} averaged {pct(busy)} over the "
                   f"{a.working_s:.1f} s it was in use, and PCIe was not measured, so waiting for the host "
                   "cannot be told from waiting for slow copies (pageable uploads or read-backs)")
    if finite(a.idle_fraction) and a.idle_fraction >= 0.95:
        summary += f"; under {sg.SM_IDLE:.0%} for {pct(a.idle_fraction)} of it."
    elif gaps["count"]:
        summary += (f"; {gaps['count']} idle gap(s) under {sg.SM_IDLE:.0%}, {gaps['total_s']:.1f} s in all, "
                    f"longest {gaps['longest_s']:.2f} s.")
    else:
        summary += "."
    lines_up = ctx.idle_by_component
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


def _too_few_readings(f: GpuFigures, a: ActiveFigures, busy: float, res: float) -> Diagnosis:
    """The GPU worked for fewer readings than a verdict needs: say so instead of a cause."""
    n = a.working_s / res
    summary = (f"The GPU worked {a.working_s:.1f} s, about {n:.0f} reading(s) {res:.2f} s apart, with "
               f"{_what(f)} averaging {pct(busy)}: too few readings to tell a host-side stall from copies or "
               "short kernels at this resolution.")
    ev = {"working_s": rnd(a.working_s), "resolution_s": rnd(res), "readings_in_work": rnd(n, 1),
          "min_readings": MIN_WORK_READINGS, "busy_fraction": rnd(busy, 4), "source": f.source,
          "could_not_see": _limit(f)}
    rec = ("Sample faster (gpuscope record samples every 20 ms; nvidia-smi dmon -d 1 is one reading a second) "
           "or record a longer stretch of the program.")
    return Diagnosis("too_few_readings", "info", summary, ev, rec)


def gpu_underused(f: GpuFigures, g: sg.Grid, working: np.ndarray, ctx: SampleContext) -> Finding | None:
    st = _steady(f, g, working)
    if st is None or not (finite(st[1]) and st[1] < UNDERUSED_BUSY and not _starved(st[1], st[2]) and st[5]):
        return None
    if _idle_between(f, st[0], st[1]) is not None:  # idle between steps: gpu_starved's
        return None
    a, busy, med, quiet, measured, _ = st
    util = a.utilization_busy_fraction
    ev: dict[str, Any] = {"working_s": rnd(a.working_s), "busy_fraction": rnd(busy, 4), "busy_median": rnd(med, 4),
          "utilization_busy_fraction": rnd(util), "pcie_quiet_share": rnd(quiet), "source": f.source,
          "could_not_see": _limit(f)}
    kern = f" while kernels were resident {util:.0%} of the time" if finite(util) and f.source != "utilization" else ""
    io = "PCIe quiet" if measured else "PCIe not measured"
    summary = (f"GPU lightly loaded: {_what(f)} {pct(busy)} (median {pct(med)}) over {a.working_s:.1f} s of "
               f"work{kern}, {io}: kernels too small to fill the GPU, or gaps between them.")
    rec = ("Give each launch more work (a larger batch), fuse small kernels (CUDA graphs; torch.compile in PyTorch) and "
           "avoid a synchronisation per step; a profiler trace shows the gaps between kernels.")
    if f.source == "utilization":
        # utilization.gpu is the time a kernel ran, not how full it kept the SMs: what is missing is
        # time, so these are gaps between kernels; small kernels would read near 100%
        cause = ("PCIe quiet, so host-side work or synchronisation (a trace would tell launch gaps from input "
                 "stalls)" if measured else
                 "PCIe not measured, so host-side work cannot be told from slow copies")
        summary = (f"GPU idle between kernels: {_what(f)} {pct(busy)} (median {pct(med)}) over "
                   f"{a.working_s:.1f} s of work; {cause}.")
        ev["could_not_see"] += ("; utilization.gpu cannot say how full the kernels kept the SMs (SM activity from "
                                "GPM, gpuscope record, does)")
        rec = ("Find what the GPU waits for between kernels: a profiler trace names the gaps, and a recording with "
               "PCIe figures (gpuscope record, or nvidia-smi dmon -s t) tells slow copies from host work.")
    return Diagnosis("gpu_underused", "low", summary, ev, rec), 1.0 - busy


@rule("no_gpu_activity", needs=SAMPLES, uses=("compute",), emits={"no_gpu_activity": None})
def no_gpu_activity_rule(ev: Evidence) -> list[Finding]:
    return per_gpu(ev, no_gpu_activity)


@rule("gpu_starved", needs=SAMPLES, uses=("compute", "copies", "idle"), yields_to=TRACE,
      emits={"gpu_starved": "host", "gpu_idle_unexplained": "unknown", "too_few_readings": None},
      supersedes=("host_stall_cycle",), ranks_after=LOG)
def gpu_starved_rule(ev: Evidence) -> list[Finding]:
    return per_gpu(ev, gpu_starved)


@rule("gpu_underused", needs=SAMPLES, uses=("compute", "copies"), yields_to=TRACE, emits={"gpu_underused": "unknown"},
      ranks_after=LOG)
def gpu_underused_rule(ev: Evidence) -> list[Finding]:
    return per_gpu(ev, gpu_underused)

"""A regular busy/idle pattern: the GPU computes, then waits, then computes again: `host_stall_cycle`.

From one GPU's samples (GPM SM activity or utilization.gpu alike): inside the working time,
at least MIN_GAPS idle gaps (activity < samplegrid.SM_IDLE and PCIe quiet or not measured), each at least MIN_GAP_READINGS
readings long (shorter ones are not resolved), their lengths regular (cv <= MAX_GAP_CV), and
the working time idle at least SHARE_LOW (each reading weighted 1 - activity / the busy level,
so the readings straddling a gap's edges count by how idle they were). Severity by that share: high >= SHARE_HIGH,
medium >= SHARE_MEDIUM, else low. A GPU that waits this regularly waits for its host: data
loading, host-side compute, a synchronisation, logging or checkpointing each step. What the
samples cannot tell (which host work; for utilization.gpu, launch gaps inside the busy part)
is said in `could_not_see`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from gpuscope.analysis.core import Diagnosis
from gpuscope.analysis.evidence.samples import samplegrid as sg
from gpuscope.analysis.rules.device import Finding, finite, rnd
from gpuscope.analysis.rules.engine import LOG, SAMPLES, TRACE, rule
from gpuscope.analysis.rules.per_gpu import per_gpu
from gpuscope.arrays import median

if TYPE_CHECKING:
    from gpuscope.analysis.evidence import Evidence
    from gpuscope.analysis.evidence.samples.context import SampleContext
    from gpuscope.analysis.evidence.samples.figures import GpuFigures

MIN_GAPS = 3
MIN_GAP_READINGS = 2
MAX_GAP_CV = 0.5
SHARE_HIGH, SHARE_MEDIUM, SHARE_LOW = 0.4, 0.2, 0.1


def _gaps(g: sg.Grid, working: np.ndarray) -> list[tuple[float, float]]:
    """(start, length) of each run inside the working time with nothing computed or copied (a GPU
    moving bytes is not waiting for its host: a copy loop's bursts are not a host stall)."""
    starts, ends = sg.run_bounds(g.in_classes(("idle_quiet", "idle")) & working)
    sums = sg.segment_sums(g.dt, starts, ends)  # (each run's dt[a:b].sum(), to the bit)
    return list(zip(g.t_start[starts].tolist(), sums.tolist(), strict=True))


def _idle_equivalent(g: sg.Grid, working: np.ndarray) -> float:
    """The working time's idle share with each reading weighted by how idle it was: 1 - activity /
    the busy level (the median activity of the computing readings). A reading that straddles a gap
    edge is half idle, not busy: the gaps' own length undercounts a cycle by about a reading each."""
    comp = working & (g.activity >= sg.SM_IDLE)  # (NaN compares false, as its 0 did: SM_IDLE > 0)
    level = float(median(sg.take(g.activity, comp))) if comp.any() else float("nan")
    del comp
    ok = working & np.isfinite(g.activity)
    w = sg.masked_sum(g.dt, ok)
    if not (level > 0) or w <= 0:
        return 0.0
    idle = g.activity / level  # (one temporary: 1 - x / level, clipped, its sum times dt over ok)
    np.subtract(1.0, idle, out=idle)
    np.clip(idle, 0.0, 1.0, out=idle)
    return float(np.float64(sg.masked_dot(idle, g.dt, ok)) / w)


def host_stall_cycle(f: GpuFigures, g: sg.Grid, working: np.ndarray, ctx: SampleContext) -> Finding | None:
    a = f.active
    res = f.resolution_s
    if a is None or not a.working_s or not finite(res):
        return None
    gaps = [x for x in _gaps(g, working) if x[1] >= MIN_GAP_READINGS * res * 0.99]
    if len(gaps) < MIN_GAPS:
        return None
    lengths = np.array([x[1] for x in gaps])
    cv = float(lengths.std(ddof=1) / lengths.mean()) if lengths.mean() > 0 else float("inf")
    gap_share = float(lengths.sum()) / a.working_s
    share = _idle_equivalent(g, working)
    if cv > MAX_GAP_CV or share < SHARE_LOW:
        return None
    starts = np.array([x[0] for x in gaps])
    period = float(median(np.diff(starts))) if starts.size > 1 else float("nan")
    sev = "high" if share >= SHARE_HIGH else "medium" if share >= SHARE_MEDIUM else "low"
    util = f.source == "utilization"
    what = "utilization.gpu" if util else "SM activity"
    ev = {"gaps": len(gaps), "gap_median_s": rnd(float(median(lengths))), "gap_cv": rnd(cv),
          "idle_s": rnd(float(lengths.sum())), "gap_share_of_working_time": rnd(gap_share),
          "share_of_working_time": rnd(share), "working_s": rnd(a.working_s),
          "period_s": rnd(period), "source": f.source, "resolution_s": rnd(res),
          "thresholds": {"min_gaps": MIN_GAPS, "min_gap_readings": MIN_GAP_READINGS, "max_gap_cv": MAX_GAP_CV,
                         "share_high": SHARE_HIGH, "share_medium": SHARE_MEDIUM, "share_low": SHARE_LOW}}
    unseen = ("which host work the GPU waited for: timing lines or a profiler trace name it; gaps shorter than "
              f"{MIN_GAP_READINGS} readings ({MIN_GAP_READINGS * res:.2g} s) are not counted")
    if util:
        unseen = ("utilization.gpu says only that a kernel ran: a trace or SM activity would tell launch gaps "
                  "inside the busy part from input stalls; " + unseen)
    ev["could_not_see"] = unseen
    summary = (f"Host-side stall, every {period:.1f} s: the GPU sat idle ({what} < {sg.SM_IDLE:.0%}) in "
               f"{len(gaps)} regular gaps of ~{float(median(lengths)):.2f} s (cv {cv:.2f}), "
               f"{lengths.sum():.1f} s; idle {share:.0%} of the {a.working_s:.1f} s of work, the readings that "
               "straddle a gap counted by their activity")
    lines_up = ctx.idle_by_component
    if lines_up is not None and len(lines_up):
        top = lines_up.iloc[0]
        ev["lines_up_with"] = str(top.phase)
        summary += f"; the idle time lines up with `{top.phase}`"
    summary += "." if not util else " (likely: from utilization.gpu alone)."
    rec = ("The GPU waits for the host once a cycle: find the host work between the bursts (data loading, "
           "host-side compute, a per-step synchronisation, logging, checkpointing) and overlap it with the GPU "
           "work (a DataLoader with workers, a background thread, asynchronous copies).")
    return Diagnosis("host_stall_cycle", sev, summary, ev, rec), share


@rule("host_stall_cycle", needs=SAMPLES, uses=("compute", "idle"), emits={"host_stall_cycle": "host"}, yields_to=TRACE,
      supersedes=("gpu_underused",), ranks_after=LOG)
def host_stall_cycle_rule(ev: Evidence) -> list[Finding]:
    return per_gpu(ev, host_stall_cycle)

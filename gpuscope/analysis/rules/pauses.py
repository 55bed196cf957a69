"""The samples' idle stretches and their size: pauses between bursts of work (long_pauses), no GPU
work at the start (startup_idle), and a recording too short to judge (too_few_samples).
Thresholds: rules.activity.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gpuscope.analysis.core import Diagnosis
from gpuscope.analysis.rules.activity import PAUSE_SHARE, STARTUP_MIN_S, STARTUP_SHARE
from gpuscope.analysis.rules.device import Finding, rnd
from gpuscope.analysis.rules.engine import SAMPLES, rule
from gpuscope.analysis.rules.per_gpu import MIN_READINGS, merge, per_gpu

if TYPE_CHECKING:
    import numpy as np

    from gpuscope.analysis.evidence import Evidence
    from gpuscope.analysis.evidence.samples import samplegrid as sg
    from gpuscope.analysis.evidence.samples.activity import Activity
    from gpuscope.analysis.evidence.samples.context import SampleContext
    from gpuscope.analysis.evidence.samples.figures import GpuFigures


def long_pauses(f: GpuFigures, g: sg.Grid, working: np.ndarray, ctx: SampleContext) -> Finding | None:
    a = f.active
    if a is None or not a.span_s:
        return None
    p = a.pauses
    share = p["total_s"] / a.span_s
    if not p["count"] or share < PAUSE_SHARE:
        return None
    ev = {**{k: rnd(v) if isinstance(v, float) else v for k, v in p.items()}, "span_s": rnd(a.span_s),
          "share_of_span": rnd(share), "could_not_see": "what the host did meanwhile"}
    # one stretch is one-off host work (a profiler starting, a first compilation); recurring ones cost every time
    sev = "low" if p["count"] >= 2 else "info"
    stretches = "one stretch" if p["count"] == 1 else f"{p['count']} stretches"
    summary = (f"The GPU sat idle for {p['total_s']:.1f} s in {stretches} between bursts of work "
               f"({share:.0%} of the {a.span_s:.1f} s it was in use; longest {p['longest_s']:.1f} s, "
               f"{p['longest_at_s']:.1f} s into the recording).")
    rec = ("One-off host work holds the GPU: a profiler starting, checkpointing, evaluation, JIT compilation or "
           "a data loader restarting; move it off the training path or overlap it.")
    return Diagnosis("long_pauses", sev, summary, ev, rec), share


def startup_idle(f: GpuFigures, g: sg.Grid, working: np.ndarray, ctx: SampleContext) -> Finding | None:
    lead, wall = f.idle_gaps["leading_s"], f.wall_s
    if f.active is None or lead < STARTUP_MIN_S or not wall or lead / wall < STARTUP_SHARE:
        return None
    ev = {"leading_s": rnd(lead), "wall_s": rnd(wall), "share_of_recording": rnd(lead / wall),
          "trailing_s": rnd(f.idle_gaps["trailing_s"]), "could_not_see": "what the program did before"}
    return (Diagnosis("startup_idle", "info",
                      f"No GPU work for the first {lead:.1f} s ({lead / wall:.0%} of the recording): process start, "
                      "imports, CUDA context and model set-up. The working-time figures (activity.active) leave it out.",
                      ev, "Leave start-up out when judging throughput, or warm up before timing."), lead / wall)


def _too_few_samples(activity: Activity) -> list[Finding]:
    hits = []
    for ga in activity.gpus:
        f = ga.fig
        if f.readings >= MIN_READINGS:
            continue
        d = Diagnosis("too_few_samples", "info",
                      f"Only {f.readings} activity reading(s) over {f.wall_s:.2f} s: too few to judge "
                      "how busy the GPU was.", {"readings": f.readings, "wall_s": rnd(f.wall_s),
                                                "min_readings": MIN_READINGS},
                      "Record longer than a second (the sampler reads SM activity ~10 times a second).")
        hits.append((ga.gpu, d, 0.0))
    return [merge(hits, len(activity.gpus))] if hits else []


@rule("long_pauses", needs=SAMPLES, uses=("idle",), emits={"long_pauses": None})
def long_pauses_rule(ev: Evidence) -> list[Finding]:
    return per_gpu(ev, long_pauses)


@rule("startup_idle", needs=SAMPLES, uses=("idle",), emits={"startup_idle": None})
def startup_idle_rule(ev: Evidence) -> list[Finding]:
    return per_gpu(ev, startup_idle)


@rule("too_few_samples", needs=SAMPLES, uses=(), emits={"too_few_samples": None})
def too_few_samples(ev: Evidence) -> list[Finding]:
    assert ev.activity is not None
    return _too_few_samples(ev.activity)

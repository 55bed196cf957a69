"""A printed phase that the GPU idles through while it moves bytes: a copy, told by the bytes the
PCIe readings moved inside it (evidence.samples.pcie: integrated, not the median reading).

    copy_phase   the phase the idle time lines up with (>= LINES_UP of it) moved, averaged
                 over its own time, >= MOVED_SHARE of the line rate (a host-side phase shows a
                 trickle far below that), and the GPU idled >= COPY_SHARE_LOW of the working
                 time inside it

A JAX loop whose `device_put` of a 512 MiB pageable array takes 66 ms shows one ~28 GB/s burst of
~20 ms per put and nothing else: the median reading of `put` is 0, so without the bytes it read as
"GPU starved by the host, PCIe quiet" with DataLoader advice. Its bytes say 0.54 GB in 66 ms, 8 GB/s,
15% of the line: the copy path is slow (the framework stages the array through host memory first).

What would make it fire falsely: a host-side phase during which another thread copies (a pinning
thread uploading the next batch while the main thread collates). The bytes then belong to that
copy, not to the phase; the evidence says so in could_not_see, and a phase of host work alone (a
trickle of driver polls, < 1% of the line) never reaches MOVED_SHARE (tests/test_truthcap_rates.py).
Phases named by the h2d role are the log rules' (h2d_bound, pcie_underused): not judged here.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from gpuscope.analysis.core import Diagnosis
from gpuscope.analysis.rules.device import Finding, finite, rnd
from gpuscope.analysis.rules.engine import SAMPLES, TRACE, link_when_near_line, rule
from gpuscope.analysis.rules.per_gpu import per_gpu

if TYPE_CHECKING:
    import numpy as np

    from gpuscope.analysis.evidence import Evidence
    from gpuscope.analysis.evidence.samples import samplegrid as sg
    from gpuscope.analysis.evidence.samples.context import SampleContext
    from gpuscope.analysis.evidence.samples.figures import GpuFigures

LINES_UP = 0.5           # share of the idle time inside the phase
MOVED_SHARE = 0.02       # bytes over the phase's time / line rate: the phase is a copy
SLOW_SHARE = 0.5         # below this share of the line the copy path, not the link, binds
COPY_SHARE_HIGH, COPY_SHARE_MEDIUM, COPY_SHARE_LOW = 0.4, 0.2, 0.1  # idle inside it / working time


def _copy_row(ctx: SampleContext, line: float) -> tuple[Any, Any] | None:
    """(the idle overlap row, the pcie row) of the phase the idle time lines up with, when its
    bytes say it is a copy."""
    lines_up, pcie = ctx.idle_by_component, ctx.pcie_by_phase
    if lines_up is None or not len(lines_up) or pcie is None or not len(pcie) or not line or line <= 0:
        return None
    top = lines_up.iloc[0]
    if str(top.phase) == "h2d" or not finite(top.share_of_idle) or top.share_of_idle < LINES_UP:
        return None
    rows = pcie.loc[pcie["phase"] == top.phase]
    if not len(rows) or "rx_gbs_mean" not in rows:
        return None
    r = rows.iloc[0]
    mean = float(r["rx_gbs_mean"])
    if not math.isfinite(mean) or mean < MOVED_SHARE * line:
        return None
    return top, r


def copy_phase(f: GpuFigures, g: sg.Grid, working: np.ndarray, ctx: SampleContext) -> Finding | None:
    a = f.active
    if a is None or not a.working_s or ctx.upload_gbs is not None and finite(ctx.upload_gbs):
        return None
    line = f.pcie.line_rate_gbs
    got = _copy_row(ctx, line)
    if got is None:
        return None
    top, r = got
    share = float(top.idle_weighted_s) / a.working_s
    if share < COPY_SHARE_LOW:
        return None
    sev = "high" if share >= COPY_SHARE_HIGH else "medium" if share >= COPY_SHARE_MEDIUM else "low"
    rate, gb, dur = float(r["rx_gbs_mean"]), float(r["gb_per_phase_median"]), float(r["duration_median_s"])
    slow = rate < SLOW_SHARE * line
    phase = str(top.phase)
    ev = {"phase": phase, "gb_per_phase_median": rnd(gb, 3), "rx_gbs_mean": rnd(rate, 2),
          "rx_gbs_median_reading": rnd(float(r["rx_gbs_median"]), 2), "rx_gbs_p90_reading": rnd(float(r["rx_gbs_p90"]), 2),
          "phase_median_s": rnd(dur, 4), "line_rate_gbs": rnd(line, 2), "share_of_line_rate": rnd(rate / line, 3),
          "idle_in_phase_s": rnd(float(top.idle_weighted_s)), "share_of_working_time": rnd(share),
          "share_of_idle": rnd(float(top.share_of_idle)),
          "thresholds": {"lines_up": LINES_UP, "moved_share": MOVED_SHARE, "slow_share": SLOW_SHARE},
          "could_not_see": (f"the samples cannot tell whose bytes they are: a copy by another thread while `{phase}` "
                            "ran reads the same; nor the host memory kind (a profiler trace names each copy's)")}
    peak = float(r["rx_gbs_p90"])
    burst = (f"; the readings peak at {peak:.1f} GB/s, so the bytes cross in a burst and the rest of the phase "
             "prepares them (staging through host memory)" if math.isfinite(peak) and peak > 2 * rate else "")
    head = "Slow copy" if slow else "Copy at the line rate"
    summary = (f"{head} in `{phase}`: the GPU idled through it ({share:.0%} of the working time, {top.share_of_idle:.0%} "
               f"of the idle time) while it moved {gb:.2f} GB each time, {rate:.1f} GB/s over its {dur * 1e3:.0f} ms "
               f"({rate / line:.0%} of the {line:.1f} GB/s line rate){burst}.")
    if slow:
        rec = (f"The copy path, not the link, is the limit: copy from pinned host memory (torch: pin_memory(); "
               f"JAX/NumPy: a reused page-locked buffer), and overlap `{phase}` with compute (put the next "
               "step's input on the device while this step computes, non_blocking copies on a side stream).")
    else:
        rec = (f"The link is the limit: overlap `{phase}` with compute (the next step's input copied while this "
               "one computes) or move fewer bytes (keep the data on the GPU); pinning will not make it faster.")
    return Diagnosis("copy_phase", sev, summary, ev, rec), share


# a printed phase the GPU idles through while it moves bytes: a copy, not host work
@rule("copy_phase", needs=SAMPLES, uses=("copies", "idle"), yields_to=TRACE, emits={"copy_phase": "upload"},
      cause=link_when_near_line("upload"),
      supersedes=("gpu_starved", "gpu_underused", "host_stall_cycle", "copies_unresolved", "copies_not_overlapped",
                  "upload_bound_pageable"))
def copy_phase_rule(ev: Evidence) -> list[Finding]:
    return per_gpu(ev, copy_phase)

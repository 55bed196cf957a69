"""The samples' slow copies: uploads (RX) or read-backs (TX) held well below the line rate while
the SMs waited on them (upload_bound_pageable, download_bound_pageable), by the program's own
bytes/time where a log gives it, else the readings inside the copies. Thresholds: rules.activity.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from gpuscope.analysis.core import Diagnosis
from gpuscope.analysis.evidence.samples import samplegrid as sg
from gpuscope.analysis.rules.activity import (
    COPY_SHARE_HIGH,
    COPY_SHARE_LOW,
    COPY_SHARE_MEDIUM,
    COPY_SM_LOW,
    SLOW_COPY_SHARE,
    _working,
)
from gpuscope.analysis.rules.coarse import coarse_trickle
from gpuscope.analysis.rules.device import Finding, SampleRule, finite, rnd
from gpuscope.analysis.rules.engine import SAMPLES, TRACE, rule
from gpuscope.analysis.rules.per_gpu import per_gpu

if TYPE_CHECKING:
    from gpuscope.analysis.evidence import Evidence
    from gpuscope.analysis.evidence.samples.context import SampleContext
    from gpuscope.analysis.evidence.samples.figures import GpuFigures


def _copy_rule(direction: str, verb: str, ident: str) -> SampleRule:
    def rule(f: GpuFigures, g: sg.Grid, working: np.ndarray, ctx: SampleContext) -> Finding | None:
        a = _working(f)
        if a is None:
            return None
        st = f.pcie.direction(direction)
        b = st["bursts"]
        line = f.pcie.line_rate_gbs
        share_time = b["total_s"] / a.working_s
        log_rate = ctx.program_rate(direction)
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
                and (not sm_seen or (sm_during is not None and sm_during < COPY_SM_LOW))):
            return None
        if basis.startswith("readings") and (coarse := coarse_trickle(f, a, b, rate, direction)):
            return coarse
        sev = "high" if share_time >= COPY_SHARE_HIGH else "medium" if share_time >= COPY_SHARE_MEDIUM else "low"
        ev = {"rate_gbs": rnd(rate, 2), "rate_basis": basis, "line_rate_gbs": rnd(line, 2),
              "line_rate_source": f.pcie.line_rate_source, "share_of_line_rate": rnd(rate / line),
              "copy_s": rnd(b["total_s"]), "share_of_working_time": rnd(share_time), "copies": b["count"],
              "gb_per_copy_median": rnd(b["gb_per_burst_median"]), "copy_median_s": rnd(b["median_s"]),
              "sm_activity_during": rnd(sm_during), "interior_readings": b["interior_readings"],
              "pcie_resolution_s": rnd(f.pcie.resolution_s, 4),
              "could_not_see": ("the samples cannot see the host memory kind: staging from pageable memory is the "
                                "usual cause of copies at this rate, but many small copies or a slow producer look "
                                "alike; a profiler trace names each copy's memory kind"
                                + ("" if sm_seen else "; the copies are shorter than the readings, so whether "
                                                      "they overlapped compute is not known"))}
        head = ("Read-back-bound into pageable memory (likely)" if direction == "tx" else
                f"{verb.capitalize()}-bound from pageable memory (likely)")
        during = "SM activity" if f.source != "utilization" else "utilization.gpu"
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


UPLOAD_BOUND = _copy_rule("rx", "upload", "upload_bound_pageable")
DOWNLOAD_BOUND = _copy_rule("tx", "download", "download_bound_pageable")


@rule("upload_bound_pageable", needs=SAMPLES, uses=("copies", "compute"), yields_to=TRACE,
      emits={"upload_bound_pageable": "upload", "copies_averaged": "unknown"})
def upload_bound_pageable(ev: Evidence) -> list[Finding]:
    return per_gpu(ev, UPLOAD_BOUND)


@rule("download_bound_pageable", needs=SAMPLES, uses=("copies", "compute"), yields_to=TRACE,
      emits={"download_bound_pageable": "readback", "copies_averaged": "unknown"})
def download_bound_pageable(ev: Evidence) -> list[Finding]:
    return per_gpu(ev, DOWNLOAD_BOUND)

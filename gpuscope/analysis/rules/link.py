"""The samples' copies at the line rate: PCIe readings at NEAR_LINE_RATE_SHARE of the line or more
for LINK_SHARE_LOW of the working time or longer (link_bound): those copies run as fast as the
link allows; pinning will not help. Thresholds: rules.activity.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gpuscope.analysis.core import Diagnosis
from gpuscope.analysis.rules.activity import LINK_SHARE_LOW, LINK_SHARE_MEDIUM, _working
from gpuscope.analysis.rules.device import Finding, rnd
from gpuscope.analysis.rules.engine import SAMPLES, TRACE, rule
from gpuscope.analysis.rules.per_gpu import per_gpu

if TYPE_CHECKING:
    import numpy as np

    from gpuscope.analysis.evidence import Evidence
    from gpuscope.analysis.evidence.samples import samplegrid as sg
    from gpuscope.analysis.evidence.samples.context import SampleContext
    from gpuscope.analysis.evidence.samples.figures import GpuFigures


def link_bound(f: GpuFigures, g: sg.Grid, working: np.ndarray, ctx: SampleContext) -> Finding | None:
    a = _working(f)
    if a is None:
        return None
    p = f.pcie
    near = p.time_near_line_rate_s / a.working_s
    if near < LINK_SHARE_LOW:
        return None
    sev = "medium" if near >= LINK_SHARE_MEDIUM else "low"
    ev = {"time_near_line_rate_s": rnd(p.time_near_line_rate_s), "share_of_working_time": rnd(near),
          "line_rate_gbs": rnd(p.line_rate_gbs, 2), "threshold_gbs": rnd(p.near_line_rate_threshold_gbs, 2),
          "rx_max_gbs": rnd(p.rx["max_gbs"], 2), "tx_max_gbs": rnd(p.tx["max_gbs"], 2),
          "could_not_see": ("copies shorter than a reading count only where a reading caught them at full rate: "
                            "the time at the line rate is a lower bound")}
    summary = (f"PCIe at the line rate {p.time_near_line_rate_s:.2f} s, {near:.0%} of the working time "
               f"(readings >= {p.near_line_rate_threshold_gbs:.1f} GB/s of {p.line_rate_gbs:.1f}): those "
               "copies already run as fast as the link allows.")
    rec = ("Send fewer bytes (keep data resident on the GPU, compress, transfer only what changed) or overlap "
           "the copies with compute on a second stream; a faster link is the only other cure.")
    return Diagnosis("link_bound", sev, summary, ev, rec), near


@rule("link_bound", needs=SAMPLES, uses=("copies",), yields_to=TRACE, emits={"link_bound": "link"})
def link_bound_rule(ev: Evidence) -> list[Finding]:
    return per_gpu(ev, link_bound)

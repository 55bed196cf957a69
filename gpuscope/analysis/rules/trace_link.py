"""The trace's word for copies that already run at the line rate and fill the span: the same
`link_bound` the samples give (rules.link.link_bound), from the exact copies a trace holds.

    link_bound   host<->device copies not from pageable memory, >= LINK_SHARE of the traced span,
                 at >= NEAR_LINE of the line rate (by the copies' own bytes over their time)

A read-back or upload loop from pinned memory at 55 GB/s is bound by the link, not by its host
memory: the advice is fewer bytes or overlap, never pinning (it is pinned already).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gpuscope.analysis.core import Diagnosis
from gpuscope.analysis.evidence import intervals as iv
from gpuscope.analysis.evidence.trace.trace_activity import TRACE_FLOOR_UNSEEN
from gpuscope.analysis.rules.engine import TRACE, Finding, rule, span_findings

if TYPE_CHECKING:
    from gpuscope.analysis.evidence import Evidence
    from gpuscope.analysis.evidence.trace.rule_input import TraceRuleInput

LINK_SHARE = 0.5   # of the traced span (merged copy time)
NEAR_LINE = 0.8    # of the line rate
HOST_DIRECTIONS = ("HtoD", "DtoH")


def link_bound(inp: TraceRuleInput) -> list[Diagnosis]:
    g = inp.gpu
    if not len(g) or inp.line_rate_gbs <= 0 or inp.span_us <= 0:
        return []
    m = g[(g["kind"] == "memcpy") & g["direction"].isin(HOST_DIRECTIONS)
          & (g["host_memory"] != "pageable")]
    if not len(m):
        return []
    us, nbytes = float(m["dur_us"].sum()), float(m["bytes"].sum())
    gbs = nbytes / (us * 1e3) if us > 0 else 0.0
    start = m["ts_us"].to_numpy(dtype=float)
    merged = iv.total(*iv.merge(start, start + m["dur_us"].to_numpy(dtype=float)))
    share = merged / inp.span_us
    if share < LINK_SHARE or gbs < NEAR_LINE * inp.line_rate_gbs:
        return []
    dirs = sorted(set(m["direction"].astype(str)))
    kinds = sorted(set(m["host_memory"].astype(str)))
    what = {("DtoH",): "read-backs (device to host)", ("HtoD",): "uploads (host to device)"}.get(tuple(dirs), "copies")
    ev = {"copies": int(len(m)), "bytes": int(nbytes), "copy_ms": round(us / 1e3, 3), "gbs": round(gbs, 2),
          "share_of_span": round(share, 4), "line_rate_gbs": inp.line_rate_gbs,
          "line_rate_source": inp.line_rate_source, "share_of_line_rate": round(gbs / inp.line_rate_gbs, 3),
          "directions": dirs, "host_memory": kinds,
          "thresholds": {"share_of_span": LINK_SHARE, "near_line_rate": NEAR_LINE}}
    if inp.line_rate_source == "default":
        ev["unseen"] = [f"the line rate is gpuscope's default {inp.line_rate_gbs:g} GB/s, not one measured here "
                        "(gpuscope bandwidth measures it)"]
    elif inp.line_rate_source == "trace":
        ev["unseen"] = [TRACE_FLOOR_UNSEEN.format(rate=round(inp.line_rate_gbs, 1))]
    elif inp.line_rate_source == "gpu_name":
        ev["unseen"] = [f"the line rate {inp.line_rate_gbs:.1f} GB/s is assumed from the GPU's model (its usual PCIe "
                        "generation at x16), not measured (gpuscope bandwidth measures it)"]
    elif inp.line_rate_source == "link":
        ev["unseen"] = [f"the line rate {inp.line_rate_gbs:.1f} GB/s is the run's PCIe link's raw rate less packet "
                        "overhead, not measured (gpuscope bandwidth measures it)"]
    return [Diagnosis(
        "link_bound", "medium",
        f"Link-bound: {len(m)} {what} {'into' if dirs == ['DtoH'] else 'from'} {'/'.join(kinds)} memory filled "
        f"{share:.0%} of the traced span at {gbs:.1f} GB/s ({gbs / inp.line_rate_gbs:.0%} of the {inp.line_rate_gbs:g} GB/s line rate): "
        "they already run as fast as the link allows.", ev,
        "Move fewer bytes (keep the data on the GPU, read back only what the host needs, compress) or overlap the "
        "copies with compute on a second stream; pinning will not help, they are not pageable.")]


@rule("trace_link_bound", needs=TRACE, uses=("copies",), emits={"link_bound": "link"})
def trace_link_bound(ev: Evidence) -> list[Finding]:
    return span_findings(link_bound(ev.trace_input))

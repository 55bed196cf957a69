"""Copies the readings cannot time: bursts of uploads or read-backs shorter than
transfers.MIN_RESOLVED_READINGS readings (their rate is unknown, at least their highest reading).

    copies_unresolved   such bursts in either direction >= COPY_SHARE_LOW of the working time, no
                        program rate (the direction that spent the larger share; an upload's read
                        requests on TX are not read-backs)
    copies_not_overlapped  the same, where the SMs idled while PCIe moved bytes >= COPY_SHARE_LOW of
                        the working time: at any reading interval a reading with the SMs idle and
                        bytes moving is a copy no compute overlapped (certain); how fast the copy
                        ran (pageable or not) needs a rate held over enough of it, which these
                        bursts do not give (issue 33 class 10: a dmon capture idle 51% with two
                        1 s readings of 6-9 GB/s in every idle burst read only INFO)

What would make copies_not_overlapped fire falsely: copies beside compute inside one reading (the
reading then shows the SMs busy, class `both`, and does not count), or another program's bytes on
the link while this one idles (the samples cannot tell whose bytes they are: said in could_not_see).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gpuscope.analysis.core import Diagnosis
from gpuscope.analysis.evidence.samples import samplegrid as grid
from gpuscope.analysis.evidence.samples import transfers
from gpuscope.analysis.rules.activity import (
    COPY_SHARE_HIGH,
    COPY_SHARE_LOW,
    COPY_SHARE_MEDIUM,
    _working,
)
from gpuscope.analysis.rules.device import Finding, finite, rnd
from gpuscope.analysis.rules.engine import SAMPLES, TRACE, rule
from gpuscope.analysis.rules.per_gpu import per_gpu
from gpuscope.analysis.rules.sample_copies import _other_way

if TYPE_CHECKING:
    import numpy as np

    from gpuscope.analysis.evidence import Evidence
    from gpuscope.analysis.evidence.samples import samplegrid as sg
    from gpuscope.analysis.evidence.samples.context import SampleContext
    from gpuscope.analysis.evidence.samples.figures import GpuFigures


def copies_unresolved(f: GpuFigures, g: sg.Grid, working: np.ndarray, ctx: SampleContext) -> Finding | None:
    """Copies in either direction too short for the readings to tell their rate (the direction that
    spent the larger share of the working time; an upload's read requests on TX are not read-backs)."""
    a = _working(f)
    if a is None:
        return None
    best: tuple[float, str] | None = None
    for d in ("rx", "tx"):
        b = f.pcie.direction(d)["bursts"]
        share = b["total_s"] / a.working_s
        if finite(ctx.program_rate(d)) or b["resolved"] or not b["count"] or share < COPY_SHARE_LOW:
            continue
        if _other_way(g, d, f.pcie.line_rate_gbs):
            continue
        if best is None or share > best[0]:
            best = (share, d)
    if best is None:
        return None
    share, d = best
    b, mx = f.pcie.direction(d)["bursts"], f.pcie.direction(d)["max_gbs"]
    what = "uploads" if d == "rx" else "read-backs (device to host)"
    ev = {"direction": d, "copies": b["count"], "copy_median_s": rnd(b["median_s"], 4),
          "readings_per_copy_median": b["median_readings"], "pcie_resolution_s": rnd(f.pcie.resolution_s, 4),
          "share_of_working_time": rnd(share), f"{d}_max_gbs": rnd(mx, 2),
          "could_not_see": (f"a copy shorter than {transfers.MIN_RESOLVED_READINGS} readings is averaged with the "
                            "time around it: its rate is unknown (at least its highest reading), and a slow copy "
                            "cannot be told from short fast ones with host work between them")}
    median_s = b["median_s"] if b["median_s"] is not None else float("nan")
    summary = (f"{b['count']} bursts of {what}, ~{median_s * 1e3:.0f} ms each ({share:.0%} of the working time), "
               f"span too few readings {(f.pcie.resolution_s or float('nan')) * 1e3:.0f} ms apart (a median "
               f"{b['median_readings']:g}; a rate needs {transfers.MIN_RESOLVED_READINGS}) to tell their rate: at least "
               f"{mx:.1f} GB/s (the highest reading).")
    rec = (f"To judge them, give gpuscope the program's own bytes and time per copy ({'h2d' if d == 'rx' else 'd2h'}"
           "_bytes= beside its time), a profiler trace, or sample faster (gpuscope record samples every 20 ms; "
           "nvidia-smi dmon reads once a second).")
    serial = _serialised_share(g, working, a.working_s)
    if serial >= COPY_SHARE_LOW:
        return _not_overlapped(f, d, what, serial, ev, mx), serial
    return Diagnosis("copies_unresolved", "info", summary, ev, rec), share


def _serialised_share(g: sg.Grid, working: np.ndarray, working_s: float) -> float:
    """The share of the working time with the SMs idle while PCIe moved bytes (class transferring)."""
    if not working_s:
        return 0.0
    mask = working & (g.codes == grid.CLASS_CODE["transferring"])
    return float(grid.masked_sum(g.dt, mask)) / working_s


def _not_overlapped(f: GpuFigures, d: str, what: str, serial: float, ev: dict, mx: float | None) -> Diagnosis:
    """Copies the SMs waited on, their rate unknown: what is certain, at the confidence it allows."""
    sev = "high" if serial >= COPY_SHARE_HIGH else "medium" if serial >= COPY_SHARE_MEDIUM else "low"
    res = f.pcie.resolution_s
    ev = {**ev, "sm_idle_while_copying_share": rnd(serial),
          "could_not_see": ev["could_not_see"] + "; whose bytes they are (another program's copies read the same)"}
    summary = (f"{what.capitalize()} not overlapped with compute: the SMs idled while PCIe moved bytes "
               f"{serial:.0%} of the working time (readings {res:.2g} s apart, at least {mx:.1f} GB/s at the "
               f"highest); their bursts span too few readings to tell how fast the copies ran, so whether they "
               f"are pageable is not known.")
    rec = (f"Overlap the {what.split(' ')[0]} with compute (copy the next batch on a side stream while this one "
           "computes, double-buffer). Whether their copy path is also slow needs their rate: the program's own "
           "bytes and time per copy, a profiler trace, or faster sampling (gpuscope record).")
    return Diagnosis("copies_not_overlapped", sev, summary, ev, rec)


def _direction_cause(d: Diagnosis) -> str | None:
    """The copies the SMs waited on: an upload or a read-back by their direction."""
    if d.id == "copies_not_overlapped" and d.evidence.get("direction") in ("rx", "tx"):
        return "upload" if d.evidence["direction"] == "rx" else "readback"
    return {"copies_not_overlapped": "copies_serialised"}.get(d.id)


@rule("copies_unresolved", needs=SAMPLES, uses=("copies",), yields_to=TRACE, cause=_direction_cause,
      emits={"copies_unresolved": None, "copies_not_overlapped": "copies_serialised"})
def copies_unresolved_rule(ev: Evidence) -> list[Finding]:
    return per_gpu(ev, copies_unresolved)

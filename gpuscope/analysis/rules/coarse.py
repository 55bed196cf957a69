"""Coarse PCIe readings of a trickle: the copy rules' (rules.sample_copies upload/download_bound_pageable)
verdict where the readings cannot time a copy.

    copies_averaged     (for upload/download_bound_pageable) readings >= COARSE_READING_S apart
                        whose rate inside a burst is below CRAWL_FLOOR_GBS, the slowest a pageable
                        copy crawls (docs/ANALYZE.md: 1-4 GB/s): such readings average short copies
                        with the host work between them, so the burst's length is not the copies'
                        time (a DCGM history at 1 reading/s of a loader-starved run averaging
                        0.8 GB/s for 39 s read HIGH "1 copy took 39 s"); LOW, bytes and bounds only

What would make it fire falsely: a real pageable crawl held over coarse readings (9.9 GB/s on the
H200's 1 s dmon): above the floor, it stays upload_bound_pageable (tests/test_truthcap_rates.py).
Where the GPU mostly idled (busy < HOST_IDLE_BUSY) while PCIe stayed nearly quiet, it says the
host side is the likelier wait, still LOW (coarse readings); a GPU busy through the same trickle
gets no such word (tests/test_truthtree_fleet.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gpuscope.analysis.core import Diagnosis
from gpuscope.analysis.rules.device import Finding, finite, rnd

if TYPE_CHECKING:
    from gpuscope.analysis.document import BurstsDoc
    from gpuscope.analysis.evidence.samples.figures import ActiveFigures, GpuFigures

COARSE_READING_S = 0.5   # PCIe readings this far apart average a copy with what lies around it
CRAWL_FLOOR_GBS = 1.0    # a pageable copy's slowest crawl: a held rate below it is a trickle of copies
HOST_IDLE_BUSY = 0.5     # the SMs busy less than this share of the working time: the GPU mostly idled


def coarse_trickle(f: GpuFigures, a: ActiveFigures, b: BurstsDoc, rate: float, direction: str) -> Finding | None:
    """The copy rules' verdict where coarse readings average copies with host work (see above)."""
    res = f.pcie.resolution_s
    if not (finite(res) and res >= COARSE_READING_S and finite(rate) and rate < CRAWL_FLOOR_GBS):
        return None
    line = f.pcie.line_rate_gbs
    gb = rate * b["total_s"]
    at_line = gb / line if line else float("nan")
    what = "uploads" if direction == "rx" else "read-backs"
    ev = {"rate_gbs": rnd(rate, 2), "gb_moved": rnd(gb, 2), "readings_s": rnd(b["total_s"]),
          "pcie_resolution_s": rnd(res, 3), "crawl_floor_gbs": CRAWL_FLOOR_GBS,
          "copy_s_at_line_rate": rnd(at_line, 3), "share_of_working_time_at_line_rate": rnd(at_line / a.working_s),
          "could_not_see": (f"readings {res:.2g} s apart average the copies with the time between them: the copies' "
                            "own rate and time are unknown, between the bytes at the line rate and the readings' time")}
    summary = (f"PCIe carried {what} averaging {rate:.2f} GB/s over {b['total_s']:.0f} s of readings {res:.2g} s apart "
               f"({gb:.1f} GB): below even a pageable copy's crawl ({CRAWL_FLOOR_GBS:g} GB/s), so these are short "
               f"copies between other work, their share of the time unknown (at the {line:.0f} GB/s line rate those "
               f"bytes take {at_line:.1f} s, {at_line / a.working_s:.0%} of the working time).")
    rec = ("What the GPU waited on is not visible at this resolution: record it (gpuscope record samples PCIe every "
           "20 ms) or take a profiler trace; copies are unlikely to be the main cost at this rate.")
    busy = a.busy_fraction
    if finite(busy) and busy < HOST_IDLE_BUSY and line:  # (issue 33 class 10: a fleet's loader-starved run)
        ev["gpu_idle_share"] = rnd(1.0 - busy)
        summary += (f" The GPU idled {1.0 - busy:.0%} of its working time while PCIe stayed nearly quiet "
                    f"({rate / line:.1%} of the line): it waited on host-side work (a data loader, preprocessing) more "
                    f"likely than on copies, as far as readings {res:.2g} s apart can tell.")
        rec = ("Time the host side of a step (the data loader's time per batch) or take a profiler trace to confirm; "
               "a recording every 20 ms (gpuscope record) shows the gaps themselves. Copies are unlikely to be the "
               "main cost at this rate.")
    return Diagnosis("copies_averaged", "low", summary, ev, rec), min(1.0, at_line / a.working_s)

"""The cause a finding names, in one vocabulary for every source: what lets a recording, an
nvidia-smi capture and a trace of the same program be checked for telling one story, although
their rules differ in what they can see (a trace's `pageable_memcpy`, a capture's
`download_bound_pageable` and a log's `d2h_bound` all name `readback`).

A finding that names no cause (a note on how the input was read, a pause, the start-up) has
none; one that says the cause is not visible names `unknown`. The JSON carries it as each
finding's `cause` and the analysis's `first_cause` (the first finding that names one).
"""

from __future__ import annotations

from gpuscope.analysis.core import Diagnosis

CAUSES: dict[str, str] = {
    # bytes over PCIe
    "h2d_bound": "upload", "pcie_underused": "upload", "upload_bound_pageable": "upload", "copy_phase": "upload",
    "d2h_bound": "readback", "download_bound_pageable": "readback",
    "link_bound": "link", "copies_not_overlapped": "copies_serialised",
    "pcie_link_downgraded": "link_degraded",
    # the host
    "host_stall": "host", "cpu_stall_at_barrier": "host", "gpu_starved": "host", "host_starved": "host",
    "host_stall_cycle": "host", "sync_bound": "sync", "launch_bound": "launch", "lock_convoy": "lock",
    # the GPU itself
    "memory_bound": "memory_bound", "compute_bound": "compute_bound", "occupancy_bound": "occupancy_bound",
    "gpu_busy": "gpu_busy", "clocks_throttled": "clocks", "memory_nearly_full": "device_memory",
    "gpu_imbalance": "imbalance", "upload_imbalance": "imbalance",
    # the source cannot tell
    "gpu_idle_unexplained": "unknown", "gpu_underused": "unknown", "copies_averaged": "unknown",
}


NEAR_LINE = 0.8  # a copy share at this share of the line rate or more runs as fast as the link allows


def cause_of(d: Diagnosis) -> str | None:
    """The cause `d` names (CAUSES), or None for a finding that names none. A trace's slow
    copies are a read-back or an upload by their directions; a log's read-backs or uploads that
    ran at NEAR_LINE of the line rate or faster are bound by the link (what the capture and the
    trace of the same copies call `link_bound`)."""
    if d.id in ("d2h_bound", "h2d_bound", "copy_phase"):
        shares = [v for k, v in d.evidence.items() if k.endswith("share_of_line_rate") and isinstance(v, int | float)]
        if shares and max(shares) >= NEAR_LINE:
            return "link"
    if d.id == "copies_not_overlapped" and d.evidence.get("direction") in ("rx", "tx"):
        # the samples' copies the SMs waited on (rules/copies.py): by their direction
        return "upload" if d.evidence["direction"] == "rx" else "readback"
    if d.id == "pageable_memcpy":
        dirs = d.evidence.get("directions")
        keys = set(dirs) if isinstance(dirs, dict | list) else set()
        if keys == {"DtoH"}:
            return "readback"
        return "upload" if "HtoD" in keys else "copies"
    return CAUSES.get(d.id)


def first_cause(findings: list[Diagnosis]) -> str | None:
    """The cause of the first finding (in ranked order) that names one."""
    return next((c for d in findings if (c := cause_of(d)) is not None), None)

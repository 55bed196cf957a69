"""Pinned host copies well below the line rate (a profiler trace): pinning is done, yet the copies
run at a fraction of what the link carries, so the cure is elsewhere (the link, the host memory's
NUMA node, copies of several GPUs sharing one switch, the line rate itself).

    pinned_copies_slow   host copies from or to pinned memory, each of at least LARGE_COPY_BYTES,
                         whose rate (their bytes over their time, per direction) is below
                         SLOW_SHARE of the line rate, taking at least MIN_SHARE of the traced span
                         beyond what they would take at the line rate

A real H100 export (2 GPUs, FSDP) moved 446 pinned HtoD copies of ~114 MB at 27.7 GB/s, 55% of a
50 GB/s line, 1.8 s of copies: only a LOW copies_not_overlapped spoke of them, nothing of their rate.

What would make it fire falsely: small copies, which are latency-bound (a 64 KiB copy spends as
long starting as moving bytes: its rate says nothing of the link), hence LARGE_COPY_BYTES, each copy
judged alone; copies at the line rate (trace_link's link_bound speaks of those); a line rate that
is gpuscope's default or assumed from the GPU's model, not measured here (a Gen4 or x8 link is slower
by itself: then at most LOW, said in `unseen`). Tests:
tests/test_pinned_rate.py.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gpuscope.analysis.core import Diagnosis
from gpuscope.analysis.evidence import intervals as iv
from gpuscope.analysis.evidence.trace.trace_activity import HOST_DIRECTIONS
from gpuscope.analysis.rules.engine import TRACE, Finding, rule, span_findings

if TYPE_CHECKING:
    import pandas as pd

    from gpuscope.analysis.evidence import Evidence
    from gpuscope.analysis.evidence.trace.rule_input import TraceRuleInput

LARGE_COPY_BYTES = 4 << 20  # a copy this large runs at the link's rate, not its start-up latency
SLOW_SHARE = 0.70           # below this share of the line rate (as pageable_memcpy's NEAR_LINE_RATE)
MIN_SHARE, MEDIUM_SHARE = 0.01, 0.10  # time at stake / traced span; never more than MEDIUM (cause unseen)
ASSUMED = ("default", "gpu_name")     # line rates not measured here: at most LOW (the link may be slower)


def _concurrent_share(m: pd.DataFrame) -> float | None:
    """The share of the copies' time during which another GPU's copies in the same direction ran too
    (one switch or root port carries both): None for one GPU."""
    gpu = m["rank"].astype(int).to_numpy() * 1_000_000 + m["device"].astype(int).to_numpy()  # (rank, device)
    if len(set(gpu.tolist())) < 2:
        return None
    start = m["ts_us"].to_numpy(dtype=float)
    end = start + m["dur_us"].to_numpy(dtype=float)
    both = total = 0.0
    for d in sorted(set(gpu.tolist())):
        a, b = iv.merge(start[gpu == d], end[gpu == d]), iv.merge(start[gpu != d], end[gpu != d])
        both += iv.intersection_length(a, b)
        total += iv.total(*a)
    return both / total if total > 0 else None


def slow_pinned(inp: TraceRuleInput) -> list[Diagnosis]:
    g = inp.gpu
    line = inp.line_rate_gbs
    if not len(g) or line <= 0 or inp.span_us <= 0:
        return []
    m = g[(g["kind"] == "memcpy") & g["direction"].isin(HOST_DIRECTIONS)
          & (g["host_memory"] == "pinned") & (g["bytes"] >= LARGE_COPY_BYTES) & (g["dur_us"] > 0)]
    by_dir = {}
    for d, c in m.groupby(m["direction"].astype(object), sort=True):
        us, nbytes = float(c["dur_us"].sum()), float(c["bytes"].sum())
        gbs = nbytes / (us * 1e3)
        if gbs < SLOW_SHARE * line:
            by_dir[str(d)] = (c, us, nbytes, gbs)
    if not by_dir:
        return []
    us = sum(v[1] for v in by_dir.values())
    nbytes = sum(v[2] for v in by_dir.values())
    at_line_us = nbytes / (line * 1e3)
    share = (us - at_line_us) / inp.span_us
    if not share >= MIN_SHARE:
        return []
    unseen = ["why the copies are slow: the link the GPU trained to (generation, width), the host memory's NUMA "
              "node, an IOMMU, or other traffic on a shared switch; a trace times copies, not the path"]
    if inp.line_rate_source == "default":
        unseen.append(f"the line rate is gpuscope's default {line:g} GB/s, not one measured here "
                      "(gpuscope bandwidth measures it)")
    elif inp.line_rate_source == "gpu_name":
        unseen.append(f"the line rate {line:.1f} GB/s is assumed from the GPU's model (its usual PCIe generation at "
                      "x16), not measured: a link of an older generation or fewer lanes is slower by itself "
                      "(gpuscope bandwidth measures it)")
    assumed = inp.line_rate_source in ASSUMED
    sev = "medium" if share >= MEDIUM_SHARE and not assumed else "low"
    slow = m[m["direction"].isin(list(by_dir))]
    concurrent = _concurrent_share(slow)
    ev = {"directions": {d: {"count": int(len(c)), "bytes": int(b), "ms": round(u / 1e3, 3), "gbs": round(r, 2),
                             "share_of_line_rate": round(r / line, 3)} for d, (c, u, b, r) in by_dir.items()},
          "count": int(len(slow)), "bytes": int(nbytes), "copy_ms": round(us / 1e3, 3),
          "gbs": round(nbytes / (us * 1e3), 2), "share_of_line_rate": round(nbytes / (us * 1e3) / line, 3),
          "ms_at_line_rate": round(at_line_us / 1e3, 3), "time_at_stake_ms": round((us - at_line_us) / 1e3, 3),
          "share_of_span": round(share, 4), "line_rate_gbs": line, "line_rate_source": inp.line_rate_source,
          "concurrent_with_other_gpus_share": None if concurrent is None else round(concurrent, 3),
          "thresholds": {"min_copy_bytes": LARGE_COPY_BYTES, "slow_share_of_line": SLOW_SHARE},
          "unseen": unseen}
    rate = nbytes / (us * 1e3)
    dirs = "/".join(by_dir)
    shared = (f"; another GPU's copies ran at the same time for {concurrent:.0%} of it" if concurrent else "")
    return [Diagnosis(
        "pinned_copies_slow", sev,
        f"{len(slow)} pinned {dirs} copies ({nbytes / 1e9:.2f} GB, {us / 1e3:.1f} ms) ran at {rate:.1f} GB/s, "
        f"{rate / line:.0%} of the {line:g} GB/s line rate: they are pinned, yet take {(us - at_line_us) / 1e3:.1f} ms "
        f"({share:.0%} of the traced span) more than at the line rate{shared}.", ev,
        "Pinning will not help, they are pinned. Check the link the GPU trained to (nvidia-smi -q: PCIe generation "
        "and width), keep the host buffers on the GPU's NUMA node (numactl --membind), stagger copies of GPUs that "
        "share a switch, and measure the line rate here (gpuscope bandwidth); or move fewer bytes, or overlap the "
        "copies with compute on a side stream.")]


@rule("pinned_copies_slow", needs=TRACE, uses=("copies",), emits={"pinned_copies_slow": "upload"},
      cause=lambda d: "readback" if set(d.evidence.get("directions") or ()) == {"DtoH"} else "upload")
def pinned_copies_slow(ev: Evidence) -> list[Finding]:
    return span_findings(slow_pinned(ev.trace_input))


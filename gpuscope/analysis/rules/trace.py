"""Diagnoses of a profiler trace: each rule a plain function TraceRuleInput -> list[Diagnosis].

Every rule puts the time it could win back in evidence (`time_at_stake_ms`, and its share of
the traced span: the summed span of the devices); run_rules orders the diagnoses by it. Rules
fire when that share reaches MIN_SHARE; severity is high from HIGH_SHARE, medium from
MEDIUM_SHARE. Thresholds: the constants below (docs/TRACES.md lists them).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from gpuscope.analysis.core import Diagnosis
from gpuscope.analysis.evidence import intervals as iv
from gpuscope.analysis.evidence.trace.rule_input import TraceRuleInput
from gpuscope.analysis.evidence.trace.trace_activity import (
    HOST_DIRECTIONS,
    TRACE_FLOOR_UNSEEN,
    DeviceView,
)
from gpuscope.analysis.evidence.trace.trace_gaps import LONG_GAP_US, SYNC_RE
from gpuscope.analysis.rules.engine import TRACE, Finding, rule, span_findings
from gpuscope.analysis.rules.trace_words import PIN_HOW, SYNC_HOW, origin, pin_how
from gpuscope.arrays import distinct, median
from gpuscope.schemas import READBACK_OPS

if TYPE_CHECKING:
    from gpuscope.analysis.evidence import Evidence
    from gpuscope.parsers.trace.host_summary import HostSummary

MIN_SHARE, MEDIUM_SHARE, HIGH_SHARE = 0.01, 0.10, 0.25
NEAR_LINE_RATE = 0.70          # host copies at >= 70% of the line rate get no pinning advice
HOST_BLOCKED = 0.80            # a copy's issuing call lasted >= 80% of it: the host waited for it
SYNC_MIN_CALLS = 20            # sync_bound: at least this many synchronising calls ...
SYNC_PER_KERNEL = 0.05         # ... and at least one per 20 kernels
LAUNCH_GAPS_SHARE = 0.1        # launch_bound: short gaps after at least this share of the kernels
LAUNCH_MIN_KERNELS = 500       # launch_bound: at least this many kernels ...
TINY_KERNEL_US = 20.0          # ... with a median duration up to this
OVERLAP_LOW = 0.5              # copies_not_overlapped: less than half of the copy time under kernels
READBACK_MAX_BYTES = 1024      # a DtoH copy this small is a value read back (.item(), .cpu())
HOST_WAIT_CAUSES = ("after_sync", "host_work", "untraced")
STARVED_CAUSES = ("data_loading", "host_work", "untraced", "allocation", "after_sync")


def _r(x: float | None, nd: int = 3) -> float | None:
    return None if x is None or (isinstance(x, float) and not math.isfinite(x)) else round(float(x), nd)


def _severity(share: float) -> str:
    return "high" if share >= HIGH_SHARE else "medium" if share >= MEDIUM_SHARE else "low"


def _diagnosis(id_: str, share: float, summary: str, evidence: dict, recommendation: str) -> list[Diagnosis]:
    """The rule's diagnosis when its share of the span reaches MIN_SHARE, else none."""
    if not share >= MIN_SHARE:  # (a NaN share is none either)
        return []
    return [Diagnosis(id=id_, severity=_severity(share), summary=summary, evidence=evidence,
                      recommendation=recommendation)]


def _stream_keys(df: pd.DataFrame) -> set[tuple[int, int, int]]:
    return set(map(tuple, df[["rank", "device", "stream"]].drop_duplicates().to_numpy().tolist()))


def _stake(evidence: dict, stake_us: float, span_us: float) -> float:
    share = stake_us / span_us if span_us > 0 else 0.0
    evidence["time_at_stake_ms"] = _r(stake_us / 1e3)
    evidence["share_of_span"] = _r(share, 4)
    return share


def _host_blocked_fraction(copies: pd.DataFrame, host: HostSummary) -> float | None:
    """Share of the copies' time during which the runtime call that issued them was running (the
    first call carrying the copy's correlation id, looked up for these copies alone)."""
    parts = []
    for rank, c in copies.groupby("rank", sort=True):
        call_ts, call_dur = host.calls(int(rank), c["correlation"].to_numpy())
        found = ~np.isnan(call_ts)
        parts.append(pd.DataFrame({"ts_us": c["ts_us"].to_numpy(dtype="float64")[found],
                                   "dur_us": c["dur_us"].to_numpy(dtype="float64")[found],
                                   "ts_us_call": call_ts[found], "dur_us_call": call_dur[found]}))
    m = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()
    if not len(m):
        return None
    s, e = m["ts_us"], m["ts_us"] + m["dur_us"]
    cs, ce = m["ts_us_call"], m["ts_us_call"] + m["dur_us_call"]
    over = (np.minimum(e, ce) - np.maximum(s, cs)).clip(lower=0)
    return float(over.sum() / m["dur_us"].sum()) if m["dur_us"].sum() > 0 else None


def _kernel_overlap(views: list[DeviceView], copies: pd.DataFrame) -> tuple[float, float]:
    """(copy time under kernels, copy time) in us, per device."""
    under = total = 0.0
    for v in views:
        c = copies[(copies["rank"] == v.rank) & (copies["device"] == v.device)]
        if not len(c):
            continue
        s = c["ts_us"].to_numpy(dtype="float64")
        merged = iv.merge(s, s + c["dur_us"].to_numpy(dtype="float64"))
        under += v.overlap("kernel", merged)  # (the kernels' union not made where they are apart)
        total += iv.total(*merged)
    return under, total


def _kernel_streams(views: list[DeviceView]) -> set[tuple[int, int, int]]:
    """(rank, device, stream) of every stream that ran a kernel: each view's kernels' streams
    (their rows, copied and deduplicated as a frame, were ~75 bytes a kernel)."""
    return {(v.rank, v.device, int(s)) for v in views
            for s in distinct(v.gpu["stream"].to_numpy()[(v.gpu["kind"] == "kernel").to_numpy(dtype=bool)]).tolist()}


def _reader(ev: Evidence) -> str:
    return str(ev.trace.trace.get("reader", "")) if ev.trace is not None else ""


def pageable_memcpy(inp: TraceRuleInput, how: str = PIN_HOW["kineto"]) -> list[Diagnosis]:
    gpu = inp.gpu
    m = gpu[(gpu["kind"] == "memcpy") & (gpu["host_memory"] == "pageable")
            & gpu["direction"].isin(HOST_DIRECTIONS)]
    if not len(m) or inp.line_rate_gbs <= 0:
        return []
    us = float(m["dur_us"].sum())
    nbytes = float(m["bytes"].sum())
    gbs = nbytes / (us * 1e3) if us > 0 else math.nan
    if not (gbs < NEAR_LINE_RATE * inp.line_rate_gbs):
        return []
    at_line_us = nbytes / (inp.line_rate_gbs * 1e3)
    by_dir = {str(d): {"count": int(len(g)), "bytes": int(g["bytes"].sum()), "ms": _r(g["dur_us"].sum() / 1e3),
                       "gbs": _r(g["bytes"].sum() / (g["dur_us"].sum() * 1e3))}
              for d, g in m.groupby(m["direction"].astype(object), sort=True)}
    under, total = _kernel_overlap(inp.views, m)
    blocked = _host_blocked_fraction(m, inp.host_summary)
    streams = _stream_keys(m)
    ev = {
        "directions": by_dir, "count": int(len(m)), "bytes": int(nbytes), "copy_ms": _r(us / 1e3),
        "gbs": _r(gbs), "per_event_gbs_median": _r(float(median(m["bytes"] / (m["dur_us"] * 1e3)))),
        "line_rate_gbs": inp.line_rate_gbs, "line_rate_source": inp.line_rate_source,
        "share_of_line_rate": _r(gbs / inp.line_rate_gbs), "ms_at_line_rate": _r(at_line_us / 1e3),
        "host_blocked_fraction": _r(blocked), "blocks_host": None if blocked is None else blocked >= HOST_BLOCKED,
        "overlapped_with_kernels_fraction": _r(under / total if total > 0 else None),
        "same_stream_as_kernels": bool(streams & _kernel_streams(inp.views)),
    }
    share = _stake(ev, us - at_line_us, inp.span_us)
    unseen = []
    if inp.line_rate_source == "default":
        unseen.append(f"the line rate is gpuscope's default {round(inp.line_rate_gbs, 1):g} GB/s, not one measured on "
                      "this machine (gpuscope bandwidth measures it)")
    elif inp.line_rate_source == "trace":
        unseen.append(TRACE_FLOOR_UNSEEN.format(rate=round(inp.line_rate_gbs, 1)))
    elif inp.line_rate_source == "gpu_name":
        unseen.append(f"the line rate {round(inp.line_rate_gbs, 1):g} GB/s is assumed from the GPU's model (its usual "
                      "PCIe generation at x16), not measured (gpuscope bandwidth measures it)")
    elif inp.line_rate_source == "link":
        unseen.append(f"the line rate {round(inp.line_rate_gbs, 1):g} GB/s is the run's PCIe link's raw rate less "
                      "packet overhead, not measured (gpuscope bandwidth measures it)")
    ev["unseen"] = unseen
    dirs = " and ".join(f"{d} {v['count']} x" for d, v in by_dir.items())
    what = "copies from pageable host memory"
    if set(by_dir) == {"DtoH"}:  # the program reads results back into pageable memory
        what = "read-backs (device to host) into pageable host memory"
    blocking = ""
    if blocked is not None and blocked >= HOST_BLOCKED:
        blocking = f"; the host waited in the copy call for {blocked:.0%} of the copy time"
    return _diagnosis(
        "pageable_memcpy", share,
        (f"{len(m)} {what} ({dirs}, {nbytes / 1e9:.2f} GB) took {us / 1e3:.1f} ms at "
         f"{gbs:.1f} GB/s, {gbs / inp.line_rate_gbs:.0%} of the {round(inp.line_rate_gbs, 1):g} GB/s line rate"
         f"{blocking}"),
        ev,
        (f"{how}: at the line rate these copies take {at_line_us / 1e3:.1f} ms instead of {us / 1e3:.1f} ms "
         f"({(us - at_line_us) / 1e3:.1f} ms, {share:.0%} {_of_span(inp)}) and can overlap kernels."),
    )


def _gaps(inp: TraceRuleInput, causes: tuple[str, ...], long: bool | None) -> pd.DataFrame:
    g = inp.gaps
    sel = g["cause"].isin(causes)
    if long is not None:
        sel &= (g["dur_us"] >= LONG_GAP_US) if long else (g["dur_us"] < LONG_GAP_US)
    return g[sel]


def _dominant_host(inp: TraceRuleInput, causes: tuple[str, ...]) -> tuple[str | None, str | None]:
    """The annotation and operator named most (by gap time) across the listed gaps."""
    ann: dict[str, float] = {}
    op: dict[str, float] = {}
    for h in inp.gap_hosts:
        if h["cause"] not in causes or h["ms"] * 1e3 < LONG_GAP_US:
            continue
        if h["annotation"]:
            ann[h["annotation"]] = ann.get(h["annotation"], 0.0) + h["ms"]
        if h["host_op"]:
            op[h["host_op"]["name"]] = op.get(h["host_op"]["name"], 0.0) + h["ms"]
    return (max(ann, key=lambda k: ann[k]) if ann else None), (max(op, key=lambda k: op[k]) if op else None)


def host_starved(inp: TraceRuleInput) -> list[Diagnosis]:
    g = _gaps(inp, STARVED_CAUSES, long=True)
    if not len(g):
        return []
    d = g["dur_us"].to_numpy(dtype="float64")
    by_cause = g.groupby("cause")["dur_us"].sum().sort_values(ascending=False) / 1e3
    cause = str(by_cause.index[0])
    annotation, op = _dominant_host(inp, STARVED_CAUSES)
    ev = {"gaps": int(d.size), "idle_ms": _r(d.sum() / 1e3), "longest_ms": _r(d.max() / 1e3),
          "median_ms": _r(float(median(d)) / 1e3), "min_gap_ms": LONG_GAP_US / 1e3,
          "by_cause_ms": {str(k): _r(v) for k, v in by_cause.items()}, "dominant_cause": cause,
          "host_annotation": annotation, "host_op": op,
          "host_traced_fraction": _r(float(np.average(g["cover_host"], weights=d))),
          "busy_fraction": _r(inp.busy_fraction)}
    share = _stake(ev, float(d.sum()), inp.span_us)
    where = f" in {annotation}" if annotation else ""
    what = {"data_loading": "the input pipeline", "allocation": "memory allocation",
            "host_work": "host work", "after_sync": "host work after a synchronisation",
            "untraced": "host code outside every traced operator"}[cause]
    unseen = ["DataLoader worker processes and threads the profiler did not record are not in the trace"]
    pageable = inp.gpu["host_memory"].eq("pageable").any()
    if cause == "data_loading":
        rec = ("Feed the GPU ahead of time: load batches in background workers (DataLoader(num_workers=N, "
               "persistent_workers=True, prefetch_factor=2)) or do the per-sample work on the GPU")
        rec += ", with pin_memory=True (the batches arrive from pageable memory)." if pageable else "."
    elif cause == "allocation":
        rec = "Allocate buffers once outside the loop and reuse them (pinned buffers especially: cudaHostAlloc is slow)."
    elif cause == "untraced":
        rec = ("The host was in code the profiler did not record: add record_function ranges or profile with "
               "with_stack=True to see it, then move it off the GPU's critical path.")
    else:
        rec = "Move that host work off the GPU's critical path: overlap it with GPU work, batch it, or run it elsewhere."
    return _diagnosis(
        "host_starved", share,
        (f"The GPU sat idle {d.sum() / 1e3:.1f} ms ({share:.0%} {_of_span(inp)}) in {d.size} gaps of "
         f">= {LONG_GAP_US / 1e3:g} ms waiting for {what}{where}; the longest {d.max() / 1e3:.1f} ms"),
        {**ev, "unseen": unseen}, rec,
    )


def _of_span(inp: TraceRuleInput) -> str:
    """What a share is of: the traced span, or, for a folder of ranks, their timelines together (the
    times beside it are then summed over them: issue 33, class 12, never a silent sum over ranks)."""
    n = len(inp.views)
    return "of the traced span" if n < 2 else f"of the {n} rank/GPU timelines together, times summed over them"


def _sync_calls(host: pd.DataFrame) -> pd.DataFrame:
    rt = host[host["cat"].astype(object).isin(("cuda_runtime", "cuda_driver"))]
    names = rt["name"].astype(object)
    hit = {n for n in names.unique() if SYNC_RE.search(str(n))}
    return rt[names.isin(hit)]


def _kernel_durations(inp: TraceRuleInput) -> np.ndarray:
    """The kernels' dur_us, masked from the column (their rows, copied, were most of the frame)."""
    gpu = inp.gpu
    return gpu["dur_us"].to_numpy(dtype="float64")[(gpu["kind"] == "kernel").to_numpy(dtype=bool)]


def _syncs_frequent(inp: TraceRuleInput) -> tuple[bool, pd.DataFrame, int]:
    syncs = _sync_calls(inp.host)
    n_k = int((inp.gpu["kind"] == "kernel").sum())
    return (len(syncs) >= SYNC_MIN_CALLS and len(syncs) >= SYNC_PER_KERNEL * max(n_k, 1)), syncs, n_k


def sync_bound(inp: TraceRuleInput, drains: str = SYNC_HOW["kineto"]) -> list[Diagnosis]:
    frequent, syncs, n_k = _syncs_frequent(inp)
    if not frequent:
        return []
    g = _gaps(inp, HOST_WAIT_CAUSES, long=False)
    after = g[g["cause"] == "after_sync"]
    gpu = inp.gpu
    reads = gpu[(gpu["kind"] == "memcpy") & (gpu["direction"] == "DtoH")
                & (gpu["bytes"] <= READBACK_MAX_BYTES)]
    kd = _kernel_durations(inp)
    ops = inp.host[inp.host["cat"].astype(object) == "cpu_op"]["name"].astype(object)
    readers = ops[ops.isin(READBACK_OPS)].value_counts()
    span_s = inp.span_us / 1e6
    ev = {"sync_calls": {str(k): int(v) for k, v in syncs["name"].astype(object).value_counts().items()},
          "syncs_per_kernel": _r(len(syncs) / max(n_k, 1)), "syncs_per_s": _r(len(syncs) / span_s if span_s else None, 1),
          "sync_call_ms": _r(syncs["dur_us"].sum() / 1e3), "readback_copies": int(len(reads)),
          "readback_ops": {str(k): int(v) for k, v in readers.items()},
          "gaps_after_sync": int(len(after)), "gaps_after_sync_ms": _r(after["dur_us"].sum() / 1e3),
          "gap_after_sync_median_us": _r(float(after["dur_us"].median()) if len(after) else None, 1),
          "other_host_gaps_ms": _r((g["dur_us"].sum() - after["dur_us"].sum()) / 1e3),
          "kernels": int(kd.size), "kernel_median_us": _r(float(median(kd)) if kd.size else None, 2),
          "busy_fraction": _r(inp.busy_fraction)}
    share = _stake(ev, float(g["dur_us"].sum()), inp.span_us)
    rec = (f"The host waits for the GPU {len(syncs)} times ({len(syncs) / max(n_k, 1):.2f} per kernel): every "
           f"{drains} drains the queue, so the GPU idles while the host issues the next work. Keep the values on "
           "the GPU and read them back once per step (or every N steps); drop the synchronisation from the loop.")
    if kd.size and median(kd) <= TINY_KERNEL_US:
        rec += (f" With kernels of {median(kd):.1f} us (median) the loop may stay launch-bound after that: "
                "fuse the ops (torch.compile) or capture them in a CUDA graph.")
    return _diagnosis(
        "sync_bound", share,
        (f"{len(syncs)} synchronising calls for {n_k} kernels: the GPU idled {g['dur_us'].sum() / 1e3:.1f} ms "
         f"({share:.0%} {_of_span(inp)}) in {len(g)} short gaps while the host synchronised and "
         f"re-issued work ({len(after)} gaps right after a sync)"),
        ev, rec,
    )


def _phases_of(inp: TraceRuleInput, g: pd.DataFrame, top: int = 3) -> list[dict]:
    """Annotations holding most of these gaps' time: the launch-bound phases."""
    a = inp.host[inp.host["cat"].astype(object) == "user_annotation"]
    names = a["name"].astype(object)
    a = a[~names.str.startswith("ProfilerStep")]
    out: list[dict[str, Any]] = []
    for name, grp in a.groupby(a["name"].astype(object), sort=False):
        s = grp["ts_us"].to_numpy(dtype="float64")
        merged = iv.merge(s, s + grp["dur_us"].to_numpy(dtype="float64"))
        inside = float(iv.covered_lengths(g["start_us"], g["end_us"], *merged).sum())
        if inside > 0:
            out.append({"phase": str(name), "gap_ms": _r(inside / 1e3)})
    return sorted(out, key=lambda r: -r["gap_ms"])[:top]


def launch_bound(inp: TraceRuleInput) -> list[Diagnosis]:
    frequent, _, n_k = _syncs_frequent(inp)
    kd = _kernel_durations(inp)
    # the median taken once, in kd itself (its own gather: a copy of 10M kernels' durations fewer)
    # where no -0.0 is among them (which of two equal zeros a selection shows is its own)
    med = float(median(kd, overwrite=not bool((np.signbit(kd) & (kd == 0.0)).any())))
    if frequent or n_k < LAUNCH_MIN_KERNELS or med > TINY_KERNEL_US:
        return []
    g = _gaps(inp, HOST_WAIT_CAUSES, long=False)
    if not len(g):
        return []
    d = g["dur_us"].to_numpy(dtype="float64")
    # the median interval between one thread's kernel launches (each rank's and thread's own: two
    # ranks' launches interleaved are no faster launcher)
    interval = inp.host_summary.launch_interval_us()
    # False fire (tests/test_false_fires.py): tiny kernels launched faster than they run queue back
    # to back, so the GPU never waits on a launch; a gap or two (the trace's start) is no pattern
    if (interval is not None and interval < med) or d.size < max(3, LAUNCH_GAPS_SHARE * n_k):
        return []
    span_s = inp.span_us / 1e6
    ev: dict[str, Any] = {"kernels": int(n_k), "kernel_median_us": _r(med, 2),
          "kernel_p90_us": _r(float(np.quantile(kd, 0.9)), 2), "launch_interval_median_us": _r(interval, 2),
          "kernels_per_s": _r(n_k / span_s if span_s else None, 0), "gaps": int(d.size),
          "gap_median_us": _r(float(median(d)), 1), "gaps_ms": _r(d.sum() / 1e3),
          "busy_fraction": _r(inp.busy_fraction),
          "phases": _phases_of(inp, g)}
    share = _stake(ev, float(d.sum()), inp.span_us)
    where = f", mostly in {ev['phases'][0]['phase']}" if ev["phases"] else ""
    every = f", launched every {interval:.1f} us" if interval else ""
    return _diagnosis(
        "launch_bound", share,
        (f"{n_k} kernels of {med:.1f} us (median){every}: the GPU finished each before the host "
         f"issued the next and idled {d.sum() / 1e3:.1f} ms ({share:.0%} {_of_span(inp)}) in {d.size} "
         f"short gaps{where}"),
        ev,
        ("Give the GPU fewer, larger kernels: fuse the element-wise ops (torch.compile), capture the "
         "loop in a CUDA graph (torch.cuda.graphs, torch.compile(mode='reduce-overhead')), or give "
         "each kernel more work (larger batches)."),
    )


def copies_not_overlapped(inp: TraceRuleInput) -> list[Diagnosis]:
    gpu = inp.gpu
    m = gpu[(gpu["kind"] == "memcpy") & gpu["direction"].isin(HOST_DIRECTIONS)
            & (gpu["host_memory"] != "pageable") & (gpu["bytes"] > READBACK_MAX_BYTES)]
    kern_us = sum(v.kernel_us for v in inp.views)
    if not len(m) or kern_us <= 0:
        return []
    under, total = _kernel_overlap(inp.views, m)
    if total <= 0 or under / total >= OVERLAP_LOW:
        return []
    alone = total - under
    stake = min(alone, kern_us - under)
    streams = _stream_keys(m)
    same = bool(streams & _kernel_streams(inp.views))
    ev = {"count": int(len(m)), "bytes": int(m["bytes"].sum()), "copy_ms": _r(total / 1e3),
          "overlapped_fraction": _r(under / total), "kernel_busy_ms": _r(kern_us / 1e3),
          "host_memory": sorted({str(x) for x in m["host_memory"].astype(object)}),
          "same_stream_as_kernels": same, "copy_streams": sorted({int(s[2]) for s in streams})}
    share = _stake(ev, stake, inp.span_us)
    stream_note = " on the stream that runs the kernels" if same else ""
    return _diagnosis(
        "copies_not_overlapped", share,
        (f"{len(m)} host copies ({m['bytes'].sum() / 1e9:.2f} GB, {total / 1e3:.1f} ms) ran{stream_note} while "
         f"no kernel ran ({under / total:.0%} overlapped); up to {stake / 1e3:.1f} ms ({share:.0%} "
         f"{_of_span(inp)}) could hide under the {kern_us / 1e3:.1f} ms of kernels"),
        ev,
        ("Issue the copies on a side stream one step ahead (with torch.cuda.stream(s): "
         "x.to(dev, non_blocking=True); then torch.cuda.current_stream().wait_stream(s)), so the "
         "next batch moves while this one computes."),
    )


RULES: list[Callable[[TraceRuleInput], list[Diagnosis]]] = [
    pageable_memcpy, host_starved, sync_bound, launch_bound, copies_not_overlapped,
]


def _copies_cause(d: Diagnosis) -> str | None:
    """Slow copies are a read-back or an upload by their directions."""
    dirs = d.evidence.get("directions")
    keys = set(dirs) if isinstance(dirs, dict | list) else set()
    if keys == {"DtoH"}:
        return "readback"
    return "upload" if "HtoD" in keys else "copies"


@rule("pageable_memcpy", needs=TRACE, uses=("copies",), emits={"pageable_memcpy": "upload"}, cause=_copies_cause)
def pageable_memcpy_rule(ev: Evidence) -> list[Finding]:
    """Share: the copies' own time over the traced span (what they took, not only what pinning wins back)."""
    span = ev.trace_input.span_us
    return [(d, float(d.evidence["copy_ms"]) * 1e3 / span if span > 0 and isinstance(d.evidence.get("copy_ms"), int | float)
             else float(d.evidence.get("share_of_span") or 0.0))
            for d in pageable_memcpy(ev.trace_input, pin_how(_reader(ev)))]


@rule("host_starved", needs=TRACE, uses=("compute", "host"), emits={"host_starved": "host"})
def host_starved_rule(ev: Evidence) -> list[Finding]:
    return span_findings(host_starved(ev.trace_input))


@rule("sync_bound", needs=TRACE, uses=("compute", "host"), emits={"sync_bound": "sync"})
def sync_bound_rule(ev: Evidence) -> list[Finding]:
    return span_findings(sync_bound(ev.trace_input, SYNC_HOW[origin(_reader(ev))]))


@rule("launch_bound", needs=TRACE, uses=("compute",), emits={"launch_bound": "launch"})
def launch_bound_rule(ev: Evidence) -> list[Finding]:
    return span_findings(launch_bound(ev.trace_input))


@rule("copies_not_overlapped", needs=TRACE, uses=("copies", "compute"), emits={"copies_not_overlapped": "copies_serialised"})
def copies_not_overlapped_rule(ev: Evidence) -> list[Finding]:
    return span_findings(copies_not_overlapped(ev.trace_input))

"""A profiler trace analyzed: TraceFrames -> TraceAnalysis (activity, copies, gaps, phases, findings).

    from gpuscope.parsers.trace.kineto import read_trace
    from gpuscope.analysis.trace_analysis import analyze_trace
    a = analyze_trace(read_trace("run.pt.trace.json.gz"), line_rate_gbs=55.5, line_rate_source="cache")
    trace_doc(a)     # gpuscope.analysis.document: its `trace` part (activity, memcpy, ..., phases, trace)
    a.findings       # the trace's findings, once the rule engine ran (gpuscope.analysis.analyze)
    a.phases         # PHASE_SCHEMA rows for the plot / Perfetto export
    a.counters       # TRACE_COUNTER_SCHEMA busy-fraction track

How each figure is computed: docs/TRACES.md. Plain functions, no printing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, cast

import pandas as pd

from gpuscope.allocator import give_back
from gpuscope.analysis.core import Diagnosis
from gpuscope.analysis.evidence.trace import trace_activity as act
from gpuscope.analysis.evidence.trace import trace_gaps as tg
from gpuscope.analysis.evidence.trace import trace_phases as tp
from gpuscope.analysis.evidence.trace.rule_input import TraceRuleInput
from gpuscope.analysis.evidence.trace.top_kernels import top_kernels
from gpuscope.errors import NoDataError
from gpuscope.linerate import named_line_rate

if TYPE_CHECKING:
    from gpuscope.analysis.document import (
        TopKernelDoc,
        TraceActivityDoc,
        TraceDeviceDoc,
        TraceGapDoc,
        TraceIdleGapsDoc,
        TraceInfoDoc,
        TraceMemcpyDoc,
        TraceMemsetDoc,
        TraceOptionsDoc,
        TracePhaseDoc,
        TraceStreamDoc,
    )
    from gpuscope.parsers.trace.kineto import TraceFrames

RESOLUTION = "exact (profiler events)"


@dataclass
class TraceAnalysis:
    """A trace's figures; its document is gpuscope.analysis.document.trace_doc (built with the
    analysis's, Analysis.document())."""

    activity: TraceActivityDoc
    memcpy: list[TraceMemcpyDoc]
    memset: list[TraceMemsetDoc]
    kernels: list[TraceStreamDoc]       # per device and stream
    idle_gaps: list[TraceGapDoc]        # the longest gaps, with the host activity across each
    split: list[TracePhaseDoc]          # annotation phases (the `phases` JSON key)
    trace: TraceInfoDoc
    findings: list[Diagnosis]
    phases: pd.DataFrame                # PHASE_SCHEMA
    counters: pd.DataFrame              # TRACE_COUNTER_SCHEMA
    gaps: pd.DataFrame                  # every gap (trace_gaps.GAP_COLUMNS), trace microseconds
    options: TraceOptionsDoc
    top_kernels: list[TopKernelDoc] = field(default_factory=list)  # gpuscope.analysis.evidence.trace.top_kernels
    rule_input: TraceRuleInput | None = None  # what the trace rules read (rules.registry runs them)


def _activity(views: list[act.DeviceView], gaps: pd.DataFrame, frames: TraceFrames) -> TraceActivityDoc:
    span = sum(v.span_us for v in views)
    busy = sum(v.busy_us for v in views)  # anything running: kernels, copies, memsets
    dev = cast("list[TraceDeviceDoc]", act.device_rows(views))
    kern = sum(d["kernel_s"] for d in dev) * 1e6
    cop = sum(d["memcpy_s"] for d in dev) * 1e6
    work = sum(d["busy_s"] for d in dev) * 1e6      # kernels, memsets, device-to-device copies
    moved = sum(d["copy_fraction"] * d["span_s"] for d in dev if d["copy_fraction"] is not None) * 1e6
    overlap = sum(d["copy_kernel_overlap_s"] for d in dev) * 1e6
    t0 = min(v.span[0] for v in views)
    t1 = max(v.span[1] for v in views)
    return {
        "source": "trace", "resolution": RESOLUTION,
        # busy = computing (as SM activity is for samples); host/peer copies beside it, never in it
        "busy_fraction": work / span if span > 0 else None,
        "copy_fraction": moved / span if span > 0 else None,
        "idle_fraction": 1.0 - busy / span if span > 0 else None,
        "kernel_fraction": kern / span if span > 0 else None,
        "memcpy_fraction": cop / span if span > 0 else None,
        "copy_kernel_overlap_fraction": overlap / cop if cop > 0 else None,
        "idle_gaps": cast("TraceIdleGapsDoc", tg.idle_summary(gaps)),
        "span_s": (t1 - t0) / 1e6, "device_span_s": span / 1e6,
        "t_start": float(frames.epoch(t0)), "t_end": float(frames.epoch(t1)),
        "epoch": frames.epoch_offset_s is not None,
        "devices": dev,
    }


def _trace_info(frames: TraceFrames, views: list[act.DeviceView]) -> TraceInfoDoc:
    sk = frames.skipped
    return {
        "source": frames.source, "files": frames.files, "ranks": frames.ranks,
        "devices": [{"rank": v.rank, "device": v.device, "name": v.name} for v in views],
        "span_s": (max(v.span[1] for v in views) - min(v.span[0] for v in views)) / 1e6,
        "epoch_offset_s": frames.epoch_offset_s, "events": frames.events,
        "skipped_events": frames.skipped_events,
        "skipped_reasons": {str(k): int(v) for k, v in sk["reason"].value_counts().items()} if len(sk) else {},
        "counts": frames.counts, "truncated": frames.truncated, "reader": frames.reader, "notes": frames.notes,
    }


def analyze_trace(frames: TraceFrames, *, line_rate_gbs: float, line_rate_source: str,
                  top_gaps: int = 10) -> TraceAnalysis:
    """Analyze a read trace (gpuscope.parsers.trace.kineto.TraceFrames). NoDataError when it holds no
    kernel, copy or memset (a trace recorded without ProfilerActivity.CUDA). The figures only: the
    rule engine (gpuscope.analysis.analyze, or rules.registry.run_rules(evidence.collect(trace=...)) for a trace alone)
    reads `rule_input` and fills `findings`."""
    if line_rate_source == "default" and len(frames.devices):  # the trace names its GPU: its usual link

        named = named_line_rate(frames.devices["name"].astype(str).tolist())
        if named is not None:
            line_rate_gbs, line_rate_source = named[0], "gpu_name"
    # each stage's freed arrays returned before the next (see below); the first before the views,
    # on the read's leavings (at 10M kernels 979 MiB resident, 758 after it)
    give_back()
    ordered = act.in_order(frames.gpu)
    if not ordered.index.equals(pd.RangeIndex(len(ordered))):  # (as the views' concatenation numbers its rows)
        ordered = ordered.reset_index(drop=True)
    # the views first without their totals, then the gaps (the one reader of an export's host
    # cover, ~200 MB at 10M kernels, released after them), then the totals' and the line rate's
    # transients without the cover beside them (at 10M: 945 -> 852 MiB at the run's peak)
    views = act.device_views(frames, ordered, totals_now=False)
    if not views:
        raise NoDataError(f"{frames.source}: no kernels, copies or memsets in the trace "
                          "(recorded without ProfilerActivity.CUDA?)")
    masks = {}
    parts = []
    for v in views:
        if v.rank not in masks:
            masks[v.rank] = tg.host_kind_masks(v.host)
        parts.append(tg.device_gaps(v, masks[v.rank]))
    gaps = pd.concat(parts, ignore_index=True)
    frames.summary().release_work()  # (every window its cover is asked of: an export's ~200 MB cover goes)
    give_back()
    act.fill_totals(views)
    give_back()  # (the totals' merges' sorts and masks, freed)
    line_rate_gbs, line_rate_source = act.line_rate_floor(frames.gpu, line_rate_gbs, line_rate_source)
    give_back()
    by_key = {(v.rank, v.device): v for v in views}
    gap_list = tg.gaps_json(gaps, by_key, frames.epoch, top=top_gaps, threads=frames.threads)
    span = sum(v.span_us for v in views)
    rule_input = TraceRuleInput(views=views, gaps=gaps, line_rate_gbs=line_rate_gbs,
                                line_rate_source=line_rate_source, host=frames.host,
                                host_summary=frames.summary(), gap_hosts=gap_list, frame=ordered)
    notes = list(frames.notes)
    if not len(frames.host) and not frames.counts.get("host_unread"):  # (an XLA trace's: there, not read)
        notes.append("no host events (recorded without ProfilerActivity.CPU): gaps cannot be tied to host work")
    trace = _trace_info(frames, views)
    # each stage's freed arrays given back before the next (allocator.give_back): glibc kept them,
    # and the next stage's transient stacked on top (at 10M kernels memcpy_rows left ~230 MB)
    give_back()
    kernels = cast("list[TraceStreamDoc]", act.stream_rows(views))
    give_back()
    trace["notes"] = notes + act.damage_notes(frames.counts, cast("list[dict]", kernels))
    activity = _activity(views, gaps, frames)
    # (the evidence/trace producers return list[dict]: the rows are these TypedDicts' keys,
    # tests/test_doc_typed.py checks every key of real documents)
    memcpy = cast("list[TraceMemcpyDoc]", act.memcpy_rows(frames.gpu, line_rate_gbs))
    give_back()
    memset = cast("list[TraceMemsetDoc]", act.memset_rows(frames.gpu))
    split = cast("list[TracePhaseDoc]", tp.split_table(views, frames.host, span, frames.gpu_annotations,
                                                       host_only_ranges=frames.host_only_ranges,
                                                       summary=frames.summary()))
    phases = tp.phase_frame(views, frames.host, frames.epoch)
    give_back()
    counters = act.counters(views, frames.epoch)
    give_back()
    top = cast("list[TopKernelDoc]", top_kernels(frames.gpu))
    give_back()
    return TraceAnalysis(
        activity=activity, memcpy=memcpy, memset=memset, kernels=kernels,
        idle_gaps=cast("list[TraceGapDoc]", gap_list), split=split, trace=trace, findings=[], phases=phases,
        counters=counters, gaps=gaps, options={"line_rate_gbs": line_rate_gbs, "line_rate_source": line_rate_source},
        top_kernels=top, rule_input=rule_input,
    )

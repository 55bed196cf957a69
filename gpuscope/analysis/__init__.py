"""Analysis facade: Source -> Analysis. Plain functions, no printing.

    src = gpuscope.sources.open_source("runs/2026...-pageable")   # or a log file
    result = analyze(src, AnalyzeOptions(abc_bytes=None, what_if=False))
    result.document()                                            # the `analyze --json` document (v2)

Submodules: split (per-record split of the held time), stats (per-component statistics),
timeline_summary (busy fraction, gaps, overlap), bounds (GPU / CPU floors), evidence (every
source's pieces on one clock), rules/ (the rule engine, its registry and one module per
concern), phases + pcie (NVML samples joined to phases), projection (the pinned what-if of a
source) over whatif/, compare/ (two sources side by side), core + result + names (the types
and names every part and the reports share).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

from gpuscope.analysis.evidence import collect
from gpuscope.analysis.evidence.log import bounds as bounds_mod
from gpuscope.analysis.evidence.log import quantities, split, stats, timeline_summary
from gpuscope.analysis.evidence.log.rule_input import RuleInput
from gpuscope.analysis.evidence.samples import pcie
from gpuscope.analysis.result import Analysis, AnalyzeOptions, Diagnosis, LogPart
from gpuscope.analysis.rules.registry import run_rules

if TYPE_CHECKING:
    import pandas as pd

    from gpuscope.analysis.document import BoundsDoc, LogPcieDoc, SplitTotalsDoc, TimelineDoc
    from gpuscope.analysis.evidence import Evidence
    from gpuscope.analysis.evidence.samples.activity import Activity
    from gpuscope.analysis.trace_analysis import TraceAnalysis
    from gpuscope.parsers.log.parsed import ParsedLog
    from gpuscope.sources import Source

__all__ = ["Analysis", "AnalyzeOptions", "Diagnosis", "analyze"]


def analyze(source: Source, options: AnalyzeOptions | None = None) -> Analysis:
    """Analyze an opened source (gpuscope.sources.open_source or Source.from_parsed): its
    timing lines, its profiler trace, whatever it has.

    The line rate is the source's (resolved once when it was opened): it overrides the
    options' line_rate_* fields. NoDataError when the source has nothing to analyze.

    Each source fills what it has: the timing log (`_log_part`: split, statistics, timeline,
    bounds, the samples joined to its phases), the profiler trace (`_trace_part`) and the NVML
    samples (`_activity`); their pieces make one Evidence (gpuscope.analysis.evidence), and one
    rule engine (gpuscope.analysis.rules: engine, registry) runs every rule over it and ranks
    the findings once (severity, then the share of the time each explains). A benchmark tool's
    table is its own part alone (`_table_analysis`).
    """
    options = dataclasses.replace(options or AnalyzeOptions(), line_rate_gbs=source.line_rate_gbs,
                                  line_rate_source=source.line_rate_source)
    if source.table is not None:
        return _table_analysis(source, options)
    if source.log is None and source.trace is None and source.samples is None:
        source.require_log()  # the one-line reason there is nothing to analyze
    trace = _trace_part(source, options)
    if trace is not None:  # (its copies may raise a default line rate to their floor: every part reads that)
        options = dataclasses.replace(options, line_rate_gbs=trace.options["line_rate_gbs"],
                                      line_rate_source=trace.options["line_rate_source"])
    log = _log_part(source, source.log, options) if source.log is not None else None
    activity = _activity(source, options)
    evidence = _evidence(log, activity, trace)

    diags = run_rules(evidence)
    if trace is not None:  # the trace's own document keeps the findings the engine tagged as the trace's
        trace.findings = [d for d in diags if d.part == "trace"]
    what_if = None
    if options.what_if:
        from gpuscope.analysis.whatif.projection import whatif_doc

        what_if = whatif_doc(source, abc_bytes=options.abc_bytes)
    return Analysis(
        source=str(source.log.source) if source.log is not None else str(source.path),
        kind=source.log.format if source.log is not None else no_log_format(source),
        model_name=source.model.name,
        options=options,
        log=log.part if log is not None else None,
        samples=activity,
        trace=trace,
        findings=diags,
        what_if=what_if,
        model=source.model,
        evidence=evidence,
        samples_read=getattr(source, "samples_read", None),
        malformed_sample_rows=int(source.samples.attrs.get("malformed_rows", 0)) if source.samples is not None else 0,
    )


def _table_analysis(source: Source, options: AnalyzeOptions) -> Analysis:
    """A benchmark tool's table: the table alone (no steps, no split, no evidence, no finding)."""
    table = source.table
    assert table is not None
    return Analysis(source=str(source.path), kind="benchmark_table", model_name=source.model.name, options=options,
                    log=None, samples=None, trace=None, findings=[], model=source.model, table=table)


@dataclass
class _LogWork:
    """The timing log's part of the Analysis and what its rules and evidence read beside it."""

    part: LogPart
    phases: pd.DataFrame | None     # the log's phases the samples were joined to
    rule_input: RuleInput           # what the log rules read


def _log_part(source: Source, parsed: ParsedLog, options: AnalyzeOptions) -> _LogWork:
    """The timing log's figures: the split and its totals, statistics, timeline, bounds, the
    samples joined to its phases (only for a source with timing lines: no figure of an empty log)."""

    model = source.model
    # the parser's columns (names as codes): no million-row DataFrame is built here
    comps = parsed.columns("components")
    recs = parsed.columns("records")
    tl_events = parsed.columns("timeline")
    wide = split.wide_table(comps, recs)
    per_record = split.split_table(recs, wide, model)
    totals = split.split_totals(per_record)
    # measured upload rate: the log's byte counts (quantities) over the tenures' h2d time
    up_bytes, up_key = quantities.tenure_bytes(parsed, per_record["record"])
    totals["upload_gbs"] = (
        quantities.finite_median(quantities.upload_gbs(up_bytes, per_record["h2d_ms"], per_record["n_gpus"]))
        if up_bytes is not None else float("nan")
    )
    comp_stats = stats.stats_table(comps, model, parsed.evaluation_names())
    # a log printing every K-th step: each record's times stand for K steps, unless they cover them
    # (fairseq's running wall clock, Hugging Face's train_runtime: ParsedLog.record_time_covers)
    k = 1 if parsed.record_time_covers else parsed.steps_per_record
    ids = per_record["record"]
    every = model.vocabulary.lock or quantities.counts_every_record(parsed, ids, parsed.step_counter_names())
    tl = timeline_summary.timeline_summary(tl_events, per_record, comps, steps_per_record=k,
                                           workers=quantities.record_workers(parsed, ids), every_record=every)
    bnd = bounds_mod.compute_bounds(per_record, tl, comp_stats, model, tl_events, steps_per_record=k)
    pcie_df, pcie_info, log_phases = _pcie(source, options)
    inp = RuleInput(split=per_record, wide=wide, stats=comp_stats, totals=totals, timeline=tl, bounds=bnd,
                    options=options, model=model, pcie=pcie_df, upload_bytes=up_bytes, upload_bytes_key=up_key)
    n_complete = int(recs["complete"].sum()) if len(recs) else 0
    part = LogPart(format=parsed.format, total_lines=int(parsed.total_lines), timing_lines=int(parsed.timing_lines),
                   records=n_complete, incomplete_records=int(len(recs) - n_complete), stats_table=comp_stats,
                   split_table=per_record, wide_table=wide, split=cast("SplitTotalsDoc", totals),
                   # (timeline_summary and compute_bounds build every key of these by name lists;
                   # tests/test_log_doc_typed.py checks them against the types)
                   timeline=cast("TimelineDoc", tl), bounds=cast("BoundsDoc", bnd), parsed=parsed,
                   pcie=pcie_df, pcie_info=pcie_info)
    return _LogWork(part=part, phases=log_phases, rule_input=inp)


def _trace_part(source: Source, options: AnalyzeOptions) -> TraceAnalysis | None:
    """The profiler trace's figures, when the source has one (its rules run with the others)."""
    if source.trace is None:
        return None
    from gpuscope.analysis.trace_analysis import analyze_trace

    return analyze_trace(source.trace, line_rate_gbs=options.line_rate_gbs,
                         line_rate_source=options.line_rate_source)


def _activity(source: Source, options: AnalyzeOptions) -> Activity | None:
    """GPU activity from the NVML samples, when the source has them."""
    if source.samples is None or not len(source.samples):
        return None
    from gpuscope.analysis.evidence.samples.activity import activity_from_samples

    return activity_from_samples(source.samples, meta=source.meta.raw, line_rate_gbs=options.line_rate_gbs,
                                 line_rate_source=options.line_rate_source)


def _evidence(log: _LogWork | None, activity: Activity | None, trace: TraceAnalysis | None) -> Evidence:
    """Every source's pieces on one clock (gpuscope.analysis.evidence)."""

    if log is None:
        return collect(activity=activity, trace=trace)
    return collect(log=log.rule_input, phases=log.phases, activity=activity, trace=trace,
                   upload_gbs=log.part.split.get("upload_gbs"))


def no_log_format(source: Source) -> str:
    """The `format` of a source without timing lines: what it does have."""
    return "trace" if source.trace is not None else "samples"


def _pcie(source: Source, options: AnalyzeOptions) -> tuple[pd.DataFrame | None, LogPcieDoc | None,
                                                             pd.DataFrame | None]:
    """NVML samples joined to the log's phases: (per-phase frame or None, the JSON `pcie`
    less its phases or None without samples, the phases or None)."""
    samples = source.samples
    if samples is None or not len(samples) or source.log is None:
        return None, None, None
    from gpuscope.analysis.evidence.log import (
        phases,  # (lazy: pandas, which a log without samples never loads)
    )

    ph, basis = phases.build_phases(source.spans, source.log.components, source.log.timeline, source.model)
    info: LogPcieDoc = {"samples": int(len(samples)), "phases_from": basis, "line_rate_gbs": options.line_rate_gbs,
                        "skipped_sample_rows": int(samples.attrs.get("malformed_rows", 0))}
    if basis is None:
        info["note"] = "samples present but no phase times: the log has no time stamps"
        return None, info, None
    return pcie.pcie_by_phase(samples, ph, options.line_rate_gbs), info, ph

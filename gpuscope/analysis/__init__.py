"""Analysis facade: Source -> Analysis. Plain functions, no printing.

    src = gpuscope.sources.open_source("runs/2026...-pageable")   # or a log file
    result = analyze(src, AnalyzeOptions(abc_bytes=None, what_if=False))
    result.to_json()                                             # the `analyze --json` contract

Submodules: split (per-record split of the held time), stats (per-component statistics),
timeline_summary (busy fraction, gaps, overlap), bounds (GPU / CPU floors), rules
(diagnoses), phases + pcie (NVML samples joined to phases), projection (the pinned what-if
of a source), compare + compare_sources (two sources side by side), result (types).
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from gpuscope.analysis.result import Analysis, AnalyzeOptions, Diagnosis

if TYPE_CHECKING:
    from gpuscope.sources import Source

__all__ = ["Analysis", "AnalyzeOptions", "Diagnosis", "analyze"]


def analyze(source: Source, options: AnalyzeOptions | None = None) -> Analysis:
    """Analyze an opened source (gpuscope.sources.open_source or Source.from_parsed): its
    timing lines, its profiler trace, whatever it has.

    The line rate is the source's (resolved once when it was opened): it overrides the
    options' line_rate_* fields. NoDataError when the source has nothing to analyze.
    """
    import pandas as pd

    from gpuscope.analysis import bounds as bounds_mod
    from gpuscope.analysis import quantities, rules, split, stats, timeline_summary
    from gpuscope.parsers.parsed import ParsedLog

    if source.log is None and source.trace is None:
        source.require_log()  # the one-line reason there is nothing to analyze
    parsed = source.log if source.log is not None else ParsedLog.empty(str(source.path), source.kind)
    model = source.model
    options = dataclasses.replace(options or AnalyzeOptions(), line_rate_gbs=source.line_rate_gbs,
                                  line_rate_source=source.line_rate_source)
    comps = parsed.components
    fact = pd.factorize(comps["component"])  # one pass over the names, shared
    wide = split.record_components(comps, parsed.records, fact)
    per_record = split.split_records(comps, parsed.records, model, wide=wide)
    totals = split.split_totals(per_record)
    # measured upload rate: the log's byte counts (quantities) over the tenures' h2d time
    up_bytes, up_key = quantities.tenure_bytes(parsed, per_record["record"].to_numpy())
    totals["upload_gbs"] = (
        quantities.finite_median(quantities.upload_gbs(up_bytes, per_record["h2d_ms"], per_record["n_gpus"]))
        if up_bytes is not None else float("nan")
    )
    comp_stats = stats.component_stats(comps, model, fact)
    tl = timeline_summary.timeline_summary(parsed.timeline, per_record, comps)
    bnd = bounds_mod.compute_bounds(per_record, tl, comp_stats, model, parsed.timeline)
    pcie_df, pcie_info = _pcie(source, options)
    diags = rules.run_rules(
        rules.RuleInput(split=per_record, wide=wide, stats=comp_stats, totals=totals, timeline=tl,
                        bounds=bnd, options=options, model=model, pcie=pcie_df,
                        upload_bytes=up_bytes, upload_bytes_key=up_key)
    )
    trace = None
    if source.trace is not None:
        from gpuscope.analysis.trace_analysis import analyze_trace

        trace = analyze_trace(source.trace, line_rate_gbs=options.line_rate_gbs,
                              line_rate_source=options.line_rate_source)
        diags = rank_diagnoses([*diags, *trace.diagnoses])
    what_if = None
    if options.what_if:
        from gpuscope.analysis.projection import whatif_doc

        what_if = whatif_doc(source, abc_bytes=options.abc_bytes)
    n_complete = int(parsed.records["complete"].sum()) if len(parsed.records) else 0
    return Analysis(
        format=parsed.format,
        source=str(parsed.source),
        total_lines=int(parsed.total_lines),
        timing_lines=int(parsed.timing_lines),
        records=n_complete,
        incomplete_records=int(len(parsed.records) - n_complete),
        skipped=parsed.skipped,
        model_name=model.name,
        options=options,
        components=comp_stats,
        record_split=per_record,
        record_components=wide,
        split=totals,
        timeline=tl,
        bounds=bnd,
        diagnoses=diags,
        pcie=pcie_df,
        pcie_info=pcie_info,
        origin=source,
        values=comps,
        quantities=parsed.quantities,
        what_if=what_if,
        trace=trace,
    )


def rank_diagnoses(diags: list[Diagnosis]) -> list[Diagnosis]:
    """Most important first: by severity, then by the time at stake where a rule measured it."""
    from gpuscope.analysis.result import SEVERITY_ORDER

    def key(d: Diagnosis) -> tuple[int, float]:
        stake = d.evidence.get("time_at_stake_ms") if isinstance(d.evidence, dict) else None
        return SEVERITY_ORDER.get(d.severity, 9), -(stake if isinstance(stake, int | float) else 0.0)

    return sorted(diags, key=key)


def _pcie(source: Source, options: AnalyzeOptions):
    """NVML samples joined to the phases: (per-phase frame or None, the JSON `pcie` extras)."""
    samples = source.samples
    if samples is None or not len(samples) or source.log is None:
        return None, {}
    from gpuscope.analysis import pcie, phases

    ph, basis = phases.build_phases(source.spans, source.require_log().components,
                                    source.require_log().timeline, source.model)
    info = {"samples": int(len(samples)), "phases_from": basis, "line_rate_gbs": options.line_rate_gbs,
            "skipped_sample_rows": int(samples.attrs.get("malformed_rows", 0))}
    if basis is None:
        info["note"] = "samples present but no phase times: the log has no time stamps"
        return None, info
    return pcie.pcie_by_phase(samples, ph, options.line_rate_gbs), info

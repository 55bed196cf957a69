"""Analysis facade: ParsedLog (+ run context) -> Analysis. Plain functions, no printing.

    parsed, ctx = load_source("runs/2026...-pageable")    # or a log file
    result = analyze(parsed, model=None, options=AnalyzeOptions(), context=ctx)
    result.to_json()                                       # the `analyze --json` contract

Submodules: split (per-record split of the held time), stats (per-component statistics),
timeline (busy fraction, gaps, overlap), bounds (GPU / CPU floors), rules (diagnoses),
phases + pcie (NVML samples joined to phases), result (types).
"""

from __future__ import annotations

from typing import Any

from gpuscope.analysis.result import Analysis, AnalyzeOptions, Diagnosis, RunContext
from gpuscope.analysis.source import load_source, open_source

__all__ = ["Analysis", "AnalyzeOptions", "Diagnosis", "RunContext", "analyze", "load_source", "open_source"]


def analyze(
    parsed: Any,
    model: Any = None,
    options: AnalyzeOptions | None = None,
    *,
    context: RunContext | None = None,
    samples: Any = None,
) -> Analysis:
    """Analyze a ParsedLog. `model`: a RoleModel, a path to a TOML model, or None (built-in).

    `samples` (samples.csv schema) overrides the run directory's samples.
    """
    from gpuscope.analysis import bounds as bounds_mod
    from gpuscope.analysis import quantities, rules, split, stats, timeline_summary
    from gpuscope.rolemodel import RoleModel, load_model

    options = options or AnalyzeOptions()
    if not isinstance(model, RoleModel):
        model = load_model(model)

    import pandas as pd

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

    pcie_df, pcie_info = None, {}
    if samples is None and context is not None:
        samples = context.samples
    if samples is not None and len(samples):
        from gpuscope.analysis import pcie, phases

        spans = context.spans if context is not None else None
        ph, basis = phases.build_phases(spans, comps, parsed.timeline, model)
        pcie_info = {"samples": int(len(samples)), "phases_from": basis,
                     "line_rate_gbs": options.line_rate_gbs,
                     "skipped_sample_rows": int(samples.attrs.get("malformed_rows", 0))}
        if basis is not None:
            pcie_df = pcie.pcie_by_phase(samples, ph, options.line_rate_gbs)
        else:
            pcie_info["note"] = "samples present but no phase times: the log has no time stamps"

    diags = rules.run_rules(
        rules.RuleInput(split=per_record, wide=wide, stats=comp_stats, totals=totals, timeline=tl,
                        bounds=bnd, options=options, model=model, pcie=pcie_df,
                        upload_bytes=up_bytes, upload_bytes_key=up_key)
    )
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
        context=context,
        values=comps,
        quantities=getattr(parsed, "quantities", None),
    )

"""Open a log or run directory as one side of a comparison (or a what-if), with what its
run directory adds: mode, upload bytes, workers, synthesis threads, line rate, samples,
phases. No printing.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

from gpuscope.analysis.compare import Side
from gpuscope.analysis.whatif import WhatIf, predict_pinned
from gpuscope.linerate import resolve_line_rate

PAGEABLE_NAMES = ("pageable", "unpinned")


def _workload(meta: dict | None) -> dict:
    w = (meta or {}).get("workload")
    return w if isinstance(w, dict) else {}


def meta_mode(meta: dict | None) -> str | None:
    m = (meta or {}).get("mode") or _workload(meta).get("mode")
    return str(m) if m else None


def meta_bytes(meta: dict | None) -> float | None:
    w = _workload(meta)
    for key in ("h2d_bytes_per_partition", "abc_bytes_per_partition"):
        v = w.get(key)
        if isinstance(v, int | float) and v > 0:
            return float(v)
    return None


def default_label(path: str | os.PathLike[str], meta: dict | None) -> str:
    mode = meta_mode(meta)
    if mode:
        return mode
    p = Path(path)
    return p.stem if p.is_file() else p.name


def load(
    path: str | os.PathLike[str],
    *,
    label: str | None = None,
    fmt: str | None = None,
    model: Any = None,
    abc_bytes: float | None = None,
    line_rate_gbs: float | None = None,
) -> Side:
    """Parse and analyze `path` (log file or run directory) into a comparison side (its
    parsed log, meta, samples, phases and analysis figures)."""
    from gpuscope.analysis import AnalyzeOptions, analyze, open_source
    from gpuscope.analysis.attribution import display_phases
    from gpuscope.parsers import parse_log
    from gpuscope.rolemodel import held_key, model_for, user_model

    user = user_model(model)
    ctx = open_source(path)
    parsed = parse_log(str(ctx.timing_log), fmt, held_key=held_key(user))
    model = model_for(parsed, user)  # the CuZK model for CuZK logs, else roles from the names
    rate, rate_src = resolve_line_rate(line_rate_gbs, ctx.meta)
    nbytes = abc_bytes if abc_bytes else meta_bytes(ctx.meta)
    options = AnalyzeOptions(line_rate_gbs=rate, line_rate_source=rate_src,
                             abc_bytes=int(nbytes) if nbytes else None)
    analysis = analyze(parsed, model, options, context=ctx)
    phases, _basis = display_phases(parsed, ctx, model)
    pcie = analysis.pcie_phases()
    return Side(
        label=label or default_label(path, ctx.meta),
        parsed=parsed,
        source=str(path),
        mode=meta_mode(ctx.meta),
        held_key=model.held,
        bytes_per_partition=nbytes,
        timeline_summary=analysis.timeline,
        samples=ctx.samples,
        phases=phases if len(phases) else None,
        meta=ctx.meta,
        pcie_phases=pcie or None,
        vocabulary=model.vocabulary.to_json(),
    )


def whatif_from(
    parsed: Any,
    meta: dict | None,
    *,
    line_rate_gbs: float | None = None,
    abc_bytes: float | None = None,
    workers: int | None = None,
    synth_threads: int | None = None,
) -> WhatIf:
    """Pinned-upload projection of a parsed log, with its run's meta.json (or None) for
    bytes, workers, synthesis threads and the measured line rate."""
    rate, src = resolve_line_rate(line_rate_gbs, meta)
    w = _workload(meta)
    gpus = w.get("gpus")
    return predict_pinned(
        parsed,
        line_rate_gbs=rate,
        line_rate_source=src,
        bytes_per_partition=abc_bytes or meta_bytes(meta),
        bytes_source="--abc-bytes" if abc_bytes else "run meta.json",
        workers=workers or (int(w["workers_per_gpu"]) if isinstance(w.get("workers_per_gpu"), int) else None),
        synth_threads=synth_threads or (int(w["synth_threads"]) if isinstance(w.get("synth_threads"), int) else None),
        gpus=len(gpus) if isinstance(gpus, list) and gpus else 1,
        budget_slots=meta_budget_slots(w),
    )


def meta_budget_slots(workload: dict) -> int | None:
    """Partitions the run's host budget let be in flight (gpuscope run's meta.json), or None."""
    budget, part = workload.get("host_budget_bytes"), workload.get("partition_host_bytes")
    if isinstance(budget, int) and isinstance(part, int) and part > 0 and budget >= part:
        return budget // part
    return None


def slower_upload_side(a: Side, b: Side) -> str:
    """Which side ('a' or 'b') to project from: the pageable one by mode, else the one with
    the longer median held time."""
    ma, mb = (a.mode or "").lower(), (b.mode or "").lower()
    if ma in PAGEABLE_NAMES and mb not in PAGEABLE_NAMES:
        return "a"
    if mb in PAGEABLE_NAMES and ma not in PAGEABLE_NAMES:
        return "b"
    from gpuscope.analysis.compare import component_values, describe

    ha = describe(component_values(a.parsed, a.held_key, a.held_key))["median_ms"]
    hb = describe(component_values(b.parsed, b.held_key, b.held_key))["median_ms"]
    return "a" if (ha if math.isfinite(ha) else -1) >= (hb if math.isfinite(hb) else -1) else "b"

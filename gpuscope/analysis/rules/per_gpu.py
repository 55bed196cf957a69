"""The sample rules' runner: one check over every GPU's figures, one finding naming the GPUs it
holds on (the worst GPU's numbers).

    @rule("gpu_starved", needs=SAMPLES, ...)
    def gpu_starved_rule(ev): return per_gpu(ev, gpu_starved)   # gpu_starved(f, grid, working, ctx)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from gpuscope.analysis.core import SEVERITY_ORDER, Diagnosis
from gpuscope.analysis.rules.engine import Finding

if TYPE_CHECKING:
    from gpuscope.analysis.evidence import Evidence
    from gpuscope.analysis.evidence.samples.context import SampleContext
    from gpuscope.analysis.evidence.samples.figures import GpuFigures
    from gpuscope.analysis.evidence.samples.samplegrid import Grid

# a check of the family: (one GPU's figures, its grid, its working mask, the context) -> a finding
SampleRule = Callable[["GpuFigures", "Grid", np.ndarray, "SampleContext"], Finding | None]

MIN_READINGS = 5                         # activity readings below this: too short to judge


def per_gpu(ev: Evidence, check: SampleRule, *, static: bool = False) -> list[Finding]:
    """`check` over every GPU of the samples (a GPU of fewer than MIN_READINGS readings is left out,
    unless the check is `static`: judged even on a recording too short for the rest), with the
    sample context (Evidence.sample_context)."""
    assert ev.activity is not None
    ctx = ev.sample_context
    hits: list[tuple[int, Diagnosis, float]] = []
    for ga in ev.activity.gpus:
        if ga.fig.readings < MIN_READINGS and not static:
            continue
        got = check(ga.fig, ga.grid, ga.working, ctx)
        if got is not None:
            hits.append((ga.gpu, *got))
    return [merge(hits, len(ev.activity.gpus))] if hits else []


def merge(hits: list[tuple[int, Diagnosis, float]], n_gpus: int) -> tuple[Diagnosis, float]:
    """One diagnosis for a finding on several GPUs: the worst GPU's, naming the others."""
    hits = sorted(hits, key=lambda h: (SEVERITY_ORDER.get(h[1].severity, 9), -h[2]))
    gpu, d, impact = hits[0]
    if n_gpus == 1:
        return d, impact
    ev = {**d.evidence, "gpu": gpu, "gpus": sorted(h[0] for h in hits),
          "per_gpu": {str(h[0]): {"severity": h[1].severity, "summary": h[1].summary} for h in hits}}
    others = "" if len(hits) == 1 else f" (also on GPU {', '.join(str(h[0]) for h in hits[1:])})"
    return Diagnosis(d.id, d.severity, f"GPU {gpu}: {d.summary}{others}", ev, d.recommendation), impact

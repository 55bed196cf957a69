"""Two opened sources side by side: each side's analysis and figures, the pinned what-if
predicted from the slower side and set against the other side's measurement, and the notes
a reader needs (labels that clash, a CPU-reference side). `compare_sources(...).to_json()`
is the whole `compare --json` document."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from gpuscope.analysis import AnalyzeOptions, analyze
from gpuscope.analysis.compare import (
    DEFAULT_BOOTSTRAP,
    Comparison,
    Side,
    compare,
    component_values,
    describe,
)
from gpuscope.analysis.projection import whatif_for
from gpuscope.analysis.whatif import WhatIfUnavailable

if TYPE_CHECKING:
    from gpuscope.sources import Source


def side_of(source: Source, *, label: str | None = None, abc_bytes: float | None = None) -> Side:
    """Analyze `source` into one side of a comparison."""
    from gpuscope.analysis.attribution import display_phases

    parsed = source.require_log()
    nbytes = abc_bytes or source.meta.bytes_per_partition
    analysis = analyze(source, AnalyzeOptions(abc_bytes=int(nbytes) if nbytes else None))
    phases, _basis = display_phases(source)
    return Side(
        label=label or source.label,
        parsed=parsed,
        source=str(source.path),
        mode=source.meta.mode,
        held_key=source.model.held,
        bytes_per_partition=nbytes,
        timeline_summary=analysis.timeline,
        samples=source.samples,
        phases=phases if len(phases) else None,
        meta=source.meta.raw or None,
        pcie_phases=analysis.pcie_phases() or None,
        diagnoses=[d.to_json() for d in analysis.diagnoses],
    )


def slower_upload_side(a: Side, b: Side) -> str:
    """Which side ('a' or 'b') to project from: the pageable one by mode, else the one with
    the longer median held time."""
    from gpuscope.sources.runmeta import PAGEABLE_NAMES

    ma, mb = (a.mode or "").lower(), (b.mode or "").lower()
    if ma in PAGEABLE_NAMES and mb not in PAGEABLE_NAMES:
        return "a"
    if mb in PAGEABLE_NAMES and ma not in PAGEABLE_NAMES:
        return "b"
    ha = describe(component_values(a.parsed, a.held_key, a.held_key))["median_ms"]
    hb = describe(component_values(b.parsed, b.held_key, b.held_key))["median_ms"]
    return "a" if (ha if math.isfinite(ha) else -1) >= (hb if math.isfinite(hb) else -1) else "b"


def compare_sources(a: Source, b: Source, *, labels: tuple[str | None, str | None] = (None, None),
                    seed: int = 0, n_boot: int = DEFAULT_BOOTSTRAP,
                    abc_bytes: float | None = None) -> tuple[Comparison, tuple[Side, Side]]:
    """Compare B against A. Returns the comparison and the two sides (their phases and
    samples are what the HTML report draws)."""
    sa = side_of(a, label=labels[0], abc_bytes=abc_bytes)
    sb = side_of(b, label=labels[1], abc_bytes=abc_bytes)
    if sa.label == sb.label:
        sa.label, sb.label = f"A:{sa.label}", f"B:{sb.label}"
    src = slower_upload_side(sa, sb)
    whatif, unavailable = None, None
    try:
        whatif = whatif_for(a if src == "a" else b, abc_bytes=abc_bytes)
    except WhatIfUnavailable as e:
        unavailable = str(e)
    result = compare(sa, sb, seed=seed, n_boot=n_boot, whatif=whatif, predicted_for="b" if src == "a" else "a")
    for side, source in ((sa, a), (sb, b)):
        if source.meta.cpu_reference:
            result.notes.append(f"{side.label} ran on the CPU reference backend: host-memory modes have no "
                                "effect there, so its difference from the other side is noise")
    if unavailable:
        result.prediction = {"available": False, "reason": unavailable}
    return result, (sa, sb)

"""Two opened sources side by side: each side's analysis and figures, the pinned what-if
predicted from the slower side and set against the other side's measurement, and the notes
a reader needs (labels that clash, a CPU-reference side). `compare_sources(...).to_json()`
is the whole `compare --json` document."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from gpuscope.analysis import AnalyzeOptions, analyze, no_log_format
from gpuscope.analysis.compare.comparison import Comparison, Side, compare
from gpuscope.analysis.compare.stats import DEFAULT_BOOTSTRAP, describe, held_values
from gpuscope.analysis.timeline_view import timeline_view
from gpuscope.analysis.whatif.inputs import WhatIfUnavailable
from gpuscope.analysis.whatif.projection import whatif_for
from gpuscope.errors import NoDataError
from gpuscope.sources.runmeta import PAGEABLE_NAMES

if TYPE_CHECKING:
    import numpy as np

    from gpuscope.analysis.document import SamplesActivityDoc, TraceActivityDoc
    from gpuscope.analysis.result import Analysis
    from gpuscope.sources import Source


def side_of(source: Source, *, label: str | None = None, abc_bytes: float | None = None,
            pictures: bool = True) -> Side:
    """Analyze `source` (a log, a run, samples alone, a profiler trace) into one side of a
    comparison. Its picture (phases, lanes, shaded intervals) is built when `pictures` is set
    or when its samples need the phases (PCIe per phase); a JSON or console compare of two
    logs does not pay for a picture it never draws."""

    source.not_a_table()  # (a benchmark tool's table: no steps to set beside another's)
    nbytes = abc_bytes or source.meta.bytes_per_partition
    analysis = analyze(source, AnalyzeOptions(abc_bytes=int(nbytes) if nbytes else None))
    phases, noun, intervals, counters = None, "worker", None, None  # (no million-row frame for an empty one)
    if pictures or source.samples is not None:
        try:
            tv = timeline_view(source, trace=analysis.trace)
            phases, noun, intervals, counters = tv.phases, tv.lane_noun, tv.intervals, tv.counters
        except NoDataError:
            pass
    return Side(
        label=label or source.label,
        parsed=source.log,  # None: no timing lines (compare sets no figure of records beside it)
        kind=no_log_format(source) if source.log is None else None,
        source=str(source.path),
        mode=source.meta.mode,
        held_key=source.model.held,
        bytes_per_partition=nbytes,
        timeline_summary=analysis.log.timeline if analysis.log is not None else None,
        samples=source.samples,
        phases=phases if phases is not None and len(phases) else None,
        meta=source.meta.raw or None,
        pcie_phases=(analysis.log.pcie_phases() if analysis.log is not None else None) or None,
        diagnoses=analysis.document()["findings"],
        activity=_activity_of(analysis),
        memcpy=analysis.trace.memcpy if analysis.trace is not None else None,
        steps_ms=_profiler_steps_ms(source),
        trace_samples=_trace_samples(source),
        vocabulary=source.model.vocabulary.to_json(),  # the words its tables use (steps, not tenures)
        lane_noun=noun,
        intervals=intervals,
        counters=counters,
    )


def _trace_samples(source: Source) -> dict[str, np.ndarray] | None:
    """A trace's kernels and recurring ranges (compare.trace_samples; pandas only for a trace)."""
    if source.trace is None:
        return None
    from gpuscope.analysis.compare.trace_samples import trace_samples

    return trace_samples(source.trace)


def _profiler_steps_ms(source: Source) -> np.ndarray | None:
    """Durations of a profiler trace's steps (its ProfilerStep#N ranges), or None."""
    if source.trace is None:
        return None
    h = source.trace.host
    names = h["name"].astype(str)
    steps = h[(h["cat"].astype(str) == "user_annotation") & names.str.startswith("ProfilerStep#")]
    return steps["dur_us"].to_numpy(dtype=float) / 1000.0 if len(steps) else None


def _activity_of(analysis: Analysis) -> TraceActivityDoc | SamplesActivityDoc | None:
    """The side's GPU activity, as its document gives it: the profiler trace's (exact) if it has
    one, else its samples'."""
    doc = analysis.document()
    if doc["trace"] is not None:
        return doc["trace"]["activity"]
    return doc["samples"]["activity"] if doc["samples"] is not None else None


def slower_upload_side(a: Side, b: Side) -> str:
    """Which side ('a' or 'b') to project from: the pageable one by mode, else the one with
    the longer median held time."""

    ma, mb = (a.mode or "").lower(), (b.mode or "").lower()
    if ma in PAGEABLE_NAMES and mb not in PAGEABLE_NAMES:
        return "a"
    if mb in PAGEABLE_NAMES and ma not in PAGEABLE_NAMES:
        return "b"
    ha = describe(held_values(a))["median_ms"]
    hb = describe(held_values(b))["median_ms"]
    return "a" if (ha if math.isfinite(ha) else -1) >= (hb if math.isfinite(hb) else -1) else "b"


def compare_sources(a: Source, b: Source, *, labels: tuple[str | None, str | None] = (None, None),
                    seed: int = 0, n_boot: int = DEFAULT_BOOTSTRAP,
                    abc_bytes: float | None = None, pictures: bool = True) -> tuple[Comparison, tuple[Side, Side]]:
    """Compare B against A. Returns the comparison and the two sides (their phases and
    samples are what the HTML report draws: `pictures=False` when nothing will draw them)."""
    sa = side_of(a, label=labels[0], abc_bytes=abc_bytes, pictures=pictures)
    sb = side_of(b, label=labels[1], abc_bytes=abc_bytes, pictures=pictures)
    if sa.label == sb.label:
        sa.label, sb.label = f"A:{sa.label}", f"B:{sb.label}"
    src = slower_upload_side(sa, sb)
    whatif, unavailable = None, None
    slow = a if src == "a" else b
    if slow.log is None:
        unavailable = f"{slow.name} has no timing lines to project"
    else:
        try:
            whatif = whatif_for(slow, abc_bytes=abc_bytes)
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

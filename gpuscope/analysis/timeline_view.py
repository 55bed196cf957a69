"""What `plot`, `export` and the HTML reports draw for a source: its phase intervals, its
NVML samples, where the phases came from, and an optional time window."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from gpuscope.errors import NoDataError, UsageError

if TYPE_CHECKING:
    import pandas as pd

    from gpuscope.sources import Source

NO_PHASES = ("nothing to draw: the input has no time stamps and no samples "
             "(need timestamped timing lines, TIMELINE events with stamped lines, a run's spans.csv, "
             "NVML samples or a profiler trace)")


@dataclass(frozen=True)
class TimelineView:
    phases: pd.DataFrame             # gpuscope.schemas.PHASE_SCHEMA (may be empty: samples alone)
    samples: pd.DataFrame | None     # gpuscope.schemas.SAMPLE_SCHEMA
    basis: str | None                # where the phases came from
    line_rate_gbs: float | None      # the run's measured line rate (meta.json), for the RX panel
    records: int | None              # complete records of the log, for titles
    origin: float                    # the first phase start (else the first sample): x counts from here
    view: tuple[float, float] | None = None   # (lo, hi) epoch seconds of a window, else None
    intervals: pd.DataFrame | None = None     # ACTIVITY_INTERVAL_SCHEMA: idle gaps to shade
    counters: pd.DataFrame | None = None      # TRACE_COUNTER_SCHEMA: a trace's busy fraction
    lane_noun: str = "worker"                 # what a lane is: a log's worker, a trace's stream


def timeline_view(source: Source) -> TimelineView:
    """The whole timeline of `source`: the phases of its timing lines (or of its profiler
    trace, one lane per stream), its samples with their idle gaps classed. NoDataError when it
    has nothing on a time axis."""
    from gpuscope.analysis.attribution import display_phases
    from gpuscope.schemas import empty_phases

    phases, basis, counters, noun, n = empty_phases(), None, None, "worker", None
    if source.trace is not None:
        from gpuscope.analysis.trace_analysis import analyze_trace

        ta = analyze_trace(source.trace, line_rate_gbs=source.line_rate_gbs, line_rate_source=source.line_rate_source,
                           rules=False)  # a picture needs no diagnoses
        phases, counters, noun = ta.phases, ta.counters, "stream"
        basis = "profiler trace (kernels, copies and record_function ranges)"
    elif source.log is not None:
        phases, basis = display_phases(source)
        log = source.log
        n = int(log.records["complete"].sum()) if len(log.records) else None
    samples = source.samples
    intervals = _classed(source) if samples is not None else None
    if not len(phases) and samples is None:
        raise NoDataError(NO_PHASES)
    if len(phases):
        origin = float(phases["t_start"].min())
    else:
        assert samples is not None  # (neither phases nor samples raised above)
        origin = float(samples["t_wall"].min())
        basis = "NVML samples alone"
    return TimelineView(phases=phases, samples=samples, basis=basis, line_rate_gbs=source.meta.line_rate_gbs,
                        records=n, origin=origin, intervals=intervals, counters=counters, lane_noun=noun)


def _classed(source: Source) -> pd.DataFrame | None:
    """The samples' classed intervals (computing / transferring / idle with PCIe quiet ...)."""
    from gpuscope.analysis.activity import activity_from_samples

    try:
        act = activity_from_samples(source.samples, meta=source.meta.raw, line_rate_gbs=source.line_rate_gbs,
                                    line_rate_source=source.line_rate_source)
    except ValueError:
        return None
    return act.intervals


def window(tv: TimelineView, start: float | None, end: float | None) -> TimelineView:
    """Keep what overlaps [start, end] seconds after the first phase (the run's time scale stays)."""
    if start is None and end is None:
        return tv
    if start is not None and end is not None and end <= start:
        raise UsageError(f"--end ({end}) must be after --start ({start})")
    lo = tv.origin + (start or 0.0)
    hi = tv.origin + end if end is not None else float("inf")
    phases = tv.phases
    keep = (phases["t_end"] >= lo) & (phases["t_start"] <= hi)
    samples = tv.samples
    if samples is not None and len(samples):
        samples = samples[(samples["t_wall"] >= lo) & (samples["t_wall"] <= hi)]
    if not keep.any() and (samples is None or not len(samples)):
        raise UsageError(f"nothing in the window {start or 0:g}..{end if end is not None else 'end'} s")
    phases = phases[keep]
    if len(phases):
        last = float(phases["t_end"].max())
    else:
        assert samples is not None  # (nothing in the window raised above)
        last = float(samples["t_wall"].max())
    view = (lo, hi if end is not None else last)
    return replace(tv, phases=phases, samples=samples, view=view)

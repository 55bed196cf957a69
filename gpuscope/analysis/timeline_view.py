"""What `plot`, `export` and the HTML reports draw for a source: its phase intervals, its
NVML samples, where the phases came from, and an optional time window."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from gpuscope.errors import NoDataError, UsageError

if TYPE_CHECKING:
    import pandas as pd

    from gpuscope.sources import Source

NO_PHASES = ("no phase times to draw: the input has no time stamps "
             "(need timestamped timing lines, TIMELINE events with stamped lines, or a run's spans.csv)")


@dataclass(frozen=True)
class TimelineView:
    phases: pd.DataFrame             # gpuscope.schemas.PHASE_SCHEMA
    samples: pd.DataFrame | None     # gpuscope.schemas.SAMPLE_SCHEMA
    basis: str | None                # where the phases came from
    line_rate_gbs: float | None      # the run's measured line rate (meta.json), for the RX panel
    records: int | None              # complete records of the log, for titles
    origin: float                    # the first phase start: the x axis counts from here
    view: tuple[float, float] | None = None   # (lo, hi) epoch seconds of a window, else None


def timeline_view(source: Source) -> TimelineView:
    """The whole timeline of `source`; NoDataError when it has no phase times."""
    from gpuscope.analysis.attribution import display_phases

    phases, basis = display_phases(source)
    if not len(phases):
        raise NoDataError(NO_PHASES)
    log = source.require_log()
    n = int(log.records["complete"].sum()) if len(log.records) else None
    return TimelineView(phases=phases, samples=source.samples, basis=basis,
                        line_rate_gbs=source.meta.line_rate_gbs, records=n,
                        origin=float(phases["t_start"].min()))


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
    if not keep.any():
        raise UsageError(f"no phase in the window {start or 0:g}..{end if end is not None else 'end'} s")
    phases = phases[keep]
    samples = tv.samples
    if samples is not None and len(samples):
        samples = samples[(samples["t_wall"] >= lo) & (samples["t_wall"] <= hi)]
    view = (lo, hi if end is not None else float(phases["t_end"].max()))
    return replace(tv, phases=phases, samples=samples, view=view)

"""What `plot`, `export` and the HTML reports draw for a source: its phase intervals, its
NVML samples, where the phases came from, and an optional time window."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from gpuscope.analysis.names import GPU_RANGE_PREFIX, PROFILER_STEP_RE
from gpuscope.analysis.result import TimelineView
from gpuscope.errors import NoDataError, UsageError
from gpuscope.schemas import empty_phases

if TYPE_CHECKING:
    import pandas as pd

    from gpuscope.analysis.evidence.samples.activity import Activity
    from gpuscope.analysis.trace_analysis import TraceAnalysis
    from gpuscope.sources import Source

NO_PHASES = ("nothing to draw: the input has no time stamps and no samples "
             "(need timestamped timing lines, TIMELINE events with stamped lines, a run's spans.csv, "
             "NVML samples or a profiler trace)")


def timeline_view(source: Source, trace: TraceAnalysis | None = None, activity: Activity | None = None,
                  *, classed: bool = True) -> TimelineView:
    """The whole timeline of `source`: the phases of its timing lines (or of its profiler
    trace, one lane per stream), its samples with their idle gaps classed. NoDataError when it
    has nothing on a time axis. `trace`, `activity`: the analysis of the source's trace and of
    its samples when the caller has them already (an `analyze --html`): they are then not
    computed again. `classed`: False when the caller draws no idle gaps (the export): the
    samples' intervals are not computed (TimelineView.intervals None)."""
    from gpuscope.analysis.evidence.log.attribution import display_phases

    phases, basis, counters, noun, n, k, covers = empty_phases(), None, None, "worker", None, 1, False
    if source.trace is not None:
        ta = trace if trace is not None else _trace_analysis(source)
        ranked = len(source.trace.ranks) > 1
        phases = _by_rank(source.trace) if ranked else ta.phases
        phases = _with_gpu_ranges(phases, source.trace, ranked)
        counters, noun = ta.counters, "stream"
        basis = "profiler trace (kernels, copies and record_function ranges)"
    elif source.log is not None:
        phases, basis = display_phases(source)
        noun = "worker" if source.model.vocabulary.cuzk else "record"
        log = source.log
        n = log.complete_records if log.count("records") else None  # (its column: no records frame built)
        k = log.steps_per_record  # a log printing every K-th step (issue 33 class 7): the picture says so
        covers = log.record_time_covers  # (its marks span the K steps)
    samples, clockless = _on_a_time_axis(source.samples, have_phases=bool(len(phases)))
    intervals = (None if samples is None or not classed
                 else activity.intervals if activity is not None else _classed(source))
    if not len(phases) and samples is None:
        raise NoDataError(NO_PHASES)
    if len(phases):
        origin = float(phases["t_start"].min())
    else:
        assert samples is not None  # (neither phases nor samples raised above)
        origin = float(samples["t_wall"].min())
        basis = "NVML samples alone" + (" (no wall-clock time: seconds from the file's first row)"
                                        if clockless else "")
    return TimelineView(phases=phases, samples=samples, basis=basis, line_rate_gbs=source.meta.line_rate_gbs,
                        records=n, origin=origin, intervals=intervals, counters=counters, lane_noun=noun,
                        wall_clock=not clockless, steps_per_record=k, record_covers=covers)


def _trace_analysis(source: Source) -> TraceAnalysis:
    from gpuscope.analysis.trace_analysis import analyze_trace

    assert source.trace is not None
    return analyze_trace(source.trace, line_rate_gbs=source.line_rate_gbs, line_rate_source=source.line_rate_source)


def _with_gpu_ranges(phases: pd.DataFrame, frames, ranked: bool) -> pd.DataFrame:
    """The phases and a trace's record_function ranges as they ran on the GPU (its
    gpu_user_annotation spans: worker = their stream, phase GPU_RANGE_PREFIX + the name), drawn
    on a thin row under their stream; the profiler's own step ranges left out (the CPU lane
    has them)."""
    import pandas as pd

    g = frames.gpu_annotations
    if g is None or not len(g):
        return phases
    names = g["name"].astype(str)
    g = g[~names.str.match(PROFILER_STEP_RE.pattern)]
    if not len(g):
        return phases
    s = g["ts_us"].to_numpy(dtype="float64")
    rows = pd.DataFrame({"worker": g["stream"].to_numpy(dtype="int64"), "gpu": g["device"].to_numpy(dtype="int64"),
                         "partition": -1, "phase": (GPU_RANGE_PREFIX + g["name"].astype(str)).to_numpy(dtype=object),
                         "t_start": frames.epoch(s), "t_end": frames.epoch(s + g["dur_us"].to_numpy(dtype="float64"))})
    if ranked:
        rows["rank"] = g["rank"].to_numpy(dtype="int64")
    return pd.concat([phases, rows], ignore_index=True)


def _by_rank(frames) -> pd.DataFrame:
    """A trace of several ranks: each rank's phases (its streams' activity, its own
    record_function ranges) with a `rank` column, so every rank gets its own lanes (two ranks on
    one GPU have the same stream ids and would otherwise share lanes)."""
    import pandas as pd

    from gpuscope.analysis.evidence.trace import trace_activity as act
    from gpuscope.analysis.evidence.trace import trace_phases as tp

    views = act.device_views(frames)
    host = frames.host
    parts = []
    for rank in sorted({v.rank for v in views}):
        ph = tp.phase_frame([v for v in views if v.rank == rank], host[host["rank"] == rank], frames.epoch)
        parts.append(ph.assign(rank=rank))
    return pd.concat(parts, ignore_index=True)


def _on_a_time_axis(samples: pd.DataFrame | None, *, have_phases: bool) -> tuple[pd.DataFrame | None, bool]:
    """The samples as drawn (t_wall, epoch s), and whether their times are only the file's own
    clock. A capture without wall-clock times (`nvidia-smi dmon` without `-o DT`) is drawn on
    its t_mono (seconds from its first row); beside phases, which have epoch times, it has no
    place (None)."""
    import numpy as np

    if samples is None or not len(samples):
        return samples, False
    from gpuscope.analysis.evidence.samples.samplegrid import time_basis

    if time_basis(samples) == "t_wall":
        return samples, False
    if have_phases or "t_mono" not in samples or not np.isfinite(samples["t_mono"].to_numpy(float)).any():
        return None, False
    out = samples[np.isfinite(samples["t_mono"].to_numpy(float))].copy()
    out["t_wall"] = out["t_mono"]
    return out, True


def _classed(source: Source) -> pd.DataFrame | None:
    """The samples' classed intervals (computing / transferring / idle with PCIe quiet ...)."""
    from gpuscope.analysis.evidence.samples.activity import activity_from_samples

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
        raise NoDataError(f"nothing to draw in the window {start or 0:g}..{end if end is not None else 'end'} s")
    phases = phases[keep]
    if len(phases):
        last = float(phases["t_end"].max())
    else:
        assert samples is not None  # (nothing in the window raised above)
        last = float(samples["t_wall"].max())
    view = (lo, hi if end is not None else last)
    return replace(tv, phases=phases, samples=samples, view=view)

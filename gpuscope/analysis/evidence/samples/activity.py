"""GPU activity from NVML samples alone: busy and idle time, idle gaps, PCIe, memory, power,
clocks and their clock-event reasons, per GPU. Plain functions over the samples.csv frame.

    act = activity_from_samples(samples, meta=meta, line_rate_gbs=55.5, line_rate_source="meta")
    act.to_json()        # the `activity` object of `analyze --json` (docs/ANALYZE.md)
    act.intervals        # classed intervals (gpu, class, t_start, t_end) for shading a plot
    act.gpus[0].grid     # the per-interval grid (gpuscope.analysis.evidence.samples.samplegrid.Grid)

Figures are over the recording, first to last sample of each GPU. The "active span" runs
from the first sign of GPU work (activity > samplegrid.SM_TRACE, PCIe busy, or beside GPM
utilization.gpu >= UTIL_TRACE) to the last; inside it, "pauses" are stretches of no work at all lasting at least
PAUSE_MIN_S (or PAUSE_MIN_READINGS activity readings, whichever is longer): one-off host
work such as a profiler starting or a checkpoint. "Working" time = the active span minus
its pauses; the rules judge the steady state from it (rules.activity).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Literal, cast

import numpy as np
import pandas as pd

from gpuscope.analysis.core import clean
from gpuscope.analysis.evidence.samples import holes, transfers
from gpuscope.analysis.evidence.samples import samplegrid as sg
from gpuscope.analysis.evidence.samples.device import device_figures
from gpuscope.analysis.evidence.samples.figures import GpuFigures
from gpuscope.arrays import median
from gpuscope.schemas import ACTIVITY_INTERVAL_SCHEMA, empty

if TYPE_CHECKING:
    from gpuscope.analysis.document import (
        ActiveDoc,
        ActiveIdleGapsDoc,
        ClassesDoc,
        GapBucketDoc,
        PipesDoc,
        SamplesActivityDoc,
        SamplesGpuDoc,
        SamplesIdleGapsDoc,
        SamplesPcieDoc,
    )

PAUSE_MIN_S = 1.0
PAUSE_MIN_READINGS = 3
UTIL_TRACE = 0.03  # utilization.gpu beside GPM: a reading this high is a sign of work (1% blips at start-up are not)
GAP_BUCKETS_S = (0.0, 0.1, 0.5, 1.0, 5.0, float("inf"))
#: GPUs analyzed one by one at most (the most rows first); NVML numbers a host's GPUs from 0 and
#: a host holds 16 at most today: more distinct indices are damage or a merge of hosts
MAX_GPUS = 64
MAX_GPUS_ENV = "GPUSCOPE_MAX_GPUS"

@dataclass
class GpuActivity:
    """One GPU's grid, and its figures made from it when first read: a picture shades the classed
    intervals alone (at 50 Hz over a day the figures were most of what drawing cost beyond reading)."""

    gpu: int
    grid: sg.Grid
    meta: dict                          # this GPU's entry of the run's meta (meta.json `gpus`)
    line_rate_gbs: float
    line_rate_source: str

    @cached_property
    def _made(self) -> tuple[SamplesGpuDoc, np.ndarray]:
        with sg.small_pages():  # (the figures' arrays are written once, in order, as the grid's)
            return gpu_figures(self.grid, self.meta, self.line_rate_gbs, self.line_rate_source)

    @property
    def figures(self) -> SamplesGpuDoc:
        """This GPU's part of the `activity` JSON object (NaN where the JSON has null)."""
        return self._made[0]

    @property
    def working(self) -> np.ndarray:
        """bool per grid interval: in the active span, not a pause."""
        return self._made[1]

    @cached_property
    def fig(self) -> GpuFigures:
        """The figures as the rules read them (typed: figures.GpuFigures)."""
        return GpuFigures.of(self.figures)


@dataclass
class Activity:
    gpus: list[GpuActivity]
    line_rate_gbs: float
    line_rate_source: str
    notes: list[str] = field(default_factory=list)

    @cached_property
    def intervals(self) -> pd.DataFrame:
        """ACTIVITY_INTERVAL_SCHEMA: merged runs of one class, every GPU's (made when first asked
        for: a plot shades them, the JSON never reads them)."""
        frames = [sg.merged_intervals(g.grid) for g in self.gpus]
        out = pd.concat(frames, ignore_index=True) if frames else empty(ACTIVITY_INTERVAL_SCHEMA)
        return out.astype({c: t for c, t in ACTIVITY_INTERVAL_SCHEMA.items()})[list(ACTIVITY_INTERVAL_SCHEMA)]

    def gpu(self, index: int) -> GpuActivity | None:
        return next((g for g in self.gpus if g.gpu == index), None)

    def to_json(self) -> SamplesActivityDoc:
        if not self.gpus:
            return clean({"source": None, "resolution_s": None, "busy_fraction": None, "idle_fraction": None,
                          "idle_gaps": {"count": 0, "total_s": 0.0, "longest_s": 0.0}, "wall_s": 0.0,
                          "gpus": [], "notes": self.notes})
        if len(self.gpus) == 1:
            return clean({**self.gpus[0].figures, "gpus": [self.gpus[0].gpu], "notes": self.notes})
        return clean({**_combined([g.figures for g in self.gpus]), "gpus": [g.gpu for g in self.gpus],
                      "per_gpu": {str(g.gpu): g.figures for g in self.gpus}, "notes": self.notes})


def activity_from_samples(samples: pd.DataFrame, *, meta: dict | None, line_rate_gbs: float,
                          line_rate_source: str, span: tuple[float, float] | None = None) -> Activity:
    """Activity of every GPU in `samples` (samples.csv schema: gpuscope, dmon or query-gpu).
    `span` (t0, t1) keeps the rows inside it (e.g. the time the timing log covers)."""
    if not (isinstance(line_rate_gbs, (int, float)) and np.isfinite(line_rate_gbs) and line_rate_gbs > 0):
        raise ValueError(f"line_rate_gbs must be a positive number of GB/s, not {line_rate_gbs!r}")
    notes: list[str] = []
    if samples is None or not len(samples):
        return Activity([], line_rate_gbs, line_rate_source, ["no samples"])
    basis = sg.time_basis(samples)
    if basis == "t_mono":
        notes.append("the samples have no wall-clock time: times are seconds from the file's start")
    if span is not None:
        t = pd.to_numeric(samples[basis], errors="coerce")
        inside = ((t >= span[0]) & (t <= span[1])).to_numpy()
        if not inside.all():
            samples = samples.loc[inside]
    gpus = []
    with sg.small_pages():  # (the grid's arrays are written once, in order)
        for gpu, rows in _per_gpu(samples, notes):
            grid = sg.build_grid(rows, gpu, line_rate_gbs, basis)
            notes += holes.notes(gpu, grid.unknown_time, grid.resolution_s)
            gpus.append(GpuActivity(gpu, grid, _meta_gpu(meta, gpu), line_rate_gbs, line_rate_source))
    return Activity(gpus, line_rate_gbs, line_rate_source, notes)


def max_gpus() -> int:
    """How many GPUs are analyzed one by one (MAX_GPUS, or GPUSCOPE_MAX_GPUS)."""
    try:
        return max(1, int(os.environ.get(MAX_GPUS_ENV, "") or MAX_GPUS))
    except ValueError:
        return MAX_GPUS


def _per_gpu(samples: pd.DataFrame, notes: list[str]) -> Iterator[tuple[int, pd.DataFrame]]:
    """(GPU index, its rows) for each GPU, by index; the frame itself when it holds one GPU (no
    copy). Past max_gpus() distinct GPUs only those with the most rows, and a note says so: a
    file naming a new index on every row costs what its rows cost, not a grid per row."""
    gpu = samples["gpu"].to_numpy()
    if gpu.size and gpu.min() == gpu.max():  # one GPU (no sort of the whole column)
        ids, counts = gpu[:1], np.array([gpu.size])
    else:
        ids, counts = np.unique(gpu, return_counts=True)
    most = max_gpus()
    if ids.size > most:
        keep = np.sort(ids[np.lexsort((ids, -counts))[:most]])
        left = int(counts.sum() - counts[np.isin(ids, keep)].sum())
        notes.append(f"the samples name {ids.size:,} GPUs: the {most} with the most rows are analyzed one by one, "
                     f"the other {ids.size - most:,} ({left:,} rows) are left out of every figure "
                     f"({MAX_GPUS_ENV}=<n> analyzes more)")
        ids = keep
    if ids.size == 1 and counts.size == 1:
        yield int(ids[0]), samples
        return
    order = np.argsort(gpu, kind="stable")
    sorted_gpu = gpu[order]
    for g in ids.tolist():
        a, b = np.searchsorted(sorted_gpu, g, side="left"), np.searchsorted(sorted_gpu, g, side="right")
        yield int(g), samples.iloc[np.sort(order[a:b])]


def _meta_gpu(meta: dict | None, gpu: int) -> dict:
    for g in (meta or {}).get("gpus") or []:
        if isinstance(g, dict) and g.get("index") == gpu:
            return g
    return {}


_wmean = sg.wmean


def _shares(grid: sg.Grid, mask: np.ndarray | None) -> ClassesDoc:
    """Share of `mask`'s time (None: all of it) in each class (keyed by sg.CLASSES: document.ClassName)."""
    dt, codes = grid.dt, grid.codes
    total = float(dt.sum()) if mask is None else sg.masked_sum(dt, mask)
    if not total > 0:
        return cast("ClassesDoc", {c: float("nan") for c in sg.CLASSES})
    held = np.bincount(codes if mask is None else sg.take(codes, mask), minlength=len(sg.CLASSES))
    out = {}
    for c in sg.CLASSES:
        k = sg.CLASS_CODE[c]
        if not held[k]:  # (no interval: the sum of none, 0.0)
            out[c] = 0.0 / total
            continue
        sel = codes == k
        if mask is not None:
            sel &= mask
        out[c] = sg.masked_sum(dt, sel) / total
    return cast("ClassesDoc", out)


def gap_figures(durations: list[float]) -> ActiveIdleGapsDoc:
    """Count, total, longest and distribution of the idle gaps of `durations` (seconds)."""
    d = np.asarray(durations, dtype="float64")
    buckets: list[GapBucketDoc] = []
    for lo, hi in zip(GAP_BUCKETS_S[:-1], GAP_BUCKETS_S[1:], strict=True):
        sel = d[(d >= lo) & (d < hi)]
        buckets.append({"from_s": lo, "to_s": None if np.isinf(hi) else hi, "count": int(sel.size),
                        "total_s": float(sel.sum())})
    return {"count": int(d.size), "total_s": float(d.sum()), "longest_s": float(d.max()) if d.size else 0.0,
            "distribution": {"p50_s": float(median(d)) if d.size else None,
                             "p90_s": float(np.quantile(d, 0.9)) if d.size else None, "buckets": buckets}}


def gap_stats(durations: list[float], leading_s: float = 0.0, trailing_s: float = 0.0) -> SamplesIdleGapsDoc:
    """gap_figures with the idle time before the first work and after the last."""
    g = gap_figures(durations)
    return {"count": g["count"], "total_s": g["total_s"], "longest_s": g["longest_s"],
            "leading_s": leading_s, "trailing_s": trailing_s, "distribution": g["distribution"]}


def _idle_gaps(grid: sg.Grid, mask: np.ndarray) -> list[float]:
    """Durations of the SM-idle runs inside `mask`."""
    a, b = sg.run_bounds(grid.in_classes(sg.SM_IDLE_CLASSES) & mask)
    return sg.segment_sums(grid.dt, a, b).tolist()


def active_span(grid: sg.Grid, line_rate_gbs: float) -> tuple[np.ndarray, list[tuple[int, int]]]:
    """(bool per interval: working = in the active span and not in a pause; the pauses)."""
    trace = grid.activity > sg.SM_TRACE
    if grid.source == "gpm_sm_active":
        trace |= grid.util >= UTIL_TRACE
    trace |= grid.busy_io(line_rate_gbs) == 1.0
    working = np.zeros(grid.n, dtype=bool)
    ends = sg.first_last(trace)
    if ends is None:
        return working, []
    a0, a1 = ends[0], ends[1] + 1
    working[a0:a1] = True
    res = grid.resolution_s if np.isfinite(grid.resolution_s) else 0.0
    pause_min = max(PAUSE_MIN_S, PAUSE_MIN_READINGS * res)
    a, b = sg.run_bounds(~trace & working)
    long_ = sg.segment_sums(grid.dt, a, b) >= pause_min
    pauses = list(zip(a[long_].tolist(), b[long_].tolist(), strict=True))
    working &= ~sg.cover(grid.n, a[long_], b[long_])
    return working, pauses


def gpu_figures(grid: sg.Grid, meta_gpu: dict, line_rate_gbs: float,
                line_rate_source: str) -> tuple[SamplesGpuDoc, np.ndarray]:
    dt = grid.dt
    known = np.isfinite(grid.activity)
    idle = grid.in_classes(sg.SM_IDLE_CLASSES)
    durs = _idle_gaps(grid, np.ones(grid.n, dtype=bool))
    wall = float(grid.t_end[-1] - grid.t_start[0]) if grid.n else 0.0
    known_s = sg.masked_sum(dt, known)
    working, pauses = active_span(grid, line_rate_gbs)
    active = _active_figures(grid, working, pauses, line_rate_gbs)
    # before the first sign of work / after the last (the whole recording when there is none)
    lead = float(active["t_start"] - grid.t_start[0]) if active else wall
    trail = float(grid.t_end[-1] - active["t_end"]) if active else 0.0
    out: SamplesGpuDoc = {
        "source": grid.source,
        "resolution_s": grid.resolution_s,
        "time_basis": grid.time_basis,
        "t_start": float(grid.t_start[0]) if grid.n else None,
        "t_end": float(grid.t_end[-1]) if grid.n else None,
        "wall_s": wall,
        "readings": grid.readings,
        "coverage": known_s / wall if wall > 0 else None,
        "busy_fraction": _wmean(grid.activity, dt),
        "copy_fraction": _copy_fraction(grid, None, line_rate_gbs),
        "idle_fraction": sg.masked_sum(dt, idle) / known_s if known_s > 0 else None,
        "idle_gaps": gap_stats(durs, lead, trail),
        "classes": _shares(grid, None),
        "utilization_busy_fraction": _wmean(grid.util, dt),
        "active": active,
        "pcie": _pcie_figures(grid, working, line_rate_gbs, line_rate_source),
        **device_figures(grid, meta_gpu),
    }
    return out, working


def _copy_fraction(grid: sg.Grid, mask: np.ndarray | None, line_rate_gbs: float) -> float | None:
    """Share of `mask`'s time (None: all of it) with PCIe measured that a copy ran (RX or TX above
    the trickle), beside busy_fraction (computing), never folded into it; None where PCIe was not
    measured."""
    dt = grid.dt
    busy = grid.busy_io(line_rate_gbs)
    measured = ~np.isnan(busy)
    if mask is not None:
        measured &= mask
    m_s = sg.masked_sum(dt, measured)
    if not m_s > 0:
        return None
    measured &= busy == 1.0
    return sg.masked_sum(dt, measured) / m_s


def _pcie_shares(grid: sg.Grid, mask: np.ndarray, line_rate_gbs: float) -> tuple[float | None, float | None]:
    """(share of `mask`'s time with PCIe measured, and of that, quiet: neither direction busy)."""
    dt = grid.dt
    busy = grid.busy_io(line_rate_gbs)
    total, measured = sg.masked_sum(dt, mask), mask & ~np.isnan(busy)
    m_s = sg.masked_sum(dt, measured)
    return (m_s / total if total > 0 else None,
            sg.masked_sum(dt, measured & (busy == 0.0)) / m_s if m_s > 0 else None)


def _active_figures(grid: sg.Grid, working: np.ndarray, pauses: list[tuple[int, int]],
                    line_rate_gbs: float) -> ActiveDoc | None:
    if not working.any() and not pauses:
        return None
    dt = grid.dt
    ends = sg.first_last(working)
    a0 = int(min([ends[0]] + [a for a, _ in pauses])) if ends else pauses[0][0]
    a1 = int(max([ends[1] + 1] + [b for _, b in pauses])) if ends else pauses[-1][1]
    pd_ = sg.segment_sums(dt, np.array([a for a, _ in pauses], dtype=np.int64),
                          np.array([b for _, b in pauses], dtype=np.int64)).tolist()
    longest = int(np.argmax(pd_)) if pd_ else None
    work_s = sg.masked_sum(dt, working)
    known = working & np.isfinite(grid.activity)
    durs = _idle_gaps(grid, working)
    measured, quiet = _pcie_shares(grid, working, line_rate_gbs)
    return {
        "t_start": float(grid.t_start[a0]), "t_end": float(grid.t_end[a1 - 1]),
        "span_s": float(grid.t_end[a1 - 1] - grid.t_start[a0]),
        "working_s": work_s,
        "busy_fraction": _wmean(grid.activity, dt, working),
        "copy_fraction": _copy_fraction(grid, working, line_rate_gbs),
        "utilization_busy_fraction": _wmean(grid.util, dt, working),
        "idle_fraction": (sg.masked_sum(dt, known & grid.in_classes(sg.SM_IDLE_CLASSES)) / sg.masked_sum(dt, known)
                          if known.any() else None),
        "idle_gaps": gap_figures(durs),
        "classes": _shares(grid, working),
        "pcie_measured_share": measured,
        "pcie_quiet_share": quiet,
        # what the units did while the SMs worked (GPM only): tells memory- from compute-bound
        "pipes": (cast("PipesDoc", sg.pipes_while_computing(grid, working)) if grid.source == "gpm_sm_active"
                  else None),
        "pauses": {"count": len(pauses), "total_s": float(sum(pd_)), "longest_s": max(pd_) if pd_ else 0.0,
                   "longest_at_s": (float(grid.t_start[pauses[longest][0]] - grid.t_start[0])
                                    if longest is not None else None)},
    }


def _pcie_figures(grid: sg.Grid, working: np.ndarray, line_rate_gbs: float, line_rate_source: str) -> SamplesPcieDoc:
    return {"source": grid.pcie_source, "resolution_s": grid.pcie_resolution_s,
            "line_rate_gbs": line_rate_gbs, "line_rate_source": line_rate_source,
            "busy_threshold_gbs": sg.PCIE_BUSY_SHARE * line_rate_gbs,
            "near_line_rate_threshold_gbs": sg.NEAR_LINE_SHARE * line_rate_gbs,
            "time_near_line_rate_s": sg.masked_sum(grid.dt, np.fmax(grid.rx, grid.tx)
                                                   >= sg.NEAR_LINE_SHARE * line_rate_gbs),
            "rx": transfers.direction_stats(grid, "rx", line_rate_gbs, within=working),
            "tx": transfers.direction_stats(grid, "tx", line_rate_gbs, within=working)}


def _combined(figs: list[SamplesGpuDoc]) -> SamplesActivityDoc:
    """Top-level figures over several GPUs: mean fractions, gaps pooled (count, total, longest)."""
    def mean(key: Literal["busy_fraction", "idle_fraction"]) -> float | None:
        v = [x for f in figs if (x := f.get(key)) is not None and np.isfinite(x)]
        return float(np.mean(v)) if v else None

    srcs = {f["source"] for f in figs}
    return {"source": srcs.pop() if len(srcs) == 1 else "mixed",
            "resolution_s": max((r for f in figs if (r := f["resolution_s"]) is not None and r == r), default=None),
            "wall_s": max(f["wall_s"] for f in figs),
            "busy_fraction": mean("busy_fraction"), "idle_fraction": mean("idle_fraction"),
            # summed over the GPUs, and said so (GPU-seconds: may exceed the span)
            "idle_gaps": {"count": sum(f["idle_gaps"]["count"] for f in figs),
                          "total_s": sum(f["idle_gaps"]["total_s"] for f in figs),
                          "longest_s": max(f["idle_gaps"]["longest_s"] for f in figs),
                          "summed_over_gpus": len(figs)},
            "pooled": "busy_fraction, idle_fraction: mean over the GPUs; idle_gaps: summed over the GPUs (GPU-seconds); "
                      "each GPU's own figures: per_gpu"}

"""Timeline figures: wall time, GPU busy fraction, idle gaps, synthesis/GPU overlap, per worker.

From TIMELINE events when the log has them (GPU intervals = GPU_START..GPU_END paired per
job, partition and worker; synthesis = SYNTH_START..SYNTH_END per job and partition).
Otherwise, when lines carry timestamps, from the GPU-lock tenures: [end - held, end] with
end = the time stamped on the held line. gpu_busy_fraction = merged busy time /
(last end - first start).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gpuscope.analysis.evidence import intervals as iv
from gpuscope.analysis.evidence.log.table import column, nanmedian, nansum
from gpuscope.arrays import distinct, median

NAN = float("nan")

TIMELINE_KEYS = [
    "source", "wall_s", "gpu_span_s", "gpu_busy_s", "gpu_busy_fraction", "idle_gaps",
    "idle_total_s", "idle_largest_s", "partitions", "synth_s", "synth_gpu_overlap_s",
    "synth_overlap_fraction", "synth_parallelism", "gpu_ms_median", "gpu_compute_fraction", "workers",
    "unpaired_events", "steady_busy_fraction",
]


def empty_timeline() -> dict:
    d: dict[str, Any] = {k: NAN for k in TIMELINE_KEYS}
    d.update(source=None, idle_gaps=0, partitions=0, workers={}, unpaired_events=0,
             synth_parallelism=0)
    return d


def _busy(starts: np.ndarray, ends: np.ndarray, out: dict) -> tuple[np.ndarray, np.ndarray]:
    ms, me = iv.merge(starts, ends)
    if ms.size:
        span = float(me[-1] - ms[0])
        busy = iv.total(ms, me)
        g = iv.gaps(ms, me)
        out.update(
            gpu_span_s=span,
            gpu_busy_s=busy,
            gpu_busy_fraction=busy / span if span > 0 else NAN,
            idle_gaps=int(g.size),
            idle_total_s=float(g.sum()),
            idle_largest_s=float(g.max()) if g.size else 0.0,
        )
    return ms, me


def _workers(worker: np.ndarray, start: np.ndarray, end: np.ndarray, span: float, scale: float) -> dict:
    res: dict[str, dict] = {}
    if not len(worker):
        return res
    for w in distinct(worker):
        sel = worker == w
        ms, me = iv.merge(start[sel] * scale, end[sel] * scale)
        busy = iv.total(ms, me)
        res[str(int(w))] = {
            "intervals": int(sel.sum()),
            "busy_s": busy,
            "busy_fraction": busy / span if span and span > 0 else NAN,
        }
    return res


def _pairs(tl, start: str, end: str, keys: list[str]) -> tuple[dict, int]:
    """TIMELINE start/end pairs (intervals.pair_events on columns): keys, start, end."""
    ev = column(tl, "event")
    srow, erow, unpaired = iv.pair_rows(ev, [column(tl, k) for k in keys], start, end)
    off = column(tl, "offset_ms").astype("float64")
    out = {k: column(tl, k)[srow] for k in keys}
    out["start"], out["end"] = off[srow], off[erow]
    keep = out["end"] >= out["start"]
    return {k: v[keep] for k, v in out.items()}, unpaired + 2 * int((~keep).sum())


def from_timeline_events(tl) -> dict:
    out = empty_timeline()
    out["source"] = "TIMELINE"
    off = column(tl, "offset_ms").astype("float64")
    if off.size:
        out["wall_s"] = float((np.nanmax(off) - np.nanmin(off)) / 1000.0)
    gpu, gpu_unpaired = _pairs(tl, "GPU_START", "GPU_END", ["job_id", "partition", "worker"])
    syn, syn_unpaired = _pairs(tl, "SYNTH_START", "SYNTH_END", ["job_id", "partition"])
    out["unpaired_events"] = int(gpu_unpaired + syn_unpaired)
    gs, ge = _busy(gpu["start"] / 1000.0, gpu["end"] / 1000.0, out)
    out["partitions"] = int(len(gpu["start"]))
    out["workers"] = _workers(gpu["worker"], gpu["start"], gpu["end"], out["gpu_span_s"], 1 / 1000.0)
    out["gpu_ms_median"] = nanmedian(column(tl, "gpu_ms")[column(tl, "event") == "GPU_END"])
    if len(syn["start"]):
        ss, se = iv.merge(syn["start"] / 1000.0, syn["end"] / 1000.0)
        synth = iv.total(ss, se)
        ov = iv.intersection_length((ss, se), (gs, ge))
        out.update(
            synth_s=synth,
            synth_gpu_overlap_s=ov,
            synth_overlap_fraction=ov / synth if synth > 0 else NAN,
            synth_parallelism=iv.max_concurrency(syn["start"], syn["end"]),
        )
    return out


def from_tenures(split, components, steps_per_record: int = 1, workers: np.ndarray | None = None,
                 every_record: bool = False) -> dict:
    """Busy = the tenures' lock-held intervals, when the held lines carry timestamps. A record that
    stands for K steps (a log printing every K-th step, its own counter says K) ends at its stamp
    and covers K steps of its held time: [end - K x held, end] (overlaps merge)."""
    out = empty_timeline()
    ts = column(components, "ts").astype("float64", copy=False) if len(components) else np.zeros(0)
    if not ts.size or np.isnan(ts).all():
        return out
    # (the stamped lines' first and last: nanmin / nanmax, no copy of the stamps)
    ts_min, ts_max = np.nanmin(ts), np.nanmax(ts)
    out["source"] = "tenures"
    out["wall_s"] = float(ts_max - ts_min)
    if len(split):
        end = column(split, "ts_end").astype("float64", copy=False)
        start = column(split, "held_ms").astype("float64", copy=False) * (max(1, steps_per_record) / 1000.0)
        np.subtract(end, start, out=start)  # (end - held / 1000, in one buffer)
        _busy(start, end, out)
        if every_record:  # (else the time between records may be steps left unprinted)
            out["steady_busy_fraction"] = steady_cover(end, end - start)
        if workers is not None and len(workers) == len(end):  # each record's own worker (quantities.record_workers)
            ok = ~np.isnan(end)
            out["workers"] = _workers(workers[ok], start[ok], end[ok], out.get("gpu_span_s", NAN), 1.0)
        out["partitions"] = int(np.count_nonzero(~np.isnan(end)))
        # wall also covers the first tenure's start, which precedes its held line's stamp
        first = np.nanmin(start) if np.any(~np.isnan(start)) else ts_min
        last = np.nanmax(end) if np.any(~np.isnan(end)) else ts_max
        out["wall_s"] = float(max(ts_max, last) - min(ts_min, first))
    return out


ONE_OFF_PAUSE = 4.0  # steady_cover: a time between records over this many times their median is a pause


def steady_cover(end: np.ndarray, length: np.ndarray) -> float:
    """The share of the run the records cover in their steady state: the median record's length over
    the mean time from one record's end to the next's, pauses over ONE_OFF_PAUSE x the median left
    out (at most 1: records of several GPUs or workers overlap). A one-off pause (a profiler
    starting, a checkpoint) moves the span's gpu_busy_fraction, not this; the mean, not the median,
    of the rest, as two workers' records alternate short and long waits. NaN under three stamped
    records."""
    ok = ~np.isnan(end) & ~np.isnan(length)
    if np.count_nonzero(ok) < 3:
        return NAN
    stamps = end[ok]
    if not (stamps[1:] >= stamps[:-1]).all():  # (a log prints its records in time order: one pass, no sort)
        stamps = np.sort(stamps)
    step = np.diff(stamps)
    step = step[step > 0]
    if not step.size:
        return 1.0
    step = step[step <= ONE_OFF_PAUSE * median(step)]
    return float(min(1.0, median(length[ok]) / step.mean()))


def timeline_summary(timeline, split, components, steps_per_record: int = 1,
                     workers: np.ndarray | None = None, every_record: bool = False) -> dict:
    """Timeline figures; gpu_compute_fraction = the split's GPU compute / the GPU span (the Curio
    team's "actual kernel util", beside gpu_busy_fraction's "GPU efficiency"). Arguments:
    DataFrames, gpuscope.schemas.Columns or analysis Tables; `steps_per_record`: the steps one
    record stands for (ParsedLog.steps_per_record), which the records' time counts K times;
    `workers`: the worker each record names (quantities.record_workers), for the tenures' per-worker busy time;
    `every_record`: the log prints every record (a lock's every tenure, a step counter advancing by
    1), without which the time between records says nothing of the steady state (steady_busy_fraction null)."""
    k = 1
    if timeline is not None and len(timeline) and (column(timeline, "event") == "GPU_END").any():
        out = from_timeline_events(timeline)
    else:
        k = max(1, int(steps_per_record))
        out = from_tenures(split, components, k, workers, every_record)
    span = out.get("gpu_span_s", NAN)
    if len(split) and span == span and span > 0:
        out["gpu_compute_fraction"] = min(1.0, k * nansum(column(split, "gpu_compute_ms")) / 1000.0 / span)
    return out

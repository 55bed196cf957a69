"""Bound analysis in the manner of the Curio team's hand calculation.

    GPU floor = median per-partition GPU compute x partitions      (100% GPU, no H2D, no stalls)
    CPU floor = partitions x max(synth / synth parallelism, other CPU work / CPU workers)
                (synthesis threads and the workers' CPU work run at the same time)
    observed  = wall time of the run (or, without timestamps, the summed held time, a lower
                bound on wall time since the lock serialises tenures)

Per-partition GPU compute comes from the split (median gpu_compute_ms of the records) or,
without records, from TIMELINE GPU_END gpu_ms. Synth parallelism is the most synthesis
intervals seen open at once (TIMELINE); CPU workers is the number of GPU workers seen
(each worker's prep runs beside its own GPU work). Where these cannot be inferred, 1 is
assumed and the assumption is stated in `assumptions`.

Outside a GPU lock (a model whose vocabulary is not a lock's: a training loop's steps),
the host-side parts of a record (role cpu_stall: data loading, prep) are CPU work the loop
waits for, so they count in the CPU floor beside the cpu role, one at a time. A floor that
cannot be computed (no component has the gpu_compute role) is NaN, and `assumptions` says
why, rather than a floor of 0 s.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from gpuscope.analysis.evidence.log.table import Table, as_table, column, nanmedian, nansum
from gpuscope.rolemodel import SPLIT_ROLES, RoleModel

NAN = float("nan")


def _median(stats: Table, name: str, stat: str = "median_ms") -> float:
    if stats.has(name) and stats.at(name, "count") > 0:
        return float(stats.at(name, stat))
    return NAN


def _names(stats: Table) -> list[str]:
    return [str(c) for c in stats.index.tolist()]


def _counts_as(model: RoleModel, component: str, role: str) -> bool:
    """The component's time counts in `role` (its own role, or a [contains] remainder's)."""
    if model.role_of(component) == role:
        return True
    rule = model.contains.get(component)
    return rule is not None and rule.remainder_role == role and model.role_of(component) in SPLIT_ROLES


def compute_bounds(
    split, timeline: dict, stats, model: RoleModel, timeline_df=None, steps_per_record: int = 1,
) -> dict:
    """The GPU and CPU floors of the run, the observed time, and which floor binds. Steps:
    the partitions counted, the GPU per partition, the CPU per partition (`_CpuWork`), the
    observed time; `assumptions` says what had to be assumed. `split`, `stats`: analysis
    Tables or DataFrames; `timeline_df`: the TIMELINE events (a DataFrame or
    gpuscope.schemas.Columns) or None."""
    stats = as_table(stats)
    assumptions: list[str] = []
    partitions, part_basis = _partitions(split, timeline, model)
    if steps_per_record > 1 and timeline.get("source") != "TIMELINE":  # each record stands for K steps
        partitions, part_basis = partitions * steps_per_record, (
            f"{part_basis} x {steps_per_record} (each printed line stands for {steps_per_record} steps)")
    gpu_pp, gpu_basis = _gpu_per_partition(split, timeline, stats, model, assumptions)
    gpu_floor = gpu_pp * partitions / 1000.0 if partitions else NAN
    cpu = _cpu_work(timeline, stats, model, timeline_df, assumptions)
    cpu_floor = cpu.per_partition_ms * partitions / 1000.0 if partitions and not math.isnan(cpu.per_partition_ms) else NAN
    observed, obs_basis = _observed(split, timeline, model)
    if steps_per_record > 1 and obs_basis.startswith(HELD_SUM):  # (K steps per record, one printed)
        observed, obs_basis = observed * steps_per_record, (
            f"sum of held time x {steps_per_record} (each printed line stands for {steps_per_record} steps; "
            "no timestamps: an estimate of wall time)")
    if gpu_floor > observed and len(split):  # (NaN compares False)
        gpu_pp = _by_means("GPU", gpu_pp, _nanmean(column(split, "gpu_compute_ms")), assumptions)
        gpu_floor = _not_above_observed("GPU", gpu_pp * partitions / 1000.0, observed, assumptions)
        gpu_pp = gpu_floor * 1000.0 / partitions
    if cpu_floor > observed:
        cpu_m = _cpu_work(timeline, stats, model, timeline_df, [], stat="mean_ms")
        cpu.per_partition_ms = _by_means("CPU", cpu.per_partition_ms, cpu_m.per_partition_ms, assumptions)
        cpu.synth_pp, cpu.work_pp = min(cpu.synth_pp, cpu_m.synth_pp), min(cpu.work_pp, cpu_m.work_pp)
        cpu_floor = _not_above_observed("CPU", cpu.per_partition_ms * partitions / 1000.0, observed, assumptions)
        cpu.per_partition_ms = cpu_floor * 1000.0 / partitions
        cpu.synth_pp, cpu.work_pp = min(cpu.synth_pp, cpu.per_partition_ms), min(cpu.work_pp, cpu.per_partition_ms)
    floors = {"gpu": gpu_floor, "cpu": cpu_floor}
    known = {k: v for k, v in floors.items() if not math.isnan(v)}
    binding = max(known, key=lambda k: known[k]) if known else None
    floor = known[binding] if binding else NAN
    return {
        "partitions": partitions,
        "partitions_basis": part_basis,
        "gpu_per_partition_ms": gpu_pp,
        "gpu_basis": gpu_basis,
        "gpu_floor_s": gpu_floor,
        "synth_ms": cpu.synth_ms,
        "synth_parallelism": cpu.synth_parallelism if not math.isnan(cpu.synth_ms) else None,
        "cpu_other_ms": cpu.other_ms if cpu.names else NAN,
        "cpu_workers": cpu.workers if cpu.names else None,
        "cpu_per_partition_ms": cpu.per_partition_ms,
        "synth_floor_s": cpu.synth_pp * partitions / 1000.0 if partitions else NAN,
        "cpu_work_floor_s": cpu.work_pp * partitions / 1000.0 if partitions else NAN,
        "cpu_floor_s": cpu_floor,
        "observed_s": observed,
        "observed_basis": obs_basis,
        "binding": binding,
        "observed_over_floor": observed / floor if floor and not math.isnan(floor) else NAN,
        "observed_over_gpu_floor": observed / gpu_floor if gpu_floor and not math.isnan(gpu_floor) else NAN,
        "gap_to_floor_s": observed - floor if binding else NAN,
        "assumptions": assumptions,
    }


def _nanmean(x) -> float:
    x = np.asarray(x, dtype="float64")
    x = x[x == x]
    return float(x.mean()) if x.size else NAN


def _by_means(which: str, median_pp: float, mean_pp: float, assumptions: list[str]) -> float:
    """Where median x records exceeds the observed time, the records are bimodal (data 100 ms
    in 51 of 100 steps, 1 ms in the others: the median is 100, the time taken 51 a step):
    the per-record figure is the mean (the part's whole time over the records) where lower.
    A steady log (mean near the median, below the observed) never reaches here."""
    if mean_pp < median_pp:
        assumptions.append(f"the {which} parts' medians x records ({median_pp:.4g} ms each) exceed the time "
                           f"observed (bimodal records): the {which} floor uses their means ({mean_pp:.4g} ms)")
        return mean_pp
    return median_pp


def _not_above_observed(which: str, floor: float, observed: float, assumptions: list[str]) -> float:
    """A floor is never above what was observed (the run took that long, so it could be done
    in that): one still above it (CPU parts outside the held time the observed sums) is the
    observed time, and `assumptions` says so."""
    if not floor > observed:
        return floor
    assumptions.append(f"the {which} floor from the records ({floor:.4g} s) exceeds the observed time "
                       f"({observed:.4g} s): the floor is the observed time (a run cannot beat what it did)")
    return observed


def _partitions(split, timeline: dict, model: RoleModel) -> tuple[int, str]:
    """How many partitions the floors count, and from what."""
    v = model.vocabulary
    tl_parts = int(timeline.get("partitions") or 0)
    if timeline.get("source") == "TIMELINE" and tl_parts:
        return tl_parts, "GPU_START..GPU_END intervals in TIMELINE"
    if v.cuzk:
        return int(len(split)), "complete GPU-lock tenures (one per partition)"
    return int(len(split)), f"complete {v.records}"


def _gpu_per_partition(split, timeline: dict, stats: Table, model: RoleModel,
                       assumptions: list[str]) -> tuple[float, str]:
    """Median GPU compute per partition (ms) and where it comes from."""
    gpu_parts = [c for c in _names(stats) if _counts_as(model, c, "gpu_compute")]
    if len(split) and not gpu_parts:
        assumptions.append(
            f"no part of the {model.vocabulary.records} is GPU compute (no component has the gpu_compute "
            "role; --model FILE.toml can give one): GPU floor unknown")
        return NAN, "no GPU compute figures: no component has the gpu_compute role"
    if len(split):
        return nanmedian(column(split, "gpu_compute_ms")), "median gpu_compute_ms of the split"
    if not math.isnan(timeline.get("gpu_ms_median", NAN)):
        return (float(timeline["gpu_ms_median"]),
                "median gpu_ms of TIMELINE GPU_END (includes uploads: an upper estimate)")
    return NAN, "no GPU compute figures in the log"


@dataclass
class _CpuWork:
    """The CPU side per partition (ms): synthesis over its parallelism, the other CPU work
    (`names`) over the workers; the floor is the slower of the two streams."""

    synth_ms: float
    synth_parallelism: int
    names: list[str]
    other_ms: float
    workers: int
    synth_pp: float
    work_pp: float
    per_partition_ms: float


def _cpu_work(timeline: dict, stats: Table, model: RoleModel, timeline_df,
              assumptions: list[str], stat: str = "median_ms") -> _CpuWork:
    """The CPU side per partition from each part's `stat` (median_ms, or mean_ms where the
    medians exceed the observed time)."""
    v = model.vocabulary
    synth_ms = NAN
    if timeline_df is not None and len(timeline_df):
        synth = column(timeline_df, "synth_ms")[column(timeline_df, "event") == "SYNTH_END"]
        synth_ms = nanmedian(synth) if stat == "median_ms" else _nanmean(synth)
    if math.isnan(synth_ms):
        synth_ms = _median(stats, "synth", stat)
    cpu_names = [c for c in _names(stats) if model.role_of(c) == "cpu" and c != "synth"]
    if not v.lock:  # the loop waits for its host-side parts: CPU work of the record
        cpu_names += [c for c in _names(stats) if model.role_of(c) == "cpu_stall"]
    cpu_other = sum(x for x in (_median(stats, c, stat) for c in cpu_names) if not math.isnan(x))
    p_synth = int(timeline.get("synth_parallelism") or 0)
    workers = len(timeline.get("workers") or {})
    if not math.isnan(synth_ms) and p_synth <= 0 and workers >= 2 and timeline.get("source") != "TIMELINE":
        p_synth = workers
        assumptions.append(f"synthesis parallelism: one per worker the records name ({workers}), each "
                           "synthesising its own partitions")
    if not math.isnan(synth_ms) and p_synth <= 0:
        p_synth = 1
        assumptions.append("synthesis parallelism unknown (no overlapping SYNTH intervals): assumed 1")
    if cpu_names and workers <= 0:
        workers = 1
        if v.lock:
            assumptions.append("number of CPU prep workers unknown (no TIMELINE workers): assumed 1")
        else:
            assumptions.append(
                f"host-side parts ({', '.join(cpu_names)}) run one at a time, as the {v.records} print "
                "them: assumed 1 worker (a loader with more workers lowers this floor)")
    synth_pp = NAN if math.isnan(synth_ms) else synth_ms / p_synth
    prep_pp = cpu_other / workers if cpu_names else NAN
    if math.isnan(synth_pp) and math.isnan(prep_pp):
        cpu_pp = NAN
        assumptions.append("no CPU-side timings in the log: CPU floor unknown")
    else:
        # synthesis threads and the workers' prep threads run concurrently: the slower stream binds
        cpu_pp = max(x for x in (synth_pp, prep_pp) if not math.isnan(x))
        if not (math.isnan(synth_pp) or math.isnan(prep_pp)):
            assumptions.append(
                "synthesis and per-worker CPU work (" + ", ".join(cpu_names) + ") run on separate threads "
                "at the same time: the CPU floor is the slower of the two streams"
            )
        elif math.isnan(synth_pp) and v.lock:
            assumptions.append("no synthesis timings: CPU floor counts only " + ", ".join(cpu_names))
    return _CpuWork(synth_ms=synth_ms, synth_parallelism=p_synth, names=cpu_names, other_ms=cpu_other,
                    workers=workers, synth_pp=synth_pp, work_pp=prep_pp, per_partition_ms=cpu_pp)


HELD_SUM = "sum of held time"


def _observed(split, timeline: dict, model: RoleModel) -> tuple[float, str]:
    """The run's observed time (s) and how it was measured."""
    v = model.vocabulary
    wall = timeline.get("wall_s", NAN)
    if wall is not None and not math.isnan(wall) and wall > 0:
        src = timeline.get("source")
        return float(wall), f"wall time from {v.records if src == 'tenures' else src}"
    held = column(split, "held_ms") if len(split) else None
    if held is not None and (held == held).any():
        return nansum(held) / 1000.0, f"{HELD_SUM} (no timestamps; a lower bound on wall time)"
    if len(split):
        return NAN, "unknown: no time stamps, and the records print no held time"
    return NAN, "unknown"

"""What-if: predict a run with pinned uploads from one measured run or log.

Per partition (GPU-lock tenure) the upload is replaced by `bytes / line_rate`; everything
else the log measured under the lock stays. Then the mutex pipeline is replayed by the
event simulation (gpuscope.analysis.pipeline_sim) with the measured synthesis supply,
prep (barrier) and CPU work, so the prediction includes what the faster upload does to
the barrier (prep has less time to finish) and to the lock queue, and cannot beat the
CPU floor. The same simulation of the *measured* durations checks the model against the
measured run; the throughput prediction is scaled by that check (calibrated).

Pure: DataFrames in (ParsedLog contract of docs/ARCHITECTURE.md), a WhatIf out.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from gpuscope.analysis.pipeline_sim import PartitionTimes, SimResult, simulate
from gpuscope.analysis.quantities import finite_median, tenure_bytes, upload_gbs
from gpuscope.analysis.result import clean
from gpuscope.analysis.split import record_components
from gpuscope.linerate import DEFAULT_LINE_RATE_GBS

# CuZK component names by their place in the tenure (CUZK_FORMATS.md).
EXPLICIT_UPLOAD = ("h2d",)                 # an explicit upload field (gpuscope's own workload prints h2d_ms)
COMBINED_UPLOAD = ("ntt_kernels",)         # upload + NTT kernels (upload-dominated with pageable memory)
GPU_PRE_BARRIER = ("coset_intt_sync", "msm_invoke", "msm", "msm_init", "msm_dtor", "d_b_alloc")
BARRIER = ("barrier_wait",)
GPU_POST_BARRIER = ("batch_add", "tail_msm")
PRE_LOCK_CPU = ("pre_lock_cpu",)
PREP = ("prep_msm",)
POST_LOCK_CPU = ("b_g2_msm",)
SYNTH = ("synth",)


@dataclass
class WhatIf:
    """The prediction and what it rests on. `to_json()` is the --json form."""

    source: str
    partitions: int
    workers: int                           # per GPU
    gpus: int
    synth_threads: int | None
    line_rate_gbs: float
    line_rate_source: str
    budget_slots: int | None               # partitions in flight allowed by the host budget
    bytes_per_partition: float
    bytes_source: str
    upload_field: str                      # "h2d" (explicit) or "ntt_kernels" (upload + NTT)
    measured: dict[str, float | None]
    predicted: dict[str, float | None]
    floors: dict[str, Any]
    model_check: dict[str, float | None]
    per_partition: pd.DataFrame = field(repr=False)
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return clean(
            {
                "source": self.source,
                "partitions": self.partitions,
                "workers": self.workers,
                "gpus": self.gpus,
                "synth_threads": self.synth_threads,
                "budget_slots": self.budget_slots,
                "line_rate_gbs": self.line_rate_gbs,
                "line_rate_source": self.line_rate_source,
                "bytes_per_partition": self.bytes_per_partition,
                "bytes_source": self.bytes_source,
                "upload_field": self.upload_field,
                "measured": self.measured,
                "predicted": self.predicted,
                "floors": self.floors,
                "model_check": self.model_check,
                "notes": list(self.notes),
            }
        )


class WhatIfUnavailable(ValueError):
    """The input lacks what the prediction needs (no tenures, no upload size)."""


def per_record_components(components: pd.DataFrame, records: pd.DataFrame) -> pd.DataFrame:
    """One row per complete tenure, one column per component (ms), plus `held_ms` (and the
    tenure's `ts_start`/`ts_end` when known).

    The component columns are the split's (split.record_components: per-GPU values averaged
    over the tenure's GPUs, each GPU being held for the whole tenure, as ARCHITECTURE.md says).
    """
    wide = record_components(components, records)
    recs = records[records["complete"].astype(bool)].set_index("record")
    rec_ids = wide.index
    wide["held_ms"] = recs["held_ms"].reindex(rec_ids).to_numpy(dtype=float)
    for col in ("ts_start", "ts_end"):
        if col in recs:
            wide[col] = recs[col].reindex(rec_ids).to_numpy(dtype=float)
    return wide


STALL_MS = 5.0  # a barrier wait above this is a stall: prep was not done when the GPU needed it


def stalled_tenures(parsed: Any) -> tuple[int, int]:
    """(tenures whose barrier wait exceeds STALL_MS, complete tenures) of a parsed log."""
    wide = per_record_components(parsed.components, parsed.records)
    return int((_cols_sum(wide, BARRIER) > STALL_MS).sum()), len(wide)


def _cols_sum(wide: pd.DataFrame, names: tuple[str, ...]) -> np.ndarray:
    present = [c for c in names if c in wide.columns]
    if not present:
        return np.zeros(len(wide))
    return wide[present].fillna(0.0).sum(axis=1).to_numpy(dtype=float)


def _aligned(values: np.ndarray, n: int) -> np.ndarray | None:
    """Per-partition values from a side series: in order when the counts match, else the median."""
    values = values[np.isfinite(values)]
    if len(values) == 0:
        return None
    if len(values) == n:
        return values.astype(float)
    return np.full(n, float(np.median(values)))


def _side_values(components: pd.DataFrame, names: tuple[str, ...]) -> np.ndarray:
    rows = components[components["component"].isin(names)].sort_values("line")
    return rows["value_ms"].to_numpy(dtype=float)


def _synth_values(parsed: Any) -> np.ndarray:
    tl = getattr(parsed, "timeline", None)
    if tl is not None and len(tl) and "synth_ms" in tl:
        ends = tl[(tl["event"] == "SYNTH_END") & tl["synth_ms"].notna()].sort_values("line")
        if len(ends):
            return ends["synth_ms"].to_numpy(dtype=float)
    return _side_values(parsed.components, SYNTH)


def infer_synth_threads(timeline: pd.DataFrame | None) -> int | None:
    """Synthesis concurrency from TIMELINE: the most SYNTH_START..SYNTH_END intervals open at once."""
    if timeline is None or not len(timeline):
        return None
    ev = timeline[timeline["event"].isin(["SYNTH_START", "SYNTH_END"])]
    if ev.empty:
        return None
    steps = np.where(ev["event"].to_numpy() == "SYNTH_START", 1, -1)
    order = np.lexsort((steps, ev["offset_ms"].to_numpy(dtype=float)))  # ends first at ties
    peak = int(np.max(np.cumsum(steps[order])))
    return peak if peak >= 1 else None


def infer_workers(parsed: Any) -> int | None:
    seen: set[int] = set()
    for df in (getattr(parsed, "timeline", None), parsed.components):
        if df is not None and len(df) and "worker" in df:
            seen.update(int(w) for w in df["worker"].unique() if w >= 0)
    return len(seen) or None


def bytes_from_log(parsed: Any, record_ids: np.ndarray) -> tuple[np.ndarray | None, str | None]:
    """Upload bytes per tenure of `record_ids` when the log prints them (`h2d_bytes=`, kept
    in ParsedLog.quantities): the sum over the tenure's GPUs, tenures without any filled
    with the median of the others; (None, None) when no tenure has a positive count."""
    per, key = tenure_bytes(parsed, record_ids)
    if per is None:
        return None, None
    ok = np.isfinite(per) & (per > 0)
    if not ok.any():
        return None, None
    return np.where(ok, per, float(np.median(per[ok]))), key


def _tenure_gpus(records: pd.DataFrame, record_ids: np.ndarray) -> np.ndarray:
    """GPUs of each tenure (at least 1), for per-GPU bytes."""
    if "n_gpus" not in records:
        return np.ones(len(record_ids))
    g = records.set_index("record")["n_gpus"].reindex(record_ids).to_numpy(dtype=float)
    return np.where(np.isfinite(g) & (g >= 1), g, 1.0)


def _span_s(start: np.ndarray, end: np.ndarray) -> float:
    ok = np.isfinite(start) & np.isfinite(end)
    if not ok.any():
        return float("nan")
    return float(end[ok].max() - start[ok].min())


def _med(a: np.ndarray) -> float:
    a = np.asarray(a, dtype=float)
    a = a[np.isfinite(a)]
    return float(np.median(a)) if len(a) else float("nan")


def _mean(a: np.ndarray) -> float:
    a = np.asarray(a, dtype=float)
    a = a[np.isfinite(a)]
    return float(a.mean()) if len(a) else float("nan")


def _pct(a: np.ndarray, q: float) -> float:
    a = np.asarray(a, dtype=float)
    a = a[np.isfinite(a)]
    return float(np.percentile(a, q)) if len(a) else float("nan")


def predict_pinned(
    parsed: Any,
    *,
    line_rate_gbs: float = DEFAULT_LINE_RATE_GBS,
    line_rate_source: str = "default",
    bytes_per_partition: float | None = None,
    bytes_source: str = "--abc-bytes",
    workers: int | None = None,
    synth_threads: int | None = None,
    gpus: int = 1,
    budget_slots: int | None = None,
) -> WhatIf:
    """Predict the run with pinned uploads at `line_rate_gbs` (GB/s, 1e9 bytes).

    `parsed` follows the ParsedLog contract (components, records, timeline DataFrames).
    Bytes per partition: the log's h2d_bytes (ParsedLog.quantities, summed over the
    tenure's GPUs) win over `bytes_per_partition` (the caller's --abc-bytes or the run's
    workload config). A tenure's GPUs upload in parallel, each its share of the bytes.
    `budget_slots` (partitions the host-memory budget lets be in flight; a run's meta.json
    says) throttles synthesis in both replays as it did in the run; None: unbounded supply.
    Raises WhatIfUnavailable when there is no complete tenure or no upload size.

    Three steps: the inputs per tenure (`_inputs`), the two replays (`_replay`: the
    measured durations and the pinned ones), the result (`_result`).
    """
    if not (line_rate_gbs > 0 and math.isfinite(line_rate_gbs)):
        raise WhatIfUnavailable(f"line rate must be a positive number of GB/s, got {line_rate_gbs}")
    inp = _inputs(parsed, bytes_per_partition, bytes_source, workers, synth_threads)
    if budget_slots is not None and inp.synth is None:
        budget_slots = None  # the budget throttles synthesis; without synthesis times it has no effect
    replays = _replay(inp, line_rate_gbs, gpus, budget_slots)
    return _result(parsed, inp, replays, line_rate_gbs=line_rate_gbs, line_rate_source=line_rate_source,
                   gpus=gpus, budget_slots=budget_slots)


# -- step 1: the inputs per tenure ---------------------------------------------------------
@dataclass
class _Inputs:
    """What the prediction rests on: per complete tenure (ms), and for the whole input."""

    wide: pd.DataFrame  # per_record_components
    per_tenure_bytes: np.ndarray
    bytes_pp: float
    bytes_src: str
    held: np.ndarray
    upload: np.ndarray  # measured upload (h2d, or ntt_kernels without one)
    upload_field: str
    barrier: np.ndarray  # measured barrier_wait
    gpu_pre: np.ndarray  # GPU work before the barrier, with what the log does not explain
    gpu_post: np.ndarray  # batch_add + tail_msm
    pre: np.ndarray  # CPU work before the lock
    prep: np.ndarray | None
    post: np.ndarray | None
    synth: np.ndarray | None
    workers: int
    synth_threads: int | None
    n_gpus: np.ndarray  # GPUs per tenure (>= 1)
    notes: list[str]

    @property
    def n(self) -> int:
        return len(self.wide)

    def times_with(self, upload_ms: np.ndarray) -> PartitionTimes:
        """The simulation's partitions with this upload; without prep times the measured
        barrier stays in the tenure as a fixed stall."""
        fixed_barrier = self.barrier if self.prep is None else 0.0
        return PartitionTimes(
            upload_ms=upload_ms,
            gpu_pre_ms=self.gpu_pre + fixed_barrier,
            gpu_post_ms=self.gpu_post,
            synth_ms=self.synth,
            prep_ms=self.prep,
            pre_ms=self.pre,
            post_ms=self.post,
        )


def _inputs(parsed: Any, bytes_per_partition: float | None, bytes_source: str,
            workers: int | None, synth_threads: int | None) -> _Inputs:
    notes: list[str] = []
    wide = per_record_components(parsed.components, parsed.records)
    n = len(wide)
    if n == 0:
        raise WhatIfUnavailable("no complete GPU-lock tenure (no mutex_held line) to project from")
    per_tenure_bytes, bytes_pp, bytes_src = _upload_bytes(parsed, wide, bytes_per_partition, bytes_source)
    held = wide["held_ms"].to_numpy(dtype=float)
    upload, ntt_rest, upload_field = _upload_field(wide, notes)
    barrier = _cols_sum(wide, BARRIER)
    gpu_pre = ntt_rest + _cols_sum(wide, GPU_PRE_BARRIER)
    gpu_post = _cols_sum(wide, GPU_POST_BARRIER)
    # What the log does not explain under the lock (bookkeeping, unprinted coset_intt_sync)
    # stays in the tenure, before the barrier.
    other = np.clip(held - upload - gpu_pre - barrier - gpu_post, 0.0, None)
    other = np.where(np.isfinite(other), other, 0.0)
    gpu_pre = gpu_pre + other

    pre = _cols_sum(wide, PRE_LOCK_CPU)
    prep = _aligned(_side_values(parsed.components, PREP), n)
    post = _aligned(_side_values(parsed.components, POST_LOCK_CPU), n)
    synth = _aligned(_synth_values(parsed), n)
    if prep is None:
        # Without prep times, keep the measured barrier as a fixed stall.
        notes.append("no prep_msm times: the measured barrier_wait is kept as it is")
    if synth is None:
        notes.append("no synthesis times in the input: supply is taken as unconstrained (no CPU floor)")
    if workers is None:
        workers = infer_workers(parsed) or 2
    if synth_threads is None and synth is not None:
        synth_threads = infer_synth_threads(getattr(parsed, "timeline", None))
        if synth_threads is None:
            synth_threads = workers
            notes.append(f"synthesis concurrency unknown: {workers} synthesis threads assumed")
    return _Inputs(wide=wide, per_tenure_bytes=per_tenure_bytes, bytes_pp=bytes_pp, bytes_src=bytes_src,
                   held=held, upload=upload, upload_field=upload_field, barrier=barrier,
                   gpu_pre=gpu_pre, gpu_post=gpu_post, pre=pre, prep=prep, post=post, synth=synth,
                   workers=workers, synth_threads=synth_threads,
                   n_gpus=_tenure_gpus(parsed.records, wide.index.to_numpy()), notes=notes)


def _upload_bytes(parsed: Any, wide: pd.DataFrame, bytes_per_partition: float | None,
                  bytes_source: str) -> tuple[np.ndarray, float, str]:
    """(bytes per tenure, bytes per partition, where they come from): the log's wins."""
    logged, logged_key = bytes_from_log(parsed, wide.index.to_numpy())
    if logged is not None:
        return logged, float(np.median(logged)), f"log ({logged_key})"
    if bytes_per_partition is not None and bytes_per_partition > 0:
        return np.full(len(wide), float(bytes_per_partition)), float(bytes_per_partition), bytes_source
    raise WhatIfUnavailable(
        "upload size unknown: the log has no h2d_bytes field; pass --abc-bytes "
        "(bytes of a, b and c per partition, e.g. 1.5GiB)"
    )


def _upload_field(wide: pd.DataFrame, notes: list[str]) -> tuple[np.ndarray, np.ndarray, str]:
    """(measured upload, the NTT kernels' rest kept on the GPU, the field used)."""
    if any(c in wide.columns for c in EXPLICIT_UPLOAD):
        upload = _cols_sum(wide, EXPLICIT_UPLOAD)
        ntt_rest = np.clip(_cols_sum(wide, COMBINED_UPLOAD) - upload, 0.0, None)
        return upload, ntt_rest, "h2d"
    notes.append(
        "no explicit upload field: ntt_kernels (upload + NTT kernels) is taken as the upload; "
        "the NTT kernels' own time is not kept, so the prediction is a lower bound"
    )
    return _cols_sum(wide, COMBINED_UPLOAD), np.zeros(len(wide)), "ntt_kernels"


# -- step 2: the replays --------------------------------------------------------------------
@dataclass
class _Replays:
    """The mutex pipeline replayed with the measured uploads and with the pinned ones."""

    upload_pred: np.ndarray  # ms per tenure at the line rate, a tenure's GPUs in parallel
    meas: SimResult
    pred: SimResult


def _replay(inp: _Inputs, line_rate_gbs: float, gpus: int, budget_slots: int | None) -> _Replays:
    upload_pred = inp.per_tenure_bytes / inp.n_gpus / (line_rate_gbs * 1e9) * 1e3
    sim_opts = {"workers": inp.workers, "synth_threads": inp.synth_threads, "gpus": gpus, "slots": budget_slots}
    sim_meas = simulate(inp.times_with(inp.upload), **sim_opts)
    sim_pred = simulate(inp.times_with(upload_pred), **sim_opts)
    return _Replays(upload_pred=upload_pred, meas=sim_meas, pred=sim_pred)


# -- step 3: the result ---------------------------------------------------------------------
@dataclass
class _Throughput:
    """Partitions per minute: measured (first tenure's start to last one's end), replayed, predicted."""

    meas: float
    busy_meas: float
    sim_meas: float
    sim_pred: float
    pred: float  # the pinned replay scaled by the measured one's error (calibrated)
    model_err: float


def _throughput(inp: _Inputs, rp: _Replays, gpus: int) -> _Throughput:
    wide, n = inp.wide, inp.n
    span_meas_s = _span_s(wide.get("ts_start", pd.Series(np.nan, index=wide.index)).to_numpy(float),
                          wide.get("ts_end", pd.Series(np.nan, index=wide.index)).to_numpy(float))
    tput_meas = n / span_meas_s * 60.0 if span_meas_s > 0 else float("nan")
    busy_meas = float(np.nansum(inp.held) / 1e3 / span_meas_s / gpus) if span_meas_s > 0 else float("nan")
    tput_sim_meas = n / (rp.meas.gpu_span_ms / 1e3) * 60.0 if rp.meas.gpu_span_ms > 0 else float("nan")
    tput_sim_pred = n / (rp.pred.gpu_span_ms / 1e3) * 60.0 if rp.pred.gpu_span_ms > 0 else float("nan")
    if math.isfinite(tput_meas) and tput_sim_meas > 0:
        tput_pred = tput_meas * tput_sim_pred / tput_sim_meas
        model_err = (tput_sim_meas - tput_meas) / tput_meas
    else:
        tput_pred = tput_sim_pred
        model_err = float("nan")
        inp.notes.append("no timestamps: throughput is the simulation's, not calibrated against the run")
    return _Throughput(meas=tput_meas, busy_meas=busy_meas, sim_meas=tput_sim_meas,
                       sim_pred=tput_sim_pred, pred=tput_pred, model_err=model_err)


def _measured(inp: _Inputs, tp: _Throughput) -> dict[str, float | None]:
    held, upload, barrier = inp.held, inp.upload, inp.barrier
    return {
        "held_ms_median": _med(held),
        "held_ms_mean": _mean(held),
        "stalled_tenures": int((barrier > STALL_MS).sum()),
        "upload_ms_median": _med(upload),
        "upload_gbs": finite_median(upload_gbs(inp.per_tenure_bytes, upload, inp.n_gpus)),
        "barrier_ms_median": _med(barrier),
        "throughput_ppm": tp.meas,
        "gpu_busy_fraction": tp.busy_meas,
    }


def _predicted(inp: _Inputs, rp: _Replays, tp: _Throughput, held_pred: np.ndarray,
               barrier_pred: np.ndarray) -> dict[str, float | None]:
    held, sim_pred = inp.held, rp.pred
    return {
        "held_ms_median": _med(held_pred),
        "held_ms_mean": _mean(held_pred),
        "stalled_tenures": int((barrier_pred > STALL_MS).sum()),
        "held_ms_p10": _pct(held_pred, 10),
        "held_ms_p90": _pct(held_pred, 90),
        "upload_ms": _med(rp.upload_pred),
        "barrier_ms_median": _med(barrier_pred),
        "throughput_ppm": tp.pred,
        "throughput_ppm_sim": tp.sim_pred,
        "throughput_speedup": tp.pred / tp.meas if tp.meas > 0 else tp.sim_pred / tp.sim_meas,
        "held_speedup": _med(held) / _med(held_pred) if _med(held_pred) > 0 else float("nan"),
        "gpu_busy_fraction": sim_pred.held_fraction,
        "gpu_compute_fraction": sim_pred.compute_fraction,
        "lock_wait_ms_median": _med(sim_pred.lock_wait_ms),
    }


def _floors(inp: _Inputs, rp: _Replays, held_pred: np.ndarray, gpus: int) -> dict[str, Any]:
    gpu_floor_s = float(held_pred.sum()) / 1e3 / gpus
    synth = inp.synth
    cpu_floor_s = (float(synth.sum()) / (inp.synth_threads or 1) / 1e3) if synth is not None else float("nan")
    return {
        "gpu_floor_s": gpu_floor_s,
        "cpu_floor_s": cpu_floor_s,
        "predicted_makespan_s": rp.pred.makespan_ms / 1e3,
        "binding": ("cpu" if math.isfinite(cpu_floor_s) and cpu_floor_s > gpu_floor_s else "gpu"),
    }


def _model_check(inp: _Inputs, rp: _Replays, tp: _Throughput) -> dict[str, float | None]:
    wide = inp.wide
    return {
        "simulated_throughput_ppm": tp.sim_meas,
        "measured_throughput_ppm": tp.meas,
        "throughput_error": tp.model_err,
        "simulated_lock_wait_ms_median": _med(rp.meas.lock_wait_ms),
        "measured_lock_wait_ms_median": _med(_cols_sum(wide, ("mutex_wait",))) if "mutex_wait" in wide else float("nan"),
    }


def _result(parsed: Any, inp: _Inputs, rp: _Replays, *, line_rate_gbs: float, line_rate_source: str,
            gpus: int, budget_slots: int | None) -> WhatIf:
    held_pred = rp.pred.held_ms
    barrier_pred = rp.pred.barrier_ms if inp.prep is not None else inp.barrier
    tp = _throughput(inp, rp, gpus)
    per_partition = pd.DataFrame(
        {
            "record": inp.wide.index.to_numpy(),
            "held_ms": inp.held,
            "upload_ms": inp.upload,
            "barrier_ms": inp.barrier,
            "held_pred_ms": held_pred,
            "upload_pred_ms": rp.upload_pred,
            "barrier_pred_ms": barrier_pred,
            "lock_wait_pred_ms": rp.pred.lock_wait_ms,
        }
    )
    return WhatIf(
        source=str(getattr(parsed, "source", "")),
        partitions=inp.n,
        workers=int(inp.workers),
        gpus=int(gpus),
        synth_threads=inp.synth_threads,
        budget_slots=budget_slots,
        line_rate_gbs=float(line_rate_gbs),
        line_rate_source=line_rate_source,
        bytes_per_partition=inp.bytes_pp,
        bytes_source=inp.bytes_src,
        upload_field=inp.upload_field,
        measured=_measured(inp, tp),
        predicted=_predicted(inp, rp, tp, held_pred, barrier_pred),
        floors=_floors(inp, rp, held_pred, gpus),
        model_check=_model_check(inp, rp, tp),
        per_partition=per_partition,
        notes=inp.notes,
    )


__all__ = [
    "DEFAULT_LINE_RATE_GBS",
    "SimResult",
    "WhatIf",
    "WhatIfUnavailable",
    "per_record_components",
    "predict_pinned",
    "stalled_tenures",
]

"""What-if: predict a run with pinned uploads from one measured run or log.

Per partition (GPU-lock tenure) the upload is replaced by `bytes / line_rate`; everything
else the log measured under the lock stays. Then the mutex pipeline is replayed by the
event simulation (gpuscope.analysis.whatif.pipeline_sim) with the measured synthesis supply,
prep (barrier) and CPU work, so the prediction includes what the faster upload does to
the barrier (prep has less time to finish) and to the lock queue, and cannot beat the
CPU floor. The same simulation of the *measured* durations checks the model against the
measured run; the throughput prediction is scaled by that check (calibrated).

Pure: a ParsedLog in (read through its columns: no DataFrame is built), a WhatIf out.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from gpuscope.analysis.core import clean
from gpuscope.analysis.evidence.log.quantities import finite_median, upload_gbs
from gpuscope.analysis.evidence.log.table import Table
from gpuscope.analysis.whatif.inputs import (
    STALL_MS,
    WhatIfInputs,
    WhatIfUnavailable,
    cols_sum,
    per_record_components,
    stalled_tenures,
    tenure_inputs,
)
from gpuscope.analysis.whatif.pipeline_sim import SimResult, simulate
from gpuscope.arrays import median
from gpuscope.linerate import DEFAULT_LINE_RATE_GBS

if TYPE_CHECKING:
    from gpuscope.parsers.log.parsed import ParsedLog


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
    per_partition: Table = field(repr=False)  # one row per tenure (`.frame()`: a DataFrame)
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


def _span_s(start: np.ndarray, end: np.ndarray) -> float:
    ok = np.isfinite(start) & np.isfinite(end)
    if not ok.any():
        return float("nan")
    return float(end[ok].max() - start[ok].min())


def _finite(a: np.ndarray) -> np.ndarray:
    a = np.asarray(a, dtype=float)
    return a[np.isfinite(a)]


def _med(a: np.ndarray) -> float:
    a = _finite(a)
    return float(median(a)) if len(a) else float("nan")


def _mean(a: np.ndarray) -> float:
    a = _finite(a)
    return float(a.mean()) if len(a) else float("nan")


def _pct(a: np.ndarray, q: float) -> float:
    a = _finite(a)
    return float(np.percentile(a, q)) if len(a) else float("nan")


def predict_pinned(
    parsed: ParsedLog,
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

    Three steps: the inputs per tenure (`whatif.inputs.tenure_inputs`), the two replays
    (`_replay`: the measured durations and the pinned ones), the result (`_result`).
    """
    if not (line_rate_gbs > 0 and math.isfinite(line_rate_gbs)):
        raise WhatIfUnavailable(f"line rate must be a positive number of GB/s, got {line_rate_gbs}")
    inp = tenure_inputs(parsed, bytes_per_partition, bytes_source, workers, synth_threads)
    if budget_slots is not None and inp.synth is None:
        budget_slots = None  # the budget throttles synthesis; without synthesis times it has no effect
    replays = _replay(inp, line_rate_gbs, gpus, budget_slots)
    return _result(parsed, inp, replays, line_rate_gbs=line_rate_gbs, line_rate_source=line_rate_source,
                   gpus=gpus, budget_slots=budget_slots)


# -- step 2: the replays --------------------------------------------------------------------
@dataclass
class _Replays:
    """The mutex pipeline replayed with the measured uploads and with the pinned ones."""

    upload_pred: np.ndarray  # ms per tenure at the line rate, a tenure's GPUs in parallel
    meas: SimResult
    pred: SimResult


def _replay(inp: WhatIfInputs, line_rate_gbs: float, gpus: int, budget_slots: int | None) -> _Replays:
    upload_pred = inp.per_tenure_bytes / inp.n_gpus / (line_rate_gbs * 1e9) * 1e3

    def replay(upload_ms: np.ndarray) -> SimResult:
        return simulate(inp.times_with(upload_ms), workers=inp.workers, synth_threads=inp.synth_threads,
                        gpus=gpus, slots=budget_slots)

    return _Replays(upload_pred=upload_pred, meas=replay(inp.upload), pred=replay(upload_pred))


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


def _throughput(inp: WhatIfInputs, rp: _Replays, gpus: int) -> _Throughput:
    wide, n = inp.wide, inp.n
    span_meas_s = _span_s(wide["ts_start"], wide["ts_end"])  # (per_record_components: NaN where unstamped)
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


def _measured(inp: WhatIfInputs, tp: _Throughput) -> dict[str, float | None]:
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


def _predicted(inp: WhatIfInputs, rp: _Replays, tp: _Throughput, held_pred: np.ndarray,
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


def _floors(inp: WhatIfInputs, rp: _Replays, held_pred: np.ndarray, gpus: int) -> dict[str, Any]:
    gpu_floor_s = float(held_pred.sum()) / 1e3 / gpus
    synth = inp.synth
    cpu_floor_s = (float(synth.sum()) / (inp.synth_threads or 1) / 1e3) if synth is not None else float("nan")
    return {
        "gpu_floor_s": gpu_floor_s,
        "cpu_floor_s": cpu_floor_s,
        "predicted_makespan_s": rp.pred.makespan_ms / 1e3,
        "binding": ("cpu" if math.isfinite(cpu_floor_s) and cpu_floor_s > gpu_floor_s else "gpu"),
    }


def _model_check(inp: WhatIfInputs, rp: _Replays, tp: _Throughput) -> dict[str, float | None]:
    wide = inp.wide
    return {
        "simulated_throughput_ppm": tp.sim_meas,
        "measured_throughput_ppm": tp.meas,
        "throughput_error": tp.model_err,
        "simulated_lock_wait_ms_median": _med(rp.meas.lock_wait_ms),
        "measured_lock_wait_ms_median": _med(cols_sum(wide, ("mutex_wait",))) if "mutex_wait" in wide else float("nan"),
    }


def _result(parsed: ParsedLog, inp: WhatIfInputs, rp: _Replays, *, line_rate_gbs: float, line_rate_source: str,
            gpus: int, budget_slots: int | None) -> WhatIf:
    held_pred = rp.pred.held_ms
    barrier_pred = rp.pred.barrier_ms if inp.prep is not None else inp.barrier
    tp = _throughput(inp, rp, gpus)
    per_partition = Table(
        {
            "record": inp.wide.index,
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

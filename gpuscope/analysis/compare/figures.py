"""compare's run figures of one side: throughput (complete tenures per minute over the span
from the first tenure's start to the last one's end), the share of that span with the GPU
lock held (the timeline's merged GPU_START..GPU_END fraction when it has one), the upload
rate (the log's bytes over each tenure's upload time, else bytes per partition over the
median upload), SM activity, PCIe RX/TX per phase, and the activity figures a before/after
comparison sets side by side (docs/COMPARE.md).

Pure: a Side in, its typed figures out (compare.document.SideDoc).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, cast

import numpy as np

from gpuscope.analysis.compare.stats import finite
from gpuscope.analysis.evidence import intervals as iv
from gpuscope.analysis.evidence.log.quantities import finite_median, tenure_bytes, upload_gbs
from gpuscope.analysis.evidence.log.split import row_sums
from gpuscope.analysis.whatif.inputs import (
    COMBINED_UPLOAD,
    EXPLICIT_UPLOAD,
    by_record,
    per_record_components,
)
from gpuscope.arrays import median

if TYPE_CHECKING:
    import pandas as pd

    from gpuscope.analysis.compare.document import (
        ActivityFiguresDoc,
        RecordFiguresDoc,
        SideDoc,
        UploadFiguresDoc,
    )
    from gpuscope.analysis.compare.side import Side
    from gpuscope.analysis.document import (
        PciePhaseDoc,
        SamplesActivityDoc,
        TimelineDoc,
        TraceActivityDoc,
    )
    from gpuscope.analysis.evidence.log.table import Table


def merged_length(starts: np.ndarray, ends: np.ndarray) -> float:
    """Total length of the union of intervals."""
    return iv.total(*iv.merge(starts, ends))


def pcie_per_phase(samples: pd.DataFrame | None, phases: pd.DataFrame | None) -> dict[str, PciePhaseDoc]:
    """Median PCIe RX/TX (GB/s) and SM activity of the samples taken inside each phase type.

    A sample belongs to a phase when its t_wall falls inside one of that phase's intervals
    on the same GPU (phases with gpu < 0 match every GPU).
    """
    if samples is None or phases is None or not len(samples) or not len(phases):
        return {}
    out: dict[str, PciePhaseDoc] = {}
    t = samples["t_wall"].to_numpy(dtype=float)
    sg = samples["gpu"].to_numpy() if "gpu" in samples else np.zeros(len(samples), dtype=int)
    for phase, grp in phases.groupby("phase", sort=True):
        mask = np.zeros(len(samples), dtype=bool)
        for gpu, g in grp.groupby("gpu"):
            st = g["t_start"].to_numpy(dtype=float)
            en = g["t_end"].to_numpy(dtype=float)
            order = np.argsort(st)
            st, en = st[order], np.maximum.accumulate(en[order])
            k = np.searchsorted(st, t, side="right") - 1
            inside = (k >= 0) & (t <= en[np.clip(k, 0, None)])
            mask |= inside & ((sg == gpu) | (int(gpu) < 0))
        if not mask.any():
            continue
        sel = samples[mask]
        row: PciePhaseDoc = {"samples": int(mask.sum())}
        if "rx_gbs" in sel:
            row["rx_gbs_median"] = _median(sel["rx_gbs"])
        if "tx_gbs" in sel:
            row["tx_gbs_median"] = _median(sel["tx_gbs"])
        if "sm_active" in sel:
            row["sm_active_median"] = _median(sel["sm_active"])
        out[str(phase)] = row
    return out


def _median(values: pd.Series) -> float:
    v = finite(values)
    return float(median(v)) if len(v) else math.nan


def run_figures(side: Side) -> SideDoc:
    """Throughput, the lock-held share, SM activity, upload rate and per-phase PCIe figures
    for one side (a side without timing lines: its activity alone, no figure of records)."""
    act = activity_figures(side.activity)
    # measured SM activity over the recording: the activity's time-weighted mean where it comes from
    # GPM (the adaptive sampler reads faster while PCIe is busy: a plain mean of its rows leans there)
    busy = act["busy_fraction"] if act is not None else None  # (an activity has one: activity_figures)
    if act is not None and act["source"] == "gpm_sm_active" and busy is not None:
        sm_mean = float(busy)
    else:
        sm = finite(side.samples["sm_active"]) if side.samples is not None and "sm_active" in side.samples else np.zeros(0)
        sm_mean = float(np.mean(sm)) if len(sm) else math.nan
    records, upload = record_figures(side) if side.parsed is not None else no_record_figures(side)
    return {
        "label": side.label,
        "source": side.source or str(side.parsed.source if side.parsed is not None else ""),
        "mode": side.mode,
        **records,
        "sm_active_mean": sm_mean,
        "activity": act,
        "memcpy": side.memcpy,
        "diagnoses": side.diagnoses,
        **upload,
        "pcie_per_phase": side.pcie_phases if side.pcie_phases else pcie_per_phase(side.samples, side.phases),
        "vocabulary": side.vocabulary,
    }


def record_figures(side: Side) -> tuple[RecordFiguresDoc, UploadFiguresDoc]:
    """The figures of a side's timing records: how many, their span and throughput, the
    lock-held share and the upload figures."""
    assert side.parsed is not None
    wide = per_record_components(side.parsed.columns("components"), side.parsed.columns("records"))
    n = len(wide)
    tl = side.timeline_summary
    ts0, ts1 = wide["ts_start"], wide["ts_end"]
    ok = np.isfinite(ts0) & np.isfinite(ts1)
    span_s = float(ts1[ok].max() - ts0[ok].min()) if ok.any() else math.nan
    if not (span_s > 0) and tl is not None and tl["wall_s"]:
        span_s = float(tl["wall_s"])
    busy, busy_method = _lock_held(wide, tl, span_s, ts0[ok], ts1[ok])
    per = int(getattr(side.parsed, "steps_per_record", 1) or 1)
    records: RecordFiguresDoc = {
        "format": side.parsed.format,
        "partitions": n,
        "span_s": span_s,
        # a record that stands for K steps (a log printing every K-th step) counts K
        "throughput_ppm": n * per / span_s * 60.0 if span_s > 0 and n else math.nan,
        "steps_per_record": per,
        # the share of the span in which a worker held the GPU lock: not how busy the SMs were
        "lock_held_fraction": busy,
        "gpu_busy_fraction": busy,  # the same figure under its first name, kept for scripts
        "gpu_busy_method": busy_method,
    }
    return records, upload_figures(side, wide)


def no_record_figures(side: Side) -> tuple[RecordFiguresDoc, UploadFiguresDoc]:
    """A side without timing lines (a trace, samples alone): no record, so no span, throughput,
    lock-held share nor upload time (null: not measured; compare's activity verdict reads
    what the GPU did instead); the bytes per partition the user or the run gave stay named."""
    nbytes = side.bytes_per_partition
    return ({"format": side.kind, "partitions": 0, "span_s": math.nan, "throughput_ppm": math.nan,
             "steps_per_record": 1, "lock_held_fraction": math.nan, "gpu_busy_fraction": math.nan,
             "gpu_busy_method": None},
            {"upload_field": None, "upload_ms_median": math.nan,
             "bytes_per_partition": nbytes, "bytes_source": "--abc-bytes or run meta.json" if nbytes else None,
             "upload_gbs": math.nan})


def _lock_held(wide: Table, tl: TimelineDoc | None, span_s: float, ts0: np.ndarray,
               ts1: np.ndarray) -> tuple[float, str | None]:
    """(share of the span with the GPU busy, how it was measured): the timeline's merged
    GPU_START..GPU_END fraction when it has one, else the tenures' (stamped: `ts0`, `ts1`)."""
    busy = tl["gpu_busy_fraction"] if tl is not None else None
    if busy is not None:
        return float(busy), "timeline"
    if span_s > 0 and len(ts0):
        if len(ts0) == len(wide):
            return merged_length(ts0, ts1) / span_s, "lock_held"
        held = wide["held_ms"]
        return float(np.nansum(held) / 1e3 / span_s), "lock_held"
    return math.nan, None


def upload_figures(side: Side, wide: Table) -> UploadFiguresDoc:
    """The upload field, its median time, the bytes per partition and where they come from, and
    the rate: each tenure's logged bytes over its own upload time (median over tenures) when
    the log prints them, else the side's bytes per partition over the median upload."""
    n = len(wide)
    explicit = [c for c in EXPLICIT_UPLOAD if c in wide.columns]
    up_cols = explicit or [c for c in COMBINED_UPLOAD if c in wide.columns]
    per_upload = row_sums(wide, up_cols, n)
    upload_ms = finite_median(per_upload)
    logged, key = tenure_bytes(side.parsed, wide.index) if side.parsed is not None else (None, None)
    if logged is not None:
        assert side.parsed is not None
        gpus = by_record(side.parsed.columns("records"), "n_gpus", wide.index)
        bytes_pp: float | None = finite_median(logged)
        bytes_src: str | None = f"log ({key})"
        gbs = finite_median(upload_gbs(logged, per_upload, gpus))
    else:
        bytes_pp = side.bytes_per_partition
        bytes_src = "--abc-bytes or run meta.json" if bytes_pp else None
        gbs = bytes_pp / (upload_ms / 1e3) / 1e9 if bytes_pp and upload_ms > 0 else math.nan
    return {
        "upload_field": up_cols[0] if up_cols else None,
        "upload_ms_median": upload_ms,
        "bytes_per_partition": bytes_pp,
        "bytes_source": bytes_src,
        "upload_gbs": gbs,
    }


def activity_figures(act: TraceActivityDoc | SamplesActivityDoc | None) -> ActivityFiguresDoc | None:
    """The few activity figures a before/after comparison sets side by side (a trace's activity or
    the samples', each read by its own keys)."""
    if not act or act.get("busy_fraction") is None:
        return None
    if act.get("source") == "trace":
        return _trace_activity_figures(cast("TraceActivityDoc", act))
    return _samples_activity_figures(cast("SamplesActivityDoc", act))


def _trace_activity_figures(act: TraceActivityDoc) -> ActivityFiguresDoc:
    """A trace's: its span; no working time of its own (the span is it); no PCIe readings."""
    busy = act["busy_fraction"]
    gaps = act["idle_gaps"]
    return {
        "source": act["source"], "span_s": act["span_s"], "busy_fraction": busy, "working_busy_fraction": busy,
        # no compute: no kernel, memset or device copy running (the trace's own idle_fraction counts
        # host copies as work): the samples' meaning of idle
        "idle_fraction": 1.0 - busy if busy is not None else None,
        "copy_fraction": act["copy_fraction"],
        "idle_total_s": gaps["total_s"], "idle_longest_s": gaps["longest_s"],
        "rx_p90_gbs": None, "tx_p90_gbs": None, "time_near_line_rate_s": None,
    }


def _samples_activity_figures(act: SamplesActivityDoc) -> ActivityFiguresDoc:
    """NVML samples': the working time (first to last sign of work, long pauses out) where there was work."""
    active = act.get("active")  # (None: no work: the whole recording's figures)
    gaps = act.get("idle_gaps")
    pcie = act.get("pcie")
    return {
        "source": act.get("source"),
        "span_s": act.get("wall_s"),
        "busy_fraction": act.get("busy_fraction"),
        "working_busy_fraction": active["busy_fraction"] if active else act.get("busy_fraction"),
        # no compute: SM activity under 5%
        "idle_fraction": active["idle_fraction"] if active else act.get("idle_fraction"),
        "copy_fraction": active["copy_fraction"] if active else act.get("copy_fraction"),
        "idle_total_s": gaps["total_s"] if gaps else None,
        "idle_longest_s": gaps["longest_s"] if gaps else None,
        "rx_p90_gbs": pcie["rx"]["p90_gbs"] if pcie else None,
        "tx_p90_gbs": pcie["tx"]["p90_gbs"] if pcie else None,
        "time_near_line_rate_s": pcie["time_near_line_rate_s"] if pcie else None,
    }

"""Step 1 of the what-if (gpuscope.analysis.whatif.predict): what the prediction rests on, per
complete GPU-lock tenure.

The CuZK components sorted by their place in the tenure (upload, GPU work before and after
the barrier, the barrier, CPU work before and after the lock, synthesis), one row per
complete tenure (`per_record_components`, which compare's run figures use too), the upload
bytes (the log's h2d_bytes win over the caller's), and the concurrency the log shows
(workers, synthesis threads). `tenure_inputs` gathers them into a `WhatIfInputs`.

Pure: DataFrames in (ParsedLog contract of docs/ARCHITECTURE.md), arrays out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from gpuscope.analysis.evidence.log.quantities import tenure_bytes
from gpuscope.analysis.evidence.log.split import record_components
from gpuscope.analysis.evidence.log.table import column
from gpuscope.analysis.whatif.pipeline_sim import PartitionTimes

if TYPE_CHECKING:
    from gpuscope.parsers.log.parsed import ParsedLog


class WhatIfUnavailable(ValueError):
    """The input lacks what the prediction needs (no tenures, no upload size)."""


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


def per_record_components(components, records) -> pd.DataFrame:
    """One row per complete tenure, one column per component (ms), plus `held_ms` (and the
    tenure's `ts_start`/`ts_end` when known). `components` / `records`: DataFrames or the
    parser's Columns (ParsedLog.columns: compare's figures of two 1M-line logs build no
    million-row frame of the components).

    The component columns are the split's (split.record_components: per-GPU values averaged
    over the tenure's GPUs, each GPU being held for the whole tenure, as ARCHITECTURE.md says).
    """
    wide = record_components(components, records)
    complete = np.asarray(column(records, "complete"), dtype=bool)
    # (each wide row's complete record: DataFrame.reindex by record id, without the frame)
    at = pd.Index(np.asarray(column(records, "record"))[complete]).get_indexer(wide.index)
    for col in ("held_ms", "ts_start", "ts_end"):
        if col == "held_ms" or col in _names_of(records):
            v = np.asarray(column(records, col), dtype=float)[complete]
            wide[col] = np.where(at >= 0, v[np.maximum(at, 0)] if len(v) else np.nan, np.nan)
    return wide


def _names_of(records) -> list[str]:
    """The column names of a DataFrame or of the parser's Columns (its schema's)."""
    return list(records.schema) if hasattr(records, "schema") else list(records.columns)


STALL_MS = 5.0  # a barrier wait above this is a stall: prep was not done when the GPU needed it


def stalled_tenures(parsed: ParsedLog) -> tuple[int, int]:
    """(tenures whose barrier wait exceeds STALL_MS, complete tenures) of a parsed log."""
    wide = per_record_components(parsed.components, parsed.records)
    return int((cols_sum(wide, BARRIER) > STALL_MS).sum()), len(wide)


def cols_sum(wide: pd.DataFrame, names: tuple[str, ...]) -> np.ndarray:
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


def _synth_values(parsed: ParsedLog) -> np.ndarray:
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


def infer_workers(parsed: ParsedLog) -> int | None:
    seen: set[int] = set()
    for df in (getattr(parsed, "timeline", None), parsed.components):
        if df is not None and len(df) and "worker" in df:
            seen.update(int(w) for w in df["worker"].unique() if w >= 0)
    return len(seen) or None


def bytes_from_log(parsed: ParsedLog, record_ids: np.ndarray) -> tuple[np.ndarray | None, str | None]:
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


@dataclass
class WhatIfInputs:
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


def tenure_inputs(parsed: ParsedLog, bytes_per_partition: float | None, bytes_source: str,
            workers: int | None, synth_threads: int | None) -> WhatIfInputs:
    notes: list[str] = []
    wide = per_record_components(parsed.components, parsed.records)
    n = len(wide)
    if n == 0:
        raise WhatIfUnavailable("no complete GPU-lock tenure (no mutex_held line) to project from")
    per_tenure_bytes, bytes_pp, bytes_src = _upload_bytes(parsed, wide, bytes_per_partition, bytes_source)
    held = wide["held_ms"].to_numpy(dtype=float)
    upload, ntt_rest, upload_field = _upload_field(wide, notes)
    barrier = cols_sum(wide, BARRIER)
    gpu_pre = ntt_rest + cols_sum(wide, GPU_PRE_BARRIER)
    gpu_post = cols_sum(wide, GPU_POST_BARRIER)
    # What the log does not explain under the lock (bookkeeping, unprinted coset_intt_sync)
    # stays in the tenure, before the barrier.
    other = np.clip(held - upload - gpu_pre - barrier - gpu_post, 0.0, None)
    other = np.where(np.isfinite(other), other, 0.0)
    gpu_pre = gpu_pre + other

    pre = cols_sum(wide, PRE_LOCK_CPU)
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
    return WhatIfInputs(wide=wide, per_tenure_bytes=per_tenure_bytes, bytes_pp=bytes_pp, bytes_src=bytes_src,
                   held=held, upload=upload, upload_field=upload_field, barrier=barrier,
                   gpu_pre=gpu_pre, gpu_post=gpu_post, pre=pre, prep=prep, post=post, synth=synth,
                   workers=workers, synth_threads=synth_threads,
                   n_gpus=_tenure_gpus(parsed.records, wide.index.to_numpy()), notes=notes)


def _upload_bytes(parsed: ParsedLog, wide: pd.DataFrame, bytes_per_partition: float | None,
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
        upload = cols_sum(wide, EXPLICIT_UPLOAD)
        ntt_rest = np.clip(cols_sum(wide, COMBINED_UPLOAD) - upload, 0.0, None)
        return upload, ntt_rest, "h2d"
    notes.append(
        "no explicit upload field: ntt_kernels (upload + NTT kernels) is taken as the upload; "
        "the NTT kernels' own time is not kept, so the prediction is a lower bound"
    )
    return cols_sum(wide, COMBINED_UPLOAD), np.zeros(len(wide)), "ntt_kernels"

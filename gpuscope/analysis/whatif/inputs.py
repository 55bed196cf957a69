"""Step 1 of the what-if (gpuscope.analysis.whatif.predict): what the prediction rests on, per
complete GPU-lock tenure.

The CuZK components sorted by their place in the tenure (upload, GPU work before and after
the barrier, the barrier, CPU work before and after the lock, synthesis), one row per
complete tenure (`per_record_components`, which compare's run figures use too), the upload
bytes (the log's h2d_bytes win over the caller's), and the concurrency the log shows
(workers, synthesis threads). `tenure_inputs` gathers them into a `WhatIfInputs`.

Pure: the parser's columns in (ParsedLog.columns; DataFrames of its contract are read back
through them), numpy arrays and Tables out: the what-if of a million-tenure log builds no
DataFrame and imports no pandas.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from gpuscope.analysis.evidence.log.quantities import tenure_bytes
from gpuscope.analysis.evidence.log.split import wide_table
from gpuscope.analysis.evidence.log.table import Table, column
from gpuscope.analysis.whatif.pipeline_sim import PartitionTimes
from gpuscope.arrays import distinct, median
from gpuscope.schemas import TIMELINE_COLUMNS, Columns

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


def per_record_components(components, records) -> Table:
    """One row per complete tenure (index: record id), one column per component (ms), plus
    `held_ms` and the tenure's `ts_start`/`ts_end` (NaN where unknown). `components` /
    `records`: the parser's Columns (ParsedLog.columns) or DataFrames of its contract.

    The component columns are the split's (split.wide_table: per-GPU values averaged over the
    tenure's GPUs, each GPU being held for the whole tenure, as ARCHITECTURE.md says); a log
    with more components than the split keeps columns for has only the kept ones here.
    """
    wide = wide_table(components, records)
    cols = {c: wide[c] for c in wide.columns}
    for col in ("held_ms", "ts_start", "ts_end"):
        cols[col] = by_record(records, col, wide.index, complete_only=True)
    return Table(cols, wide.index, "record")


def by_record(records, name: str, ids: np.ndarray, *, complete_only: bool = False) -> np.ndarray:
    """The records' column `name` (float64) at record ids `ids`, NaN where no record (no
    complete one, with `complete_only`) has the id: a reindex by record id, without a frame."""
    rec = np.asarray(column(records, "record"))
    v = np.asarray(column(records, name), dtype=float)
    if complete_only:
        complete = np.asarray(column(records, "complete"), dtype=bool)
        if not complete.all():
            rec, v = rec[complete], v[complete]
    ids = np.asarray(ids)
    if len(rec) == len(ids) and np.array_equal(rec, ids):
        return v.copy()
    if not len(rec):
        return np.full(len(ids), np.nan)
    order = np.argsort(rec, kind="stable")
    at = np.minimum(np.searchsorted(rec[order], ids), len(rec) - 1)
    hit = rec[order][at] == ids
    return np.where(hit, v[order][at], np.nan)


STALL_MS = 5.0  # a barrier wait above this is a stall: prep was not done when the GPU needed it


def stalled_tenures(parsed: ParsedLog) -> tuple[int, int]:
    """(tenures whose barrier wait exceeds STALL_MS, complete tenures) of a parsed log."""
    wide = per_record_components(parsed.columns("components"), parsed.columns("records"))
    return int((cols_sum(wide, BARRIER) > STALL_MS).sum()), len(wide)


def cols_sum(wide: Table, names: tuple[str, ...]) -> np.ndarray:
    """The row sums of these columns, NaN counted as 0, added left to right (zeros where the
    table has none of them)."""
    present = [c for c in names if c in wide.columns]
    if not present:
        return np.zeros(len(wide))
    total = np.where(np.isnan(wide[present[0]]), 0.0, wide[present[0]])
    for c in present[1:]:
        total = total + np.where(np.isnan(wide[c]), 0.0, wide[c])
    return total.astype(float, copy=False)


def _aligned(values: np.ndarray, n: int) -> np.ndarray | None:
    """Per-partition values from a side series: in order when the counts match, else the median."""
    values = values[np.isfinite(values)]
    if len(values) == 0:
        return None
    if len(values) == n:
        return values.astype(float)
    return np.full(n, float(median(values)))


def _named(cols, name: str, wanted: tuple[str, ...]) -> np.ndarray:
    """Rows whose text column `name` is one of `wanted` (compared as the parser's codes)."""
    codes, cats = cols.codes(name)
    hit = [i for i, c in enumerate(cats) if c in wanted]
    return np.isin(codes, hit) if hit else np.zeros(len(codes), dtype=bool)


def _in_line_order(cols, sel: np.ndarray, name: str) -> np.ndarray:
    """Column `name` (float64) of the rows `sel`, in the order of their line numbers."""
    v = np.asarray(cols[name], dtype=float)[sel]
    line = np.asarray(cols["line"])[sel]
    if len(line) > 1 and not bool((line[1:] >= line[:-1]).all()):
        v = v[np.argsort(line, kind="stable")]
    return v


def _side_values(components, names: tuple[str, ...]) -> np.ndarray:
    return _in_line_order(components, _named(components, "component", names), "value_ms")


def _synth_values(parsed: ParsedLog) -> np.ndarray:
    tl = parsed.columns("timeline")
    if len(tl):
        ends = _named(tl, "event", ("SYNTH_END",)) & ~np.isnan(np.asarray(tl["synth_ms"], dtype=float))
        if ends.any():
            return _in_line_order(tl, ends, "synth_ms")
    return _side_values(parsed.columns("components"), SYNTH)


def infer_synth_threads(timeline) -> int | None:
    """Synthesis concurrency from TIMELINE: the most SYNTH_START..SYNTH_END intervals open at
    once. `timeline`: the parser's Columns or a DataFrame of its contract."""
    if timeline is None or not len(timeline):
        return None
    if not hasattr(timeline, "codes"):

        timeline = Columns.from_frame(timeline, TIMELINE_COLUMNS)
    start = _named(timeline, "event", ("SYNTH_START",))
    sel = start | _named(timeline, "event", ("SYNTH_END",))
    if not sel.any():
        return None
    steps = np.where(start[sel], 1, -1)
    order = np.lexsort((steps, np.asarray(timeline["offset_ms"], dtype=float)[sel]))  # ends first at ties
    peak = int(np.max(np.cumsum(steps[order])))
    return peak if peak >= 1 else None


def infer_workers(parsed: ParsedLog) -> int | None:
    seen: set[int] = set()
    for cols in (parsed.columns("timeline"), parsed.columns("components")):
        if len(cols):
            w = distinct(np.asarray(cols["worker"]))
            seen.update(int(x) for x in w[w >= 0].tolist())
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
    return np.where(ok, per, float(median(per[ok]))), key


def _tenure_gpus(records, record_ids: np.ndarray) -> np.ndarray:
    """GPUs of each tenure (at least 1), for per-GPU bytes."""
    g = by_record(records, "n_gpus", record_ids)
    return np.where(np.isfinite(g) & (g >= 1), g, 1.0)


@dataclass
class WhatIfInputs:
    """What the prediction rests on: per complete tenure (ms), and for the whole input."""

    wide: Table  # per_record_components
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
    wide = per_record_components(parsed.columns("components"), parsed.columns("records"))
    n = len(wide)
    if n == 0:
        raise WhatIfUnavailable("no complete GPU-lock tenure (no mutex_held line) to project from")
    per_tenure_bytes, bytes_pp, bytes_src = _upload_bytes(parsed, wide, bytes_per_partition, bytes_source)
    held = wide["held_ms"]
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
    components = parsed.columns("components")
    prep = _aligned(_side_values(components, PREP), n)
    post = _aligned(_side_values(components, POST_LOCK_CPU), n)
    synth = _aligned(_synth_values(parsed), n)
    if prep is None:
        # Without prep times, keep the measured barrier as a fixed stall.
        notes.append("no prep_msm times: the measured barrier_wait is kept as it is")
    if synth is None:
        notes.append("no synthesis times in the input: supply is taken as unconstrained (no CPU floor)")
    if workers is None:
        workers = infer_workers(parsed) or 2
    if synth_threads is None and synth is not None:
        synth_threads = infer_synth_threads(parsed.columns("timeline"))
        if synth_threads is None:
            synth_threads = workers
            notes.append(f"synthesis concurrency unknown: {workers} synthesis threads assumed")
    return WhatIfInputs(wide=wide, per_tenure_bytes=per_tenure_bytes, bytes_pp=bytes_pp, bytes_src=bytes_src,
                   held=held, upload=upload, upload_field=upload_field, barrier=barrier,
                   gpu_pre=gpu_pre, gpu_post=gpu_post, pre=pre, prep=prep, post=post, synth=synth,
                   workers=workers, synth_threads=synth_threads,
                   n_gpus=_tenure_gpus(parsed.columns("records"), wide.index), notes=notes)


def _upload_bytes(parsed: ParsedLog, wide: Table, bytes_per_partition: float | None,
                  bytes_source: str) -> tuple[np.ndarray, float, str]:
    """(bytes per tenure, bytes per partition, where they come from): the log's wins."""
    logged, logged_key = bytes_from_log(parsed, wide.index)
    if logged is not None:
        return logged, float(median(logged)), f"log ({logged_key})"
    if bytes_per_partition is not None and bytes_per_partition > 0:
        return np.full(len(wide), float(bytes_per_partition)), float(bytes_per_partition), bytes_source
    raise WhatIfUnavailable(
        "upload size unknown: the log has no h2d_bytes field; pass --abc-bytes "
        "(bytes of a, b and c per partition, e.g. 1.5GiB)"
    )


def _upload_field(wide: Table, notes: list[str]) -> tuple[np.ndarray, np.ndarray, str]:
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

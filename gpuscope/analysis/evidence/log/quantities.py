"""Upload bytes per GPU-lock tenure from the log's quantities, and the upload rate they give.

The parsers keep numbers that are not times (`h2d_bytes=`, `num_circuits=`) in
`ParsedLog.quantities`, in their own unit, tied to record and GPU like components
(docs/ARCHITECTURE.md); components are milliseconds only. Here:

- a tenure's upload bytes = the sum of its lines' bytes over all its GPUs (the first of
  UPLOAD_BYTES_KEYS the log prints); NaN for a tenure without any;
- the measured upload rate of a tenure = bytes per GPU / upload time per GPU, where both
  are averaged over the tenure's GPUs (`n_gpus`) as the split averages h2d_ms; with one
  GPU that is simply bytes / h2d_ms. GB/s are 1e9 bytes per second.

Pure: DataFrames and arrays in, arrays out.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from gpuscope.analysis.evidence.log import groupstats
from gpuscope.analysis.evidence.log.table import column
from gpuscope.arrays import distinct, median

if TYPE_CHECKING:
    pass

UPLOAD_BYTES_KEYS = ("h2d_bytes", "abc_bytes", "upload_bytes")


def _quantity_columns(parsed: Any):
    """The quantities as columns (the parser's gpuscope.schemas.Columns, or a frame), or None."""
    cols = getattr(parsed, "columns", None)
    if callable(cols):
        q = cols("quantities")
    else:
        q = getattr(parsed, "quantities", None)
    return q if q is not None and len(q) else None


def _named(q, key: str) -> np.ndarray | None:
    """Which quantity rows are named `key` (None: none is): on the parser's name codes when
    it has them, so a log without the key costs no pass over its rows."""
    if hasattr(q, "codes"):
        codes, names = q.codes("name")
        return np.asarray(codes) == list(names).index(key) if key in names else None
    return np.asarray(column(q, "name"), dtype=object) == key


def tenure_bytes(parsed: Any, record_ids: np.ndarray,
                 keys: tuple[str, ...] = UPLOAD_BYTES_KEYS) -> tuple[np.ndarray | None, str | None]:
    """(bytes per record of `record_ids`, summed over the tenure's GPUs, NaN where a tenure
    printed none; the key used), or (None, None) when no tenure printed any of `keys`.
    The names are compared as the parser's codes (a log without any of `keys` costs no pass);
    one value per record, in the records' order, is its own sum."""
    q = _quantity_columns(parsed)
    if q is None:
        return None, None
    rec = column(q, "record")
    value = column(q, "value").astype("float64", copy=False)
    ids = np.asarray(record_ids)
    for key in keys:
        named = _named(q, key)
        if named is None:
            continue
        sel = (rec >= 0) & named
        if not sel.any():
            continue
        r, v = (rec, value) if sel.all() else (rec[sel], value[sel])
        if len(r) == len(ids) and np.array_equal(r, ids) and (len(r) < 2 or bool((r[1:] > r[:-1]).all())):
            out = np.where(np.isnan(v), 0.0, v)  # (each tenure's one value: its sum, NaN summed as 0)
        else:
            labels, uniq = groupstats.dense(r.astype(np.int64, copy=False))
            sums, _ = groupstats.sums(labels, v, len(uniq))
            at = np.searchsorted(uniq, ids)
            hit = (at < len(uniq)) & (uniq[np.minimum(at, len(uniq) - 1)] == ids)
            out = np.where(hit, sums[np.minimum(at, len(uniq) - 1)], np.nan)
        if np.isfinite(out).any():
            return out, key
    return None, None


WORKER_KEY = "worker"  # a record's own worker, printed as `worker=N` (the prose `worker N` is not read as one)


def record_workers(parsed: Any, record_ids: np.ndarray) -> np.ndarray | None:
    """The worker each record of `record_ids` names, where every one names exactly one
    (`worker=N`, a whole number) and at least two differ; None otherwise (a worker printed on
    some records only, or twice in one, says nothing about how many worked side by side)."""
    q = _quantity_columns(parsed)
    named = _named(q, WORKER_KEY) if q is not None else None
    if q is None or named is None:
        return None
    rec = column(q, "record")[named]
    val = column(q, "value").astype("float64", copy=False)[named]
    ids = np.asarray(record_ids)
    if len(rec) != len(ids) or not np.array_equal(np.sort(rec), np.sort(ids)):
        return None
    if not (np.isfinite(val).all() and (val == np.round(val)).all() and (val >= 0).all()):
        return None
    order = np.argsort(rec, kind="stable")  # (rec holds the ids once each: each id's value by a search)
    out = val[order][np.searchsorted(rec[order], ids)]
    return out.astype(np.int64) if len(distinct(out)) >= 2 else None


def counts_every_record(parsed: Any, record_ids: np.ndarray, counters: frozenset[str]) -> bool:
    """Whether a counter of `counters` (ParsedLog.step_counter_names: step, iteration, batch) printed on the records
    advances by exactly 1 from one record to the next on at least 3 in 4 of them: the log printed
    every step, so the time between its records is time no step ran (not steps left unprinted)."""
    q = _quantity_columns(parsed)
    if q is None:
        return False
    ids = np.asarray(record_ids)
    rec = column(q, "record")
    value = column(q, "value").astype("float64", copy=False)
    for name in sorted(counters):
        named = _named(q, name)
        if named is None:
            continue
        r, v = rec[named], value[named]
        keep = np.isin(r, ids)
        r, v = r[keep], v[keep]
        order = np.argsort(r, kind="stable")
        # (a record printed twice: by a sort, not np.unique, whose hashing takes ~1 s per 10^6
        # distinct records in numpy 2.4, against ~0.01 s)
        ranked = r[order]
        if len(r) < 4 or bool((ranked[1:] == ranked[:-1]).any()):
            continue
        d = np.diff(v[order])
        if np.count_nonzero(d == 1) * 4 >= len(d) * 3:
            return True
    return False


def upload_gbs(nbytes: np.ndarray, h2d_ms: np.ndarray, n_gpus: np.ndarray | None = None) -> np.ndarray:
    """Per-tenure upload rate in GB/s (bytes per GPU over upload ms per GPU); NaN where the
    bytes or a positive upload time are missing."""
    b = np.asarray(nbytes, dtype="float64")
    t = np.asarray(h2d_ms, dtype="float64")
    g = np.ones_like(b) if n_gpus is None else np.maximum(np.asarray(n_gpus, dtype="float64"), 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        rate = b / g / (t / 1e3) / 1e9
    return np.where(np.isfinite(rate) & (t > 0), rate, np.nan)


def finite_median(a: np.ndarray) -> float:
    a = np.asarray(a, dtype="float64")
    a = a[np.isfinite(a)]
    return float(median(a)) if len(a) else float("nan")

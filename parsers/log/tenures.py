"""From a Scan to the columns of ParsedLog's frames: tenure grouping, vectorised.

GPU-region lines (kinds OPEN, GPU, NTT, HELD) in log order form tenures: a tenure starts
at an OPEN line, or at any GPU-region line that follows a HELD line (or starts the log);
it is complete when it has its HELD line. FREE lines get record -1. The k-th NTT line of
a tenure is GPU k; gpu_tid lines carry their own GPU. A quantity (h2d_bytes, ...) takes
the record, GPU, line and time of the line that printed it. See docs/ARCHITECTURE.md.

numpy only: the frames are built from these columns when someone reads them.
"""

from __future__ import annotations

import numpy as np

from gpuscope.arrays import distinct
from gpuscope.parsers.log import scan as sc
from gpuscope.parsers.log.codeops import exact_runs, repeats
from gpuscope.schemas import (
    COMPONENT_COLUMNS,
    QUANTITY_COLUMNS,
    RECORD_COLUMNS,
    SKIPPED_COLUMNS,
    TIMELINE_COLUMNS,
    Columns,
)


def build_columns(s: sc.Scan) -> dict[str, Columns]:
    """The frames' columns. Integer columns in the narrowest dtype that holds them (line
    numbers, record ids int32; GPUs, sources int8 where they fit): Columns keeps them so,
    the frames are built in the schema's dtypes. The per-line columns that only the lazy
    per-value ones need are kept alone (not the Scan's table), a constant one as its value."""
    s.finalize()
    ts_all = s.ts
    meta = s.meta
    n = len(meta)
    kind = meta[:, 2]
    counts = np.ascontiguousarray(meta[:, 6])
    ts = ts_all[meta[:, 1]] if n else np.zeros(0)

    in_gpu = (kind == sc.K_OPEN) | (kind == sc.K_GPU) | (kind == sc.K_NTT) | (kind == sc.K_HELD)
    gi = np.flatnonzero(in_gpu)
    del in_gpu
    gk = kind[gi]
    prev = np.concatenate(([sc.K_HELD], gk[:-1])) if len(gk) else gk
    start = (gk == sc.K_OPEN) | (prev == sc.K_HELD)
    del gk, prev
    rid = np.cumsum(start) - 1
    n_rec = int(rid[-1]) + 1 if len(rid) else 0
    record = np.full(n, -1, dtype=narrow(-1, n_rec))
    record[gi] = rid
    gpu = meta[:, 3].copy()
    ntt = np.flatnonzero(kind == sc.K_NTT)
    if len(ntt):
        r = record[ntt]
        gpu[ntt] = np.arange(len(ntt)) - np.searchsorted(r, r, side="left")
    gpu = small(gpu)
    ln = small(meta[:, 0])
    records = _records(n_rec, rid, np.flatnonzero(start), ln[gi], ts[gi], gpu[gi], record, kind, s.held)
    del rid, gi, start
    worker, part, src = (_constant(meta[:, j]) for j in (4, 5, 7))
    nv = len(s.values)

    reps = repeats(counts)

    def per_value(col):  # a per-line column, once per value
        return np.full(nv, col) if np.ndim(col) == 0 else np.repeat(col, reps)

    # (the columns the analysis seldom reads, per value: made when first read)
    comps = Columns(
        COMPONENT_COLUMNS,
        {
            "record": per_value(record),
            "gpu": per_value(gpu),
            "component": s.codes,
            "value_ms": np.asarray(s.values, dtype=np.float64),
            "line": lambda: per_value(ln),
            "ts": lambda: per_value(ts),
            "source": lambda: per_value(src),
            "worker": lambda: per_value(worker),
            "partition": lambda: per_value(part),
        },
        cats={"component": s.tables.names.list, "source": sc.SOURCES},
        n=nv,
    )
    qr = small(s.qrow)  # (the quantities' rows, kept for their line and time: made when first read)
    quantities = Columns(
        QUANTITY_COLUMNS,
        {"record": record[qr], "gpu": gpu[qr], "name": s.qcodes, "value": s.qvalues, "line": lambda: ln[qr],
         "ts": lambda: ts[qr]},
        cats={"name": s.tables.qnames.list},
        n=len(qr),
    )
    tl = _timeline(s.timeline, ts_all)
    skipped = Columns(SKIPPED_COLUMNS, {"line": s.skip_line, "reason": s.skip_reason, "text": s.skip_text})
    return {"components": comps, "records": records, "timeline": tl, "skipped": skipped,
            "quantities": quantities}


_INTS = (np.int8, np.int16, np.int32, np.int64)


def narrow(lo: int, hi: int) -> np.dtype:
    """The narrowest signed integer dtype holding lo..hi."""
    return next(np.dtype(t) for t in _INTS if np.iinfo(t).min <= lo and hi <= np.iinfo(t).max)


def small(a: np.ndarray) -> np.ndarray:
    """A contiguous copy of an integer column in the narrowest dtype holding its values."""
    if not len(a):
        return np.ascontiguousarray(a)
    return np.ascontiguousarray(a, dtype=narrow(int(a.min()), int(a.max())))


def _constant(col: np.ndarray):
    """A per-line column: its one value (an int) where every line has it, else small(col)."""
    if len(col) and int(col.min()) == int(col.max()):
        return int(col[0])
    return small(col)


def _records(n_rec, rid, first_idx, gln, gts, ggpu, record, kind, held) -> Columns:
    """The records' columns (first_idx: where each record's run of GPU-region lines starts;
    rid is sorted: tenures are consecutive runs, record 0 first)."""
    if n_rec == 0:
        return Columns(RECORD_COLUMNS, {})
    last_idx = np.append(first_idx[1:], len(rid)) - 1
    with np.errstate(invalid="ignore"):
        ts_min = exact_runs(np.fmin, gts, first_idx)
        ts_max = exact_runs(np.fmax, gts, first_idx)
    ok = ggpu >= 0
    if ok.any():
        width = int(ggpu[ok].max()) + 1
        pairs = distinct(rid[ok] * width + ggpu[ok])
        n_gpus = np.bincount(pairs // width, minlength=n_rec)
    else:
        n_gpus = None  # (no line names a GPU: every record has one, as the maximum with 1 makes it)
    held_ms = np.full(n_rec, np.nan)
    complete = np.zeros(n_rec, dtype=bool)
    complete[record[kind == sc.K_HELD]] = True
    hrows, hvals = held
    if len(hrows):
        held_ms[record[hrows]] = hvals
    return Columns(
        RECORD_COLUMNS,
        {
            "record": np.arange(n_rec, dtype=narrow(0, n_rec)),
            "first_line": gln[first_idx],
            "last_line": gln[last_idx],
            "ts_start": ts_min,
            "ts_end": ts_max,
            "n_gpus": small(np.maximum(n_gpus, 1)) if n_gpus is not None else np.ones(n_rec, dtype=np.int8),
            "held_ms": held_ms,
            "complete": complete,
        },
    )


def _timeline(cols, ts_all) -> Columns:
    out = {k: v for k, v in cols.items() if k != "slot"}
    out["ts"] = ts_all[cols["slot"]] if len(cols["slot"]) else np.zeros(0)
    return Columns(TIMELINE_COLUMNS, out)

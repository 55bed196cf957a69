"""From a Scan to the frames of ParsedLog: tenure grouping, vectorised.

GPU-region lines (kinds OPEN, GPU, NTT, HELD) in log order form tenures: a tenure starts
at an OPEN line, or at any GPU-region line that follows a HELD line (or starts the log);
it is complete when it has its HELD line. FREE lines get record -1. The k-th NTT line of
a tenure is GPU k; gpu_tid lines carry their own GPU. A quantity (h2d_bytes, ...) takes
the record, GPU, line and time of the line that printed it. See docs/ARCHITECTURE.md.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from gpuscope.parsers import scan as sc
from gpuscope.schemas import (
    COMPONENT_COLUMNS,
    QUANTITY_COLUMNS,
    RECORD_COLUMNS,
    SKIPPED_COLUMNS,
    TIMELINE_COLUMNS,
    frame,
)


def build_frames(s: sc.Scan):
    s.finalize()
    ts_all = s.ts
    n = len(s.meta)
    ln, slots, kind, gpu, worker, part, counts, src = (np.ascontiguousarray(c) for c in s.meta.T)
    ts = ts_all[slots] if n else np.zeros(0)

    in_gpu = (kind == sc.K_OPEN) | (kind == sc.K_GPU) | (kind == sc.K_NTT) | (kind == sc.K_HELD)
    gi = np.flatnonzero(in_gpu)
    gk = kind[gi]
    prev = np.concatenate(([sc.K_HELD], gk[:-1])) if len(gk) else gk
    start = (gk == sc.K_OPEN) | (prev == sc.K_HELD)
    rid = np.cumsum(start) - 1
    record = np.full(n, -1, dtype=np.int64)
    record[gi] = rid
    gpu = gpu.copy()
    ntt = np.flatnonzero(kind == sc.K_NTT)
    if len(ntt):
        r = record[ntt]
        gpu[ntt] = np.arange(len(ntt)) - np.searchsorted(r, r, side="left")

    n_rec = int(rid[-1]) + 1 if len(rid) else 0
    records = _records(n_rec, rid, ln[gi], ts[gi], gpu[gi], record, kind, s.held)

    src_names = np.asarray(sc.SOURCES, dtype=object)[src]
    comps = frame(
        {
            "record": np.repeat(record, counts),
            "gpu": np.repeat(gpu, counts),
            "component": s.names,
            "value_ms": np.asarray(s.values, dtype=np.float64),
            "line": np.repeat(ln, counts),
            "ts": np.repeat(ts, counts),
            "source": np.repeat(src_names, counts),
            "worker": np.repeat(worker, counts),
            "partition": np.repeat(part, counts),
        },
        COMPONENT_COLUMNS,
    )
    qr = s.qrow
    quantities = frame(
        {
            "record": record[qr],
            "gpu": gpu[qr],
            "name": s.qnames,
            "value": s.qvalues,
            "line": ln[qr],
            "ts": ts[qr],
        },
        QUANTITY_COLUMNS,
    )
    tl = _timeline(s.timeline, ts_all)
    skipped = frame({"line": s.skip_line, "reason": s.skip_reason, "text": s.skip_text},
                    SKIPPED_COLUMNS)
    return comps, records, tl, skipped, quantities


def _records(n_rec, rid, gln, gts, ggpu, record, kind, held):
    if n_rec == 0:
        return frame({}, RECORD_COLUMNS)
    first_idx = np.searchsorted(rid, np.arange(n_rec), side="left")
    last_idx = np.searchsorted(rid, np.arange(n_rec), side="right") - 1
    g = pd.DataFrame({"r": rid, "ts": gts})
    agg = g.groupby("r")["ts"].agg(["min", "max"]).reindex(range(n_rec))
    pairs = pd.DataFrame({"r": rid, "g": ggpu})
    pairs = pairs[pairs["g"] >= 0].drop_duplicates()
    n_gpus = pairs.groupby("r").size().reindex(range(n_rec), fill_value=0).to_numpy()
    held_ms = np.full(n_rec, np.nan)
    complete = np.zeros(n_rec, dtype=bool)
    complete[record[kind == sc.K_HELD]] = True
    if held:
        hi = np.asarray([h[0] for h in held], dtype=np.int64)
        held_ms[record[hi]] = np.asarray([h[1] for h in held], dtype=np.float64)
    return frame(
        {
            "record": np.arange(n_rec, dtype=np.int64),
            "first_line": gln[first_idx],
            "last_line": gln[last_idx],
            "ts_start": agg["min"].to_numpy(dtype=np.float64),
            "ts_end": agg["max"].to_numpy(dtype=np.float64),
            "n_gpus": np.maximum(n_gpus, 1),
            "held_ms": held_ms,
            "complete": complete,
        },
        RECORD_COLUMNS,
    )


def _timeline(cols, ts_all):
    out = {k: v for k, v in cols.items() if k != "slot"}
    out["ts"] = ts_all[cols["slot"]] if len(cols["slot"]) else np.zeros(0)
    return frame(out, TIMELINE_COLUMNS)

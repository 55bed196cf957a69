"""Build ParsedLogs (ARCHITECTURE.md contract) from plain per-tenure dicts.

Used by the compare / what-if / plot / trace tests so they do not depend on the parsers'
internals: the DataFrames have exactly the contract's columns and dtypes.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from gpuscope.parsers.log.parsed import ParsedLog

COMPONENT_COLS = {
    "record": "int64", "gpu": "int64", "component": "object", "value_ms": "float64",
    "line": "int64", "ts": "float64", "source": "object", "worker": "int64", "partition": "int64",
}
RECORD_COLS = {
    "record": "int64", "first_line": "int64", "last_line": "int64", "ts_start": "float64",
    "ts_end": "float64", "n_gpus": "int64", "held_ms": "float64", "complete": "bool",
}
QUANTITY_COLS = {"record": "int64", "gpu": "int64", "name": "object", "value": "float64",
                 "line": "int64", "ts": "float64"}
TIMELINE_COLS = {
    "line": "int64", "ts": "float64", "offset_ms": "float64", "event": "object", "job_id": "object",
    "partition": "int64", "worker": "int64", "synth_ms": "float64", "gpu_ms": "float64",
}


def typed(rows: list[dict], cols: dict[str, str]) -> pd.DataFrame:
    df = pd.DataFrame(rows, columns=list(cols))
    return df.astype(cols)


def make_parsed(tenures: list[dict], *, side: dict[str, list[float]] | None = None,
                t0: float | None = None, timeline: list[dict] | None = None,
                source: str = "<synthetic>") -> ParsedLog:
    """`tenures`: dicts of component -> ms, plus `held` (mutex_held) and optionally
    `t_start` (epoch s of the tenure's start) and `worker`; a `*_bytes` key is a quantity
    (its count, on GPU 0), as the parsers keep it. `side`: record-less components
    (prep_msm, b_g2_msm, synth) -> list of values in log order."""
    comps, recs, quants = [], [], []
    line = 1
    for r, ten in enumerate(tenures):
        first = line
        worker = int(ten.get("worker", -1))
        ts0 = ten.get("t_start", np.nan if t0 is None else t0 + r)
        for name, v in ten.items():
            if name in ("held", "t_start", "worker"):
                continue
            if name.endswith("_bytes"):
                quants.append({"record": r, "gpu": 0, "name": name, "value": float(v), "line": line, "ts": ts0})
                line += 1
                continue
            comps.append({"record": r, "gpu": 0, "component": name, "value_ms": float(v), "line": line,
                          "ts": ts0, "source": "CUZK_TIMING", "worker": worker, "partition": r})
            line += 1
        comps.append({"record": r, "gpu": -1, "component": "mutex_held", "value_ms": float(ten["held"]),
                      "line": line, "ts": ts0 + ten["held"] / 1e3, "source": "CUZK_TIMING",
                      "worker": worker, "partition": r})
        recs.append({"record": r, "first_line": first, "last_line": line, "ts_start": ts0,
                     "ts_end": ts0 + ten["held"] / 1e3, "n_gpus": 1, "held_ms": float(ten["held"]),
                     "complete": True})
        line += 1
    for name, values in (side or {}).items():
        for v in values:
            comps.append({"record": -1, "gpu": -1, "component": name, "value_ms": float(v), "line": line,
                          "ts": np.nan, "source": "CUZK_TIMING", "worker": -1, "partition": -1})
            line += 1
    return ParsedLog(
        format="cuzk",
        components=typed(comps, COMPONENT_COLS),
        records=typed(recs, RECORD_COLS),
        timeline=typed(timeline or [], TIMELINE_COLS),
        quantities=typed(quants, QUANTITY_COLS),
        source=source,
        total_lines=line - 1,
        timing_lines=line - 1,
    )

"""Analysis -> CSV files in a directory (`analyze --csv DIR`). Missing values are empty cells."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from gpuscope import safe_output
from gpuscope.errors import InputError, ResourceError
from gpuscope.reports.safe_text import visible

if TYPE_CHECKING:
    from gpuscope.analysis.result import Analysis, LogPart

QUANTITY_COLUMNS = ["record", "gpu", "name", "value", "line", "ts"]  # ParsedLog.quantities


def _timeline_rows(log: LogPart) -> pd.DataFrame:
    rows = []
    tl, b = log.timeline, log.bounds
    for k, v in tl.items():
        if k == "workers":
            for w, d in tl["workers"].items():
                for kk, vv in d.items():
                    rows.append({"key": f"worker.{w}.{kk}", "value": vv})
        else:
            rows.append({"key": k, "value": v})
    for k, v in b.items():
        rows.append({"key": f"bounds.{k}", "value": "; ".join(b["assumptions"]) if k == "assumptions" else v})
    return pd.DataFrame(rows, columns=["key", "value"])


def _quantities(log: LogPart) -> pd.DataFrame:
    """The log's counts that are not times (h2d_bytes, num_circuits), as parsed; the header
    alone when the log has none."""
    q = log.quantities
    return q if q is not None else pd.DataFrame(columns=QUANTITY_COLUMNS)


def frames(analysis: Analysis) -> dict[str, pd.DataFrame]:
    """The DataFrames written by write_csv, by file name: the log's files only for a source
    with timing lines (a trace's or samples' --csv has no empty components.csv)."""
    out: dict[str, pd.DataFrame] = {}
    lg = analysis.log
    if lg is not None:
        out.update({
            "components.csv": lg.values,
            "records.csv": lg.record_split,
            "stats.csv": lg.components.reset_index(),
            "timeline.csv": _timeline_rows(lg),
            "skipped.csv": lg.skipped,
            "quantities.csv": _quantities(lg),
        })
    out["diagnoses.csv"] = pd.DataFrame(
        [{"id": d.id, "severity": d.severity, "summary": d.summary,
          "recommendation": d.recommendation} for d in analysis.findings],
        columns=["id", "severity", "summary", "recommendation"],
    )
    if lg is not None and lg.pcie is not None:
        out["pcie.csv"] = lg.pcie
    if analysis.samples is not None:  # NVML samples: each interval classed (computing, idle, ...)
        out["activity_intervals.csv"] = analysis.samples.intervals
    if analysis.trace is not None:  # a profiler trace: its copies, streams, longest gaps, phases
        t = analysis.trace
        out["memcpy.csv"] = pd.DataFrame(t.memcpy)
        out["kernels.csv"] = pd.DataFrame([{k: v for k, v in r.items() if k != "top_kernels"} for r in t.kernels])
        out["idle_gaps.csv"] = pd.json_normalize(t.idle_gaps) if t.idle_gaps else pd.DataFrame()
        out["trace_phases.csv"] = pd.DataFrame(t.split)
    return out


FORMULA_START = ("=", "+", "-", "@", "\t", "\r")  # what a spreadsheet would evaluate (OWASP)
TIME_COLUMNS = ("ts", "ts_start", "ts_end", "t_start", "t_end", "t_wall")


def safe_frame(df: pd.DataFrame) -> pd.DataFrame:
    """A copy fit for a spreadsheet and a terminal: text cells show their control characters
    (reports.safe_text), those that start like a formula get a leading `'`
    (OWASP's CSV-injection advice), and epoch-second columns keep microseconds (%.6f) where
    the other numbers are written with 6 significant digits."""
    out = df.copy()
    for c in out.columns:
        col = out[c]
        if c in TIME_COLUMNS and col.dtype.kind == "f":
            out[c] = col.map(lambda v: "" if v != v else f"{v:.6f}")
        elif col.dtype.kind in "OSU" or str(col.dtype) == "str":
            out[c] = col.map(_safe_cell)
    return out


def _safe_cell(v):
    """A text cell: its control characters made visible (reports.safe_text: a raw ESC would
    reach the terminal of whoever cats the file), then a leading `'` if it starts like a
    formula."""
    if not isinstance(v, str):
        return v
    v = visible(v)
    return f"'{v}" if v != "-" and v.startswith(FORMULA_START) else v


def write_csv(analysis: Analysis, directory: str | os.PathLike[str]) -> list[Path]:
    d = Path(directory)
    if d.exists() and not d.is_dir():
        raise InputError(f"--csv {d}: exists and is not a directory")
    try:
        d.mkdir(parents=True, exist_ok=True)
        written = []
        for name, df in frames(analysis).items():
            # byte counts keep every digit (1610612736, not 1.61061e+09); each file whole or
            # not at all, never through a link nor over an input (gpuscope.safe_output)
            text = safe_frame(df).to_csv(index=False, float_format=None if name == "quantities.csv" else "%.6g")
            written.append(safe_output.write(d / name, text, "a CSV file", "--csv"))
    except OSError as e:
        raise ResourceError(f"cannot write CSV files to {d}: {e.strerror or e}") from None
    return written

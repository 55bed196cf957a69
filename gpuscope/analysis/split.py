"""Per-record split of the held time (the GPU-lock tenure) into h2d / gpu_compute / cpu_stall / other.

Rules (docs/ARCHITECTURE.md, "The role model"):
- a record's role sum adds the record's components of that role; values from per-GPU lines
  (gpu >= 0) are averaged over the record's GPUs (every GPU is held for the whole tenure),
  values not tied to a GPU count once;
- `contains`: when a record has both the outer (ntt_kernels) and the inner (h2d) component,
  the inner keeps its role and the outer's remainder (outer - inner, at least 0) goes to the
  remainder role; with the outer alone, the outer has its own role;
- other = held - h2d - gpu_compute - cpu_stall - d2h (read-backs); when negative the record is inconsistent,
  other is 0, and the record stays in every sum.
Only complete records (with a held line) are split.

The work is done on numpy columns (`wide_table`, `split_table`: gpuscope.analysis.table.Table);
`record_components` and `split_records` are the same as DataFrames, for callers that have
frames.
"""

from __future__ import annotations

import numpy as np

from gpuscope.analysis import groupstats
from gpuscope.analysis.table import Table, column, nansum
from gpuscope.rolemodel import SPLIT_ROLES, RoleModel

SPLIT_COLUMNS = [
    "record", "first_line", "last_line", "ts_start", "ts_end", "n_gpus", "held_ms",
    "h2d_ms", "gpu_compute_ms", "cpu_stall_ms", "d2h_ms", "other_ms", "parts_ms", "excess_ms",
    "inconsistent", "contention_ms",
]


def _component_codes(components) -> tuple[np.ndarray, list]:
    """(codes, names) of the components' names: the parser's codes (gpuscope.schemas.Columns),
    else factorized in order of first appearance."""
    if hasattr(components, "codes"):
        codes, names = components.codes("component")
        return np.asarray(codes), list(names)
    from gpuscope.schemas import COMPONENT_COLUMNS, Columns

    return _component_codes(Columns.from_frame(components, COMPONENT_COLUMNS))


def wide_table(components, records) -> Table:
    """One row per complete record (index: record id), one column per component (ms,
    GPU-averaged, NaN where the record lacks it), components in order of first appearance.
    `components` / `records`: gpuscope.schemas.Columns or DataFrames."""
    complete = column(records, "complete").astype(bool)
    rec_ids = column(records, "record")[complete].astype(np.int64)
    n_gpus = column(records, "n_gpus")[complete]
    rec = column(components, "record").astype(np.int64)
    lut = np.full(int(rec_ids.max()) + 1 if len(rec_ids) else 0, -1, dtype=np.int64)
    lut[rec_ids] = np.arange(len(rec_ids))
    pos = np.full(len(rec), -1, dtype=np.int64)
    inside = (rec >= 0) & (rec < len(lut))
    pos[inside] = lut[rec[inside]]
    keep = pos >= 0
    if not keep.any():
        return Table({}, rec_ids, "record")
    codes, names = _component_codes(components)
    n = np.clip(n_gpus, 1, None).astype("float64")[pos[keep]]
    gpu = column(components, "gpu")[keep]
    w = column(components, "value_ms").astype("float64")[keep] * np.where(gpu >= 0, 1.0 / n, 1.0)
    code = np.asarray(codes)[keep]
    # sum per (record position, component code) on integer keys
    key = pos[keep].astype("int64") * len(names) + code
    labels, k = groupstats.dense(key)
    sums, _ = groupstats.sums(labels, w, len(k))
    present = np.unique(k % len(names))
    grid = np.full((len(rec_ids), len(present)), np.nan)
    col_of = np.full(len(names), -1)
    col_of[present] = np.arange(len(present))
    grid[k // len(names), col_of[k % len(names)]] = sums
    return Table({str(names[c]): grid[:, j] for j, c in enumerate(present)}, rec_ids, "record")


def record_frame(t: Table):
    """A wide Table as the DataFrame record_components gives (index `record`, float64 columns)."""
    import pandas as pd

    index = pd.Index(t.index, name="record")
    if not t.columns:
        return pd.DataFrame(index=index, dtype="float64")
    return pd.DataFrame({c: t[c] for c in t.columns}, index=index, columns=t.columns)


def record_components(components, records, factorized: tuple | None = None):
    """wide_table as a DataFrame (index `record`, float64 columns). `factorized`: ignored
    (the codes come with the components)."""
    return record_frame(wide_table(components, records))


def _role_sums(wide: Table, model: RoleModel, n: int) -> dict[str, np.ndarray]:
    sums = {role: np.zeros(n) for role in SPLIT_ROLES}
    cols = set(wide.columns)
    for col in wide.columns:
        role = model.role_of(col)
        if role not in SPLIT_ROLES:
            continue
        values = wide[col]
        spec = model.contains.get(col)
        if spec is not None and spec.inner in cols:
            inner = wide[spec.inner]
            both = ~np.isnan(values) & ~np.isnan(inner)
            with np.errstate(invalid="ignore"):
                remainder = np.clip(values - inner, 0.0, None)
            sums[spec.remainder_role] = sums[spec.remainder_role] + np.where(both, remainder, 0.0)
            sums[role] = sums[role] + _zero_nan(np.where(~both, values, 0.0))
        else:
            sums[role] = sums[role] + _zero_nan(values)
    return sums


def _zero_nan(x: np.ndarray) -> np.ndarray:
    return np.where(np.isnan(x), 0.0, x)


def _row_sums(wide: Table, cols: list[str], n: int) -> np.ndarray:
    """DataFrame.sum(axis=1, min_count=1) over these columns: NaN counted as 0, NaN where
    every one is NaN; added column by column, left to right, as pandas adds them."""
    if not cols:
        return np.full(n, np.nan)
    total = _zero_nan(wide[cols[0]].astype("float64"))
    seen = ~np.isnan(wide[cols[0]])
    for c in cols[1:]:
        total = total + _zero_nan(wide[c])
        seen |= ~np.isnan(wide[c])
    return np.where(seen, total, np.nan)


def split_table(records, wide: Table, model: RoleModel) -> Table:
    """The per-record split (columns SPLIT_COLUMNS), complete records only, ordered by record."""
    complete = column(records, "complete").astype(bool)
    rec = {c: column(records, c)[complete] for c in ("record", "first_line", "last_line", "ts_start", "ts_end",
                                                     "n_gpus", "held_ms")}
    n = int(complete.sum())
    ids = rec["record"].astype(np.int64)
    if len(wide) != n or not np.array_equal(np.asarray(wide.index, dtype=np.int64), ids):
        pos = {int(r): i for i, r in enumerate(np.asarray(wide.index).tolist())}
        take = np.array([pos.get(int(r), -1) for r in ids], dtype=np.int64)
        wide = Table({c: np.where(take >= 0, wide[c][np.maximum(take, 0)] if len(wide) else np.nan, np.nan)
                      for c in wide.columns}, ids, "record")
    sums = _role_sums(wide, model, n)
    held = rec["held_ms"].astype("float64")
    h2d = sums["h2d"]
    gpu = sums["gpu_compute"]
    stall = sums["cpu_stall"]
    d2h = sums["d2h"]
    parts = h2d + gpu + stall + d2h
    raw_other = held - parts
    contention = _row_sums(wide, [c for c in wide.columns if model.role_of(c) == "contention"], n)
    with np.errstate(invalid="ignore"):
        cols = {
            "record": ids,
            "first_line": rec["first_line"].astype("int64"),
            "last_line": rec["last_line"].astype("int64"),
            "ts_start": rec["ts_start"].astype("float64"),
            "ts_end": rec["ts_end"].astype("float64"),
            "n_gpus": rec["n_gpus"].astype("int64"),
            "held_ms": held,
            "h2d_ms": h2d,
            "gpu_compute_ms": gpu,
            "cpu_stall_ms": stall,
            "d2h_ms": d2h,
            "other_ms": np.clip(raw_other, 0.0, None),
            "parts_ms": parts,
            "excess_ms": np.clip(-raw_other, 0.0, None),
            "inconsistent": raw_other < 0,
            "contention_ms": contention,
        }
    return Table(cols)


def split_records(components, records, model: RoleModel, wide=None):
    """split_table as a DataFrame (columns SPLIT_COLUMNS)."""
    import pandas as pd

    from gpuscope.analysis.table import as_table

    w = wide_table(components, records) if wide is None else as_table(wide)
    t = split_table(records, w, model)
    return pd.DataFrame({c: t[c] for c in SPLIT_COLUMNS}, columns=SPLIT_COLUMNS)


def split_totals(split) -> dict:
    """Sums and shares over all complete records (inconsistent ones included)."""
    held = nansum(column(split, "held_ms"))
    out = {"held_ms": held}
    for role in (*SPLIT_ROLES, "other"):
        out[f"{role}_ms"] = nansum(column(split, f"{role}_ms"))
    for role in (*SPLIT_ROLES, "other"):
        out[f"{role}_share"] = out[f"{role}_ms"] / held if held > 0 else float("nan")
    out["inconsistent_records"] = int(column(split, "inconsistent").sum())
    out["records"] = int(len(split))
    return out

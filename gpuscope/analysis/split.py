"""Per-record split of the held time (the GPU-lock tenure) into h2d / gpu_compute / cpu_stall / other.

Rules (docs/ARCHITECTURE.md, "The role model"):
- a record's role sum adds the record's components of that role; values from per-GPU lines
  (gpu >= 0) are averaged over the record's GPUs (every GPU is held for the whole tenure),
  values not tied to a GPU count once;
- `contains`: when a record has both the outer (ntt_kernels) and the inner (h2d) component,
  the inner keeps its role and the outer's remainder (outer - inner, at least 0) goes to the
  remainder role; with the outer alone, the outer has its own role;
- other = held - h2d - gpu_compute - cpu_stall; when negative the record is inconsistent,
  other is 0, and the record stays in every sum.
Only complete records (with a held line) are split.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from gpuscope.rolemodel import SPLIT_ROLES, RoleModel

SPLIT_COLUMNS = [
    "record", "first_line", "last_line", "ts_start", "ts_end", "n_gpus", "held_ms",
    "h2d_ms", "gpu_compute_ms", "cpu_stall_ms", "other_ms", "parts_ms", "excess_ms",
    "inconsistent", "contention_ms",
]


def record_components(
    components: pd.DataFrame, records: pd.DataFrame, factorized: tuple | None = None
) -> pd.DataFrame:
    """Wide table: one row per complete record, one column per component (ms, GPU-averaged).

    NaN where the record lacks the component. `factorized` = pd.factorize(components["component"])
    when the caller already has it (saves a pass over the strings on big logs).
    """
    recs = records.loc[records["complete"].astype(bool), ["record", "n_gpus"]]
    index = pd.Index(recs["record"].to_numpy(), name="record")
    rec = components["record"].to_numpy()
    pos = index.get_indexer(rec)           # -1 for lines without a (complete) record
    keep = pos >= 0
    if not keep.any():
        return pd.DataFrame(index=index, dtype="float64")
    codes, names = factorized if factorized is not None else pd.factorize(components["component"])
    n = recs["n_gpus"].clip(lower=1).to_numpy(dtype="float64")[pos[keep]]
    gpu = components["gpu"].to_numpy()[keep]
    w = components["value_ms"].to_numpy(dtype="float64")[keep] * np.where(gpu >= 0, 1.0 / n, 1.0)
    code = np.asarray(codes)[keep]
    # sum per (record position, component code) on integer keys
    key = pos[keep].astype("int64") * len(names) + code
    sums = pd.Series(w).groupby(key).sum()
    k = sums.index.to_numpy()
    present = np.unique(k % len(names))
    grid = np.full((len(index), len(present)), np.nan)
    col_of = np.full(len(names), -1)
    col_of[present] = np.arange(len(present))
    grid[k // len(names), col_of[k % len(names)]] = sums.to_numpy()
    order = np.argsort(present, kind="stable")  # first appearance order of the components
    cols = [str(names[c]) for c in present[order]]
    return pd.DataFrame(grid[:, order], index=index, columns=cols)


def _role_sums(wide: pd.DataFrame, model: RoleModel) -> dict[str, pd.Series]:
    sums = {role: pd.Series(0.0, index=wide.index) for role in SPLIT_ROLES}
    for col in wide.columns:
        role = model.role_of(col)
        if role not in SPLIT_ROLES:
            continue
        values = wide[col]
        spec = model.contains.get(col)
        if spec is not None and spec.inner in wide.columns:
            both = values.notna() & wide[spec.inner].notna()
            remainder = (values - wide[spec.inner]).clip(lower=0.0)
            sums[spec.remainder_role] += remainder.where(both, 0.0)
            sums[role] += values.where(~both, 0.0).fillna(0.0)
        else:
            sums[role] += values.fillna(0.0)
    return sums


def split_records(
    components: pd.DataFrame, records: pd.DataFrame, model: RoleModel, wide: pd.DataFrame | None = None
) -> pd.DataFrame:
    """The per-record split (columns SPLIT_COLUMNS), complete records only, ordered by record."""
    recs = records.loc[records["complete"].astype(bool)].reset_index(drop=True)
    if wide is None:
        wide = record_components(components, records)
    wide = wide.reindex(pd.Index(recs["record"].to_numpy(), name="record"))
    sums = _role_sums(wide, model)
    held = recs["held_ms"].to_numpy(dtype="float64")
    h2d = sums["h2d"].to_numpy()
    gpu = sums["gpu_compute"].to_numpy()
    stall = sums["cpu_stall"].to_numpy()
    parts = h2d + gpu + stall
    raw_other = held - parts
    contention_cols = [c for c in wide.columns if model.role_of(c) == "contention"]
    contention = (
        wide[contention_cols].sum(axis=1, min_count=1).to_numpy(dtype="float64")
        if contention_cols
        else np.full(len(recs), np.nan)
    )
    out = pd.DataFrame(
        {
            "record": recs["record"].to_numpy(dtype="int64"),
            "first_line": recs["first_line"].to_numpy(dtype="int64"),
            "last_line": recs["last_line"].to_numpy(dtype="int64"),
            "ts_start": recs["ts_start"].to_numpy(dtype="float64"),
            "ts_end": recs["ts_end"].to_numpy(dtype="float64"),
            "n_gpus": recs["n_gpus"].to_numpy(dtype="int64"),
            "held_ms": held,
            "h2d_ms": h2d,
            "gpu_compute_ms": gpu,
            "cpu_stall_ms": stall,
            "other_ms": np.clip(raw_other, 0.0, None),
            "parts_ms": parts,
            "excess_ms": np.clip(-raw_other, 0.0, None),
            "inconsistent": raw_other < 0,
            "contention_ms": contention,
        },
        columns=SPLIT_COLUMNS,
    )
    return out


def split_totals(split: pd.DataFrame) -> dict:
    """Sums and shares over all complete records (inconsistent ones included)."""
    held = float(split["held_ms"].sum())
    out = {"held_ms": held}
    for role in (*SPLIT_ROLES, "other"):
        out[f"{role}_ms"] = float(split[f"{role}_ms"].sum())
    for role in (*SPLIT_ROLES, "other"):
        out[f"{role}_share"] = out[f"{role}_ms"] / held if held > 0 else float("nan")
    out["inconsistent_records"] = int(split["inconsistent"].sum())
    out["records"] = int(len(split))
    return out

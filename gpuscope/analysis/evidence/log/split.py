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

The work is done on numpy columns (`wide_table`, `split_table`: gpuscope.analysis.evidence.log.table.Table);
`record_components` and `split_records` are the same as DataFrames, for callers that have
frames.
"""

from __future__ import annotations

import numpy as np

from gpuscope.analysis.evidence.log import groupstats
from gpuscope.analysis.evidence.log.table import Table, as_table, column, nansum
from gpuscope.rolemodel import SPLIT_ROLES, RoleModel
from gpuscope.schemas import COMPONENT_COLUMNS, Columns

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

    return _component_codes(Columns.from_frame(components, COMPONENT_COLUMNS))


# A log's distinct components each get a column of their own (records x components cells)
# while there are at most DENSE_COLUMNS of them or the cells stay within WIDE_CELLS; beyond
# that, the components of the largest total time keep theirs (at most MAX_WIDE_COLUMNS, and
# no more than WIDE_CELLS cells) and the rest are folded (long form).
DENSE_COLUMNS = 64
WIDE_CELLS = 1 << 22          # 32 MiB of float64
MAX_WIDE_COLUMNS = 512


class WideTable(Table):
    """The wide table of a log with more distinct components than MAX_WIDE_COLUMNS: the
    components of the largest total time keep their column, the others are `folded`: kept in
    long form, one (row position, name, value) per record that has them, so memory grows with
    the (record, component) pairs the log printed, not with records x names (issue 22). The
    split still counts every folded component by its role (`_role_sums`); `column_of`
    rebuilds one on request."""

    __slots__ = ("folded",)

    def __init__(self, cols, index, index_name, folded: Folded):
        super().__init__(cols, index, index_name)
        self.folded = folded

    def column_of(self, name: str) -> np.ndarray:
        return self._cols[name] if name in self._cols else self.folded.column(name, len(self))

    # a rule that asks for a component by name (d_b_alloc, mutex_wait) gets it, folded or
    # not; `columns` lists the kept ones (what a loop over every column may afford)
    def __getitem__(self, name: str) -> np.ndarray:
        return self.column_of(name)

    def __contains__(self, name: str) -> bool:
        return name in self._cols or name in self.folded

    def rows(self, sel) -> Table:
        pos = np.arange(len(self))[sel]
        return WideTable({k: v[sel] for k, v in self._cols.items()}, self.index[sel], self.index_name,
                         self.folded.take(pos, len(self)))


class Folded:
    """Components without a column of their own: `names`, and per entry its row position,
    name code (into `names`) and value (ms, GPU-averaged, summed per record)."""

    def __init__(self, names: list[str], pos: np.ndarray, code: np.ndarray, value: np.ndarray):
        self.names, self.pos, self.code, self.value = names, pos, code, value
        self._of = {n: i for i, n in enumerate(names)}

    def __contains__(self, name: str) -> bool:
        return name in self._of

    def column(self, name: str, n: int) -> np.ndarray:
        out = np.full(n, np.nan)
        sel = self.code == self._of[name]
        out[self.pos[sel]] = self.value[sel]
        return out

    def take(self, pos: np.ndarray, n: int) -> Folded:
        """The entries of rows `pos` (positions of the old table), renumbered 0..len(pos)-1."""
        new = np.full(n, -1, dtype=np.int64)
        new[pos] = np.arange(len(pos))
        keep = new[self.pos] >= 0
        return Folded(self.names, new[self.pos[keep]], self.code[keep], self.value[keep])

    def by_role(self, model: RoleModel, n: int, skip: set[str]) -> dict[str | None, tuple[np.ndarray, np.ndarray]]:
        """role -> (sum per row, whether the row has any), over the folded names not in `skip`."""
        roles = [model.role_of(nm) if nm not in skip else "\0skip" for nm in self.names]
        out: dict[str | None, tuple[np.ndarray, np.ndarray]] = {}
        role_of_code = np.array(roles, dtype=object)[self.code] if len(self.code) else np.array([], dtype=object)
        for role in set(roles) - {"\0skip"}:
            sel = role_of_code == role
            v = self.value[sel]
            out[role] = (np.bincount(self.pos[sel], weights=np.where(np.isnan(v), 0.0, v), minlength=n),
                         np.bincount(self.pos[sel][~np.isnan(v)], minlength=n) > 0)
        return out


def wide_table(components, records) -> Table:
    """One row per complete record (index: record id), one column per component (ms,
    GPU-averaged, NaN where the record lacks it), components in order of first appearance.
    Beyond MAX_WIDE_COLUMNS distinct components, a WideTable (the rest folded).
    `components` / `records`: gpuscope.schemas.Columns or DataFrames."""
    complete = np.asarray(column(records, "complete"), dtype=bool)
    every = bool(complete.all())
    rec_ids = complete_rows(column(records, "record"), complete, every)
    codes, names = _component_codes(components)
    grid = _regular_grid(components, codes, rec_ids, len(names))
    if grid is not None:
        return Table({str(names[j]): grid[:, j] for j in range(len(names))}, rec_ids, "record")
    n_gpus = complete_rows(column(records, "n_gpus"), complete, every)
    rec = _ints(column(components, "record"))  # (int32 from the parser: lut[rec] needs no int64 copy)
    lut = np.full(int(rec_ids.max()) + 1 if len(rec_ids) else 0, -1, dtype=np.int64)
    lut[rec_ids] = np.arange(len(rec_ids))
    if len(rec) and int(rec.min()) >= 0 and int(rec.max()) < len(lut):  # (no free lines: no masks)
        pos = lut[rec]
    else:
        pos = np.full(len(rec), -1, dtype=np.int64)
        inside = (rec >= 0) & (rec < len(lut))
        pos[inside] = lut[rec[inside]]
    keep = pos >= 0
    if not keep.any():
        return Table({}, rec_ids, "record")
    every = bool(keep.all())

    def kept(x: np.ndarray) -> np.ndarray:
        return x if every else x[keep]

    pos = kept(pos)
    gpu = kept(column(components, "gpu"))
    w = kept(column(components, "value_ms").astype("float64", copy=False))
    on_gpu = gpu >= 0
    if on_gpu.any():  # (a value of no GPU is taken as it is: x * 1.0 is x)
        n = np.clip(n_gpus, 1, None).astype("float64")[pos]
        w = w * np.where(on_gpu, 1.0 / n, 1.0)
    code = kept(np.asarray(codes))
    # sum per (record position, component code) on integer keys
    key = pos * len(names) + code
    if len(key) < 2 or bool((key[1:] > key[:-1]).all()):  # (each pair once, in order: its own sum)
        k, sums = key, np.where(np.isnan(w), 0.0, w)
    else:
        labels, k = groupstats.dense(key)
        sums, _ = groupstats.sums(labels, w, len(k))
    row, comp = k // len(names), k % len(names)
    present = np.flatnonzero(np.bincount(comp, minlength=len(names)))  # (np.unique's, sorted)
    if len(present) > DENSE_COLUMNS and len(present) * len(rec_ids) > WIDE_CELLS:
        cap = min(MAX_WIDE_COLUMNS, max(DENSE_COLUMNS, WIDE_CELLS // max(len(rec_ids), 1)))
        return _folded_table(rec_ids, names, row, comp, sums, present, cap)
    grid = np.full((len(rec_ids), len(present)), np.nan)
    col_of = np.full(len(names), -1)
    col_of[present] = np.arange(len(present))
    grid[row, col_of[comp]] = sums
    return Table({str(names[c]): grid[:, j] for j, c in enumerate(present)}, rec_ids, "record")


def complete_rows(x: np.ndarray, complete: np.ndarray, every: bool) -> np.ndarray:
    """x's rows of the complete records: x itself (no copy) where every record is complete."""
    return x if every else x[complete]


def _regular_grid(components, codes: np.ndarray, rec_ids: np.ndarray, p: int) -> np.ndarray | None:
    """The records x components grid where the log is regular, else None: every component
    line tied to a complete record, in the records' order, each record printing every one of
    the p names once in code order, none on a GPU (so no averaging). Then each (record,
    component) has one value, in order, and the grid is the values as they are (NaN printed:
    0.0, as the sum of one value counts it), reshaped: a read-only view of the parser's column
    when no value is NaN, no copy at all."""
    n = len(rec_ids)
    rec = column(components, "record")
    if not n or not p or len(rec) != n * p or len(codes) != n * p:
        return None
    gpu = column(components, "gpu")
    if int(gpu.max()) >= 0:
        return None
    if not (np.asarray(codes).reshape(n, p) == np.arange(p, dtype=np.asarray(codes).dtype)).all():
        return None
    if not (rec.reshape(n, p) == rec_ids[:, None]).all():
        return None
    w = column(components, "value_ms").astype("float64", copy=False)
    if np.isnan(w).any():
        return np.where(np.isnan(w), 0.0, w).reshape(n, p)
    grid = w.reshape(n, p)
    grid.flags.writeable = False
    return grid


def _folded_table(rec_ids, names, row, comp, sums, present, cap: int) -> WideTable:
    """The `cap` components of the largest total |time| as columns (in order of first
    appearance, as always), the others folded."""
    total = np.bincount(comp, weights=np.abs(np.where(np.isnan(sums), 0.0, sums)), minlength=len(names))[present]
    order = np.lexsort((present, -total))  # largest first, ties by first appearance
    kept = np.sort(present[order[:cap]])
    is_kept = np.zeros(len(names), dtype=bool)
    is_kept[kept] = True
    col_of = np.full(len(names), -1, dtype=np.int64)
    col_of[kept] = np.arange(len(kept))
    grid = np.full((len(rec_ids), len(kept)), np.nan)
    sel = is_kept[comp]
    grid[row[sel], col_of[comp[sel]]] = sums[sel]
    cols = {str(names[c]): grid[:, j] for j, c in enumerate(kept.tolist())}
    rest = np.sort(present[~is_kept[present]])
    code_of = np.full(len(names), -1, dtype=np.int64)
    code_of[rest] = np.arange(len(rest))
    fold = ~is_kept[comp]
    folded = Folded([str(names[c]) for c in rest.tolist()], row[fold], code_of[comp[fold]], sums[fold])
    return WideTable(cols, rec_ids, "record", folded)


def record_frame(t: Table):
    """A wide Table as the DataFrame record_components gives (index `record`, float64 columns)."""
    import pandas as pd

    index = pd.Index(t.index, name="record")
    if not t.columns:
        return pd.DataFrame(index=index, dtype="float64")
    return pd.DataFrame({c: t[c] for c in t.columns}, index=index, columns=t.columns)


def record_components(components, records):
    """wide_table as a DataFrame (index `record`, float64 columns)."""
    return record_frame(wide_table(components, records))


def _role_terms(wide: Table, model: RoleModel, n: int) -> dict[str, list[tuple[np.ndarray, bool]]]:
    """role -> what its sum adds, in order, each with whether a NaN in it counts as 0 (a
    column's missing value) or stays NaN (a `contains` remainder of inf - inf, a folded
    sum): the wide columns of the role, a `contains` pair's parts, the folded components' sums."""
    terms: dict[str, list[tuple[np.ndarray, bool]]] = {role: [] for role in SPLIT_ROLES}
    folded = wide.folded if isinstance(wide, WideTable) else None
    cols = set(wide.columns)
    # a folded component of a `contains` pair is rebuilt, so the pair is split as always
    pairs = [] if folded is None else [c for c, spec in model.contains.items()
                                       if (c in folded or spec.inner in folded) and (c in cols or c in folded)
                                       and (spec.inner in cols or spec.inner in folded)]
    for col in [*wide.columns, *(c for c in pairs if c not in cols)]:
        role = model.role_of(col)
        if role not in SPLIT_ROLES:
            continue
        values = wide[col]  # (a WideTable rebuilds a folded one)
        spec = model.contains.get(col)
        if spec is not None and spec.inner in wide:
            inner = wide[spec.inner]
            both = ~np.isnan(values) & ~np.isnan(inner)
            with np.errstate(invalid="ignore"):
                remainder = np.clip(values - inner, 0.0, None)
            terms[spec.remainder_role].append((np.where(both, remainder, 0.0), False))
            terms[role].append((np.where(~both, values, 0.0), True))
        else:
            terms[role].append((values, True))
    if folded is not None:
        for role, (total, _) in folded.by_role(model, n, skip=set(pairs)).items():
            if role in SPLIT_ROLES:
                terms[role].append((total, False))
    return terms


def _no_negative_zero(x: np.ndarray) -> bool:
    zero = x == 0
    return not zero.any() or not np.signbit(x[zero]).any()


def _sum_terms(terms: list[tuple[np.ndarray, bool]], zeros: np.ndarray) -> np.ndarray:
    """0.0 + t1 + t2 + ..., left to right, a term's NaN counted as 0 where it is a column's:
    the sum the split has always made (it started from zeros). Without copies where it can:
    no term is `zeros` itself (shared by every role without one); one term without NaN or
    -0.0 (0.0 + x is x then) is that term itself; else one fresh array, added into in place.
    The sum never holds -0.0 (0.0 + -0.0 is 0.0, and a sum is -0.0 only of two -0.0)."""
    if not terms:
        return zeros
    first, nan_is_zero = terms[0]
    if len(terms) == 1 and not np.isnan(first).any() and _no_negative_zero(first):
        return first
    total = np.where(np.isnan(first), 0.0, first) if nan_is_zero else np.array(first, dtype=np.float64)
    np.add(total, 0.0, out=total)  # (-0.0 -> 0.0, as 0.0 + x gives)
    for t, nan_is_zero in terms[1:]:
        skip = np.isnan(t) if nan_is_zero else None
        if skip is not None and skip.any():  # (total + 0.0 is total: it holds no -0.0)
            np.add(total, t, out=total, where=~skip)
        else:
            np.add(total, t, out=total)
    return total


def _role_sums(wide: Table, model: RoleModel, n: int) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """(role -> the sum of its parts per row (_sum_terms), the read-only zeros (`constant`)
    that every role without a part shares)."""
    zeros = constant(0.0, n)
    return {role: _sum_terms(t, zeros) for role, t in _role_terms(wide, model, n).items()}, zeros


def constant(value: float, n: int) -> np.ndarray:
    """A read-only column of n times `value` that holds one number (a broadcast view): a part
    no component has (0 in every record), a wait no line prints (NaN), a million rows of them
    cost nothing. Reads, slices, masks and sums see an ordinary float64 column."""
    return np.broadcast_to(np.float64(value), (n,))


def _zero_nan(x: np.ndarray) -> np.ndarray:
    return np.where(np.isnan(x), 0.0, x)


def row_sums(wide: Table, cols: list[str], n: int) -> np.ndarray:
    """DataFrame.sum(axis=1, min_count=1) over these columns: NaN counted as 0, NaN where
    every one is NaN; added column by column, left to right, as pandas adds them."""
    if not cols:
        return constant(np.nan, n)
    total = _zero_nan(wide[cols[0]].astype("float64"))
    seen = ~np.isnan(wide[cols[0]])
    for c in cols[1:]:
        total = total + _zero_nan(wide[c])
        seen |= ~np.isnan(wide[c])
    return np.where(seen, total, np.nan)


def _parts(roles: list[np.ndarray], zeros: np.ndarray) -> np.ndarray:
    """roles[0] + roles[1] + ... left to right, with the shared `zeros` left out (x + 0.0 is
    x, NaN too, where x is not -0.0, and no role sum holds -0.0): the one role that is not
    zeros is itself."""
    live = [r for r in roles if r is not zeros]
    if not live:
        return zeros
    if len(live) == 1:
        return live[0]
    total = np.add(live[0], live[1])
    for r in live[2:]:
        np.add(total, r, out=total)
    return total


def _ints(x: np.ndarray) -> np.ndarray:
    """An integer column as the parser gave it (any width), else as int64."""
    return x if x.dtype.kind in "iu" else x.astype(np.int64)


def split_table(records, wide: Table, model: RoleModel) -> Table:
    """The per-record split (columns SPLIT_COLUMNS), complete records only, ordered by record.
    The records' own columns are the records table's arrays where every record is complete
    (no copy); integer columns keep the parser's width."""
    complete = np.asarray(column(records, "complete"), dtype=bool)
    every = bool(complete.all())
    rec = {c: complete_rows(column(records, c), complete, every)
           for c in ("record", "first_line", "last_line", "ts_start", "ts_end", "n_gpus", "held_ms")}
    ids = _ints(rec["record"])
    n = len(ids)
    if len(wide) != n or not (wide.index is ids or np.array_equal(wide.index, ids)):
        pos = {int(r): i for i, r in enumerate(np.asarray(wide.index).tolist())}
        take = np.array([pos.get(int(r), -1) for r in ids], dtype=np.int64)
        wide = Table({c: np.where(take >= 0, wide[c][np.maximum(take, 0)] if len(wide) else np.nan, np.nan)
                      for c in wide.columns}, ids, "record")
    sums, zeros = _role_sums(wide, model, n)
    held = rec["held_ms"].astype("float64", copy=False)
    h2d = sums["h2d"]
    gpu = sums["gpu_compute"]
    stall = sums["cpu_stall"]
    d2h = sums["d2h"]
    parts = _parts([h2d, gpu, stall, d2h], zeros)
    contention = row_sums(wide, [c for c in wide.columns if model.role_of(c) == "contention"], n)
    if isinstance(wide, WideTable):
        total, seen = wide.folded.by_role(model, n, skip=set()).get("contention", (None, None))
        if total is not None:
            contention = np.where(seen | ~np.isnan(contention), _zero_nan(contention) + total, np.nan)
    with np.errstate(invalid="ignore"):
        # other = held - parts at least 0; excess = what the parts exceed it by (one buffer each)
        other = np.subtract(held, parts)
        inconsistent = other < 0
        excess = np.negative(other)
        np.clip(excess, 0.0, None, out=excess)
        np.clip(other, 0.0, None, out=other)
    if not excess.any() and not np.signbit(excess).any():  # (no record is inconsistent: all 0.0)
        excess = zeros
    cols = {
        "record": ids,
        "first_line": _ints(rec["first_line"]),
        "last_line": _ints(rec["last_line"]),
        "ts_start": rec["ts_start"].astype("float64", copy=False),
        "ts_end": rec["ts_end"].astype("float64", copy=False),
        "n_gpus": _ints(rec["n_gpus"]),
        "held_ms": held,
        "h2d_ms": h2d,
        "gpu_compute_ms": gpu,
        "cpu_stall_ms": stall,
        "d2h_ms": d2h,
        "other_ms": other,
        "parts_ms": parts,
        "excess_ms": excess,
        "inconsistent": inconsistent,
        "contention_ms": contention,
    }
    return Table(cols)


def split_records(components, records, model: RoleModel, wide=None):
    """split_table as a DataFrame (columns SPLIT_COLUMNS)."""
    import pandas as pd

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

"""An Nsight Systems export's event tables read column-wise into numpy arrays. Pure: no printing.

    read_table(con, table, ints, where, text=None, tick=None) -> Columns

The stdlib sqlite3 driver hands rows over as Python tuples; what is left of that cost is paid
one chunk at a time: each chunk of tuples becomes one int64 block (numpy's C loop) copied into
arrays allocated once for the table, and the tuples are dropped. No pandas frame, no per-row
object beyond the driver's tuple. What SQL can decide per row is decided there, in C:
- the rows to keep (`where`: integer times, the end not before the start, a device ...); the
  others are listed apart by `skipped` with their reason, one query that returns only them;
- NULL defaults (`ifnull(correlationId, -1)`), names picked among columns (`coalesce`);
- an NVTX range's text, its StringIds text when the row has only an id, and the operator name of
  a range torch.autograd.profiler.emit_nvtx opened ("aten::mm, seq = 12, op_id = 345" ->
  "aten::mm", its flag in an int column): a capture's per-operator ranges, each with its own
  op_id, become a few distinct names before Python sees them.
The one text column is factorized chunk by chunk into int32 codes over the distinct values.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

CHUNK_ROWS = 1 << 16
NUMBER = "typeof({c}) IN ('integer', 'real')"


@dataclass
class Columns:
    """A table's kept rows: int64 columns by name, the text column's codes and distinct values."""

    ints: dict[str, np.ndarray]
    codes: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int32))
    texts: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return len(next(iter(self.ints.values()))) if self.ints else len(self.codes)

    def names(self, fallback: str) -> pd.Categorical:
        """The text column as a categorical (NULL text: `fallback`)."""
        cats = [fallback if t is None else str(t) for t in self.texts]
        uniq, inv = np.unique(np.asarray(cats, dtype=object), return_inverse=True) if cats else (np.zeros(0), [])
        remap = np.asarray(inv, dtype=np.int32)
        return pd.Categorical.from_codes(remap[self.codes] if len(remap) else self.codes,
                                         categories=pd.Index(uniq, dtype=object))


def valid(*checks: str) -> str:
    """An SQL condition, true only where every check is (never NULL: typeof comes first)."""
    return " AND ".join(f"({c})" for c in checks) or "1"


def times_ok(start: str, end: str) -> str:
    return valid(NUMBER.format(c=start), NUMBER.format(c=end), f"{end} >= {start}")


def present(col: str) -> str:
    """A non-negative number in `col` (a device, a stream, a byte count)."""
    return valid(NUMBER.format(c=col), f"{col} >= 0")


def skipped(con: sqlite3.Connection, table: str, reasons: list[tuple[str, str]], where: str = "1"
            ) -> list[tuple[int, str]]:
    """(rowid, reason) of the rows failing a check: the first failing (condition, reason) names it."""
    case = " ".join(f"WHEN NOT ({cond}) THEN ?" for cond, _ in reasons)
    ok = valid(*(cond for cond, _ in reasons))
    q = f"SELECT rowid, CASE {case} END FROM {table} WHERE ({where}) AND NOT ({ok})"
    return [(int(r), str(why)) for r, why in con.execute(q, [why for _, why in reasons])]


def read_table(con: sqlite3.Connection, table: str, ints: dict[str, str], where: str, text: str | None = None,
               tick: Callable[[int], None] | None = None) -> Columns:
    """`ints` (name -> SQL expression, each an integer per row) and one optional `text` expression
    of the rows `where` holds, in rowid order. `tick(rows)` after each chunk (progress)."""
    (upper,) = con.execute(f"SELECT count(*) FROM {table}").fetchone()
    names = list(ints)
    out = {k: np.empty(upper, dtype=np.int64) for k in names}
    codes = np.empty(upper if text is not None else 0, dtype=np.int32)
    seen: dict[object, int] = {}
    sel = ", ".join([*(f"{e}" for e in ints.values()), *([text] if text is not None else [])])
    cur = con.execute(f"SELECT {sel} FROM {table} WHERE {where}")
    i, k = 0, len(names)
    while rows := cur.fetchmany(CHUNK_ROWS):
        m = len(rows)
        if text is None:
            block = np.array(rows, dtype=np.int64).reshape(m, k)
        else:  # mixed: one object block, its number columns cast at once, the text factorized
            obj = np.array(rows, dtype=object).reshape(m, k + 1)
            block = obj[:, :k].astype(np.int64)
            c, uniq = pd.factorize(obj[:, k], use_na_sentinel=False)
            glob = np.array([seen.setdefault(u, len(seen)) for u in uniq], dtype=np.int32)
            codes[i:i + m] = glob[c] if len(glob) else c
        for j, name in enumerate(names):
            out[name][i:i + m] = block[:, j]
        i += m
        if tick is not None:
            tick(m)
    cols = Columns({n: (a if i == upper else a[:i].copy()) for n, a in out.items()},
                   codes if i == len(codes) else codes[:i].copy(), list(seen))
    return cols

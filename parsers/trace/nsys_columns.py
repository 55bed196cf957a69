"""An Nsight Systems export's event tables read column-wise into numpy arrays. Pure: no printing.

    read_table(con, table, ints, where, text=None, tick=None) -> Columns
    iter_chunks(con, table, ints, where, tick=None, text=None) the same a chunk at a time, not held
    stream_tables(reader, specs)                               several tables' chunks in time order
    Strings(con, tables).texts(ids) -> {id: text}               StringIds, the ids asked for
    categorical(codes, labels), constant(value, n)            categoricals made from codes
    stack_parts(parts, schema, ranks, keys)                    the host tables' parts as one sorted frame

The stdlib sqlite3 driver hands rows over as Python tuples, an object per value: the number
columns skip them. Chunk by chunk of rowids, SQLite prints each number column as one string of
decimal numbers (group_concat, in C), which numpy parses in C into arrays allocated once for the
table (printf('%016x') hex, the first form, cost SQLite ~1.7x the plain integer-to-text). Only a
text column comes as Python strings (one per row, joined in the same query), factorized at once
into int32 codes. No pandas frame, no per-row Python object for a number. What SQL can
decide per row is decided there, in C:
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

import heapq
import sqlite3
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from gpuscope.schemas import typed_frame

CHUNK_ROWS = 1 << 16
NUMBER = "typeof({c}) IN ('integer', 'real')"
ROWID_MAX = 2**63 - 1
SEP, NULL_MARK = "\x1f", "\x1e"  # char(31) between a chunk's texts, char(30) for a NULL one


@dataclass
class Columns:
    """A table's kept rows: int64 columns by name, the text column's codes and distinct values."""

    ints: dict[str, np.ndarray]
    codes: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int32))
    texts: list[object] = field(default_factory=list)  # a text, or None / NaN for a NULL

    def __len__(self) -> int:
        return len(next(iter(self.ints.values()))) if self.ints else len(self.codes)

    def names(self, fallback: str) -> pd.Categorical:
        """The text column as a categorical (NULL text: `fallback`)."""
        cats = [fallback if t is None or t != t else str(t) for t in self.texts]  # (None or NaN: a NULL)
        uniq, inv = np.unique(np.asarray(cats, dtype=object), return_inverse=True) if cats else (np.zeros(0), [])
        remap = np.asarray(inv, dtype=np.int32)
        return pd.Categorical.from_codes(remap[self.codes] if len(remap) else self.codes,
                                         categories=pd.Index(uniq, dtype=object))


def valid(*checks: str) -> str:
    """An SQL condition, true only where every check is (never NULL: typeof comes first)."""
    return " AND ".join(f"({c})" for c in checks) or "1"


#: the longest event read, in ns (2**53: 104 days, exact in a float); a longer one is damage, and
#: beyond 2**63 its end - start would wrap negative in int64
SPAN_MAX_NS = 2**53


def times_ok(start: str, end: str) -> str:
    return valid(NUMBER.format(c=start), NUMBER.format(c=end), f"{end} >= {start}", f"{end} - {start} <= {SPAN_MAX_NS}")


#: the check every event table's rows pass: integer times, the end not before the start
TIMES = (times_ok("{start}", "{end}"), "no start/end, end before start or a span over 2**53 ns")


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


def _texts(con: sqlite3.Connection, joined: str | None, text: str, rows: str, bounds: tuple[int, int],
           m: int) -> np.ndarray:
    """A chunk's `m` texts (None where NULL), split from the one string SQLite joined them into
    (`rows`: FROM ... WHERE ... of the chunk, to read them one by one where a text holds the separator)."""
    parts = (joined or "").split(SEP)
    if len(parts) != m:  # a text holding the separator: the chunk's rows one by one
        return np.array([r[0] for r in con.execute(f"SELECT {text} {rows}", bounds)], dtype=object)
    out = np.array(parts, dtype=object)
    out[out == NULL_MARK] = None
    return out


def iter_chunks(con: sqlite3.Connection, table: str, ints: dict[str, str], where: str,
                tick: Callable[[int], None] | None = None, text: str | None = None,
                spans: list[tuple[int, int]] | None = None) -> Iterator[tuple[np.ndarray, np.ndarray | None]]:
    """(rows x len(ints) int64 block, the rows' `text` or None) per chunk of the rows `where`
    holds, in rowid order: a table read without holding it (`read_table` keeps the chunks).
    `spans`: each chunk's rowid range (first, last) appended to it before the chunk comes."""
    # each number column of a chunk as one string of decimal numbers that SQLite prints in C
    # (group_concat; NULL as 0, a real truncated, as the old hex printf('%016x') did) and numpy parses
    # in C: no Python object per value. printf('%016x') cost ~1.7x the plain integer-to-text.
    rows = f"FROM {table} WHERE rowid BETWEEN ? AND ? AND ({where})"
    # a column that is the rowid is printed only for a chunk with rows missing: where every rowid of
    # lo..hi came, they are lo..hi (~18% of the NVTX pass's SQLite time, the texts' table)
    exprs = list(ints.values())
    rowid_at = [j for j, e in enumerate(exprs) if e.strip() == "rowid"]
    at = [j for j in range(len(exprs)) if j not in rowid_at]  # (the columns printed)
    cols = [f"group_concat(ifnull(CAST(({exprs[j]}) AS INTEGER), 0), ',')" for j in at]
    # the texts in the same query (the chunk's rows found and checked once), joined at a separator
    cols += [f"group_concat(ifnull({text}, char(30)), char(31))"] if text is not None else []
    nums = f"SELECT count(*), {', '.join(cols)} {rows}"
    k = len(at)
    # (two subqueries: min() and max() in one SELECT scan the whole table, each alone is one seek)
    lo, top = con.execute(f"SELECT (SELECT min(rowid) FROM {table}), (SELECT max(rowid) FROM {table})").fetchone()
    while lo is not None:
        hi = min(lo + CHUNK_ROWS - 1, ROWID_MAX)  # (inclusive: a rowid of 2**63 - 1 is a rowid too)
        m, *strings = con.execute(nums, (lo, hi)).fetchone()
        if m:
            block = np.empty((m, len(ints)), dtype=np.int64)
            for j, v in zip(at, strings[:k], strict=True):
                block[:, j] = np.fromstring(v, dtype=np.int64, sep=",")
            if rowid_at:
                ids = np.arange(lo, hi + 1, dtype=np.int64) if m == hi - lo + 1 else np.fromstring(
                    con.execute(f"SELECT group_concat(rowid, ',') {rows}", (lo, hi)).fetchone()[0], dtype=np.int64, sep=",")
                for j in rowid_at:
                    block[:, j] = ids
            if spans is not None:
                spans.append((lo, hi))
            yield block, (_texts(con, strings[k], text, rows, (lo, hi), m) if text is not None else None)
            if tick is not None:
                tick(m)
        (lo,) = con.execute(f"SELECT min(rowid) FROM {table} WHERE rowid > ?", (hi,)).fetchone() \
            if hi < top else (None,)


@dataclass
class Stream:
    """One table streamed by `_Reader.streams`: fn(block, texts) per chunk of `ints` (one named
    "start": the chunks' order across tables), rows passing `checks` and `where`."""

    table: str
    ints: dict[str, str]
    checks: list[tuple[str, str]]
    fn: Any
    where: str = "1"
    expected: int | Callable[[int], int] | None = None  # (or of the rows passed: _Reader._account)
    text: str | None = None
    spans: list[tuple[int, int]] | None = None


def stream_tables(r: Any, specs: list[Stream]) -> list[int]:
    """Several tables read at once without keeping their rows (`r`: nsys_sqlite's reader: its con,
    sub, _tick, _account): each Stream's fn(block, texts) per chunk (rows x ints, int64; texts or
    None), in time order across the tables (the pending chunk whose earliest `start` is least
    next): the host cover grows at its end. The rows passed, per spec."""
    its: list[tuple[Any, list, int]] = []
    heap: list[tuple[int, int, Any]] = []
    for sp in specs:
        conds = [(r.sub(sp.table, c), f"{sp.table}: {why}") for c, why in sp.checks]
        its.append((iter_chunks(r.con, sp.table, {k: r.sub(sp.table, e) for k, e in sp.ints.items()},
                                valid(r.sub(sp.table, sp.where), *(c for c, _ in conds)), r._tick,
                                r.sub(sp.table, sp.text) if sp.text else None, sp.spans), conds,
                    list(sp.ints).index("start")))
    got = [0] * len(specs)

    def pull(i: int) -> None:
        it, _, col = its[i]
        nxt = next(it, None)
        if nxt is not None:
            heapq.heappush(heap, (int(nxt[0][:, col].min()), i, nxt))

    for i in range(len(specs)):
        pull(i)
    while heap:
        _, i, (block, texts) = heapq.heappop(heap)
        specs[i].fn(block, texts)
        got[i] += len(block)
        del block, texts
        pull(i)
    for sp, (_, conds, _), n in zip(specs, its, got, strict=True):
        r._account(sp.table, conds, sp.where, n, sp.expected)
    return got


#: a chunk's columns (name -> its rows x 1 int64 column) -> the columns kept (name -> array)
Derive = Callable[[dict[str, np.ndarray]], dict[str, np.ndarray]]


def read_table(con: sqlite3.Connection, table: str, ints: dict[str, str], where: str, text: str | None = None,
               tick: Callable[[int], None] | None = None, derive: Derive | None = None,
               rows: int | None = None) -> Columns:
    """`ints` (name -> SQL expression, each an integer per row) and one optional `text` expression
    of the rows `where` holds, in rowid order. `tick(rows)` after each chunk (progress).
    `derive`: what is kept of each chunk's int64 columns (the columns the frame holds, made a
    chunk at a time: a table's raw int64 columns are never all held at once), in `Columns.ints`.
    `rows`: the most rows `where` can hold, where the caller knows it (else the table's count:
    count(*) walks every page of the table, ~2 s of the NVTX table at 10M kernels)."""
    upper = int(con.execute(f"SELECT count(*) FROM {table}").fetchone()[0]) if rows is None else rows
    names = list(ints)
    out: dict[str, np.ndarray] = {} if derive is not None else {n: np.empty(upper, dtype=np.int64) for n in names}
    codes = np.empty(upper if text is not None else 0, dtype=np.int32)
    seen: dict[object, int] = {}
    i = 0
    for block, texts in iter_chunks(con, table, ints, where, tick, text):
        m = len(block)
        got = derive({n: block[:, j] for j, n in enumerate(names)}) if derive is not None else \
            {n: block[:, j] for j, n in enumerate(names)}
        for name, v in got.items():
            if name not in out:  # (allocated for the whole table at the first chunk, in the chunk's dtype)
                out[name] = np.empty(upper, dtype=v.dtype)
            out[name][i:i + m] = v
        if texts is not None:
            c, uniq = pd.factorize(texts, use_na_sentinel=False)
            glob = np.array([seen.setdefault(u, len(seen)) for u in uniq], dtype=np.int32)
            codes[i:i + m] = glob[c] if len(glob) else c
        i += m
    if derive is not None and not out:  # (no row: the derived columns' dtypes from an empty chunk)
        out = {n: np.asarray(v)[:0].copy() for n, v in derive({n: np.zeros(0, dtype=np.int64) for n in names}).items()}
    return Columns({n: (a if i == upper else a[:i].copy()) for n, a in out.items()},
                   codes if i == len(codes) else codes[:i].copy(), list(seen))


class Strings:
    """StringIds, looked up by the ids asked for (a reader asks once per distinct id)."""

    def __init__(self, con: sqlite3.Connection, tables: set[str]) -> None:
        self.con, self.ok = con, "StringIds" in tables

    def texts(self, ids: list[int]) -> dict[int, str]:
        """id -> its text, for the ids found (none without a StringIds table; a negative id: none)."""
        got: dict[int, str] = {}
        want = [i for i in ids if i >= 0] if self.ok else []
        for k in range(0, len(want), 900):  # SQLite's bound-parameter limit
            chunk = want[k:k + 900]
            q = f"SELECT id, value FROM StringIds WHERE id IN ({','.join('?' * len(chunk))})"
            got.update({int(i): str(v) for i, v in self.con.execute(q, chunk)})
        return got


def categorical(codes: np.ndarray, labels: list[str]) -> pd.Categorical:
    """codes into `labels` (which may repeat: equal labels become one category)."""
    inv, uniq = pd.factorize(np.asarray(labels, dtype=object), sort=False)
    return pd.Categorical.from_codes(inv[codes] if len(inv) else codes, categories=pd.Index(uniq, dtype=object))


def constant(value: str, n: int) -> pd.Categorical:
    return pd.Categorical.from_codes(np.zeros(n, dtype=np.int8), categories=pd.Index([value], dtype=object))


def used_only(codes: np.ndarray, categories: pd.Index) -> pd.Categorical:
    """A categorical of only the categories its rows use, in sorted order (as pd.Categorical of the
    values makes them, the Kineto reader's): a part's categoricals keep every name of their table
    (emit_nvtx's raw "aten::mm, op_id = 345" texts, one per operator call, beside the operator
    names), which value_counts and groupby(observed=False) would list with zero rows."""
    used = np.zeros(len(categories), dtype=bool)
    used[codes] = True
    kept = np.flatnonzero(used)
    by_name = kept[np.argsort(np.asarray(categories, dtype=object)[kept].astype(str), kind="stable")]
    remap = np.full(len(categories), -1, dtype=np.int64)
    remap[by_name] = np.arange(len(by_name))
    names = [str(c) for c in np.asarray(categories, dtype=object)[by_name]]
    return pd.Categorical.from_codes(remap[codes], categories=pd.Index(names))  # (str, as pandas infers it)


def rank_of(pid: np.ndarray, ranks: dict[int, int]) -> np.ndarray:
    keys = np.array(sorted(ranks), dtype=np.int64)
    vals = np.array([ranks[int(k)] for k in keys], dtype=np.int64)
    return vals[np.searchsorted(keys, pid)] if len(keys) else np.zeros(len(pid), dtype=np.int64)


def narrowest(arrays: list[np.ndarray]) -> np.dtype:
    """The narrowest signed integer dtype holding every value of `arrays` (int64 at most)."""
    lo = min((int(a.min()) for a in arrays if a.size), default=0)
    hi = max((int(a.max()) for a in arrays if a.size), default=0)
    for dt in (np.int8, np.int16, np.int32):
        if np.iinfo(dt).min <= lo and hi <= np.iinfo(dt).max:
            return np.dtype(dt)
    return np.dtype(np.int64)


def stack_parts(parts: list[dict[str, Any]], schema: dict[str, str], ranks: dict[int, int], keys: list[str]
                ) -> pd.DataFrame:
    """The parts as one frame of `schema`, ranks mapped, sorted by `keys` (stable: table order
    among equals), one column at a time (each part's column freed once stacked). (The GPU frame is
    built in place instead: parsers/trace/nsys_gpu.py.)"""
    if not parts:
        return typed_frame({}, schema)
    for p in parts:
        p["rank"] = rank_of(p["rank"], ranks)
    sort_cols = [np.concatenate([np.asarray(p[k], dtype=schema[k]) for p in parts]) for k in keys]
    order = np.lexsort(sort_cols[::-1])
    del sort_cols
    cols: dict[str, Any] = {}
    for name, dtype in schema.items():
        vals = [p.pop(name) for p in parts]
        if dtype == "category":
            u = pd.api.types.union_categoricals(vals)
            cols[name] = used_only(np.asarray(u.codes)[order], u.categories)
        else:
            cols[name] = np.concatenate([np.asarray(v, dtype=dtype) for v in vals])[order]
    # every column already of its schema dtype, all of one length: the frame is made of them as they
    # are (schemas.typed_frame first builds its categorical columns as empty object ones, so pandas
    # aligns, copying every column: 0.8x the frame's size more at the peak)
    return pd.DataFrame(cols, columns=list(schema), copy=False)

"""An Nsight Systems export's GPU tables (kernels, copies, memsets) read into the GPU frame in
place: no table's parts held beside the frame, no sort of the whole frame. Pure: no printing.

    GpuRead(reader, tables, name_of, copy_of, memset_of).read() -> self
                                                                the tables read together
    .pkeys() -> set[int]                                        the processes with GPU rows
    .frame(ranks, narrow) -> (DataFrame, [(rank, device)])      the frame of TRACE_GPU_SCHEMA

The frame is sorted by (rank, device, start), a start's ties in table order (kernels, copies,
memsets), then in rowid order: what a stable sort of the tables stacked in that order gives.
Rank and device are constant over a (process, device) bucket, so each bucket holds only its
other columns, written in their final order as the rows come:
- the three tables are read chunk by chunk together (the table whose last start is least is
  read next); a row is written once no unread row can come before it (every table's rows come
  in start order in the exports seen: its start below every table's last start read). A table
  out of order is not an error: the buckets it reached are sorted once at the end (a stable sort
  by start, then table), as the whole frame was;
- each bucket's columns are arrays of the tables' total length, never touched beyond the rows
  written (the untouched pages take no memory, only address space: many buckets reserve many
  times the tables' length, docs/BENCHMARKS.md); integer columns and categorical codes in the
  narrowest dtype their values have needed so far (widened, copying the rows written, when a
  chunk needs more: a correlation id past 127, then past 32767);
- at the end every column is the largest bucket's array, the other buckets' rows copied in at
  their offsets (each bucket's freed once copied), rank and device filled per bucket; the
  categoricals keep their used names only, in sorted order (nsys_columns.used_only's form).
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from gpuscope.allocator import give_back
from gpuscope.parsers.trace.nsys_columns import iter_chunks, narrowest, valid
from gpuscope.schemas import TRACE_GPU_SCHEMA

CODES = ("kind", "name", "direction", "host_memory")  # categorical columns, held as codes
INTS = ("stream", "correlation")
FLOATS = ("ts_us", "dur_us", "bytes")
HELD = (*INTS, *CODES, *FLOATS)
MOVE_ROWS = 1 << 20  # rows moved at a time within one array (its overlap copied in steps this size)


@dataclass
class Table:
    """One GPU table: its kind, SQL columns and checks; while read, its last start and waiting rows."""

    name: str
    kind: str
    ints: dict[str, str]
    checks: list[tuple[str, str]]
    conds: list[tuple[str, str]] = field(default_factory=list)
    last: float = -np.inf  # the start (us) of the last row read
    pending: dict[str, np.ndarray] | None = None
    got: int = 0


class Labels:
    """Texts as int codes, in the order first seen."""

    def __init__(self) -> None:
        self.code: dict[str, int] = {}

    def __call__(self, text: str) -> int:
        return self.code.setdefault(text, len(self.code))

    def names(self) -> list[str]:
        return list(self.code)


class Bucket:
    """One (process, device)'s rows: HELD columns of `cap` rows, `n` written."""

    def __init__(self, pkey: int, device: int, cap: int) -> None:
        self.pkey, self.device, self.n, self.cap = pkey, device, 0, cap
        self.cols: dict[str, np.ndarray] = {c: np.empty(cap, dtype=np.float64 if c in FLOATS else np.int8)
                                            for c in HELD}

    def put(self, rows: dict[str, np.ndarray]) -> None:
        m = len(rows["ts_us"])
        for c, v in rows.items():
            a = self.cols[c]
            if c not in FLOATS and m:
                need = narrowest([v])
                if need.itemsize > a.dtype.itemsize:  # (widened: the rows written so far copied once)
                    wide = np.empty(self.cap, dtype=need)
                    wide[:self.n] = a[:self.n]
                    self.cols[c] = a = wide
            a[self.n:self.n + m] = v
        self.n += m


def factorize_rows(*cols: np.ndarray) -> tuple[np.ndarray, list[tuple[int, ...]]]:
    """Codes of the rows' distinct tuples of `cols` (int arrays of one length), in the order first
    seen, and the tuples (each column factorized alone, their codes combined: no object per row;
    a chunk's: the product of the columns' distinct counts stays far below 2**63)."""
    codes = np.zeros(len(cols[0]), dtype=np.int64)
    uniqs = []
    for c in cols:
        k, u = pd.factorize(c, sort=False)
        codes = codes * max(len(u), 1) + k
        uniqs.append(u)
    codes, keys = pd.factorize(codes, sort=False)
    out = []
    for key in keys:
        parts = []
        for u in uniqs[::-1]:
            key, j = divmod(int(key), max(len(u), 1))
            parts.append(int(u[j]))
        out.append(tuple(parts[::-1]))
    return codes, out


def _cut(rows: dict[str, np.ndarray], k: int) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    return {c: v[:k] for c, v in rows.items()}, {c: v[k:] for c, v in rows.items()}


class GpuRead:
    """The GPU tables of one export (`reader`: nsys_sqlite._Reader) read into buckets."""

    def __init__(self, reader: Any, tables: list[Table], name_of: Any, copy_of: Any, memset_of: Any) -> None:
        self.r, self.tables = reader, tables
        self.labels = {c: Labels() for c in CODES}
        for t in tables:  # (kind codes in table order: the ties' order, and the fix-up sort's second key)
            self.labels["kind"](t.kind)
        self.name_of, self.copy_of, self.memset_of = name_of, copy_of, memset_of
        self.buckets: list[Bucket] = []
        self.index: dict[tuple[int, int], int] = {}
        self.cap = 0
        self.out_of_order = False  # a table's row started before one read before it

    # -- reading ---------------------------------------------------------------------------
    def read(self) -> GpuRead:
        r = self.r
        its = {}
        for t in self.tables:
            t.conds = [(r.sub(t.name, c), f"{t.name}: {why}") for c, why in t.checks]
            self.cap += r.rows(t.name)
            its[t.name] = iter_chunks(r.con, t.name, {k: r.sub(t.name, e) for k, e in t.ints.items()},
                                      valid(*(c for c, _ in t.conds)), r._tick)
        live: list[tuple[float, int, Table]] = []
        for i, t in enumerate(self.tables):
            if self._pull(t, its[t.name]):
                heapq.heappush(live, (t.last, i, t))
        while live:
            _, i, t = heapq.heappop(live)
            if self._pull(t, its[t.name]):
                heapq.heappush(live, (t.last, i, t))
            self._emit(live[0][0] if live else np.inf)
        for t in self.tables:
            r._account(t.name, t.conds, "1", t.got, None)
        give_back()  # (the chunks' leavings: the frame's copies start from what is held)
        return self

    def _pull(self, t: Table, it: Any) -> bool:
        """The table's next chunk into its pending rows; False once it has none."""
        got = next(it, None)
        if got is None:
            return False
        block = got[0]
        x = {n: block[:, j] for j, n in enumerate(t.ints)}
        rows = self._columns(t, x)
        t.got += len(block)
        if len(rows["ts_us"]) and (rows["ts_us"][0] < t.last or bool((np.diff(rows["ts_us"]) < 0).any())):
            self.out_of_order = True  # (every bucket checked, and sorted where it must be, at the end)
        t.last = max(t.last, float(rows["ts_us"][-1]))
        t.pending = rows if t.pending is None else {c: np.concatenate([t.pending[c], v]) for c, v in rows.items()}
        return True

    def _columns(self, t: Table, x: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """A chunk's frame columns (ints and codes in the narrowest dtype the chunk's values fit, float64
        times), and its rows' bucket: nothing of the chunk's int64 block is kept (its views would
        keep all of it while the rows wait)."""
        m = len(x["start"])
        rows = {"bucket": self._bucket_ids(x["pkey"], x["device"]),
                "ts_us": x["start"] / 1e3, "dur_us": (x["end"] - x["start"]) / 1e3,
                "stream": x["stream"], "correlation": x["correlation"],
                "kind": np.full(m, self.labels["kind"].code[t.kind], dtype=np.int64)}
        if t.kind == "kernel":
            rows["name"] = self.name_of(x["name"], self.labels)
            rows["bytes"] = np.full(m, np.nan)
            rows["direction"] = np.full(m, self.labels["direction"](""), dtype=np.int64)
            rows["host_memory"] = np.full(m, self.labels["host_memory"](""), dtype=np.int64)
        else:
            rows["bytes"] = x["bytes"].astype(np.float64)
            fn = self.copy_of if t.kind == "memcpy" else self.memset_of
            rows["direction"], rows["host_memory"], rows["name"] = fn(x, self.labels)
        for c in ("bucket", *INTS, *CODES):
            rows[c] = rows[c].astype(narrowest([rows[c]]))
        return rows

    def _bucket_ids(self, pkey: np.ndarray, device: np.ndarray) -> np.ndarray:
        """Each row's bucket number (buckets made as new (process, device) pairs come)."""
        if len(pkey) and pkey.min() == pkey.max() and device.min() == device.max():
            return np.full(len(pkey), self._bucket(int(pkey[0]), int(device[0])), dtype=np.int64)
        codes, uniq = factorize_rows(pkey, device)
        lut = np.array([self._bucket(p, d) for p, d in uniq], dtype=np.int64)
        return lut[codes] if len(lut) else codes.astype(np.int64)

    def _bucket(self, pkey: int, device: int) -> int:
        i = self.index.get((pkey, device))
        if i is None:
            i = self.index[(pkey, device)] = len(self.buckets)
            self.buckets.append(Bucket(pkey, device, self.cap))
        return i

    def _emit(self, frontier: float) -> None:
        """The pending rows starting before `frontier` (every table's, in table order) written
        to their buckets, each bucket's sorted by start (stable: table order, then rowid, among ties)."""
        parts = []
        for t in self.tables:
            if t.pending is None:
                continue
            ts = t.pending["ts_us"]
            late = ts >= frontier
            k = int(np.argmax(late)) if bool(late.any()) else len(ts)  # (a prefix: rowid order kept)
            if k:
                now, rest = _cut(t.pending, k)
                parts.append(now)
                t.pending = rest if len(rest["ts_us"]) else None
        if not parts:
            return
        batch = {c: np.concatenate([p[c] for p in parts]) for c in parts[0]}
        order = np.lexsort((batch["ts_us"], batch["bucket"]))
        bids = batch.pop("bucket")[order]
        cuts = np.flatnonzero(np.diff(bids)) + 1
        starts = np.concatenate([[0], cuts])
        ends = np.concatenate([cuts, [len(bids)]])
        for s, e in zip(starts, ends, strict=True):
            idx = order[s:e]
            self.buckets[int(bids[s])].put({c: v[idx] for c, v in batch.items()})

    # -- the frame -------------------------------------------------------------------------
    def pkeys(self) -> set[int]:
        return {b.pkey for b in self.buckets if b.n}

    def frame(self, ranks: dict[int, int], narrow: tuple[str, ...]) -> tuple[pd.DataFrame, list[tuple[int, int]]]:
        """The frame of TRACE_GPU_SCHEMA (rank: `ranks` of each bucket's process); the (rank, device)
        pairs with rows, in the frame's order. Each bucket's arrays are freed as they are copied."""
        if self.out_of_order:
            for b in self.buckets:
                _sort(b)
        order = sorted((b for b in self.buckets if b.n), key=lambda b: (ranks[b.pkey], b.device))
        self.buckets, self.index = [], {}
        total = sum(b.n for b in order)
        offs = np.cumsum([0] + [b.n for b in order])
        host = max(range(len(order)), key=lambda i: order[i].n) if order else -1
        cols: dict[str, Any] = {}
        for name, dtype in TRACE_GPU_SCHEMA.items():
            if name in ("rank", "device"):
                vals = [ranks[b.pkey] if name == "rank" else b.device for b in order]
                dt = narrowest([np.array(vals, dtype=np.int64)]) if name in narrow else np.dtype(np.int64)
                col = np.empty(total, dtype=dt)
                for i, v in enumerate(vals):
                    col[offs[i]:offs[i + 1]] = v
                cols[name] = col
            elif name == "trace_gbs":
                cols[name] = np.broadcast_to(np.array(np.nan, dtype=np.float64), (total,))
            elif name in CODES:
                cols[name] = self._categorical(name, _joined(order, name, offs, host, None))
            else:
                dt = np.dtype(dtype) if name in FLOATS or name not in narrow else \
                    max((b.cols[name].dtype for b in order), key=lambda d: d.itemsize, default=np.dtype(np.int8))
                cols[name] = _joined(order, name, offs, host, dt)
        pairs = [(ranks[b.pkey], b.device) for b in order]
        return pd.DataFrame(cols, columns=list(TRACE_GPU_SCHEMA), copy=False), pairs

    def _categorical(self, name: str, codes: np.ndarray) -> pd.Categorical:
        """The codes' used names only, in sorted order (nsys_columns.used_only, remapped in place)."""
        labels = np.asarray(self.labels[name].names() or [""], dtype=object)
        used = np.zeros(len(labels), dtype=bool)
        used[codes] = True
        kept = np.flatnonzero(used)
        by_name = kept[np.argsort(labels[kept].astype(str), kind="stable")]
        remap = np.full(len(labels), -1, dtype=codes.dtype)
        remap[by_name] = np.arange(len(by_name), dtype=codes.dtype)
        for i in range(0, len(codes), MOVE_ROWS):
            codes[i:i + MOVE_ROWS] = remap[codes[i:i + MOVE_ROWS]]
        names = [str(c) for c in labels[by_name]]
        return pd.Categorical.from_codes(codes, categories=pd.Index(names))  # (str, as pandas infers it)


def _joined(order: list[Bucket], name: str, offs: np.ndarray, host: int, dtype: np.dtype | None) -> np.ndarray:
    """One column of every bucket in `order`, at its offsets, in the largest bucket's (`host`) array
    where it fits its dtype (the others copied in, each freed once copied); `dtype` None: the
    widest of the buckets' (codes)."""
    total = int(offs[-1])
    if not order:
        return np.empty(0, dtype=dtype or np.int8)
    if dtype is None:
        dtype = max((b.cols[name].dtype for b in order), key=lambda d: d.itemsize)
    base = order[host].cols.pop(name)
    if base.dtype != dtype:  # (a wider dtype: the host's rows copied into a new array)
        wide = np.empty(order[host].cap, dtype=dtype)
        wide[offs[host]:offs[host + 1]] = base[:order[host].n]
        base = wide
    else:
        _shift(base, order[host].n, int(offs[host]))
    for i, b in enumerate(order):
        if i != host:
            base[offs[i]:offs[i + 1]] = b.cols.pop(name)[:b.n]
    if len(order) > 1:
        give_back()  # (the other buckets' arrays of this column, freed: under 32 MB they sat on the heap)
    base.resize(total, refcheck=False)  # (in place: the rows beyond were never touched)
    return base


def _shift(a: np.ndarray, n: int, off: int) -> None:
    """a[off:off + n] = a[:n], in steps from the end (no copy of the whole overlap)."""
    if not off:
        return
    for e in range(n, 0, -MOVE_ROWS):
        s = max(0, e - MOVE_ROWS)
        a[s + off:e + off] = a[s:e]


def _sort(b: Bucket) -> None:
    """A bucket's rows sorted by (start, table), stable: where a table's rows came out of start order."""
    n = b.n
    ts, kind = b.cols["ts_us"][:n], b.cols["kind"][:n]
    if n < 2 or bool(((ts[1:] > ts[:-1]) | ((ts[1:] == ts[:-1]) & (kind[1:] >= kind[:-1]))).all()):
        return
    order = np.lexsort((kind, ts))
    for a in b.cols.values():
        a[:n] = a[:n][order]

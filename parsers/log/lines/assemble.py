"""The Scan of a `lines` log read through parsers/log/lines/replay.py: the rows the Python reader
read (Scans, in line order) and the rows replayed in numpy (`Replayed`: one plan's reading
of some lines of one shape), put in line order with one copy of each column."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from gpuscope.arrays import distinct
from gpuscope.parsers.log import scan as sc
from gpuscope.parsers.log.lines.read import SRC_LINES


@dataclass
class Replayed:
    """Lines one reading replays: their numbers, the reading's columns at `pos`, their times."""

    ln: np.ndarray
    rd: object  # vectorised.Reading
    pos: np.ndarray
    ts: np.ndarray
    aux: np.ndarray


def _starts(counts: np.ndarray) -> np.ndarray:
    out = np.zeros(len(counts), dtype=np.int64)
    if len(counts) > 1:
        np.cumsum(counts[:-1], out=out[1:])
    return out


def assemble(read: list[sc.Scan], replayed: list[Replayed], tables: sc.Tables) -> sc.Scan:
    """One Scan, rows in line order (stable: a line read as pieces keeps their order): each
    source's columns written once, straight to their place in the result (no concatenation
    gathered again: a million lines' columns exist once beside their sources). `replayed` is
    consumed (emptied as its readings are placed: each one's arrays are freed once copied,
    never all of them beside the whole result)."""
    e = sc.Scan.concat(read, tables)
    if not replayed:
        return e
    ne = len(e.meta)
    inv = _ranks(np.concatenate([e.meta[:, 0], *(r.ln for r in replayed)]))
    n = len(inv)
    e_q = np.bincount(e.qrow, minlength=ne) if len(e.qrow) else np.zeros(ne, dtype=np.int64)
    # every line the same number of values and of quantities: their places are rows of 2-D views
    per_row = _per_row(e, e_q, replayed)
    vstart: np.ndarray | None = None
    qstart: np.ndarray | None = None
    if per_row is not None:
        nv, nq = n * per_row[0], n * per_row[1]
    else:
        counts, qcounts = np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64)
        counts[inv] = np.concatenate([e.meta[:, 6], *(np.full(len(r.ln), len(_rd(r).names)) for r in replayed)])
        qcounts[inv] = np.concatenate([e_q, *(np.full(len(r.ln), len(_rd(r).qnames)) for r in replayed)])
        vstart, qstart = _starts(counts), _starts(qcounts)
        nv, nq = int(counts.sum()), int(qcounts.sum())
        del counts, qcounts
    del e_q
    out = _empty(e, replayed, n, nv, nq)
    filled = _fill_shared(out, replayed, tables, per_row, n) if per_row is not None else (False, False)
    _place_read(out, e, inv[:ne], _first_places(vstart, inv[:ne], per_row, 0),
                _first_places(qstart, inv[:ne], per_row, 1))
    row, slot = ne, len(e.ts)
    out.ts[:slot] = e.ts
    replayed.reverse()  # (popped from the end, in order)
    while replayed:
        r = replayed.pop()
        m = len(r.ln)
        _place_replayed(out, r, inv[row:row + m], slot, vstart, qstart, tables, per_row, filled)
        out.ts[slot:slot + m] = r.ts
        row, slot = row + m, slot + m
        del r
    out.held = (inv[e.held[0]], e.held[1])
    out.timeline = e.timeline
    out.skip_line, out.skip_reason, out.skip_text = e.skip_line, e.skip_reason, e.skip_text
    out.timing_lines = e.timing_lines + row - ne
    out.notes = e.notes
    return out


def _rd(part: Replayed) -> Any:
    return part.rd


def _ranks(values: np.ndarray) -> np.ndarray:
    """Each element's place in the stable sort of x (int64): where x's values are distinct and
    dense (line numbers, each line read once), counted (a bincount and a running sum) instead of
    sorted; else from argsort."""
    n = len(values)
    if n:
        lo, hi = int(values.min()), int(values.max())
        if hi - lo < 4 * n + 1024:
            seen = np.bincount(values - lo, minlength=hi - lo + 1)
            if int(seen.max()) <= 1:
                return (np.cumsum(seen) - 1)[values - lo]
    order = np.argsort(values, kind="stable")
    inv = np.empty(n, dtype=np.int64)
    inv[order] = np.arange(n)
    return inv


def _per_row(read_scan: sc.Scan, read_quantity_rows: np.ndarray, replayed: list[Replayed]) -> tuple[int, int] | None:
    """(values, quantities) of every line where all lines have as many of each, else None."""
    ks = set(distinct(read_scan.meta[:, 6]).tolist()) | {len(_rd(r).names) for r in replayed}
    qs = set(distinct(read_quantity_rows).tolist()) | {len(_rd(r).qnames) for r in replayed}
    return (int(ks.pop()), int(qs.pop())) if len(ks) == 1 and len(qs) == 1 else None


def _fill_shared(out: sc.Scan, replayed: list[Replayed], tables: sc.Tables, per_row: tuple[int, int],
                 row_count: int) -> tuple[bool, bool]:
    """Where every line has as many values and quantities (per_row): each line's quantities
    are its own (qrow: 0, 0, 1, 1, ...), written once here; where every reading has the same
    names and quantity names (a log of one kind of line, its shapes differing in digits only),
    their codes as whole columns, and where every reading has the same rounding, that too, before
    any row is placed (the Python reader's rows then overwrite theirs). Returns which of the
    two were filled (the readings' rows then skip them)."""
    k, q = per_row
    if q:
        out.qrow.reshape(-1, q)[:] = np.arange(row_count)[:, None]
    if not replayed:
        return False, False
    first: Any = replayed[0].rd
    names = all(_rd(r).names == first.names and _rd(r).qnames == first.qnames for r in replayed)
    if names and k:
        out.codes.reshape(-1, k)[:] = _codes(tables.names, first.names, out.codes)
    if names and q:
        out.qcodes.reshape(-1, q)[:] = _codes(tables.qnames, first.qnames, out.qcodes)
    tol = all(_rd(r).tol == first.tol for r in replayed)
    if tol:
        out.tol[:] = first.tol
    return names, tol


def _codes(table: Any, names: list[str], like: np.ndarray) -> np.ndarray:
    """A reading's names as codes of the log's table, in the dtype of the column `like`."""
    return np.asarray([table.code(x) for x in names], dtype=like.dtype)


def _first_places(start: np.ndarray | None, at: np.ndarray, per_row: tuple[int, int] | None, which: int) -> np.ndarray:
    """Where the values (which 0) or quantities (1) of the rows at `at` begin: start[at], or at x
    how many each row has where every row has as many (no start array made)."""
    if start is not None:
        return start[at]
    assert per_row is not None
    return at * per_row[which]


def _empty(read_scan: sc.Scan, replayed: list[Replayed], row_count: int, value_count: int, quantity_count: int) -> sc.Scan:
    """The result's columns, allocated once (the dtypes the concatenation of the sources has)."""
    def dt(*arrays: np.ndarray) -> np.dtype:
        return np.result_type(*(a.dtype for a in arrays))

    rds: list[Any] = [r.rd for r in replayed]
    out = sc.Scan()
    out.final, out.times, out.tables = True, None, read_scan.tables
    out.meta = np.empty((row_count, 8), dtype=_meta_dtype(read_scan, replayed, row_count))
    out.values = np.empty(value_count, dtype=dt(read_scan.values, *(rd.values for rd in rds)))
    out.codes = np.empty(value_count, dtype=read_scan.codes.dtype)
    out.aux = np.empty(row_count, dtype=dt(read_scan.aux, *(r.aux for r in replayed)))
    out.tol = np.empty(row_count, dtype=np.float64)
    out.ts = np.empty(len(read_scan.ts) + sum(len(r.ts) for r in replayed), dtype=dt(read_scan.ts, *(r.ts for r in replayed)))
    out.qrow = np.empty(quantity_count, dtype=np.int64)
    out.qcodes = np.empty(quantity_count, dtype=read_scan.qcodes.dtype)
    out.qvalues = np.empty(quantity_count, dtype=dt(read_scan.qvalues, *(rd.qvalues for rd in rds)))
    return out


I32 = np.iinfo(np.int32)


def _meta_dtype(read_scan: sc.Scan, replayed: list[Replayed], row_count: int) -> np.dtype:
    """int32 where every number of the meta fits (line numbers, slots and counts of any log
    that fits in memory; workers and partitions as printed, checked): half the table's 64
    bytes a line; else the read rows' dtype."""
    def fits(column: np.ndarray) -> bool:
        return not len(column) or (I32.min <= int(column.min()) and int(column.max()) <= I32.max)

    if read_scan.meta.dtype.itemsize <= 4 or (row_count + len(read_scan.ts) + sum(len(r.ln) for r in replayed) <= I32.max
                                      and fits(read_scan.meta) and all(fits(r.ln) for r in replayed)):
        return np.dtype(np.int32)
    return read_scan.meta.dtype


def _place_read(out: sc.Scan, read_scan: sc.Scan, at: np.ndarray, vfirst: np.ndarray, qfirst: np.ndarray) -> None:
    """The Python reader's rows (at: their places; vfirst, qfirst: where their values and
    quantities begin) and their values and quantities."""
    if not len(at):
        return
    out.meta[at] = read_scan.meta
    out.aux[at] = read_scan.aux
    out.tol[at] = read_scan.tol
    counts = read_scan.meta[:, 6]
    dest = np.repeat(vfirst - _starts(counts), counts) + np.arange(int(counts.sum()))
    out.values[dest] = read_scan.values
    out.codes[dest] = read_scan.codes
    if len(read_scan.qrow):
        o = np.argsort(read_scan.qrow, kind="stable")  # (in row order already: then the identity)
        qr = read_scan.qrow[o]
        first = np.concatenate(([0], np.flatnonzero(qr[1:] != qr[:-1]) + 1))
        rank = np.arange(len(qr)) - np.repeat(first, np.diff(np.concatenate((first, [len(qr)]))))
        qdest = qfirst[qr] + rank
        out.qrow[qdest] = at[qr]
        out.qcodes[qdest] = read_scan.qcodes[o]
        out.qvalues[qdest] = read_scan.qvalues[o]


def _place_replayed(out: sc.Scan, part: Replayed, at: np.ndarray, slot: int, vstart: np.ndarray | None,
                    qstart: np.ndarray | None, tables: sc.Tables, per_row: tuple[int, int] | None = None,
                    filled: tuple[bool, bool] = (False, False)) -> None:
    """One reading's lines (at: their places; their times at slots slot, slot + 1, ...). The
    readings of one chunk interleave (one per shape of its lines), so each is scattered: its
    meta rows built as one block and placed row by row (`_put`: one pass, not one per column),
    and where every line of the result has the same number of values and of quantities
    (`per_row`), those are rows of 2-D views too (their rows already numbered by _fill_shared;
    `filled`: whether their codes, their rounding are already there)."""
    rd: Any = part.rd
    m, k, nq = len(part.ln), len(rd.names), len(rd.qnames)
    blk = np.empty((m, 8), dtype=out.meta.dtype)
    blk[:, 0] = part.ln
    blk[:, 1] = np.arange(slot, slot + m)
    blk[:, 2] = sc.K_GPU
    blk[:, 3:6] = -1
    blk[:, 6] = k
    blk[:, 7] = SRC_LINES
    at = np.ascontiguousarray(at, dtype=np.int64)
    _put(out.meta, at, blk)
    del blk
    _put(out.aux, at, np.asarray(part.aux))
    if not filled[1]:
        _put(out.tol, at, np.asarray(rd.tol, dtype=out.tol.dtype))
    pos = np.asarray(part.pos)
    if k:
        if per_row is not None:
            _put(out.values.reshape(-1, k), at, rd.values, pos)
            if not filled[0]:
                codes = _codes(tables.names, rd.names, out.codes)
                _put(out.codes.reshape(-1, k), at, codes.reshape(1, k))
        else:
            assert vstart is not None
            dest = vstart[at][:, None] + np.arange(k)
            out.values[dest] = rd.values[pos]
            out.codes[dest] = _codes(tables.names, rd.names, out.codes)
    if nq:
        if per_row is not None:
            if not filled[0]:
                qcodes = _codes(tables.qnames, rd.qnames, out.qcodes)
                _put(out.qcodes.reshape(-1, nq), at, qcodes.reshape(1, nq))
            _put(out.qvalues.reshape(-1, nq), at, rd.qvalues, pos)
        else:
            assert qstart is not None
            qdest = qstart[at][:, None] + np.arange(nq)
            out.qrow[qdest] = at[:, None]
            out.qcodes[qdest] = _codes(tables.qnames, rd.qnames, out.qcodes)
            out.qvalues[qdest] = rd.qvalues[pos]


def _put(destination: np.ndarray, at: np.ndarray, source: np.ndarray, positions: np.ndarray | None = None) -> None:
    """dst[at] = src[pos] (src itself without pos; a src of one row goes to every row at):
    rows of a 1-D or 2-D array, placed by the compiled scanner's place_rows where it is built
    and both arrays are contiguous of one dtype (numpy's fancy assignment walks the index row
    by row, ~100 ns a row), else by numpy."""
    if source.ndim == 0:  # (one number for every row: a reading's rounding)
        source = source.reshape((1,) * destination.ndim)
    place = _place_rows()
    if (place is not None and destination.dtype == source.dtype and destination.flags.c_contiguous and source.flags.c_contiguous
            and destination.ndim == source.ndim and destination.shape[1:] == source.shape[1:] and len(at)
            and (positions is not None or len(source) in (1, len(at)))):
        rowbytes = destination.itemsize * (destination.shape[1] if destination.ndim == 2 else 1)
        place(destination, rowbytes, at, source, None if positions is None else np.ascontiguousarray(positions, dtype=np.int64))
        return
    if positions is not None:
        destination[at] = source[positions]
    elif len(source) == 1 and source.ndim == destination.ndim and len(at) != 1:
        destination[at] = source[0]
    else:
        destination[at] = source


def _place_rows():
    mod = sc.compiled_scanner()
    return getattr(mod, "place_rows", None) if mod is not None else None

"""The Scan of a `lines` log read through parsers/linereplay.py: the rows the Python reader
read (Scans, in line order) and the rows replayed in numpy (`Replayed`: one plan's reading
of some lines of one shape), put in line order with one copy of each column."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gpuscope.parsers import scan as sc
from gpuscope.parsers.lines import SRC_LINES


@dataclass
class Replayed:
    """Lines one reading replays: their numbers, the reading's columns at `pos`, their times."""

    ln: np.ndarray
    rd: object  # planvec.Reading
    pos: np.ndarray
    ts: np.ndarray
    aux: np.ndarray


def _starts(counts: np.ndarray) -> np.ndarray:
    out = np.zeros(len(counts), dtype=np.int64)
    if len(counts) > 1:
        np.cumsum(counts[:-1], out=out[1:])
    return out


def assemble(read: list[sc.Scan], replayed: list[Replayed], tables: sc.Tables) -> sc.Scan:
    """One Scan, rows in line order (stable: a line read as pieces keeps their order)."""
    e = sc.Scan.concat(read, tables)
    if not replayed:
        return e
    nrows = [len(r.ln) for r in replayed]
    ne, n = len(e.meta), len(e.meta) + sum(nrows)
    order = np.argsort(np.concatenate([e.meta[:, 0], *(r.ln for r in replayed)]), kind="stable")
    dest = np.empty(n, dtype=np.int64)
    dest[order] = np.arange(n)
    first = np.cumsum([ne, *nrows[:-1]]).tolist()  # where each piece's rows start among the sources
    nt = [len(r.rd.names) for r in replayed]  # type: ignore[attr-defined]
    counts = np.empty(n, dtype=np.int64)
    counts[dest[:ne]] = e.meta[:, 6]
    for r, b, k in zip(replayed, first, nt, strict=True):
        counts[dest[b:b + len(r.ln)]] = k
    start = _starts(counts)
    out = sc.Scan()
    out.final, out.times, out.tables = True, None, tables
    meta = np.empty((n, 8), dtype=np.int64)
    meta[dest[:ne]] = e.meta
    values = np.empty(int(counts.sum()), dtype=np.float64)
    codes = np.empty(len(values), dtype=np.int32)
    if len(e.values):
        take = np.repeat(start[dest[:ne]] - _starts(e.meta[:, 6]), e.meta[:, 6]) + np.arange(len(e.values))
        values[take], codes[take] = e.values, e.codes
    aux = np.empty(n, dtype=np.int64)
    tol = np.empty(n, dtype=np.float64)
    aux[dest[:ne]], tol[dest[:ne]] = e.aux, e.tol
    ts = [e.ts]
    slot = len(e.ts)
    qrows, qcodes, qvalues = [dest[:ne][e.qrow]], [e.qcodes], [e.qvalues]
    for r, b, k in zip(replayed, first, nt, strict=True):
        d = dest[b:b + len(r.ln)]
        rd = r.rd
        m = len(d)
        meta[d, 0] = r.ln
        meta[d, 1] = np.arange(slot, slot + m)
        meta[d, 2] = sc.K_GPU
        meta[d, 3:6] = -1
        meta[d, 6] = k
        meta[d, 7] = SRC_LINES
        slot += m
        ts.append(r.ts)
        if k:
            idx = start[d][:, None] + np.arange(k)[None, :]
            values[idx] = rd.values[r.pos]  # type: ignore[attr-defined]
            codes[idx] = np.asarray([tables.names.code(x) for x in rd.names], dtype=np.int32)[None, :]  # type: ignore[attr-defined]
        aux[d], tol[d] = r.aux, rd.tol  # type: ignore[attr-defined]
        nq = len(rd.qnames)  # type: ignore[attr-defined]
        if nq:
            qrows.append(np.repeat(d, nq))
            qcodes.append(np.tile(np.asarray([tables.qnames.code(x) for x in rd.qnames], dtype=np.int32), m))  # type: ignore[attr-defined]
            qvalues.append(rd.qvalues[r.pos].reshape(-1))  # type: ignore[attr-defined]
    qrow = np.concatenate(qrows)
    qo = np.argsort(qrow, kind="stable")
    out.meta, out.values, out.codes, out.aux, out.tol = meta, values, codes, aux, tol
    out.qrow, out.qcodes, out.qvalues = qrow[qo], np.concatenate(qcodes)[qo], np.concatenate(qvalues)[qo]
    out.ts = np.concatenate(ts)
    out.held = (dest[:ne][e.held[0]], e.held[1])
    out.timeline = e.timeline
    out.skip_line, out.skip_reason, out.skip_text = e.skip_line, e.skip_reason, e.skip_text
    out.timing_lines = e.timing_lines + n - ne
    out.notes = e.notes
    return out

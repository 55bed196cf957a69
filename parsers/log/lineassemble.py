"""The Scan of a `lines` log read through parsers/log/linereplay.py: the rows the Python reader
read (Scans, in line order) and the rows replayed in numpy (`Replayed`: one plan's reading
of some lines of one shape), put in line order with one copy of each column."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from gpuscope.parsers.log import scan as sc
from gpuscope.parsers.log.lines import SRC_LINES


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
    """One Scan, rows in line order (stable: a line read as pieces keeps their order): the
    sources' columns concatenated, then gathered once in line order."""
    e = sc.Scan.concat(read, tables)
    if not replayed:
        return e
    metas, values, codes, aux, tol, ts = [e.meta], [e.values], [e.codes], [e.aux], [e.tol], [e.ts]
    qrows, qcodes, qvalues = [e.qrow], [e.qcodes], [e.qvalues]
    row, slot = len(e.meta), len(e.ts)
    for r in replayed:
        rd: Any = r.rd
        m, k, nq = len(r.ln), len(rd.names), len(rd.qnames)
        block = np.empty((m, 8), dtype=np.int64)
        block[:, 0] = r.ln
        block[:, 1] = np.arange(slot, slot + m)
        block[:, 2] = sc.K_GPU
        block[:, 3:6] = -1
        block[:, 6] = k
        block[:, 7] = SRC_LINES
        metas.append(block)
        values.append(rd.values[r.pos].reshape(-1))
        codes.append(np.tile(np.asarray([tables.names.code(x) for x in rd.names], dtype=np.int32), m))
        aux.append(r.aux)
        tol.append(np.full(m, rd.tol, dtype=np.float64))
        ts.append(r.ts)
        if nq:
            qrows.append(np.repeat(np.arange(row, row + m, dtype=np.int64), nq))
            qcodes.append(np.tile(np.asarray([tables.qnames.code(x) for x in rd.qnames], dtype=np.int32), m))
            qvalues.append(rd.qvalues[r.pos].reshape(-1))
        row, slot = row + m, slot + m
    meta = np.concatenate(metas)
    order = np.argsort(meta[:, 0], kind="stable")
    counts = meta[:, 6]
    new_counts = counts[order]
    take = np.repeat(_starts(counts)[order] - _starts(new_counts), new_counts) + np.arange(int(new_counts.sum()))
    inv = np.empty(len(order), dtype=np.int64)
    inv[order] = np.arange(len(order))
    qrow = inv[np.concatenate(qrows)]
    qo = np.argsort(qrow, kind="stable")
    out = sc.Scan()
    out.final, out.times, out.tables = True, None, tables
    out.meta = meta[order]
    out.values, out.codes = np.concatenate(values)[take], np.concatenate(codes)[take]
    out.aux, out.tol = np.concatenate(aux)[order], np.concatenate(tol)[order]
    out.qrow, out.qcodes, out.qvalues = qrow[qo], np.concatenate(qcodes)[qo], np.concatenate(qvalues)[qo]
    out.ts = np.concatenate(ts)
    out.held = (inv[e.held[0]], e.held[1])
    out.timeline = e.timeline
    out.skip_line, out.skip_reason, out.skip_text = e.skip_line, e.skip_reason, e.skip_text
    out.timing_lines = e.timing_lines + row - len(e.meta)
    out.notes = e.notes
    return out

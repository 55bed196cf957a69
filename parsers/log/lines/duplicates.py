"""A line printed twice by a logger's two handlers (issue 33, class 4): the same text with the
same time stamp on consecutive lines (a console and a file handler both writing to the
captured stream; a NCCL or torch watchdog's timeout line through two loggers) is one event,
read once; the read notes say how many were dropped.

What counts as the same line, over the finalized Scan of a `lines` log (before its records
are formed, parsers/log/lines/records.py): two timing lines one after the other (at most one
line between them), both stamped with the same time, with the same names, values, counters
and whole. A repeat without a stamp, or with another stamp, is two events: a program may
well print the same step twice (false-positive guard: tests/test_linedups.py; what would make
it drop a line falsely: a program that prints one text twice within its stamps' resolution,
e.g. two identical lines within one second under a whole-second stamp)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from gpuscope.parsers.log import scan as sc

if TYPE_CHECKING:
    from gpuscope.parsers.log.reader import LogInput

MAX_GAP = 2  # lines: the repeat follows at once, or after one line (a blank, another handler's)


def _same_rows(scan: sc.Scan, row: int, repeat: int, starts: np.ndarray, counts: np.ndarray, qstart: np.ndarray,
               qcount: np.ndarray) -> bool:
    va, vb = slice(starts[row], starts[row] + counts[row]), slice(starts[repeat], starts[repeat] + counts[repeat])
    if not (np.array_equal(scan.codes[va], scan.codes[vb]) and np.array_equal(scan.values[va], scan.values[vb])):
        return False
    qa, qb = slice(qstart[row], qstart[row] + qcount[row]), slice(qstart[repeat], qstart[repeat] + qcount[repeat])
    return bool(np.array_equal(scan.qcodes[qa], scan.qcodes[qb]) and np.array_equal(scan.qvalues[qa], scan.qvalues[qb]))


def lines_at(log_input: LogInput, wanted: set[int]) -> dict[int, str]:
    """The text of the wanted lines (1-based numbers) of a LogInput, read again in chunks."""
    out: dict[int, str] = {}
    if not wanted:
        return out
    last = max(wanted)
    for chunk in log_input.chunks():
        span = max(chunk.newlines, 1)
        if any(chunk.first <= ln < chunk.first + span for ln in wanted):
            for i, text in enumerate(chunk.text(log_input.errors).split("\n")[:span]):
                if chunk.first + i in wanted:
                    out[chunk.first + i] = text.rstrip("\r")
        if chunk.first + span > last:
            break
    return out


def drop_repeats(scan: sc.Scan, notes: list[str], text_of: Callable[[set[int]], dict[int, str]] | None = None) -> int:
    """Drop from the finalized Scan `scan` each timing line that repeats the one before it with
    the same stamp (see the module); returns how many, and says so in `notes`. `text_of`:
    line numbers -> their text (the repeat is checked on the text itself); None: nothing
    dropped (a repeat that cannot be told from two events is two)."""
    if text_of is None:
        return 0
    meta = scan.meta
    n = len(meta)
    if n < 2:
        return 0
    aux = np.asarray(scan.aux, dtype=np.int64)
    if not len(scan.ts) or len(aux) != n:
        return 0
    ts = np.asarray(scan.ts, dtype=np.float64)[meta[:, 1]]
    b = np.flatnonzero(ts[1:] == ts[:-1]) + 1  # (the same stamp as the line before: few rows; NaN never)
    a = b - 1
    counts, line, src = meta[:, 6], meta[:, 0], meta[:, 7]
    mine = sc.SRC["lines"]
    cand = b[(src[b] == mine) & (src[a] == mine) & np.isfinite(ts[b]) & (counts[b] == counts[a])
             & (line[b] - line[a] <= MAX_GAP) & (line[b] > line[a]) & (aux[b] == aux[a])]
    if not len(cand):
        return 0
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    qcount = np.bincount(scan.qrow, minlength=n) if len(scan.qrow) else np.zeros(n, dtype=np.int64)
    qstart = np.concatenate(([0], np.cumsum(qcount)[:-1]))
    keep = np.ones(n, dtype=bool)
    pairs = []
    for b in cand.tolist():
        a = b - 1
        while not keep[a] and a > 0:
            a -= 1  # (a line printed three times: each repeat of the first)
        if _same_rows(scan, a, b, starts, counts, qstart, qcount):
            keep[b] = False
            pairs.append((a, b))
    if pairs:
        ln = meta[:, 0]
        text = text_of({int(ln[r]) for p in pairs for r in p})
        for a, b in pairs:
            if text.get(int(ln[a])) is None or text.get(int(ln[a])) != text.get(int(ln[b])):
                keep[b] = True  # (other words around the same numbers: `[rank0]`, `[rank1]`)
    dropped = int(n - keep.sum())
    if dropped:
        _keep_rows(scan, keep, counts)
        notes.append(f"{dropped} line(s) printed again at once with the same time stamp and text (a logger's two "
                     "handlers): each read once, one event")
    return dropped


def _keep_rows(scan: sc.Scan, keep: np.ndarray, counts: np.ndarray) -> None:
    vkeep = np.repeat(keep, counts)
    scan.meta = scan.meta[keep]
    scan.codes, scan.values = scan.codes[vkeep], scan.values[vkeep]
    scan.aux = np.asarray(scan.aux, dtype=np.int64)[keep]
    if len(scan.tol) == len(keep):
        scan.tol = np.asarray(scan.tol, dtype=np.float64)[keep]
    if len(scan.qrow):
        qkeep = keep[scan.qrow]
        scan.qrow = (np.cumsum(keep) - 1)[scan.qrow[qkeep]]
        scan.qcodes, scan.qvalues = scan.qcodes[qkeep], scan.qvalues[qkeep]
    scan.timing_lines -= int((~keep).sum())

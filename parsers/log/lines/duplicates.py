"""A line printed twice by a logger's two handlers (issue 33, class 4): the same text with the
same time stamp on consecutive lines (a console and a file handler both writing to the
captured stream; a NCCL or torch watchdog's timeout line through two loggers) is one event,
read once; the read notes say how many were dropped.

What counts as the same line, over the finalized Scan of a `lines` log (before its records
are formed, parsers/log/linerecords.py): two timing lines one after the other (at most one
line between them), both stamped with the same time, with the same names, values, counters
and whole. A repeat without a stamp, or with another stamp, is two events: a program may
well print the same step twice (false-positive guard: tests/test_linedups.py; what would make
it drop a line falsely: a program that prints one text twice within its stamps' resolution,
e.g. two identical lines within one second under a whole-second stamp)."""

from __future__ import annotations

import numpy as np

from gpuscope.parsers.log import scan as sc

MAX_GAP = 2  # lines: the repeat follows at once, or after one line (a blank, another handler's)


def _same_rows(s, a: int, b: int, starts: np.ndarray, counts: np.ndarray, qstart: np.ndarray,
               qcount: np.ndarray) -> bool:
    va, vb = slice(starts[a], starts[a] + counts[a]), slice(starts[b], starts[b] + counts[b])
    if not (np.array_equal(s.codes[va], s.codes[vb]) and np.array_equal(s.values[va], s.values[vb])):
        return False
    qa, qb = slice(qstart[a], qstart[a] + qcount[a]), slice(qstart[b], qstart[b] + qcount[b])
    return bool(np.array_equal(s.qcodes[qa], s.qcodes[qb]) and np.array_equal(s.qvalues[qa], s.qvalues[qb]))


def lines_at(inp, wanted: set[int]) -> dict[int, str]:
    """The text of the wanted lines (1-based numbers) of a LogInput, read again in chunks."""
    out: dict[int, str] = {}
    if not wanted:
        return out
    last = max(wanted)
    for chunk in inp.chunks():
        span = max(chunk.newlines, 1)
        if any(chunk.first <= ln < chunk.first + span for ln in wanted):
            for i, text in enumerate(chunk.text(inp.errors).split("\n")[:span]):
                if chunk.first + i in wanted:
                    out[chunk.first + i] = text.rstrip("\r")
        if chunk.first + span > last:
            break
    return out


def drop_repeats(s, notes: list[str], text_of=None) -> int:
    """Drop from the finalized Scan `s` each timing line that repeats the one before it with
    the same stamp (see the module); returns how many, and says so in `notes`. `text_of`:
    line numbers -> their text (the repeat is checked on the text itself); None: nothing
    dropped (a repeat that cannot be told from two events is two)."""
    if text_of is None:
        return 0
    meta = s.meta
    n = len(meta)
    if n < 2:
        return 0
    mine = meta[:, 7] == sc.SRC["lines"]
    ts = np.asarray(s.ts, dtype=np.float64)[meta[:, 1]] if len(s.ts) else np.full(n, np.nan)
    counts = meta[:, 6]
    aux = np.asarray(s.aux, dtype=np.int64)
    cand = np.flatnonzero(mine[1:] & mine[:-1] & np.isfinite(ts[1:]) & (ts[1:] == ts[:-1])
                          & (counts[1:] == counts[:-1]) & (meta[1:, 0] - meta[:-1, 0] <= MAX_GAP)
                          & (meta[1:, 0] > meta[:-1, 0])
                          & (aux[1:] == aux[:-1])) + 1 if len(aux) == n else np.zeros(0, dtype=np.int64)
    if not len(cand):
        return 0
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    qcount = np.bincount(s.qrow, minlength=n) if len(s.qrow) else np.zeros(n, dtype=np.int64)
    qstart = np.concatenate(([0], np.cumsum(qcount)[:-1]))
    keep = np.ones(n, dtype=bool)
    pairs = []
    for b in cand.tolist():
        a = b - 1
        while not keep[a] and a > 0:
            a -= 1  # (a line printed three times: each repeat of the first)
        if _same_rows(s, a, b, starts, counts, qstart, qcount):
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
        _keep_rows(s, keep, counts)
        notes.append(f"{dropped} line(s) printed again at once with the same time stamp and text (a logger's two "
                     "handlers): each read once, one event")
    return dropped


def _keep_rows(s, keep: np.ndarray, counts: np.ndarray) -> None:
    vkeep = np.repeat(keep, counts)
    s.meta = s.meta[keep]
    s.codes, s.values = s.codes[vkeep], s.values[vkeep]
    s.aux = np.asarray(s.aux, dtype=np.int64)[keep]
    if len(s.tol) == len(keep):
        s.tol = np.asarray(s.tol, dtype=np.float64)[keep]
    if len(s.qrow):
        qkeep = keep[s.qrow]
        s.qrow = (np.cumsum(keep) - 1)[s.qrow[qkeep]]
        s.qcodes, s.qvalues = s.qcodes[qkeep], s.qvalues[qkeep]
    s.timing_lines -= int((~keep).sum())

"""Records and the whole of a `lines` log, over the whole log at once (vectorised: a
million lines): which field is each record's whole, which lines form one record (the same
counters on consecutive lines; a repeated whole splits them), which lines are records at
all (a shape that repeats), and each record's held time. parsers/log/lines/read.py describes the
rules; parsers/log/lines/line.py reads the lines."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from gpuscope import arrays
from gpuscope.arrays import median
from gpuscope.parsers.log import scan as sc
from gpuscope.parsers.log.codeops import (
    code_sums,
    distinct_pairs,
    every_row_alike,
    fmax_at,
    labels,
    repeats,
    same_regular,
    split_at_wholes,
)
from gpuscope.parsers.log.lines.bars import bars_apart, is_name, names_of
from gpuscope.parsers.log.lines.closing import close_records
from gpuscope.parsers.log.lines.duplicates import drop_repeats
from gpuscope.parsers.log.lines.steps import steps_per_record
from gpuscope.parsers.log.lines.trees import LEAF_ROOT, ROOT_WHY
from gpuscope.parsers.log.lines.vocabulary import HELD, NAMED, PAREN, SUMMED, stat_of
from gpuscope.parsers.log.nestrecords import nested_only, tree_roots
from gpuscope.parsers.log.notparts import (  # (formats.py's rules name it here)
    not_parts,
    one_off_setups,
)
from gpuscope.parsers.log.oneoffs import apart_rows
from gpuscope.parsers.log.parsed import EVAL_WHY
from gpuscope.parsers.log.runtotals import run_total_apart, running_totals_codes
from gpuscope.parsers.log.words import COUNTERS

EVAL_AUX = 1 << 40  # added to an evaluation line's whole code (Scan.aux) by the scan
# (in Scan.notes: `known:name\twhy`, a name a framework's reader knows is no part of a step,
# and why: llama.cpp's model load, a one-off setup; Megatron's timers, statistics over the ranks)
KNOWN_NOTE = "known:"
# (in Scan.notes: `covers:name`, a name whose time covers every step since the line before: a
# framework's reader says so, TensorFlow's hook's seconds since its last line)
COVERS_NOTE = "covers:"


def finish(scan: sc.Scan, held: str | None, text_of: Callable[[set[int]], dict[int, str]] | None = None) -> None:
    """Choose the log's whole, group lines into records, set kinds and held values.
    Sets scan.whole, scan.whole_basis and scan.notes (sentences). Vectorised: a million lines.
    `text_of`: line numbers -> their text (parsers/log/lines/duplicates.py: a line two handlers printed)."""
    scan.finalize()
    known, covering, notes = _known(list(getattr(scan, "notes", []) or []))
    drop_repeats(scan, notes, text_of)  # (a line two handlers printed: one event)
    scan.whole, scan.whole_basis = None, "no timing lines"
    meta = scan.meta
    n = len(meta)
    if n == 0:
        scan.notes = notes
        return

    kind = meta[:, 2]
    counts = meta[:, 6]
    mine = meta[:, 7] == sc.SRC["lines"]
    starts = np.concatenate(([0], np.cumsum(counts)[:-1])).astype(np.int64)
    aux = np.asarray(scan.aux, dtype=np.int64)
    if len(aux) != n:  # cannot happen; never mis-assign records over it
        aux = np.full(n, -1, dtype=np.int64)
    eval_row = _validation_only(aux >= EVAL_AUX - 1, mine & (counts > 0), known, notes)  # (code -1 + EVAL_AUX and up)
    aux = np.where(eval_row, -1, np.where(aux >= EVAL_AUX - 1, aux - EVAL_AUX, aux))  # (an evaluation line's whole
    # is no step's whole; in a validation-only run it is its batch's)
    ncodes, uniq = names_of(scan, "codes", "names")  # (pandas.factorize of the names, as codes)
    values = scan.values
    row_of = np.repeat(np.arange(n), repeats(counts))
    apart = eval_row | bars_apart(scan, ncodes, uniq, row_of, n, mine & ~eval_row & (counts > 0), notes)
    apart |= _leaf_roots(known, ncodes, uniq, row_of, counts, n, notes)
    apart |= apart_rows(known, ncodes, uniq, row_of, counts, n, notes)  # (one-off phases, CPU times)
    in_tree = _in_tree(ncodes, [c for c, u in enumerate(uniq) if known.get(u) == ROOT_WHY], row_of, n)
    apart |= run_total_apart(scan, ncodes, uniq, row_of, counts, mine & ~apart & ~in_tree & (counts > 0), aux, known, notes)
    aux = np.where(apart, -1, aux)
    totals = running_totals_codes(ncodes, uniq, values,
                                  np.ones(len(row_of), dtype=bool) if mine.all() else mine[row_of])
    if totals:
        notes.append("a running total, read as its differences line to line: " + ", ".join(totals)
                     + " (it grows by about the same on every line from about one step's worth)")

    whole, basis = _choose_whole(ncodes, uniq, aux, starts, row_of, n, held)
    del aux, starts
    scan.whole, scan.whole_basis = whole, basis
    is_whole = is_name(ncodes, uniq, whole)
    if whole is not None and known.get(whole) == ROOT_WHY:  # (each timer tree's root: its own record's whole)
        is_whole = tree_roots(known, ncodes, uniq, whole, notes, is_whole, ROOT_WHY)
    line_whole = np.full(n, np.nan)
    if is_whole.any():
        fmax_at(line_whole, row_of[is_whole], values[is_whole])
    no_part, stat_row, scan.not_parts = not_parts(ncodes, uniq, row_of, n, known)
    apart |= one_off_setups(ncodes, uniq, row_of, stat_row, mine & ~apart, scan.not_parts)  # (`Load time:`)
    parts = np.bincount(row_of, weights=np.where(is_whole | no_part, 0.0, values), minlength=n)
    has_whole = ~np.isnan(line_whole)
    if stat_row.any():
        notes.append(f"{int(stat_row.sum())} line(s) print only statistics (mean, median, p99, ...) of a "
                     "quantity: they are no steps, and a statistic is never a part")
    grouped = mine & ~stat_row & ~apart  # (statistics, evaluation lines: record -1, like other non-step lines)
    if eval_row.any():
        ev = sorted(k for k, why in scan.not_parts.items() if why.startswith(EVAL_WHY))
        notes.append(f"{int(eval_row.sum())} evaluation line(s) (Test:, eval_*, val_*) kept apart: no training steps"
                     + (f"; their times ({', '.join(ev[:4])}) are left out of the component statistics" if ev else ""))

    counters = _counters(scan)
    gid = split_at_wholes(_groups(counters, n, grouped), has_whole, grouped)  # -1 for rows of other sources
    opens = whole is not None and _whole_opens(gid, has_whole)
    alone = not opens and _whole_alone(has_whole, grouped, row_of, is_whole, counts, n)
    if opens and basis.startswith(f"{whole!r} is named like"):
        scan.whole_basis = basis = (f"{whole!r} is the root of a timer tree, printed before its children: each tree is "
                                 "one record")
    rec_group = _record_groups(gid, ncodes, uniq, counts, counters, whole)  # per group: is a record
    rec_group &= ~nested_only(scan.not_parts, ncodes, uniq, row_of, gid, len(rec_group), notes)
    del is_whole, no_part, row_of  # (per value: not needed past here)
    del counters
    row_rec = np.zeros(n, dtype=bool)
    row_rec[grouped] = rec_group[gid[grouped]]
    rows = np.flatnonzero(row_rec)  # the record rows, in log order
    kind[mine] = sc.K_FREE
    kind[rows] = sc.K_GPU
    k, first = close_records(scan, rows, gid[rows], alone, has_whole, line_whole, parts, n)
    scan.record_time_covers = whole is not None and (whole in covering or whole in totals)
    scan.notes = _closing_notes(scan, notes, whole, basis, alone, k, first)


def _validation_only(eval_row: np.ndarray, timed: np.ndarray, known: dict[str, str], notes: list[str]) -> np.ndarray:
    """The evaluation rows to keep apart: none where every timing line is one (DALI's ImageNet
    example run for its `Test:` speed only): a validation run, whose batches are its steps, said in
    a note; else eval_row. (Beside a training line, evaluation lines stay apart; so do an
    evaluation's own times, Hugging Face's `eval_runtime`: a whole pass, no batch.)"""
    if not eval_row.any() or not eval_row[timed].all() or any(w.startswith(EVAL_WHY) for w in known.values()):
        return eval_row
    notes.append(f"every timing line ({int(timed.sum())}) is an evaluation line (Test:, eval_*, val_*): a "
                 "validation-only run, read with its batches as its steps")
    return np.zeros_like(eval_row)


def _closing_notes(scan: sc.Scan, notes: list[str], whole: str | None, basis: str, alone: bool, rounded: int,
                   first: bool = False) -> list[str]:
    """The notes on how the records were closed (their whole, rounding), with the steps each
    record stands for (sets scan.steps_per_record)."""
    if whole is None:
        notes.append("no field is the whole of its line: a record's held time is the sum of its parts")
    elif alone and first:
        notes.append(f"the whole of a record: {basis}; it is printed on a line of its own, and each record starts at "
                     "that line and takes the timing lines after it (read the other way, as most logs print, records' "
                     "parts exceeded their whole; Megatron-LM prints its timers so, after each iteration line)")
    elif alone:
        notes.append(f"the whole of a record: {basis}; it is printed on a line of its own, so a record "
                     "ends at that line and takes the timing lines before it")
    else:
        notes.append(f"the whole of a record: {basis}; a record without it: the sum of its parts")
    if rounded:
        notes.append(f"{rounded} record{'s' if rounded != 1 else ''} printed a whole below the sum of its parts by no more "
                     "than the printed rounding: held time = the parts' sum")
    every = steps_per_record(scan, scan.held[0])
    if every is not None:
        scan.steps_per_record = every[0]
        scan.record_time_covers |= every[2]
        notes.append(f"{every[1]}: each record stands for {every[0]} steps in throughput (records count "
                     "printed lines)" + ("; its times cover those steps" if scan.record_time_covers else ""))
    return notes


def _whole_alone(has_whole: np.ndarray, grouped: np.ndarray, row_of: np.ndarray, is_whole: np.ndarray, counts: np.ndarray, row_count: int) -> bool:
    """Whether the whole is printed on a line of its own (`total_ms=430` after the parts'
    lines): a record then ends at the line printing the whole, as in kv, and takes the
    timing lines before it. (Statistics and evaluation lines are no records.)"""
    if has_whole.any() and not has_whole[grouped].all():
        n_whole = np.bincount(row_of[is_whole], minlength=row_count)
        return float(median((counts - n_whole)[has_whole])) == 0.0
    return False


def _in_tree(ncodes: np.ndarray, root_codes: list[int], row_of: np.ndarray, n: int) -> np.ndarray:
    """Per row, whether it prints a timer tree's root (its record's whole, never the run's total);
    most logs print no timer tree: then no pass over the names."""
    if not root_codes:
        return np.zeros(n, dtype=bool)
    return np.bincount(row_of[np.isin(ncodes, root_codes)], minlength=n) > 0


def _whole_opens(group_of: np.ndarray, has_whole: np.ndarray) -> bool:
    """Whether every row printing the whole opens a group of rows that print the same
    counters (a timer tree's root, printed before its children: parsers/log/lines/trees.py):
    the records are then the groups, not the lines up to each whole."""
    rows = np.flatnonzero(has_whole & (group_of >= 0))
    if not len(rows):
        return False
    for part in (rows[:_FIRST_ROWS], rows[_FIRST_ROWS:]):  # (most logs answer no within their first rows)
        g = group_of[part]
        nxt = np.where(part + 1 < len(group_of), group_of[np.minimum(part + 1, len(group_of) - 1)], -2)
        prev = np.where(part > 0, group_of[np.maximum(part - 1, 0)], -2)
        if not ((nxt == g) & (prev != g)).all():
            return False
    return True


_FIRST_ROWS = 4096  # _whole_opens: the rows looked at before all of them


def _leaf_roots(known: dict[str, str], ncodes: np.ndarray, distinct: list[str], row_of: np.ndarray, counts: np.ndarray, row_count: int, notes: list[str]):
    """Per row, whether it prints only timer trees' roots without children (one-off stages:
    parsers/log/lines/trees.py LEAF_ROOT): no records, and never the whole."""
    leaves = [c for c, u in enumerate(distinct) if known.get(u) == LEAF_ROOT]
    if not leaves:
        return np.zeros(row_count, dtype=bool)
    hit = np.bincount(row_of[np.isin(ncodes, leaves)], minlength=row_count)
    out = (hit == counts) & (counts > 0)
    notes.append(f"{int(out.sum())} timer tree root(s) without children ({', '.join(distinct[c] for c in leaves[:4])}): "
                 "one-off stages, no records")
    return out


def _known(raw: list[str]) -> tuple[dict[str, str], set[str], list[str]]:
    """The names a framework's reader knows are no parts, with why (KNOWN_NOTE), the names whose
    time covers every step since the line before (COVERS_NOTE), and the notes of the names read
    without a unit (the scan's other notes)."""
    known = dict(n[len(KNOWN_NOTE):].split("\t", 1) for n in raw if n.startswith(KNOWN_NOTE) and "\t" in n)
    covering = {n[len(COVERS_NOTE):] for n in raw if n.startswith(COVERS_NOTE)}
    return known, covering, _assumed([n for n in raw if not n.startswith((KNOWN_NOTE, COVERS_NOTE))])


def _assumed(names: list[str]) -> list[str]:
    """The notes of the names read without a unit (`ms:` marks zerolog's milliseconds)."""
    in_ms = [n[3:] for n in names if n.startswith("ms:")]
    by_why: dict[str, list[str]] = {}  # (`name\twhy`: the format that gives its seconds)
    for n in names:
        if not n.startswith("ms:"):
            name, _, why = n.partition("\t")
            by_why.setdefault(why or "a time-named key", []).append(name)
    notes = []
    if in_ms:
        notes.append("printed without a unit, read as milliseconds: " + ", ".join(in_ms)
                     + " (zerolog's console format, gnark's logger, prints durations in ms)")
    for why, assumed in sorted(by_why.items()):
        notes.append(f"printed without a unit, read as seconds: {', '.join(assumed)} ({why})")
    return notes


def _choose_whole(ncodes: np.ndarray, distinct: list[str], whole_codes: np.ndarray, starts: np.ndarray, row_of: np.ndarray, row_count: int, held: str | None):
    has = np.flatnonzero(whole_codes >= 0) if row_count else whole_codes
    if not len(has):
        return None, "no field is the whole"
    idx = starts[has] + whole_codes[has] // 4
    how = whole_codes[has] % 4
    cand = ncodes[idx]
    # a statistic (perf_analyzer's `Avg gRPC time: 824 usec (marshal 4 usec + ...)`) is of many
    # records, never one record's whole; only the held key asked for is taken as it is
    stat = np.asarray([stat_of(str(u)) is not None for u in distinct], dtype=bool)
    if stat.any() and not (keep := (how == HELD) | ~stat[cand]).all():
        cand, how = cand[keep], how[keep]
        if not len(cand):
            return None, "no field is the whole (a statistic of many records is no record's whole)"
    for rule, what in ((HELD, "is the held key asked for"), (NAMED, "is named like a whole (total, step, elapsed, ...)"),
                       (PAREN, "is a lock's tenure, its parts printed after it")):
        sel = cand[how == rule]
        if len(sel):
            c, k = _most_common(sel)
            name = distinct[c]
            return str(name), f"{str(name)!r} {what}, on {k} line{'s' if k != 1 else ''}"
    sel = cand[how == SUMMED]
    c, k = _most_common(sel)
    name = distinct[c]
    lines_with = int((np.bincount(row_of[ncodes == c], minlength=1) > 0).sum())
    if k * 2 >= lines_with:
        return str(name), f"{str(name)!r} is the sum of the other times on {k} of {lines_with} lines that print it"
    return None, f"no field is the whole ({str(name)!r} is the sum of the others on only {k} of {lines_with} lines)"


def _most_common(codes: np.ndarray) -> tuple[int, int]:
    """Counter(codes).most_common(1)[0] (ties: the code seen first), counted in numpy."""
    freq = np.bincount(codes)
    top = np.flatnonzero(freq == freq.max())
    c = int(top[0]) if len(top) == 1 else min(top.tolist(), key=lambda code: int(np.argmax(codes == code)))
    return c, int(freq[c])


def _counters(scan: sc.Scan):
    """The counter quantities (step, epoch, ...): row, name code, value, in log order."""

    codes, uniq = names_of(scan)
    if not len(codes):
        e = np.zeros(0, dtype=np.int64)
        return e, e, np.zeros(0)
    is_counter = np.asarray([str(u).lower() in COUNTERS for u in uniq], dtype=bool)
    sel = is_counter[codes] if len(uniq) else np.zeros(0, dtype=bool)
    return scan.qrow[sel], codes[sel].astype(np.int64), scan.qvalues[sel]


def _groups(counters: tuple[np.ndarray, np.ndarray, np.ndarray], row_count: int, mine: np.ndarray):
    """Group id per row: consecutive rows of this format printing the same counters, in the
    same order, form one group; every other row is a group of its own (-1: other sources).
    `counters`: _counters(scan)."""
    crow, ccode, cval = counters
    cnt = np.bincount(crow, minlength=row_count) if len(crow) else np.zeros(row_count, dtype=np.int64)
    # same[r]: row r+1 prints the same counters as row r (compared element by element: the
    # counters of r+1 follow those of r in the arrays)
    same = same_regular(crow, ccode, cval, cnt, row_count)
    if same is None and len(crow):
        same = np.zeros(row_count, dtype=bool)
        k = np.arange(len(crow))
        c_r = cnt[crow]
        nxt = k + c_r
        ok = (crow + 1 < row_count) & (nxt < len(crow))
        ok[ok] &= (crow[nxt[ok]] == crow[ok] + 1) & (cnt[np.minimum(crow[ok] + 1, row_count - 1)] == c_r[ok])
        eq = np.zeros(len(crow), dtype=bool)
        eq[ok] = (ccode[nxt[ok]] == ccode[ok]) & (cval[nxt[ok]] == cval[ok])
        bad = np.bincount(crow[~eq], minlength=row_count)
        same = (cnt > 0) & (bad == 0)
    if same is None:
        same = np.zeros(row_count, dtype=bool)
    prev_same = np.concatenate(([False], same[:-1] & mine[:-1] & mine[1:]))
    start = mine & ~prev_same
    gid = np.cumsum(start) - 1
    gid[~mine] = -1
    return gid


_HASH_SEED = 0x5EED_11E5


def _record_groups(group_of: np.ndarray, ncodes: np.ndarray, distinct: list[str], counts: np.ndarray, counters: tuple[np.ndarray, np.ndarray, np.ndarray], whole: str | None):
    """Per group, whether it is a record: its shape (counter keys, component names) repeats;
    or it shares its counter keys and a component (not the whole) with a shape that
    repeats; or, when no shape repeats, it has a time. Shapes are compared by two 64-bit
    sums of random words over their names (sets)."""
    ng = int(group_of.max()) + 1 if len(group_of) and group_of.max() >= 0 else 0
    if ng == 0:
        return np.zeros(0, dtype=bool)
    if every_row_alike(group_of, ncodes, counts, counters[0], counters[1]):  # (one shape: each group is one)
        return np.ones(ng, dtype=bool)
    rng = np.random.default_rng(_HASH_SEED)
    vg = np.repeat(group_of, counts) if len(ncodes) else np.zeros(0, dtype=np.int64)  # (gid[row_of])
    keep = vg >= 0
    if keep.all():  # (every value in a group: no copies)
        pg, pc = distinct_pairs(vg, ncodes, max(len(distinct), 1))
    else:
        pg, pc = distinct_pairs(vg[keep], ncodes[keep], max(len(distinct), 1))
    del keep
    rnd = rng.integers(1, 2**62, size=(max(len(distinct), 1), 2), dtype=np.int64).view(np.uint64)
    # (one buffer as long as the pairs, for both words; "clip": codes are in range, and
    # "raise" would buffer out)
    x = np.empty(len(pc), dtype=np.uint64)
    h0 = code_sums(pg, pc, rnd[:, 0], ng, out=x)
    h1 = code_sums(pg, pc, rnd[:, 1], ng, out=x)
    del x
    has_names = np.bincount(pg, minlength=ng) > 0
    del vg, pg, pc  # (per value; made again for the one-off shapes, seldom)
    crow, ccode, _ = counters
    kh = np.zeros(ng, dtype=np.uint64)
    if len(crow):
        cg = group_of[crow]
        ok = cg >= 0
        kg, kc = distinct_pairs(cg[ok], ccode[ok], int(ccode.max()) + 1)
        krnd = rng.integers(1, 2**62, size=int(ccode.max()) + 1, dtype=np.int64).view(np.uint64)
        kh = code_sums(kg, kc, krnd, ng)
        del cg, ok, kg, kc
    shape = labels((kh, h0, h1))
    freq = np.bincount(shape)
    repeated = (freq[shape] >= 2) & has_names
    if not repeated.any():
        return has_names
    out = repeated.copy()
    lonely = np.flatnonzero(has_names & ~repeated)
    if len(lonely):
        # a one-off shape is a record when it shares its counter keys and a part with a repeated one
        rep_shapes = arrays.distinct(shape[repeated])
        first_of = {int(sh): int(np.flatnonzero(shape == sh)[0]) for sh in rep_shapes}
        sets = _group_sets(set(lonely.tolist()) | set(first_of.values()), np.repeat(group_of, counts), ncodes, distinct,
                           whole)
        reps = [(kh[g], sets[g]) for g in first_of.values()]
        for g in lonely.tolist():
            out[g] = any(k == kh[g] and parts & sets[g] for k, parts in reps)
    return out


def _group_sets(wanted: set[int], value_groups: np.ndarray, ncodes: np.ndarray, distinct: list[str], whole: str | None) -> dict[int, set]:
    """The component names (without the whole) of the wanted groups (value_groups: each value's group)."""
    out: dict[int, set] = {g: set() for g in wanted}
    sel = np.flatnonzero(np.isin(value_groups, np.fromiter(wanted, dtype=np.int64)))
    for g, c in zip(value_groups[sel].tolist(), ncodes[sel].tolist(), strict=True):
        nm = distinct[c]
        if nm != whole:
            out[g].add(nm)
    return out

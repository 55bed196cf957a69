"""Records and the whole of a `lines` log, over the whole log at once (vectorised: a
million lines): which field is each record's whole, which lines form one record (the same
counters on consecutive lines; a repeated whole splits them), which lines are records at
all (a shape that repeats), and each record's held time. parsers/log/lines.py describes the
rules; parsers/log/lineread.py reads the lines."""

from __future__ import annotations

import numpy as np

from gpuscope.parsers.log import scan as sc
from gpuscope.parsers.log.codeops import (
    code_sums,
    distinct_pairs,
    every_row_alike,
    exact_runs,
    fmax_at,
    labels,
    repeats,
    same_regular,
    split_at_wholes,
)
from gpuscope.parsers.log.linedups import drop_repeats
from gpuscope.parsers.log.lineshapes import BAR_COUNTER, BAR_TIME, BAR_TOTAL
from gpuscope.parsers.log.linesteps import steps_per_record
from gpuscope.parsers.log.linetree import LEAF_ROOT
from gpuscope.parsers.log.linewords import HELD, NAMED, PAREN, SUMMED
from gpuscope.parsers.log.notparts import not_parts  # (formats.py's rules name it here)
from gpuscope.parsers.log.parsed import EVAL_WHY
from gpuscope.parsers.log.runtotals import running_totals, running_totals_codes  # noqa: F401 (kv)
from gpuscope.parsers.log.words import COUNTERS

EVAL_AUX = 1 << 40  # added to an evaluation line's whole code (Scan.aux) by the scan
# (in Scan.notes: `known:name\twhy`, a name a framework's reader knows is no part of a step,
# and why: llama.cpp's model load, a one-off setup; Megatron's timers, statistics over the ranks)
KNOWN_NOTE = "known:"


def finish(s: sc.Scan, held: str | None, text_of=None) -> None:
    """Choose the log's whole, group lines into records, set kinds and held values.
    Sets s.whole, s.whole_basis and s.notes (sentences). Vectorised: a million lines.
    `text_of`: line numbers -> their text (parsers/log/linedups.py: a line two handlers printed)."""
    s.finalize()
    known, notes = _known(list(getattr(s, "notes", []) or []))
    drop_repeats(s, notes, text_of)  # (a line two handlers printed: one event)
    s.whole, s.whole_basis = None, "no timing lines"
    meta = s.meta
    n = len(meta)
    if n == 0:
        s.notes = notes
        return

    kind = meta[:, 2]
    counts = meta[:, 6]
    mine = meta[:, 7] == sc.SRC["lines"]
    starts = np.concatenate(([0], np.cumsum(counts)[:-1])).astype(np.int64)
    aux = np.asarray(s.aux, dtype=np.int64)
    if len(aux) != n:  # cannot happen; never mis-assign records over it
        aux = np.full(n, -1, dtype=np.int64)
    eval_row = aux >= EVAL_AUX - 1  # (code -1 + EVAL_AUX and up)
    aux = np.where(eval_row, -1, aux)  # an evaluation line's whole is no step's whole
    ncodes, uniq = _names(s, "codes", "names")  # (pandas.factorize of the names, as codes)
    values = s.values
    row_of = np.repeat(np.arange(n), repeats(counts))
    apart = eval_row | bars_apart(s, ncodes, uniq, row_of, n, mine & ~eval_row & (counts > 0), notes)
    apart |= _leaf_roots(known, ncodes, uniq, row_of, counts, n, notes)
    aux = np.where(apart, -1, aux)
    totals = running_totals_codes(ncodes, uniq, values,
                                  np.ones(len(row_of), dtype=bool) if mine.all() else mine[row_of])
    if totals:
        notes.append("a running total, read as its differences line to line: " + ", ".join(totals)
                     + " (it grows by about the same on every line from about one step's worth)")

    whole, basis = _choose_whole(ncodes, uniq, aux, starts, row_of, n, held)
    del aux, starts
    s.whole, s.whole_basis = whole, basis
    is_whole = _is(ncodes, uniq, whole)
    line_whole = np.full(n, np.nan)
    if is_whole.any():
        fmax_at(line_whole, row_of[is_whole], values[is_whole])
    no_part, stat_row, s.not_parts = not_parts(ncodes, uniq, row_of, n, known)
    parts = np.bincount(row_of, weights=np.where(is_whole | no_part, 0.0, values), minlength=n)
    has_whole = ~np.isnan(line_whole)
    if stat_row.any():
        notes.append(f"{int(stat_row.sum())} line(s) print only statistics (mean, median, p99, ...) of a "
                     "quantity: they are no steps, and a statistic is never a part")
    grouped = mine & ~stat_row & ~apart  # (statistics, evaluation lines: record -1, like other non-step lines)
    if eval_row.any():
        ev = sorted(k for k, why in s.not_parts.items() if why.startswith(EVAL_WHY))
        notes.append(f"{int(eval_row.sum())} evaluation line(s) (Test:, eval_*, val_*) kept apart: no training steps"
                     + (f"; their times ({', '.join(ev[:4])}) are left out of the component statistics" if ev else ""))

    counters = _counters(s)
    gid = split_at_wholes(_groups(counters, n, grouped), has_whole, grouped)  # -1 for rows of other sources
    opens = whole is not None and _whole_opens(gid, has_whole)
    alone = not opens and _whole_alone(has_whole, grouped, row_of, is_whole, counts, n)
    if opens and basis.startswith(f"{whole!r} is named like"):
        s.whole_basis = basis = (f"{whole!r} is the root of a timer tree, printed before its children: each tree is "
                                 "one record")
    del is_whole, no_part, row_of  # (per value: not needed past here)
    rec_group = _record_groups(gid, ncodes, uniq, counts, counters, whole)  # per group: is a record
    del counters
    row_rec = np.zeros(n, dtype=bool)
    row_rec[grouped] = rec_group[gid[grouped]]
    rows = np.flatnonzero(row_rec)  # the record rows, in log order
    kind[mine] = sc.K_FREE
    kind[rows] = sc.K_GPU
    k = _close_records(s, rows, gid[rows], alone, has_whole, line_whole, parts, n)
    s.notes = _closing_notes(s, notes, whole, basis, alone, k)


def _closing_notes(s, notes: list[str], whole: str | None, basis: str, alone: bool, k: int) -> list[str]:
    """The notes on how the records were closed (their whole, rounding), with the steps each
    record stands for (sets s.steps_per_record)."""
    if whole is None:
        notes.append("no field is the whole of its line: a record's held time is the sum of its parts")
    elif alone:
        notes.append(f"the whole of a record: {basis}; it is printed on a line of its own, so a record "
                     "ends at that line and takes the timing lines before it")
    else:
        notes.append(f"the whole of a record: {basis}; a record without it: the sum of its parts")
    if k:
        notes.append(f"{k} record{'s' if k != 1 else ''} printed a whole below the sum of its parts by no more "
                     "than the printed rounding: held time = the parts' sum")
    every = steps_per_record(s, s.held[0])
    if every is not None:
        s.steps_per_record = every[0]
        notes.append(f"{every[1]}: each record stands for {every[0]} steps in throughput (records count "
                     "printed lines)")
    return notes


def _whole_alone(has_whole, grouped, row_of, is_whole, counts, n: int) -> bool:
    """Whether the whole is printed on a line of its own (`total_ms=430` after the parts'
    lines): a record then ends at the line printing the whole, as in kv, and takes the
    timing lines before it. (Statistics and evaluation lines are no records.)"""
    if has_whole.any() and not has_whole[grouped].all():
        n_whole = np.bincount(row_of[is_whole], minlength=n)
        return float(np.median((counts - n_whole)[has_whole])) == 0.0
    return False


def _whole_opens(gid, has_whole) -> bool:
    """Whether every row printing the whole opens a group of rows that print the same
    counters (a timer tree's root, printed before its children: parsers/log/linetree.py):
    the records are then the groups, not the lines up to each whole."""
    rows = np.flatnonzero(has_whole & (gid >= 0))
    if not len(rows):
        return False
    g = gid[rows]
    nxt = np.where(rows + 1 < len(gid), gid[np.minimum(rows + 1, len(gid) - 1)], -2)
    prev = np.where(rows > 0, gid[np.maximum(rows - 1, 0)], -2)
    return bool(((nxt == g) & (prev != g)).all())


def _leaf_roots(known: dict[str, str], ncodes, uniq: list[str], row_of, counts, n: int, notes: list[str]):
    """Per row, whether it prints only timer trees' roots without children (one-off stages:
    parsers/log/linetree.py LEAF_ROOT): no records, and never the whole."""
    leaves = [c for c, u in enumerate(uniq) if known.get(u) == LEAF_ROOT]
    if not leaves:
        return np.zeros(n, dtype=bool)
    hit = np.bincount(row_of[np.isin(ncodes, leaves)], minlength=n)
    out = (hit == counts) & (counts > 0)
    notes.append(f"{int(out.sum())} timer tree root(s) without children ({', '.join(uniq[c] for c in leaves[:4])}): "
                 "one-off stages, no records")
    return out


def _is(codes: np.ndarray, uniq: list[str], name: str | None) -> np.ndarray:
    """Per value, whether its name (codes into uniq) is `name`."""
    try:
        return codes == uniq.index(name) if name is not None else np.zeros(len(codes), dtype=bool)
    except ValueError:
        return np.zeros(len(codes), dtype=bool)


def _names(s, codes: str = "qcodes", table: str = "qnames") -> tuple[np.ndarray, list[str]]:
    """The (quantity) names as codes in order of first appearance, and their names: what
    pandas.factorize of the names gives, without an array of a million name objects."""
    names: sc.Names = getattr(s.tables, table)
    new, order = sc.first_codes(np.asarray(getattr(s, codes)), len(names))
    return new, [names.list[i] for i in order.tolist()]


def bars_apart(s, ncodes, uniq, row_of, n: int, timed, notes: list[str]) -> np.ndarray:
    """Per row, whether it is a tqdm bar's redraw that is no step (`timed`: the log's own
    timing rows, evaluation lines left out): every redraw, beside step lines of the log's own
    (a component on at least 3 of its other lines: a data loader's bar among step lines; a few
    one-off lines, `Loaded model in 3.2s`, are no steps); else a bar of another total than the
    bar of the most redraws, the loop's (Hugging Face's evaluation bar inside the training's)."""
    bars, total = bar_rows(s, ncodes, uniq, row_of, n)
    bars &= timed
    if not bars.any():
        return bars
    own = timed & ~bars
    own_names = ncodes[own[row_of]] if len(ncodes) else ncodes
    if len(own_names) and int(np.bincount(own_names).max()) >= 3:  # (step lines, not one-offs)
        notes.append(f"{int(bars.sum())} progress-bar redraw(s) (tqdm) beside the log's own timing lines: "
                     "no steps")
        return bars
    vals, freq = np.unique(total[bars], return_counts=True)
    loop = vals[np.argmax(freq)]
    other = bars & (total != loop)
    if other.any():
        notes.append(f"{int(other.sum())} redraw(s) of progress bars of another total than the loop's "
                     f"({f'{int(loop)} iterations' if loop >= 0 else 'no total'}): no steps of it")
    return other


def bar_rows(s, ncodes, uniq, row_of, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Per row, whether it is a tqdm bar's redraw (parsers/log/lineshapes.py read_tqdm: its one
    time is the bar's time per iteration and it prints the bar's counter), and the bar's
    total (-1: none)."""
    one = np.bincount(row_of, minlength=n) == 1
    timed = np.zeros(n, dtype=bool)
    timed[row_of[_is(ncodes, uniq, BAR_TIME)]] = True
    counted = np.zeros(n, dtype=bool)
    total = np.full(n, -1.0)
    if len(s.qrow):
        (qc, qu), qrow = _names(s), np.asarray(s.qrow)
        counted[qrow[_is(qc, qu, BAR_COUNTER)]] = True
        is_total = _is(qc, qu, BAR_TOTAL)
        total[qrow[is_total]] = np.asarray(s.qvalues)[is_total]
    return one & timed & counted, total


def _known(raw: list[str]) -> tuple[dict[str, str], list[str]]:
    """The names a framework's reader knows are no parts, with why (KNOWN_NOTE), and the notes
    of the names read without a unit (the scan's other notes)."""
    known = dict(n[len(KNOWN_NOTE):].split("\t", 1) for n in raw if n.startswith(KNOWN_NOTE) and "\t" in n)
    return known, _assumed([n for n in raw if not n.startswith(KNOWN_NOTE)])


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


def _close_records(s, rows, g, alone: bool, has_whole, line_whole, parts, n: int) -> int:
    """Number the records, mark each one's last row as its held row and set s.held (the
    whole, or the parts' sum, or the parts' sum where the whole is below it by rounding);
    returns how many records were so rounded."""
    kind = s.meta[:, 2]
    if alone:  # a new record starts after each row printing the whole
        ends_before = np.concatenate(([False], has_whole[rows][:-1]))
        g = np.cumsum(ends_before)
    elif len(g):
        g = np.cumsum(np.concatenate(([True], g[1:] != g[:-1]))) - 1
    last = np.concatenate((g[1:] != g[:-1], [True])) if len(g) else g.astype(bool)
    complete_g = np.ones(int(g[-1]) + 1 if len(g) else 0, dtype=bool)
    if alone and len(g):
        w_g = np.zeros(len(complete_g), dtype=bool)
        np.logical_or.at(w_g, g, has_whole[rows])
        complete_g = w_g  # after the last whole line: cut off, incomplete
    held_rows = rows[last & complete_g[g]]
    kind[held_rows] = sc.K_HELD
    # (g runs 0, 1, ... in order: each record's largest whole, NaN where it has none, as fmax.at)
    # (a record of one line each, g 0, 1, ...: its sums are its line's, + 0.0 as bincount adds them)
    one = len(g) and len(complete_g) == len(g)
    if one:
        gw = line_whole[rows]
    else:
        gw = exact_runs(np.fmax, line_whole[rows], np.flatnonzero(np.diff(g, prepend=-1))) if len(g) else g * 1.0
    gp = parts[rows] + 0.0 if one else np.bincount(g, weights=parts[rows], minlength=len(complete_g))
    # a whole below its parts by no more than the printed rounding is rounding, not an
    # inconsistent record (86.0 + 829.0 printed as a step of 914.9): it is taken as the parts
    tol = np.asarray(s.tol, dtype=np.float64) if len(s.tol) == n else np.zeros(n)
    gt = tol[rows] + 0.0 if one else np.bincount(g, weights=tol[rows], minlength=len(complete_g))
    rounded = (gp > gw) & (gp - gw <= gt * (1 + 1e-9)) & complete_g
    gw = np.where(rounded, gp, gw)
    held_g = np.where(np.isnan(gw), gp, gw)[complete_g]
    s.held = (held_rows.astype(np.int64), np.asarray(held_g, dtype=np.float64))
    return int(rounded.sum())


def _choose_whole(ncodes, uniq, aux, starts, row_of, n, held):
    has = np.flatnonzero(aux >= 0) if n else aux
    if not len(has):
        return None, "no field is the whole"
    idx = starts[has] + aux[has] // 4
    how = aux[has] % 4
    cand = ncodes[idx]
    for rule, what in ((HELD, "is the held key asked for"), (NAMED, "is named like a whole (total, step, elapsed, ...)"),
                       (PAREN, "is a lock's tenure, its parts printed after it")):
        sel = cand[how == rule]
        if len(sel):
            c, k = _most_common(sel)
            name = uniq[c]
            return str(name), f"{str(name)!r} {what}, on {k} line{'s' if k != 1 else ''}"
    sel = cand[how == SUMMED]
    c, k = _most_common(sel)
    name = uniq[c]
    lines_with = int((np.bincount(row_of[ncodes == c], minlength=1) > 0).sum())
    if k * 2 >= lines_with:
        return str(name), f"{str(name)!r} is the sum of the other times on {k} of {lines_with} lines that print it"
    return None, f"no field is the whole ({str(name)!r} is the sum of the others on only {k} of {lines_with} lines)"


def _most_common(codes: np.ndarray) -> tuple[int, int]:
    """Counter(codes).most_common(1)[0] (ties: the code seen first), counted in numpy."""
    freq = np.bincount(codes)
    top = np.flatnonzero(freq == freq.max())
    c = int(top[0]) if len(top) == 1 else min(top.tolist(), key=lambda t: int(np.argmax(codes == t)))
    return c, int(freq[c])


def _counters(s):
    """The counter quantities (step, epoch, ...): row, name code, value, in log order."""

    codes, uniq = _names(s)
    if not len(codes):
        e = np.zeros(0, dtype=np.int64)
        return e, e, np.zeros(0)
    is_counter = np.asarray([str(u).lower() in COUNTERS for u in uniq], dtype=bool)
    sel = is_counter[codes] if len(uniq) else np.zeros(0, dtype=bool)
    return s.qrow[sel], codes[sel].astype(np.int64), s.qvalues[sel]


def _groups(counters, n, mine):
    """Group id per row: consecutive rows of this format printing the same counters, in the
    same order, form one group; every other row is a group of its own (-1: other sources).
    `counters`: _counters(s)."""
    crow, ccode, cval = counters
    cnt = np.bincount(crow, minlength=n) if len(crow) else np.zeros(n, dtype=np.int64)
    # same[r]: row r+1 prints the same counters as row r (compared element by element: the
    # counters of r+1 follow those of r in the arrays)
    same = same_regular(crow, ccode, cval, cnt, n)
    if same is None and len(crow):
        same = np.zeros(n, dtype=bool)
        k = np.arange(len(crow))
        c_r = cnt[crow]
        nxt = k + c_r
        ok = (crow + 1 < n) & (nxt < len(crow))
        ok[ok] &= (crow[nxt[ok]] == crow[ok] + 1) & (cnt[np.minimum(crow[ok] + 1, n - 1)] == c_r[ok])
        eq = np.zeros(len(crow), dtype=bool)
        eq[ok] = (ccode[nxt[ok]] == ccode[ok]) & (cval[nxt[ok]] == cval[ok])
        bad = np.bincount(crow[~eq], minlength=n)
        same = (cnt > 0) & (bad == 0)
    if same is None:
        same = np.zeros(n, dtype=bool)
    prev_same = np.concatenate(([False], same[:-1] & mine[:-1] & mine[1:]))
    start = mine & ~prev_same
    gid = np.cumsum(start) - 1
    gid[~mine] = -1
    return gid


_HASH_SEED = 0x5EED_11E5


def _record_groups(gid, ncodes, uniq, counts, counters, whole):
    """Per group, whether it is a record: its shape (counter keys, component names) repeats;
    or it shares its counter keys and a component (not the whole) with a shape that
    repeats; or, when no shape repeats, it has a time. Shapes are compared by two 64-bit
    sums of random words over their names (sets)."""
    ng = int(gid.max()) + 1 if len(gid) and gid.max() >= 0 else 0
    if ng == 0:
        return np.zeros(0, dtype=bool)
    if every_row_alike(gid, ncodes, counts, counters[0], counters[1]):  # (one shape: each group is one)
        return np.ones(ng, dtype=bool)
    rng = np.random.default_rng(_HASH_SEED)
    vg = np.repeat(gid, counts) if len(ncodes) else np.zeros(0, dtype=np.int64)  # (gid[row_of])
    keep = vg >= 0
    if keep.all():  # (every value in a group: no copies)
        pg, pc = distinct_pairs(vg, ncodes, max(len(uniq), 1))
    else:
        pg, pc = distinct_pairs(vg[keep], ncodes[keep], max(len(uniq), 1))
    del keep
    rnd = rng.integers(1, 2**62, size=(max(len(uniq), 1), 2), dtype=np.int64).view(np.uint64)
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
        cg = gid[crow]
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
        rep_shapes = np.unique(shape[repeated])
        first_of = {int(sh): int(np.flatnonzero(shape == sh)[0]) for sh in rep_shapes}
        sets = _group_sets(set(lonely.tolist()) | set(first_of.values()), np.repeat(gid, counts), ncodes, uniq,
                           whole)
        reps = [(kh[g], sets[g]) for g in first_of.values()]
        for g in lonely.tolist():
            out[g] = any(k == kh[g] and parts & sets[g] for k, parts in reps)
    return out


def _group_sets(wanted: set[int], vg, ncodes, uniq, whole) -> dict[int, set]:
    """The component names (without the whole) of the wanted groups (vg: each value's group)."""
    out: dict[int, set] = {g: set() for g in wanted}
    sel = np.flatnonzero(np.isin(vg, np.fromiter(wanted, dtype=np.int64)))
    for g, c in zip(vg[sel].tolist(), ncodes[sel].tolist(), strict=True):
        nm = uniq[c]
        if nm != whole:
            out[g].add(nm)
    return out

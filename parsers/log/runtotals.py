"""Running totals of a `lines` (or `kv`) log: components printed as the sum so far (fairseq's
`wall=33, 66, 99, 132`), read as their differences line to line (parsers/log/lines/records.py
finish; parsers/log/kv.py); and the run's total printed once after its steps (run_totals), no
step and never a record's whole."""

from __future__ import annotations

import numpy as np

from gpuscope.arrays import median
from gpuscope.parsers.log import scan as sc
from gpuscope.parsers.log.codeops import medians
from gpuscope.parsers.log.lines.steps import COVERS
from gpuscope.parsers.log.words import COUNTERS


def running_totals(names: np.ndarray, values: np.ndarray, mine: np.ndarray) -> list[str]:
    """running_totals_codes over an array of names (parsers/log/kv.py)."""
    if len(np.flatnonzero(mine)) < 4:
        return []
    codes, uniq = sc.factorize(names)
    return running_totals_codes(codes, [str(u) for u in uniq], values, mine)


def running_totals_codes(ncodes: np.ndarray, uniq: list[str], values: np.ndarray, mine: np.ndarray) -> list[str]:
    """Components printed as running totals (fairseq's cumulative `wall=33, 66, 99, 132`; a
    `Time` that grows line by line) are replaced, in place, by their differences; returns
    their names. A running total: on at least 4 lines, never decreasing, starting below two
    of its median increments. Vectorised over the names (many names cost no loop); the
    medians only of the names that never decrease (a time per step falls now and then)."""
    k = int(np.count_nonzero(mine))
    if k < 4:
        return []
    if len(uniq) <= FEW_NAMES and k == len(ncodes):  # (every value: no copies, no positions)
        return _running_totals_few(ncodes, uniq, values, None)
    sel = np.flatnonzero(mine)
    if len(uniq) <= FEW_NAMES:
        return _running_totals_few(ncodes[sel], uniq, values, sel)
    codes, order = sc.first_codes(ncodes[sel], len(uniq))
    nu = len(order)
    # (a stable sort of small integers is a radix sort: O(n))
    small = codes.astype(np.uint16) if nu <= np.iinfo(np.uint16).max else codes
    srt = np.argsort(small, kind="stable")
    idx, cc = sel[srt], codes[srt]
    v = values[idx]
    same = cc[1:] == cc[:-1]
    d = np.diff(v)
    count = np.bincount(cc, minlength=nu)
    falls = np.bincount(cc[1:][same & (d < 0)], minlength=nu) > 0
    cand = (count >= 4) & ~falls
    if not cand.any():
        return []
    med = medians(d, cc, same, cand, nu)
    first = np.full(nu, np.nan)
    starts = np.flatnonzero(np.concatenate(([True], ~same)))
    first[cc[starts]] = v[starts]
    with np.errstate(invalid="ignore"):
        total = cand & (med > 0) & (first <= 2 * med)
    if not total.any():
        return []
    step = np.flatnonzero(same & total[cc[1:]]) + 1  # (positions in idx after each group's first)
    values[idx[step]] = d[step - 1]
    return [str(uniq[order[c]]) for c in np.flatnonzero(total)]


def period(codes: np.ndarray, most: int = 64) -> int:
    """k where the codes are one row of k distinct names repeated (a log printing the same
    fields on every line, in order), else 0."""
    n = len(codes)
    if not n:
        return 0
    again = np.flatnonzero(codes[1:most + 1] == codes[0])
    k = int(again[0]) + 1 if len(again) else n
    if k > most or n % k or len(set(codes[:k].tolist())) != k:
        return 0
    return k if bool((codes.reshape(-1, k) == codes[:k]).all()) else 0


FEW_NAMES = 64  # running totals: up to this many names, one pass per name (no sort of them all)


def _running_totals_few(sub: np.ndarray, uniq: list[str], values: np.ndarray, sel: np.ndarray | None) -> list[str]:
    """running_totals_codes one name at a time (sub: the names' codes at sel; None: all), in
    order of first appearance: no sort, and no temporary as long as all the values."""
    vs = values[sel] if sel is not None else values
    found = []
    k = period(sub) if sel is None else 0
    for c in np.flatnonzero(np.bincount(sub, minlength=len(uniq)) >= 4).tolist():
        if k:  # (every line the same names in the same order: a name's values are every k-th)
            j = int(np.flatnonzero(sub[:k] == c)[0])
            at: np.ndarray | slice = slice(j, None, k)
            v = vs[at]
        else:
            at = np.flatnonzero(sub == c)
            v = vs[at]
            j = int(at[0])
        d = np.diff(v)
        if (d < 0).any():
            continue
        dn = d[~np.isnan(d)]
        med = float(median(dn)) if len(dn) else np.nan
        if med > 0 and v[0] <= 2 * med:
            if isinstance(at, slice):
                values[j + k::k] = d
            else:
                values[sel[at[1:]] if sel is not None else at[1:]] = d
            found.append((j, c))
    return [str(uniq[c]) for _, c in sorted(found)]


RUN_TOTAL_WHY = ("the run's total, printed once after the {k} steps it covers ({v:.6g} ms, at least their "
                 "{s:.6g} ms): no step, never a record's whole")


def run_totals(ncodes: np.ndarray, uniq: list[str], values: np.ndarray, row_of: np.ndarray, counts: np.ndarray,
               timed: np.ndarray, whole_row: np.ndarray, counted: np.ndarray, tol) -> tuple[np.ndarray, dict[str, str]]:
    """Per row, whether it prints the run's total (the ignite example's `Total Time: 93.50` after
    its epochs' `Time Taken`, JAX's `total time: 1.39` after ten `epoch time:` lines), and why,
    per name. A run total: the one value of a row (`timed`: the log's own step candidates) that
    is named like a whole (`whole_row`), printed on that row only, after every other timed row,
    at least as large as the sum of their largest times (less their rounding, `tol` per row), and
    the other rows, at least 2, are steps by their own text: each prints a counter (`counted`,
    `Epoch 1`) or only times named after one (`epoch_time`). What would fire falsely: a record's
    whole printed once after its parts' lines (`load 5 ms` x3, `total 15 ms`): no counter, so the
    parts' lines are no steps and the total stays their record's whole."""
    n = len(counts)
    none = np.zeros(n, dtype=bool)
    first = np.concatenate(([0], np.cumsum(counts)[:-1])).astype(np.int64)
    cand = timed & whole_row & (counts == 1)
    if not cand.any():
        return none, {}
    per_name = np.bincount(ncodes, minlength=len(uniq))
    cand[cand] = per_name[ncodes[first[cand]]] == 1
    if not cand.any():
        return none, {}
    named_counter = np.asarray([u.lower().replace("-", "_").split("_")[0] in COUNTERS for u in uniq], dtype=bool)
    by_name = np.bincount(row_of, weights=named_counter[ncodes].astype(np.float64), minlength=n) == counts
    rowmax = np.zeros(n)
    np.maximum.at(rowmax, row_of, values)
    out = none.copy()
    why = {}
    for r in np.flatnonzero(cand).tolist():
        steps = np.flatnonzero(timed & ~cand)
        if len(steps) < 2 or steps[-1] > r or not (counted[steps] | by_name[steps]).all():
            continue
        v, s = float(values[first[r]]), float(rowmax[steps].sum())
        if v + float(np.asarray(tol)[steps].sum()) + float(tol[r]) >= s:
            out[r] = True
            why[str(uniq[ncodes[first[r]]])] = RUN_TOTAL_WHY.format(k=len(steps), v=v, s=s)
    return out, why


def run_total_apart(s, ncodes: np.ndarray, uniq: list[str], row_of: np.ndarray, counts: np.ndarray,
                    timed: np.ndarray, aux: np.ndarray, known: dict[str, str], notes: list[str]) -> np.ndarray:
    """run_totals over a scan (parsers/log/lines/records.py finish): the rows printing the run's
    total, kept apart; their names go into `known` (no parts, with why) and a note says so."""
    n = len(counts)
    if not (timed & (aux >= 0) & (counts == 1)).any():
        return np.zeros(n, dtype=bool)
    counted = np.zeros(n, dtype=bool)
    covers = np.zeros(n, dtype=bool)  # (a line that says the steps it covers, Hugging Face's train_runtime,
    qnames = s.tables.qnames.list  # Keras' epoch line, is read for them: parsers/log/lines/steps.py)
    if len(s.qrow) and qnames:
        is_counter = np.asarray([str(q).lower() in COUNTERS for q in qnames], dtype=bool)
        counted[np.asarray(s.qrow)[is_counter[np.asarray(s.qcodes)]]] = True
        is_cover = np.asarray([q == COVERS for q in qnames], dtype=bool)
        covers[np.asarray(s.qrow)[is_cover[np.asarray(s.qcodes)]]] = True
    tol = np.asarray(s.tol, dtype=np.float64) if len(s.tol) == n else np.zeros(n)
    out, why = run_totals(ncodes, uniq, s.values, row_of, counts, timed, (aux >= 0) & ~covers, counted, tol)
    if why:
        known.update(why)
        notes.append("the run's total, printed once after its steps: " + ", ".join(why)
                     + " (no step, never a record's whole)")
    return out

"""Running totals of a `lines` (or `kv`) log: components printed as the sum so far (fairseq's
`wall=33, 66, 99, 132`), read as their differences line to line (parsers/log/lines/records.py
finish; parsers/log/kv.py)."""

from __future__ import annotations

import numpy as np

from gpuscope.parsers.log import scan as sc
from gpuscope.parsers.log.codeops import medians


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
        med = float(np.median(dn)) if len(dn) else np.nan
        if med > 0 and v[0] <= 2 * med:
            if isinstance(at, slice):
                values[j + k::k] = d
            else:
                values[sel[at[1:]] if sel is not None else at[1:]] = d
            found.append((j, c))
    return [str(uniq[c]) for _, c in sorted(found)]

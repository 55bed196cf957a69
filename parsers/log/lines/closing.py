"""A `lines` log's records closed (parsers/log/lines/records.py chose its whole and its record
rows): each record numbered, its held row marked and its held time set; where the whole is printed
on a line of its own, whether a record ends at it or starts at it, by the evidence of the sums."""

from __future__ import annotations

import numpy as np

from gpuscope.parsers.log import scan as sc
from gpuscope.parsers.log.codeops import exact_runs


def close_records(scan: sc.Scan, rows: np.ndarray, groups: np.ndarray, alone: bool, has_whole: np.ndarray, line_whole: np.ndarray, parts: np.ndarray, row_count: int) -> tuple[int, bool]:
    """Number the records, mark each one's last row as its held row and set scan.held (the
    whole, or the parts' sum, or the parts' sum where the whole is below it by rounding);
    returns how many records were so rounded, and whether each whole opened its record.

    A whole on a line of its own (`alone`) ends its record, which takes the timing lines before
    it (kv's way), unless that reading makes records whose parts exceed their whole and the
    other order, each whole followed by its parts (Megatron-LM prints its timers after the
    iteration line), makes none: the evidence of the sums decides, never the order alone (two
    programs' lines interleaved, inconsistent either way, keep kv's)."""
    tol = np.asarray(scan.tol, dtype=np.float64) if len(scan.tol) == row_count else np.zeros(row_count)
    first = False
    if alone:
        groups, complete_g = _alone_groups(has_whole[rows], first=False)
        sums = _record_sums(groups, complete_g, rows, line_whole, parts, tol)
        bad = _inconsistent(sums, complete_g)
        if bad:
            groups2, complete2 = _alone_groups(has_whole[rows], first=True)
            sums2 = _record_sums(groups2, complete2, rows, line_whole, parts, tol)
            if _inconsistent(sums2, complete2) == 0:
                first, groups, complete_g, sums = True, groups2, complete2, sums2
    else:
        if len(groups):
            groups = np.cumsum(np.concatenate(([True], groups[1:] != groups[:-1]))) - 1
        complete_g = np.ones(int(groups[-1]) + 1 if len(groups) else 0, dtype=bool)
        sums = _record_sums(groups, complete_g, rows, line_whole, parts, tol)
    gw, gp, gt = sums
    last = np.concatenate((groups[1:] != groups[:-1], [True])) if len(groups) else groups.astype(bool)
    held_rows = rows[last & complete_g[groups]]
    scan.meta[:, 2][held_rows] = sc.K_HELD
    # a whole below its parts by no more than the printed rounding is rounding, not an
    # inconsistent record (86.0 + 829.0 printed as a step of 914.9): it is taken as the parts
    rounded = (gp > gw) & (gp - gw <= gt * (1 + 1e-9)) & complete_g
    gw = np.where(rounded, gp, gw)
    held_g = np.where(np.isnan(gw), gp, gw)[complete_g]
    scan.held = (held_rows.astype(np.int64), np.asarray(held_g, dtype=np.float64))
    return int(rounded.sum()), first


def _alone_groups(hw: np.ndarray, first: bool) -> tuple[np.ndarray, np.ndarray]:
    """Record numbers of the record rows (0, 1, ... in order) where a whole is printed on a line
    of its own (hw: per row, whether it prints it), and per record whether it has its whole:
    a record ends at each whole (first=False) or starts at it (first=True); the rows after the
    last whole (or before the first) are a record cut off."""
    if not len(hw):
        return hw.astype(np.int64), np.zeros(0, dtype=bool)
    starts = hw.copy() if first else np.concatenate(([False], hw[:-1]))
    starts[0] = True
    groups = np.cumsum(starts) - 1
    complete = np.zeros(int(groups[-1]) + 1, dtype=bool)
    np.logical_or.at(complete, groups, hw)
    return groups, complete


def _record_sums(groups: np.ndarray, complete_g: np.ndarray, rows: np.ndarray, line_whole: np.ndarray, parts: np.ndarray,
                 tol: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per record: its largest whole (NaN where it has none), its parts' sum, their rounding."""
    # (a record of one line each, g 0, 1, ...: its sums are its line's, + 0.0 as bincount adds them)
    one = len(groups) and len(complete_g) == len(groups)
    if one:
        gw = line_whole[rows]
    else:
        gw = exact_runs(np.fmax, line_whole[rows], np.flatnonzero(np.diff(groups, prepend=-1))) if len(groups) else groups * 1.0
    gp = parts[rows] + 0.0 if one else np.bincount(groups, weights=parts[rows], minlength=len(complete_g))
    gt = tol[rows] + 0.0 if one else np.bincount(groups, weights=tol[rows], minlength=len(complete_g))
    return gw, gp, gt


def _inconsistent(sums: tuple[np.ndarray, np.ndarray, np.ndarray], complete_g: np.ndarray) -> int:
    """How many complete records' parts exceed their whole by more than the printed rounding."""
    gw, gp, gt = sums
    return int((complete_g & (gp - gw > gt * (1 + 1e-9))).sum())

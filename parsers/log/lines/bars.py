"""A tqdm bar's redraws among a `lines` log's own timing lines (parsers/log/lines/records.py finish
asks once per log): which redraws are no steps (every redraw beside the log's own step lines; a bar
of another total than the loop's, Hugging Face's evaluation bar inside the training's); and the
two helpers over a scan's names that records.py shares (is_name, names_of)."""

from __future__ import annotations

import numpy as np

from gpuscope.parsers.log import scan as sc
from gpuscope.parsers.log.lines.frameworks import BAR_COUNTER, BAR_TIME, BAR_TOTAL


def bars_apart(scan: sc.Scan, ncodes: np.ndarray, distinct: list[str], row_of: np.ndarray, row_count: int, timed: np.ndarray, notes: list[str]) -> np.ndarray:
    """Per row, whether it is a tqdm bar's redraw that is no step (`timed`: the log's own
    timing rows, evaluation lines left out): every redraw, beside step lines of the log's own
    (a component on at least 3 of its other lines: a data loader's bar among step lines; a few
    one-off lines, `Loaded model in 3.2s`, are no steps); else a bar of another total than the
    bar of the most redraws, the loop's (Hugging Face's evaluation bar inside the training's)."""
    bars, total = bar_rows(scan, ncodes, distinct, row_of, row_count)
    bars &= timed
    if not bars.any():
        return bars
    own = timed & ~bars
    own_names = ncodes[own[row_of]] if len(ncodes) else ncodes
    # (step lines, not one-offs; or a logger's timing line written right after a redraw, on its line)
    shared = np.isin(scan.meta[bars, 0], scan.meta[own, 0]).any()
    if shared or len(own_names) and int(np.bincount(own_names).max()) >= 3:
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


def bar_rows(scan: sc.Scan, ncodes: np.ndarray, distinct: list[str], row_of: np.ndarray, row_count: int) -> tuple[np.ndarray, np.ndarray]:
    """Per row, whether it is a tqdm bar's redraw (parsers/log/lines/frameworks.py read_tqdm: its one
    time is the bar's time per iteration and it prints the bar's counter), and the bar's
    total (-1: none)."""
    one = np.bincount(row_of, minlength=row_count) == 1
    timed = np.zeros(row_count, dtype=bool)
    timed[row_of[is_name(ncodes, distinct, BAR_TIME)]] = True
    counted = np.zeros(row_count, dtype=bool)
    total = np.full(row_count, -1.0)
    if len(scan.qrow):
        (qc, qu), qrow = names_of(scan), np.asarray(scan.qrow)
        counted[qrow[is_name(qc, qu, BAR_COUNTER)]] = True
        is_total = is_name(qc, qu, BAR_TOTAL)
        total[qrow[is_total]] = np.asarray(scan.qvalues)[is_total]
    return one & timed & counted, total


def is_name(codes: np.ndarray, distinct: list[str], name: str | None) -> np.ndarray:
    """Per value, whether its name (codes into uniq) is `name`."""
    try:
        return codes == distinct.index(name) if name is not None else np.zeros(len(codes), dtype=bool)
    except ValueError:
        return np.zeros(len(codes), dtype=bool)


def names_of(scan: sc.Scan, codes: str = "qcodes", table: str = "qnames") -> tuple[np.ndarray, list[str]]:
    """The (quantity) names as codes in order of first appearance, and their names: what
    pandas.factorize of the names gives, without an array of a million name objects."""
    names: sc.Names = getattr(scan.tables, table)
    new, order = sc.first_codes(np.asarray(getattr(scan, codes)), len(names))
    return new, [names.list[i] for i in order.tolist()]

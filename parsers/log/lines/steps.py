"""How many steps one record of a `lines` log stands for, from the text's own counters
(parsers/log/lines/records.py calls it once the records are known):

- a line that says how many steps its times cover (quantity `covers_steps`: Keras' epoch
  line covers its N steps, Hugging Face's train_runtime covers runtime x
  train_steps_per_second steps);
- else a step counter (`step = 100`, tqdm's n, `iteration 10`) that advances from one record
  to the next on at least 3 in 4 of them, by K > 1 on average (the advances, the
  steps the records stand for, sum to the counter's run): the program prints every K-th step
  (TensorFlow's hooks every 100, a tqdm bar redrawn every ~0.1 s, K iterations apart).

Where every record is a tqdm bar's last state (n = N), each stands for N steps (its time per
iteration is the mean over them). Epoch counters do not count steps. The `i/N` counters of
the text (`Epoch: [0][ 10/500]`) are found by parsers/log/lines/read.py sampled_every, over the
log's head."""

from __future__ import annotations

import numpy as np

from gpuscope.arrays import median
from gpuscope.parsers.log import scan as sc
from gpuscope.parsers.log.lines.vocabulary import MAX_COUNT
from gpuscope.parsers.log.words import COUNTERS

COVERS = "covers_steps"
# a tqdm bar's counter and total (parsers/log/lines/frameworks.py BAR_COUNTER, BAR_TOTAL: importing them
# would close a cycle through linetree and linefields; tests/test_oneoffs_lines.py holds them equal)
BAR_COUNTER, BAR_TOTAL = "iter", "iter_of"
_NOT_STEPS = frozenset(("epoch",))


def runtime_steps(names: list[str], values: list[float], prefix: str, rate: float) -> float | None:
    """`<prefix>_runtime` (ms) x `<prefix>_steps_per_second` (Hugging Face's end of training:
    a rate, never a time): the steps that runtime covers, or None."""
    name = f"{prefix}_runtime"
    if name not in names or not rate > 0:
        return None
    steps = round(values[names.index(name)] / 1e3 * rate)
    return float(steps) if 0 < steps <= MAX_COUNT else None


def steps_per_record(scan: sc.Scan, held_rows: np.ndarray) -> tuple[int, str, bool] | None:
    """(K, what says so, whether the records' times cover the K steps: a runtime that says how
    many it covers) for a log whose records each stand for K steps, else None."""
    if not len(held_rows) or not len(scan.qrow):
        return None
    qcodes, order = sc.first_codes(np.asarray(scan.qcodes), len(scan.tables.qnames))
    qnames = [scan.tables.qnames.list[i] for i in order.tolist()]  # (the distinct names)
    qrow = np.asarray(scan.qrow, dtype=np.int64)
    qv = np.asarray(scan.qvalues, dtype=np.float64)
    rec = np.zeros(len(scan.meta), dtype=bool)
    rec[held_rows] = True
    on_rec = rec[qrow]
    cov = (qcodes == qnames.index(COVERS)) & on_rec if COVERS in qnames else np.zeros(0, dtype=bool)
    if cov.any():
        k = int(round(float(median(qv[cov]))))
        return (k, f"the record's own line says it covers {k} steps", True) if k > 1 else None
    code_of = {str(nm): c for c, nm in enumerate(qnames)}
    final = _final_bars(code_of, qcodes, qrow, qv, rec)
    if final is not None:
        return final
    best = None
    for name in sorted(nm for nm in code_of if nm.lower() in COUNTERS - _NOT_STEPS):
        sel = (qcodes == code_of[name]) & on_rec
        if sel.sum() < 3:
            continue
        d = np.diff(qv[sel])
        up = d[d > 0]
        if len(up) < 2 or len(up) * 4 < len(d) * 3:
            continue  # (a counter that falls back now and then: epochs restart it)
        k = int(round(float(up.mean())))
        if k > 1:
            first = qv[sel][:2]
            about = "" if (up == up[0]).all() else "about "
            best = (k, f"the step counter {name} ({int(first[0])}, {int(first[1])}, ...) advances by {about}"
                    f"{k} a record", False)
            break
    return best


def _final_bars(code_of: dict[str, int], qcodes, qrow, qv, rec) -> tuple[int, str, bool] | None:
    """(N, why) when every record is a tqdm bar's last state (`15/15 [07:57<00:00, 31.82s/it]`:
    six ranks each printing its bar's end): the bar's time per iteration is then its mean over
    its N iterations, and the record stands for N steps; its counter does not advance (each
    record another rank's or run's bar, no step after the one before). A bar still counting
    (`7/15`) on any record: None (its redraws are read by the counter's advance)."""
    if BAR_COUNTER not in code_of or BAR_TOTAL not in code_of:
        return None
    n_rec = int(rec.sum())
    at = np.full((2, len(rec)), np.nan)
    for j, name in enumerate((BAR_COUNTER, BAR_TOTAL)):
        sel = (qcodes == code_of[name]) & rec[qrow]
        at[j, qrow[sel]] = qv[sel]
    i, of = at[0, rec], at[1, rec]
    if n_rec < 2 or not bool((of >= 2).all()) or not bool((i == of).all()):
        return None
    k = int(round(float(median(of))))
    return k, (f"each record is a progress bar's last state ({int(i[0])}/{int(of[0])}), its time per iteration "
               f"the mean over its {k} iterations"), False

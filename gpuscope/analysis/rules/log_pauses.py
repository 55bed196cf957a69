"""Pauses between a stamped log's records: the same `long_pauses` the samples give
(rules.pauses.long_pauses), from the time stamps of the timing lines.

    long_pauses   a gap between one record's end and the next one's start that exceeds the
                  typical gap (the median) by >= MIN_PAUSE_S and >= PAUSE_FACTOR x the median
                  record period; those excesses together >= PAUSE_SHARE of the stamped span

A record's start is its last stamp less its held time (as evidence.log.timeline_summary reads
tenures). A 5 s pause right after a `saved checkpoint` line, a third of the wall time, read
nothing from a stamped log while samples of the same run gave long_pauses (issue 33 class 13).

What would make it fire falsely: a log that prints every K-th step (every gap is K-1 steps long:
regular, so none stands out from the median gap), or a held time that misses part of each step
(the same: a regular gap); tests/test_truthcap_rates.py shows both stay quiet. What ran during a
pause (evaluation on the GPU, a checkpoint, host work) the stamps cannot say: could_not_see.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from gpuscope.analysis.core import Diagnosis
from gpuscope.analysis.evidence.log.rule_input import RuleInput, floats, rnd
from gpuscope.analysis.rules.engine import LOG, SAMPLES, Finding, log_findings, rule
from gpuscope.arrays import median

if TYPE_CHECKING:
    from gpuscope.analysis.evidence import Evidence

PAUSE_SHARE = 0.2    # as the samples' long_pauses: pauses / the stamped span
MIN_PAUSE_S = 1.0    # a pause's excess over the median gap, at least
PAUSE_FACTOR = 5.0   # ... and at least this many median record periods
MIN_RECORDS = 4      # fewer records: no typical gap to stand out from


def long_pauses(inp: RuleInput) -> list[Diagnosis]:
    sp = inp.split
    if len(sp) < MIN_RECORDS or "ts_end" not in sp:
        return []
    end = floats(sp, "ts_end")
    start = end - floats(sp, "held_ms") / 1000.0
    ok = np.isfinite(start) & np.isfinite(end)
    if ok.sum() < MIN_RECORDS:
        return []
    s, e = start[ok], end[ok]
    rec_no = floats(sp, "record")[ok] if "record" in sp else None
    if not (e[1:] >= e[:-1]).all():  # (records printed out of time order; in order: one pass, no sort)
        order = np.argsort(e, kind="stable")
        s, e, rec_no = s[order], e[order], (None if rec_no is None else rec_no[order])
    if rec_no is None:
        rec_no = np.arange(s.size, dtype=float)
    gaps = s[1:] - e[:-1]
    period = float(median(np.diff(e)))
    typical = float(median(gaps))
    span = float(e[-1] - s[0])
    if not (math.isfinite(period) and span > 0):
        return []
    excess = gaps - max(typical, 0.0)
    long_ = excess >= max(MIN_PAUSE_S, PAUSE_FACTOR * period)
    total = float(excess[long_].sum())
    if not long_.any() or total / span < PAUSE_SHARE:
        return []
    v = inp.model.vocabulary
    i = int(np.argmax(np.where(long_, excess, -np.inf)))
    count = int(long_.sum())
    ev = {"count": count, "total_s": rnd(total), "longest_s": rnd(float(excess[i])), "span_s": rnd(span),
          "share_of_span": rnd(total / span), "longest_after_record": int(rec_no[i]),
          "longest_at_s": rnd(float(e[i] - s[0])), "typical_gap_s": rnd(typical, 4),
          "record_period_median_s": rnd(period, 4), "basis": "the timing lines' time stamps",
          "thresholds": {"share_of_span": PAUSE_SHARE, "min_pause_s": MIN_PAUSE_S, "period_factor": PAUSE_FACTOR},
          "could_not_see": "what ran meanwhile: evaluation on the GPU, a checkpoint, or host work look alike in the "
                           "stamps (NVML samples or a trace of the run would tell)"}
    stretches = "one stretch" if count == 1 else f"{count} stretches"
    summary = (f"No {v.record} was timed for {total:.1f} s in {stretches} ({total / span:.0%} of the {span:.1f} s the "
               f"stamped {v.records} span; longest {float(excess[i]):.1f} s, after {v.record} {int(rec_no[i])}, "
               f"{float(e[i] - s[0]):.1f} s in), beyond the usual {max(typical, 0.0) * 1e3:.0f} ms between them.")
    rec = ("One-off work holds the loop: checkpointing, evaluation, JIT compilation or a data loader restarting; "
           "move it off the training path or overlap it (an asynchronous checkpoint, evaluation less often).")
    return [Diagnosis("long_pauses", "low" if count >= 2 else "info", summary, ev, rec)]


# the stamps' pauses; beside samples their own long_pauses tells it (one finding, not two)
@rule("log_long_pauses", needs=LOG, uses=("idle",), emits={"long_pauses": None}, yields_to=SAMPLES)
def log_long_pauses(ev: Evidence) -> list[Finding]:
    return log_findings(long_pauses(ev.log_input))

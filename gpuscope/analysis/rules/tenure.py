"""The tenure rules, over the per-record split: `cpu_stall_at_barrier` (the GPU waited for
the CPU), `lock_convoy` (workers queue for the lock as long as a tenure), `unstable_component`
(the part whose variation makes the held time vary, or a first record that is a warm-up),
`inconsistent_records` (parts adding up to more than the whole) and
`first_partition_warmup` (the device pool's first allocation). Thresholds: docs/ANALYZE.md.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from gpuscope.analysis.core import Diagnosis
from gpuscope.analysis.evidence.log.rule_input import (
    NAN,
    RuleInput,
    coef_var,
    column,
    correlation,
    correlation_of,
    cov_pair,
    cv_of,
    floats,
    rnd,
    spread,
    std_of,
)
from gpuscope.analysis.evidence.log.table import nansum
from gpuscope.analysis.rules.engine import LOG, Finding, log_findings, rule
from gpuscope.arrays import median
from gpuscope.rolemodel import SPLIT_ROLES
from gpuscope.rolewords import name_words

if TYPE_CHECKING:
    from gpuscope.analysis.evidence import Evidence

# cpu_stall_at_barrier: share of held time the GPU waited on the CPU
STALL_SHARE_HIGH, STALL_SHARE_MEDIUM = 0.10, 0.03
# a non-CuZK loop's host-side parts (data, prep) below this share of its time: no diagnosis
STALL_SHARE_FLOOR = 0.01
# lock_convoy: median mutex_wait / median held
CONVOY_RATIO_HIGH, CONVOY_RATIO_MEDIUM = 1.0, 0.5
# unstable_component: share of held-time variance the component explains (cov/var), and its cv
UNSTABLE_EXPLAINED_HIGH, UNSTABLE_EXPLAINED_MEDIUM = 0.8, 0.5
UNSTABLE_MIN_CV, UNSTABLE_MIN_CORR, UNSTABLE_MIN_RECORDS = 0.2, 0.7, 3
STABLE_CV = 0.10
# unstable_component over fewer records than this, with no steady part to contrast: at most low
UNSTABLE_FEW_RECORDS = 10
# unstable_component over a server's requests (a part named with one of these words, no step
# counter): at most low whatever their number, their inputs differ (tenure._requests)
REQUEST_WORDS = frozenset(("queue", "tokenization", "tokenize", "detokenization", "validation", "inference",
                           "prefill", "ttft", "prompt", "request"))
# inconsistent_records: fraction of records
INCONSISTENT_MEDIUM = 0.05
# first_partition_warmup: the first tenure's d_b_alloc this many times the median of the rest
# (and WARMUP_MIN_MS more). first_record_warmup (unstable_component): a first record this many
# times the median of the others is a warm-up (CUDA context, cuDNN autotuning, JIT, a first
# allocation): it is left out of the variance analysis and said apart.
WARMUP_FACTOR, WARMUP_MIN_MS = 5.0, 100.0
# first_record_warmup is low (a finding) when the warm-up's time above a usual record is this share
# of the log's held time or more, else info (a note on how the log was read)
WARMUP_LOW_SHARE = 0.10


def first_is_warmup(held: np.ndarray) -> bool:
    """Whether the first record is a warm-up: the longest of more than UNSTABLE_MIN_RECORDS,
    WARMUP_FACTOR times the median of the others."""
    if len(held) <= UNSTABLE_MIN_RECORDS or not np.isfinite(held).all() or held[0] != held.max():
        return False
    med = float(median(held[1:]))
    return med > 0 and held[0] > WARMUP_FACTOR * med


def cpu_stall_at_barrier(inp: RuleInput) -> list[Diagnosis]:
    """The GPU waited for host-side work. A first record that is a warm-up (first_is_warmup)
    is left out: its one-off start-up (the loader's workers starting, a first batch) is no
    steady stall, and on a short run it alone can make one."""
    sp = inp.split
    if not len(sp):
        return []
    share = inp.totals.get("cpu_stall_share", NAN)
    warm = not inp.model.vocabulary.cuzk and first_is_warmup(floats(sp, "held_ms"))
    if warm:
        sp = sp.rows(slice(1, None))
        held_rest = nansum(floats(sp, "held_ms"))
        share = nansum(floats(sp, "cpu_stall_ms")) / held_rest if held_rest > 0 else NAN
    stall = floats(sp, "cpu_stall_ms")
    nz = stall[stall > 0]
    if nz.size == 0:
        return []
    if not inp.model.vocabulary.cuzk and share < STALL_SHARE_FLOOR:
        return []  # a loop's host parts under 1% of its time are not a stall worth a word
    if not inp.model.vocabulary.cuzk and len(sp) < UNSTABLE_MIN_RECORDS:
        return []  # one or two records (a summary: llama.cpp's load time) show no per-step stall
    sev = "high" if share >= STALL_SHARE_HIGH else "medium" if share >= STALL_SHARE_MEDIUM else "low"
    known = not math.isnan(share)  # (no held time: no share of it)
    ev: dict[str, Any] = {
        "stalled_records": int(nz.size),
        "records": int(len(sp)),
        "stalled_fraction": rnd(nz.size / len(sp), 4),
        "stall_ms": rnd(float(nz.sum())),
        "stall_share": rnd(share, 4),
        "stall_median_ms": rnd(float(median(nz))),
        "stall_max_ms": rnd(float(nz.max())),
        "worst_record": int(sp["record"][int(np.argmax(stall))]),
        "worst_line": int(sp["last_line"][int(np.argmax(stall))]),
    }
    if warm:
        ev["first_record_left_out"] = True
    if inp.stats.has("prep_msm"):
        ev["prep_msm_median_ms"] = rnd(float(inp.stats.at("prep_msm", "median_ms")))
        ev["prep_msm_p90_ms"] = rnd(float(inp.stats.at("prep_msm", "p90_ms")))
    v = inp.model.vocabulary
    if v.cuzk:
        summary = (
            f"The GPU waited for the CPU at the barrier in {nz.size} of {len(sp)} tenures "
            f"({ev['stall_ms']:.0f} ms, " + (f"{share:.1%} of held time; " if known else "")
            + f"worst {ev['stall_max_ms']:.0f} ms)."
        )
        rec = (
            "Start the CPU prep (prep_msm) earlier or give it more threads so it finishes before the GPU "
            "reaches the barrier; the GPU holds the lock idle while it waits."
        )
    else:
        host = [c for c in inp.wide.columns if inp.model.role_of(c) == "cpu_stall"]
        ev["host_components"] = host
        summary = (
            (f"Leaving out the first {v.record} (a warm-up): the GPU" if warm else "The GPU")
            + f" waited for host-side work ({', '.join(host)}) in {nz.size} of {len(sp)} {v.records} "
            + f"({ev['stall_ms']:.0f} ms, " + (f"{share:.1%} of the {v.whole}; " if known else "")
            + f"worst {ev['stall_max_ms']:.0f} ms)."
        )
        rec = (
            f"Overlap the host-side work with the GPU's: prepare the next {v.record}'s input while this one "
            "computes (more loader workers, prefetching), or make it cheaper; while "
            f"{', '.join(host) or 'it'} runs the {v.record} has nothing for the GPU."
        )
        # a training loop's or any program's stall is no barrier of the prover's: named so, the
        # old id kept as an alias for one version
        return [Diagnosis("host_stall", sev, summary, ev, rec, aliases=("cpu_stall_at_barrier",))]
    return [Diagnosis("cpu_stall_at_barrier", sev, summary, ev, rec)]


def lock_convoy(inp: RuleInput) -> list[Diagnosis]:
    sp = inp.split
    wait = floats(sp, "contention_ms") if len(sp) else np.zeros(0)
    if wait.size == 0 or np.all(np.isnan(wait)):
        return []
    held = floats(sp, "held_ms")
    med_wait = float(median(wait, skip_nan=True))
    med_held = float(median(held))
    ratio = med_wait / med_held if med_held > 0 else NAN
    if math.isnan(ratio) or ratio < CONVOY_RATIO_MEDIUM:
        return []
    sev = "high" if ratio >= CONVOY_RATIO_HIGH else "medium"
    prev = np.concatenate([[np.nan], held[:-1]])
    ev = {
        "wait_median_ms": rnd(med_wait),
        "held_median_ms": rnd(med_held),
        "wait_over_held": rnd(ratio, 3),
        "wait_ms": rnd(float(np.nansum(wait))),
        "wait_max_ms": rnd(float(np.nanmax(wait))),
        "wait_held_corr": rnd(correlation(wait, held), 3),
        "wait_prev_held_corr": rnd(correlation(wait, prev), 3),
    }
    summary = (
        f"Workers wait a median {med_wait:.0f} ms for the GPU lock, "
        f"{ratio:.2f}x the median {inp.model.vocabulary.record} ({med_held:.0f} ms)."
    )
    rec = (
        "The wait is a consequence of long tenures: shorten what runs under the lock (the dominant "
        "part above) rather than adding workers; move uploads and CPU prep outside the lock."
    )
    return [Diagnosis("lock_convoy", sev, summary, ev, rec)]



def unstable_component(inp: RuleInput) -> list[Diagnosis]:
    """The part whose variation makes the held time vary; when the first record alone makes it
    (it is the longest, and the rest is stable without it, or it is WARMUP_FACTOR times the
    others), that record is a warm-up and said so instead."""
    held = floats(inp.split, "held_ms")
    full = _unstable(inp, slice(None))
    first_is_max = len(held) > UNSTABLE_MIN_RECORDS and np.isfinite(held).all() and held[0] == held.max()
    if not first_is_max:
        return full
    med = float(median(held[1:]))
    rest = _unstable(inp, slice(1, None))
    huge = first_is_warmup(held)
    if huge or (full and not rest):
        v = inp.model.vocabulary
        # its cost: the time above a usual record, over the log's held time; a warm-up that costs a
        # run little is a note on how it was read (info), one that costs WARMUP_LOW_SHARE or more a
        # finding (low)
        cost = float(held[0] - med) / float(held.sum()) if held.sum() > 0 else 0.0
        warm = Diagnosis(
            "first_record_warmup", "low" if cost >= WARMUP_LOW_SHARE else "info",
            f"The first {v.record} took {held[0]:.0f} ms, {held[0] / med:.1f}x the median of the others "
            f"({med:.0f} ms): a warm-up, left out of the variation analysis.",
            {"first_ms": rnd(float(held[0])), "median_others_ms": rnd(med), "factor": rnd(float(held[0] / med), 1),
             "share_of_held": rnd(cost, 4), "low_at_share": WARMUP_LOW_SHARE},
            f"Leave the first {v.record} out when judging throughput, or warm up (a first call with the same "
            "shapes: CUDA context, cuDNN autotuning, JIT compilation, first allocations) before timing.")
        return [warm, *rest]
    return full


def _unstable(inp: RuleInput, rows_sel: slice) -> list[Diagnosis]:
    sp, wide = inp.split.rows(rows_sel), inp.wide.rows(rows_sel)
    held = floats(sp, "held_ms")
    finite = np.isfinite(held)
    if finite.sum() < UNSTABLE_MIN_RECORDS or not finite.all():
        return []  # (a record without a held time explains nothing: no "explains nan%")
    held_var = held.var()  # (after the count: an empty slice has no variance to warn of)
    if held_var == 0:
        return []
    rows = []
    # (a part without NaN pairs with the whole held column, which has none: its figures, once)
    held_var1, held_std = np.var(held, ddof=1), held.std()
    for c in wide.columns:
        if inp.model.role_of(c) not in SPLIT_ROLES:
            continue
        x = floats(wide, c)
        nan = np.isnan(x)
        every = not nan.any()
        ok = ~nan
        if (x.size if every else int(ok.sum())) < UNSTABLE_MIN_RECORDS:
            continue
        xo, h = (x, held) if every else (x[ok], held[ok])
        if (held_var if every else h.var()) == 0:
            continue
        cov = cov_pair(xo, h)
        explained = float(cov[0, 1] / (held_var1 if every else np.var(h, ddof=1)))
        if not math.isfinite(explained):
            continue
        # correlation(x, held): held has no NaN, so its pairs are (xo, h), their covariance this
        # one; x's std and coefficient of variation from one pass over its deviations (xo: x
        # without NaN, what coef_var reads)
        mean, sq = spread(xo)
        corr = NAN if std_of(sq, xo.size) == 0 or (held_std if every else h.std()) == 0 else correlation_of(cov)
        rows.append((c, explained, corr, cv_of(mean, sq, xo.size) if xo.size >= 2 else NAN))
    if not rows:
        return []
    rows.sort(key=lambda r: -r[1])
    name, explained, corr, cv = rows[0]
    if explained < UNSTABLE_EXPLAINED_MEDIUM or (corr or 0) < UNSTABLE_MIN_CORR or not cv >= UNSTABLE_MIN_CV:
        return []
    sev = "high" if explained >= UNSTABLE_EXPLAINED_HIGH else "medium"
    stable = {c: rnd(v, 3) for c, _, _, v in rows if not math.isnan(v) and v < STABLE_CV}
    ev = {
        "component": name,
        "role": inp.model.role_of(name),
        "explained_held_variance": rnd(explained, 3),
        "corr_with_held": rnd(corr, 3),
        "cv": rnd(cv, 3),
        "held_cv": rnd(coef_var(held), 3),
        "stable_components_cv": stable,
        "others": {c: {"explained": rnd(e, 3), "cv": rnd(v, 3)} for c, e, _, v in rows[1:]},
    }
    # cov/var can pass 100% when the other parts move slightly against this one
    v = inp.model.vocabulary
    held_words = "held time" if v.cuzk else v.whole
    share = (f"all of the variation in {held_words} (covariance share {explained:.0%}: the other parts "
             "move slightly against it)" if explained > 1 else
             f"{explained:.0%} of the variation in {held_words}")
    if len(rows) > 1 and stable:
        summary = (
            f"{name} varies with the symptom: it explains {share} "
            f"(corr {corr:.2f}, cv {cv:.2f}) while {len(stable)} other part(s) stay within cv {STABLE_CV}."
        )
        rec = f"Investigate {name} first: the stable parts are not what makes slow {v.records} slow."
    elif len(rows) > 1:  # other parts, none of them stable: nothing to contrast it with
        summary = (f"{name} varies with the symptom: it explains {share} (corr {corr:.2f}, cv {cv:.2f}); "
                   f"the other part(s) vary too, but explain less of it.")
        rec = f"Investigate {name} first: its variation is what makes slow {v.records} slow."
    else:  # the only part the lines print: nothing to contrast it with
        summary = (f"{name}, the only part the {v.records} print, varies with the symptom: it explains "
                   f"{share} (corr {corr:.2f}, cv {cv:.2f}).")
        rec = (f"Investigate {name} first; the rest of the {v.whole} is not printed as parts, so only "
               f"{name} can be told apart.")
    return [_few(Diagnosis("unstable_component", sev, summary, ev, rec), int(finite.sum()), bool(stable), v,
                 _requests(inp))]


def _requests(inp: RuleInput) -> bool:
    """Whether the records are a server's requests (a part named like a request's stage: queue,
    tokenization, inference, ...; no step or iteration counter): their inputs differ. A training
    loop's steps (the counter names them steps) are alike even when a part is `inference`."""
    if inp.model.vocabulary.record != "record":
        return False
    return any(w.lower() in REQUEST_WORDS for p in [*map(str, inp.wide.columns), inp.model.held or ""] for w in name_words(p))


def _few(d: Diagnosis, n: int, stable: bool, v, requests: bool = False) -> Diagnosis:
    """At most low over fewer than UNSTABLE_FEW_RECORDS records with no steady part beside it:
    five inference requests whose inputs differ vary with their inputs' sizes, and nothing
    tells that from a cause (issue 33). Steady parts (the article's tenures) keep it. A server's
    requests (_requests) are at most low however many: each has its own input, so a part that
    does the work (inference) varies with the input's size, and the log does not print it."""
    if v.cuzk or d.severity == "low":
        return d
    if n < UNSTABLE_FEW_RECORDS and not stable:
        note = (f" Over only {n} {v.records} and with no steady part to compare against, this is no cause yet: "
                f"{v.records} whose inputs differ vary for that alone (more {v.records}, or one input repeated, "
                "would tell).")
    elif requests:
        note = (f" The {n} {v.records} are a server's requests, whose inputs differ: a part doing the work varies "
                "with its input's size alone, which the log does not print, so this is no instability yet "
                "(one input repeated, or the input sizes beside the times, would tell).")
    else:
        return d
    return Diagnosis(d.id, "low", d.summary + note, {**d.evidence, "severity_uncapped": d.severity},
                     d.recommendation)


def inconsistent_records(inp: RuleInput) -> list[Diagnosis]:
    sp = inp.split
    bad = sp.rows(sp["inconsistent"].astype(bool))
    if bad.empty:
        return []
    frac = len(bad) / len(sp)
    sev = "medium" if frac >= INCONSISTENT_MEDIUM else "low"
    ev = {
        "inconsistent_records": int(len(bad)),
        "records": int(len(sp)),
        "fraction": rnd(frac, 4),
        "excess_ms": rnd(nansum(bad["excess_ms"])),
        "excess_max_ms": rnd(float(np.nanmax(bad["excess_ms"]))),
        "examples": [
            {"record": int(r["record"]), "lines": f"{int(r['first_line'])}-{int(r['last_line'])}",
             "held_ms": rnd(r["held_ms"]), "parts_ms": rnd(r["parts_ms"])}
            for r in bad.rows(slice(0, 5)).records()
        ],
    }
    first = bad.rows(slice(0, 1)).records()[0]
    v = inp.model.vocabulary
    held_words = "the held time" if v.cuzk else f"their whole ({v.held})"
    summary = (
        f"{len(bad)} of {len(sp)} records are inconsistent: their parts add up to more than {held_words} "
        f"(e.g. record {int(first['record'])}, lines {int(first['first_line'])}-{int(first['last_line'])}: "
        f"{first['parts_ms']:.0f} > {first['held_ms']:.0f} ms)."
    )
    if v.cuzk:
        rec = (
            "Their 'other' is shown as 0 and they stay in every sum. Check the instrumentation: timers that "
            "overlap or run past the lock release, or lines of another tenure grouped into this one."
        )
    else:
        rec = (
            "Their 'other' is shown as 0 and they stay in every sum. Check the instrumentation: timers that "
            f"overlap or run past the {v.record}'s end, or lines of another {v.record} grouped into this one."
        )
    return [Diagnosis("inconsistent_records", sev, summary, ev, rec)]


def first_partition_warmup(inp: RuleInput, component: str = "d_b_alloc") -> list[Diagnosis]:
    col = column(inp.wide, component)
    if col is None or col.size < 2 or np.isnan(col[0]):
        return []
    rest = col[1:][~np.isnan(col[1:])]
    if rest.size == 0:
        return []
    first, med = float(col[0]), float(median(rest))
    if first < WARMUP_FACTOR * max(med, 1.0) or first - med < WARMUP_MIN_MS:
        return []
    ev = {"component": component, "first_ms": rnd(first), "rest_median_ms": rnd(med),
          "ratio": rnd(first / med, 1) if med > 0 else NAN, "first_line": int(inp.split["first_line"][0])}
    summary = (
        f"First-partition warm-up: {component} took {first:.0f} ms on the first tenure vs a median "
        f"{med:.0f} ms afterwards (device memory pool warm-up)."
    )
    rec = (
        "Pre-allocate / warm the device pool before the first job (or set the pool release threshold), "
        "and leave the first partition out of steady-state comparisons."
    )
    return [Diagnosis("first_partition_warmup", "low", summary, ev, rec)]



@rule("cpu_stall_at_barrier", needs=LOG, uses=("host",), emits={"cpu_stall_at_barrier": "host", "host_stall": "host"})
def cpu_stall_at_barrier_rule(ev: Evidence) -> list[Finding]:
    return log_findings(cpu_stall_at_barrier(ev.log_input))


@rule("lock_convoy", needs=LOG, uses=("host",), emits={"lock_convoy": "lock"})
def lock_convoy_rule(ev: Evidence) -> list[Finding]:
    return log_findings(lock_convoy(ev.log_input))


@rule("unstable_component", needs=LOG, uses=("host", "compute"),
      emits={"unstable_component": None, "first_record_warmup": None})
def unstable_component_rule(ev: Evidence) -> list[Finding]:
    return log_findings(unstable_component(ev.log_input))


@rule("inconsistent_records", needs=LOG, uses=(), emits={"inconsistent_records": None})
def inconsistent_records_rule(ev: Evidence) -> list[Finding]:
    return log_findings(inconsistent_records(ev.log_input))


@rule("first_partition_warmup", needs=LOG, uses=("compute",), emits={"first_partition_warmup": None})
def first_partition_warmup_rule(ev: Evidence) -> list[Finding]:
    return log_findings(first_partition_warmup(ev.log_input))

"""Every rule, once: the modules that declare them (each rule a decorated function, rules.engine.rule),
in the order that breaks ranking ties, and the one way to run them.

    findings = run_rules(evidence)      # every applicable rule, ranked (severity, then share)

- log rules (upload, readback, tenure, log_pauses): a program's printed parts; share = the part of
  the record time the finding is about;
- trace rules (trace, kernel_mix, trace_link, pinned_rate): every kernel and copy; share = the time at
  stake / the traced span; a trace is the finest evidence of copies and gaps, so the sample rules about
  them yield to it;
- sample rules (activity, sample_copies, copy_phase, link, copies, bound, duty, gpus, device, pauses):
  NVML samples of each GPU; share = the share of the working time the finding explains.

The trace and sample modules are imported when a source has a trace or samples: a log's analysis
loads no pandas (they need it). Adding a rule: one decorated function in one of these modules (or a
new module named below).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gpuscope.analysis.rules import log_pauses, readback, tenure, upload
from gpuscope.analysis.rules.engine import Rule, rank, rules_of

if TYPE_CHECKING:
    from gpuscope.analysis.core import Diagnosis
    from gpuscope.analysis.evidence import Evidence


def log_rules() -> list[Rule]:
    return rules_of(upload, readback, tenure, log_pauses)


def trace_rules() -> list[Rule]:
    from gpuscope.analysis.rules import kernel_mix, pinned_rate, trace, trace_link

    return rules_of(trace, kernel_mix, trace_link, pinned_rate)


def sample_rules() -> list[Rule]:
    from gpuscope.analysis.rules import (
        activity,
        bound,
        copies,
        copy_phase,
        device,
        duty,
        gpus,
        link,
        pauses,
        sample_copies,
    )

    return rules_of(activity, sample_copies, copy_phase, link, copies, bound, duty, gpus, device, pauses)


def all_rules() -> list[Rule]:
    """Every rule of every source (the docs test reads them)."""
    return [*log_rules(), *trace_rules(), *sample_rules()]


def run_rules(ev: Evidence) -> list[Diagnosis]:
    """Every rule that applies to `ev`, its findings ranked once (rules.engine.rank): the one way
    rules run, for an analysis and for a trace or samples read alone."""
    have = ev.sources
    rules = log_rules()
    if "trace" in have:
        rules += trace_rules()
    if "samples" in have:
        rules += sample_rules()
    return rank(rules, ev)

"""The cause a finding names, in one vocabulary for every source: what lets a recording, an
nvidia-smi capture and a trace of the same program be checked for telling one story, although
their rules differ in what they can see (a trace's `pageable_memcpy`, a capture's
`download_bound_pageable` and a log's `d2h_bound` all name `readback`).

Each rule states the cause of every finding it can emit (rules.engine.rule: `emits`, `cause`);
the engine sets it on each finding (Diagnosis.cause). A finding that names no cause (a note on how
the input was read, a pause, the start-up) has none; one that says the cause is not visible names
`unknown`. The JSON carries it as each finding's `cause` and the analysis's `first_cause`.
"""

from __future__ import annotations

from gpuscope.analysis.core import Diagnosis


def first_cause(findings: list[Diagnosis]) -> str | None:
    """The cause of the first finding (in ranked order) that names one."""
    return next((d.cause for d in findings if d.cause is not None), None)

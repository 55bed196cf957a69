"""Analysis -> JSON text (the `analyze --json` contract). No rich import here."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gpuscope.analysis.result import Analysis
    from gpuscope.workload.runner import RunOutcome


def to_json_text(analysis: Analysis) -> str:
    """Pretty JSON of the version-2 document; NaN/inf are null (allow_nan=False guarantees valid JSON)."""
    return json.dumps(analysis.document(), indent=2, allow_nan=False)


def run_json_text(outcome: RunOutcome) -> str:
    """`gpuscope run --json`: the run directory, how it ended, the pipeline's own summary and
    the analysis of what it wrote (gpuscope.workload.runner.RunOutcome)."""
    res = outcome.result
    doc = {"run_dir": str(outcome.path), "status": outcome.status,
           "pipeline": res.summary() if res is not None else None,
           "analysis": outcome.analysis.document() if outcome.analysis is not None else None}
    return json.dumps(doc, default=str, indent=2)

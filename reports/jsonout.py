"""Analysis -> JSON text (the `analyze --json` contract). No rich import here."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from gpuscope.analysis.core import clean

if TYPE_CHECKING:
    from gpuscope.analysis.result import Analysis
    from gpuscope.workload.runner import RunOutcome


def json_text(doc: Any, *, sort_keys: bool = False) -> str:
    """Every verb's --json text (gpuscope.cli._common.emit writes it): pretty, NaN/inf as null and
    numpy scalars as numbers (analysis.core.clean; allow_nan=False guarantees valid JSON)."""
    return json.dumps(clean(doc), indent=2, sort_keys=sort_keys, allow_nan=False)


def to_json_text(analysis: Analysis) -> str:
    """`analyze --json`: the version-2 document's text, as emit writes it."""
    return json_text(analysis.document())


def run_document(outcome: RunOutcome) -> dict[str, Any]:
    """`gpuscope run --json`'s document (emit writes it, as every verb's): the run directory, how it
    ended, the pipeline's own summary and the analysis of what it wrote
    (gpuscope.workload.runner.RunOutcome)."""
    res = outcome.result
    return {"run_dir": str(outcome.path), "status": outcome.status,
            "pipeline": res.summary() if res is not None else None,
            "analysis": outcome.analysis.document() if outcome.analysis is not None else None}

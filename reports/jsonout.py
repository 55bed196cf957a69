"""Analysis -> JSON text (the `analyze --json` contract). No rich import here."""

from __future__ import annotations

import json


def analysis_doc(analysis) -> dict:
    """Analysis.to_json(), plus where the roles came from when the analysis carries its
    model (`analysis.model`, set by the CLI): `roles` {component: {role, how}} for the
    log's components (role null: counted in other; "whole": the held component), `whole`
    {name, how} and `vocabulary` (the words the reports used). Keys the document already
    has are kept."""
    doc = analysis.to_json()
    model = getattr(analysis, "model", None)
    if model is not None and hasattr(model, "provenance"):
        comps = list(analysis.components.index) if analysis.components is not None else None
        prov = model.provenance(comps)
        doc.setdefault("roles", prov["roles"])
        doc.setdefault("whole", prov["held"])
        doc.setdefault("vocabulary", prov["vocabulary"])
    return doc


def to_json_text(analysis) -> str:
    """Pretty JSON; NaN/inf are null (allow_nan=False guarantees valid JSON)."""
    return json.dumps(analysis_doc(analysis), indent=2, allow_nan=False)

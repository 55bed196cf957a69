"""Analysis -> JSON text (the `analyze --json` contract). No rich import here."""

from __future__ import annotations

import json


def to_json_text(analysis) -> str:
    """Pretty JSON; NaN/inf are null (allow_nan=False guarantees valid JSON)."""
    return json.dumps(analysis.to_json(), indent=2, allow_nan=False)

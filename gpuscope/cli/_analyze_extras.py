"""`analyze --what-if` and `analyze --html`: kept here so analyze.py only wires them."""

from __future__ import annotations

import sys
from typing import Any


def whatif_doc(parsed: Any, ctx: Any, *, line_rate: float | None, abc_bytes: float | None) -> dict:
    """The projection as JSON: WhatIf.to_json() with "available": true, or
    {"available": false, "reason": ...} when the input lacks what it needs."""
    from gpuscope.analysis.compare_inputs import whatif_from
    from gpuscope.analysis.whatif import WhatIfUnavailable

    try:
        w = whatif_from(parsed, getattr(ctx, "meta", None), line_rate_gbs=line_rate, abc_bytes=abc_bytes)
    except WhatIfUnavailable as e:
        return {"available": False, "reason": str(e)}
    return {"available": True, **w.to_json()}


def print_whatif(doc: dict, console, words: dict | None = None) -> None:
    """`words`: the model's Vocabulary.to_json() (the CuZK prover's when None)."""
    from rich.markup import escape

    if not doc.get("available"):
        console.print(escape(f"what-if: not available ({doc.get('reason')})"))
        return
    from gpuscope.reports.compare_console import render_whatif

    render_whatif(doc, console, words)


def write_html(path: str, result: Any, parsed: Any, ctx: Any, model: Any, whatif: dict | None) -> None:
    """The analyze report as one self-contained HTML file (timeline PNG when phases exist)."""
    from gpuscope.analysis.attribution import display_phases
    from gpuscope.cli._timeline import title_for, write_output
    from gpuscope.reports.html import analysis_html

    phases, _ = display_phases(parsed, ctx, model)
    png = None
    if len(phases):
        from gpuscope.reports.plot import timeline_png

        meta = getattr(ctx, "meta", None)
        rate = (meta or {}).get("line_rate_gbs") if isinstance(meta, dict) else None
        png = timeline_png(phases, getattr(ctx, "samples", None),
                           title=title_for(str(ctx.path), meta, int(result.records) or None,
                                           getattr(getattr(model, "vocabulary", None), "units", "partitions")),
                           line_rate_gbs=rate if isinstance(rate, int | float) else None)
    wi = whatif if whatif and whatif.get("available") else None
    doc = result.to_json()
    if getattr(model, "vocabulary", None) is not None:
        doc.setdefault("vocabulary", model.vocabulary.to_json())  # the report's words
    write_output(path, analysis_html(doc, png, whatif=wi), "the HTML report")
    sys.stderr.write(f"gpuscope: wrote {path}\n")

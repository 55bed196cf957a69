"""The shared core below every part of the analysis: the options in, a finding (Diagnosis) out,
the severity order every ranking uses, and `clean` (JSON-safe values). Imports nothing of the
analysis, so the evidence layer, the rules, the trace and sample parts and the result types all
stand on it without importing each other."""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class AnalyzeOptions:
    abc_bytes: int | None = None         # bytes uploaded per record (a/b/c), for the projection
    what_if: bool = False                # also project the run with pinned uploads (Analysis.what_if)
    # The pinned H2D line rate (GB/s, 1e9) and where it came from (option | meta | cache | link | trace |
    # default): analyze() fills these from the Source, which resolved them when it was opened.
    line_rate_gbs: float = 50.0
    line_rate_source: str = "default"


@dataclass(frozen=True)
class Diagnosis:
    id: str
    severity: str                  # high | medium | low | info
    summary: str
    evidence: dict[str, Any]
    recommendation: str
    #: the ids this finding had before it was named in the program's own words (kept in the JSON
    #: for one version: `cpu_stall_at_barrier` for a training loop's host_stall)
    aliases: tuple[str, ...] = ()
    #: the cause it names in the one vocabulary of every source (analysis/causes.py), set by the ranking
    cause: str | None = None
    #: the part of the analysis it speaks of (log | trace | samples), set by the rule engine from the
    #: rule that made it: a part's own document keeps its findings by this tag, never by rule id
    part: str | None = None

    def to_json(self) -> dict:
        out = {
            "id": self.id,
            "severity": self.severity,
            "summary": self.summary,
            "evidence": clean(self.evidence),
            "recommendation": self.recommendation,
        }
        if self.aliases:
            out["aliases"] = list(self.aliases)
        if self.cause is not None:
            out["cause"] = self.cause
        return out


SEVERITY_ORDER = {"high": 0, "medium": 1, "low": 2, "info": 3}


def clean(obj: Any) -> Any:
    """JSON-safe: NaN/inf -> None, numpy scalars -> Python, tuples -> lists, keys -> str."""
    if isinstance(obj, dict):
        return {str(k): clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [clean(v) for v in obj]
    if isinstance(obj, bool) or obj is None or isinstance(obj, str):
        return obj
    if hasattr(obj, "item") and not isinstance(obj, (int, float)):
        try:
            obj = obj.item()
        except (ValueError, AttributeError):
            return str(obj)
    if isinstance(obj, float):
        return None if math.isnan(obj) or math.isinf(obj) else obj
    if isinstance(obj, int):
        return obj
    pd = sys.modules.get("pandas")  # (pd.NA and pd.NaT exist only where pandas was loaded)
    if pd is not None and (obj is pd.NA or obj is pd.NaT):
        return None
    return str(obj) if not isinstance(obj, (int, float)) else obj

"""Compare two runs or logs: per-component medians, B/A ratios with bootstrap CIs, a verdict.

The steps (docs/COMPARE.md), each in its own module:
- compare.stats: per component, count, median, p10, p90 of its values on each side, and
  ratio = median(B) / median(A) with a 95% percentile-bootstrap confidence interval;
- compare.figures: each side's run figures: throughput, the lock-held share, the upload
  rate, SM activity and PCIe RX/TX per phase, its GPU activity;
- compare.verdict: the sentence naming the winner;
- here: the two sides (`Side`), `compare` that runs the steps, and the pinned what-if of
  one side set against the other side's measurement (`prediction_vs_measured`).

Pure: no printing; `Comparison.to_json()` is the `compare --json` contract, typed once in
compare.document (CompareDoc).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from gpuscope.analysis.compare.figures import run_figures
from gpuscope.analysis.compare.side import Side
from gpuscope.analysis.compare.stats import (
    CONFIDENCE,
    DEFAULT_BOOTSTRAP,
    compare_components,
    describe,
    finite,
    held_values,
    values_row,
)
from gpuscope.analysis.compare.verdict import activity_verdict, verdict
from gpuscope.analysis.core import clean
from gpuscope.analysis.whatif.inputs import stalled_tenures

if TYPE_CHECKING:
    from gpuscope.analysis.compare.document import (
        CompareDoc,
        ComponentRowDoc,
        PredictionDoc,
        SideDoc,
    )
    from gpuscope.analysis.whatif.predict import WhatIf


@dataclass
class Comparison:
    a: SideDoc
    b: SideDoc
    components: dict[str, ComponentRowDoc]
    verdict: str
    winner: str | None
    seed: int
    n_boot: int
    prediction: PredictionDoc | None = None
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> CompareDoc:
        """The `compare --json` document (JSON-safe: NaN is null); the CLI builds it once and hands
        it to every report."""
        doc: CompareDoc = {
            "a": self.a,
            "b": self.b,
            "components": self.components,
            "verdict": self.verdict,
            "winner": self.winner,
            "bootstrap": {"n": self.n_boot, "seed": self.seed, "confidence": CONFIDENCE},
            "prediction": self.prediction,
            "notes": list(self.notes),
        }
        return clean(doc)


STEP_KEY = "ProfilerStep"  # two profiler traces: their ProfilerStep ranges are the records


def compare(
    a: Side, b: Side, *, seed: int = 0, n_boot: int = DEFAULT_BOOTSTRAP, whatif: WhatIf | None = None,
    predicted_for: str | None = None,
) -> Comparison:
    """Compare side B against side A. `whatif` (predicted from one side) is set against the
    other side's measurement when given; `predicted_for` names that other side ('a'/'b')."""
    comps = compare_components(a, b, seed=seed, n_boot=n_boot)
    fa, fb = run_figures(a), run_figures(b)
    held_key = a.held_key
    if a.steps_ms is not None and b.steps_ms is not None and a.held_key not in comps:
        held_key = STEP_KEY  # two profiler traces: their steps are the records
        comps = {STEP_KEY: values_row(a.steps_ms, b.steps_ms, seed=seed, n_boot=n_boot, name=STEP_KEY), **comps}
        fa["partitions"], fb["partitions"] = len(a.steps_ms), len(b.steps_ms)
    if a.trace_samples and b.trace_samples and a.held_key not in comps:  # two traces: kernels, recurring ranges
        comps.update({k: values_row(a.trace_samples[k], b.trace_samples[k], seed=seed, n_boot=n_boot, name=k)
                      for k in a.trace_samples if k in b.trace_samples})
    if not fa["partitions"] and not fb["partitions"]:  # no timing records: compare what the GPU did
        text, winner = activity_verdict(fa, fb)
    else:
        text, winner = verdict(fa, fb, comps, held_key)
    notes: list[str] = []
    if fa["gpu_busy_method"] != fb["gpu_busy_method"] and fa["gpu_busy_method"] and fb["gpu_busy_method"]:
        notes.append("GPU busy is measured differently on the two sides (timeline vs lock held)")
    prediction = None
    if whatif is not None and predicted_for in ("a", "b"):
        prediction = _prediction(whatif, (a, fa) if predicted_for == "a" else (b, fb),
                                 source_side=b if predicted_for == "a" else a,
                                 from_label=(fb if predicted_for == "a" else fa)["label"])
    return Comparison(a=fa, b=fb, components=comps, verdict=text, winner=winner, seed=seed, n_boot=n_boot,
                      prediction=prediction, notes=notes)


def _prediction(whatif: WhatIf, target: tuple[Side, SideDoc], source_side: Side,
                from_label: str | None = None) -> PredictionDoc:
    """The what-if predicted from `source_side` (named `from_label` in titles: its path can be
    any length) against the target side's measurement."""
    side, figures = target
    held = finite(held_values(side))
    out = prediction_vs_measured(
        whatif, describe(held)["median_ms"], figures["throughput_ppm"], figures["label"],
        source=source_side.source or whatif.source,
        held_mean_ms=float(held.mean()) if len(held) else math.nan,
        # (a side without timing lines has no tenure to count stalled: none set beside the prediction)
        stalled=stalled_tenures(side.parsed) if side.parsed is not None else None,
    )
    if from_label:
        out["from_label"] = from_label
    return out


def prediction_vs_measured(whatif: WhatIf, held_ms: float, throughput_ppm: float | None, label: str,
                           source: str | None = None, *, held_mean_ms: float = math.nan,
                           stalled: tuple[int, int] | None = None) -> PredictionDoc:
    """The what-if set against the other side's measurement: median and mean mutex_held,
    throughput, and tenures stalled at the barrier (predicted / measured). Held times are often
    bimodal (a tenure stalls at the barrier or it does not), so the median can jump where the
    mean, which is what the GPU's occupancy follows, does not."""
    def err(p: float | None, m: float | None) -> float:
        if p is None or m is None or not (math.isfinite(p) and math.isfinite(m)) or m == 0:
            return math.nan
        return (p - m) / m

    pred = whatif.predicted
    ph, pt, pm = pred["held_ms_median"], pred["throughput_ppm"], pred.get("held_ms_mean", math.nan)
    out: PredictionDoc = {
        "from": source or whatif.source,
        "against": label,
        "line_rate_gbs": whatif.line_rate_gbs,
        "held_ms_predicted": ph,
        "held_ms_measured": held_ms,
        "held_error": err(ph, held_ms),
        "held_mean_ms_predicted": pm,
        "held_mean_ms_measured": held_mean_ms,
        "held_mean_error": err(pm, held_mean_ms),
        "throughput_ppm_predicted": pt,
        "throughput_ppm_measured": throughput_ppm,
        "throughput_error": err(pt, throughput_ppm),
        "whatif": whatif.to_json(),
    }
    if stalled is not None:
        out["stalled_predicted"] = [pred.get("stalled_tenures"), whatif.partitions]
        out["stalled_measured"] = list(stalled)
    return out

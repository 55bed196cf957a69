"""compare's verdict: one sentence naming the winner of two sides' run figures (held time
with its confidence interval, then throughput, then the upload rate), or, when neither side
has timing records, which one kept its GPU busier (docs/COMPARE.md).

Pure: run figures (compare.figures.run_figures) and component rows in, a sentence out.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gpuscope.analysis.compare.document import ActivityFiguresDoc, ComponentRowDoc, SideDoc

# A change in the GPU's busy fraction smaller than this (relative and in points) is no change.
MIN_BUSY_CHANGE = 0.10
MIN_BUSY_POINTS = 0.02


def activity_verdict(a: SideDoc, b: SideDoc) -> tuple[str, str | None]:
    """When neither side has timing records: which one kept its GPU busier over its working time."""
    fa, fb = a.get("activity"), b.get("activity")
    ba, bb = _working_busy(fa), _working_busy(fb)
    if fa is None or fb is None or ba is None or bb is None:
        return "no timing records and no GPU activity on both sides to compare", None
    la, lb = a["label"], b["label"]
    what = "busy" if fa["source"] == fb["source"] == "trace" else "SM activity"
    text = f"GPU {what} over the working time {la} {ba * 100:.1f}% -> {lb} {bb * 100:.1f}%"
    if abs(bb - ba) < MIN_BUSY_POINTS or (ba > 0 and abs(bb / ba - 1) < MIN_BUSY_CHANGE):
        return f"no clear change: {text}", None
    winner = "b" if bb > ba else "a"
    if fa["source"] != fb["source"]:
        text += f" (measured differently: {fa['source']} vs {fb['source']})"
    return f"{lb if winner == 'b' else la} keeps the GPU busier: {text}", (lb if winner == "b" else la)


def _working_busy(act: ActivityFiguresDoc | None) -> float | None:
    return act["working_busy_fraction"] if act is not None else None


def _nan(x: float | None) -> float:
    return math.nan if x is None else x


def _fmt_x(x: float) -> str:
    return f"{x:.1f}" if x < 10 else f"{x:.0f}"


# A held-time ratio closer to 1 than this is "no material change", however narrow its CI
# (thousands of tenures make a 3% shift significant); the winner then goes by throughput,
# when the two throughputs differ by at least MIN_THROUGHPUT_CHANGE.
MIN_HELD_CHANGE = 0.05
MIN_THROUGHPUT_CHANGE = 0.10


def verdict(a: SideDoc, b: SideDoc, comps: dict[str, ComponentRowDoc], held_key: str) -> tuple[str, str | None]:
    """One sentence naming the winner, and the winner's label (None when unclear)."""
    la, lb = a["label"], b["label"]
    parts: list[str] = []
    winner: str | None = None
    h = comps.get(held_key)
    # (the rows before the document is cleaned: a figure not measured is NaN, never None)
    ratio, lo, hi = (_nan(h["ratio"]), _nan(h["ci_low"]), _nan(h["ci_high"])) if h is not None else (math.nan,) * 3
    if h is None or not math.isfinite(ratio):
        parts.append(f"no {held_key} on both sides to compare")
    elif abs(ratio - 1) < MIN_HELD_CHANGE and (lo > 1 or hi < 1):
        parts.append(f"no material change in {held_key}: {lb}/{la} = {ratio:.2f} "
                     f"(95% CI {lo:.2f}-{hi:.2f})")
    elif math.isfinite(lo) and lo > 1:
        winner = "a"
        parts.append(f"{la} cut {held_key} {_fmt_x(ratio)}x ({_fmt_x(lo)}-{_fmt_x(hi)})")
    elif math.isfinite(hi) and hi < 1:
        winner = "b"
        parts.append(f"{lb} cut {held_key} {_fmt_x(1 / ratio)}x "
                     f"({_fmt_x(1 / hi)}-{_fmt_x(1 / lo)})")
    else:
        parts.append(f"no clear change in {held_key}: {lb}/{la} = {ratio:.2f} "
                     f"(95% CI {lo:.2f}-{hi:.2f})")
    ta, tb = a.get("throughput_ppm"), b.get("throughput_ppm")
    if ta and tb and math.isfinite(ta) and math.isfinite(tb) and ta > 0 and tb > 0:
        if winner is None:
            parts.append(f"throughput {lb}/{la} = {tb / ta:.2f}x")
            if abs(tb / ta - 1) >= MIN_THROUGHPUT_CHANGE:
                winner = "b" if tb > ta else "a"
        else:
            w, other = (ta, tb) if winner == "a" else (tb, ta)
            x = w / other
            parts.append(f"throughput +{_fmt_x(x)}x" if x >= 1 else f"throughput {x:.2f}x (lower)")
    if winner is not None:
        win, lose = (a, b) if winner == "a" else (b, a)
        g = win.get("upload_gbs")
        if g and math.isfinite(g):
            was = lose.get("upload_gbs")
            was_s = f" (was {was:.1f})" if was and math.isfinite(was) else ""
            parts.append(f"upload now {g:.0f} GB/s{was_s}")
    return ", ".join(parts), (la if winner == "a" else lb if winner == "b" else None)


"""The PNG timeline: one lane per worker with its phases, and PCIe RX/TX and SM activity
on the same time axis when samples exist (matplotlib, Agg backend).

Inputs are DataFrames (phases: worker, gpu, partition, phase, t_start, t_end in epoch s;
samples: the samples.csv contract; a sample describes the interval that ends at its
t_wall, so the sample panels are drawn as steps). No parsing, no GPU.
"""

from __future__ import annotations

import io
import math
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from gpuscope.reports.lanes import assign_lanes
from gpuscope.reports.phase_style import order_key, style_for

if TYPE_CHECKING:
    from gpuscope.analysis.timeline_view import TimelineView


def render_timeline(
    phases: pd.DataFrame,
    samples: pd.DataFrame | None = None,
    *,
    title: str,
    line_rate_gbs: float | None = None,
    origin: float | None = None,
    view: tuple[float, float] | None = None,
):
    """Build the matplotlib Figure (Agg canvas). Caller saves or closes it.

    Times are drawn as seconds after `origin` (default: the first phase start); `view`
    (epoch seconds lo, hi) limits the x axis to a window, keeping the run's time scale."""
    from matplotlib.figure import Figure
    from matplotlib.patches import Patch

    if phases is None or not len(phases):
        raise ValueError("no phase intervals to draw")
    phases = phases.dropna(subset=["t_start", "t_end"])
    t0 = float(phases["t_start"].min()) if origin is None else float(origin)
    t1 = float(phases["t_end"].max())
    if view is not None:
        t1 = min(t1, view[1])
    have_samples = samples is not None and len(samples) > 0 and "t_wall" in samples
    if have_samples:
        samples = samples[(samples["t_wall"] >= t0 - 0.5) & (samples["t_wall"] <= t1 + 0.5)]
        have_samples = len(samples) > 0
        has_pcie = have_samples and any(c in samples and samples[c].notna().any() for c in ("rx_gbs", "tx_gbs"))
        has_sm = have_samples and "sm_active" in samples and samples["sm_active"].notna().any()
    else:
        has_pcie = has_sm = False

    lanes = assign_lanes(phases)
    lane_h = 0.38
    heights = [max(1.6, 0.55 + lane_h * len(lanes))]
    if has_pcie:
        heights.append(1.9)
    if has_sm:
        heights.append(1.4)
    fig = Figure(figsize=(14, sum(heights) + 1.3), dpi=110, layout="constrained")
    axes = fig.subplots(len(heights), 1, sharex=True, gridspec_kw={"height_ratios": heights}, squeeze=False)[:, 0]
    ax = axes[0]

    seen: dict[str, tuple[int, str]] = {}
    yticks, ylabels = [], []
    for y, lane in enumerate(reversed(lanes)):
        yticks.append(y)
        ylabels.append(lane.label)
        for df, (y0, h, edge) in ((lane.main, (y - 0.2, 0.6, "white")), (lane.side, (y - 0.42, 0.2, "none"))):
            for phase, pg in df.groupby("phase", sort=False):
                st = style_for(str(phase))
                bars = list(zip(pg["t_start"] - t0, pg["t_end"] - pg["t_start"], strict=True))
                ax.broken_barh(bars, (y0, h), facecolors=st.color, edgecolor=edge, linewidth=0.4)
                seen.setdefault(st.label, (order_key(str(phase))[0], st.color))
    ax.set_yticks(yticks, ylabels)
    ax.set_ylim(-0.6, len(lanes) - 0.3)
    fig.suptitle(title, x=0.01, ha="left", fontsize=12, fontweight="bold")
    ax.grid(axis="x", alpha=0.3)
    handles = [Patch(facecolor=c, label=lab) for lab, (_, c) in sorted(seen.items(), key=lambda kv: kv[1][0])]
    ax.legend(handles=handles, loc="lower left", bbox_to_anchor=(0, 1.0), ncol=min(9 if len(handles) <= 9 else 6, len(handles)),
              fontsize=8.5, frameon=False)

    k = 1
    if has_pcie:
        axp = axes[k]
        k += 1
        for gpu, g in samples.groupby("gpu", sort=True):
            g = g.sort_values("t_wall")
            tag = f" GPU{gpu}" if samples["gpu"].nunique() > 1 else ""
            if "rx_gbs" in g and g["rx_gbs"].notna().any():
                r = g.dropna(subset=["rx_gbs"])
                axp.plot(r["t_wall"] - t0, r["rx_gbs"], lw=1.1, drawstyle="steps-pre", color="#e15759", label=f"PCIe RX (H2D){tag}")
            if "tx_gbs" in g and g["tx_gbs"].notna().any():
                r = g.dropna(subset=["tx_gbs"])
                axp.plot(r["t_wall"] - t0, r["tx_gbs"], lw=1.0, drawstyle="steps-pre", ls="--", color="#76b7b2", label=f"PCIe TX (D2H){tag}")
        if line_rate_gbs and math.isfinite(line_rate_gbs):
            axp.axhline(line_rate_gbs, color="black", lw=0.8, ls=":", label=f"pinned line rate {line_rate_gbs:.0f} GB/s")
        axp.set_ylabel("PCIe GB/s")
        axp.set_ylim(0, max(axp.get_ylim()[1], (line_rate_gbs or 0) * 1.25))
        axp.grid(alpha=0.3)
        axp.legend(loc="upper left", fontsize=8, ncol=3, framealpha=0.9)
    if has_sm:
        axs = axes[k]
        for gpu, g in samples.groupby("gpu", sort=True):
            # GPM values come once per >= 100 ms window (NaN between): draw them as steps
            g = g.dropna(subset=["sm_active"]).sort_values("t_wall")
            tag = f" GPU{gpu}" if samples["gpu"].nunique() > 1 else ""
            axs.fill_between(g["t_wall"] - t0, g["sm_active"] * 100, step="pre", alpha=0.35, color="#4e79a7")
            axs.plot(g["t_wall"] - t0, g["sm_active"] * 100, lw=1.0, drawstyle="steps-pre", color="#4e79a7", label=f"SM active{tag}")
        axs.set_ylabel("SM active %")
        axs.set_ylim(0, 105)
        axs.grid(alpha=0.3)
        axs.legend(loc="upper left", fontsize=8, framealpha=0.9)
    axes[-1].set_xlabel("time since first phase (s)")
    if view is not None:
        axes[-1].set_xlim(view[0] - t0, view[1] - t0)
    else:
        axes[-1].set_xlim(0, (t1 - t0) * 1.01 if t1 > t0 else 1)
    return fig


def timeline_png(phases: pd.DataFrame, samples: pd.DataFrame | None = None, *, title: str,
                 line_rate_gbs: float | None = None, origin: float | None = None,
                 view: tuple[float, float] | None = None) -> bytes:
    """The timeline as PNG bytes."""
    fig = render_timeline(phases, samples, title=title, line_rate_gbs=line_rate_gbs, origin=origin, view=view)
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return buf.getvalue()


def view_png(tv: TimelineView, *, title: str) -> bytes:
    """The PNG of a timeline view (gpuscope.analysis.timeline_view): its window, its run's
    line rate, its time scale."""
    return timeline_png(tv.phases, tv.samples, title=title, line_rate_gbs=tv.line_rate_gbs,
                        origin=tv.origin, view=tv.view)


def write_timeline_png(path: str | Path, phases: pd.DataFrame, samples: pd.DataFrame | None = None, *,
                       title: str, line_rate_gbs: float | None = None) -> int:
    """Write the PNG; returns its size in bytes."""
    data = timeline_png(phases, samples, title=title, line_rate_gbs=line_rate_gbs)
    Path(path).write_bytes(data)
    return len(data)

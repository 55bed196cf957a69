"""The PNG timeline: one lane per worker (or stream) with its phases, and on the same time
axis whatever was measured beside them: PCIe RX/TX against the line rate and SM activity
from NVML samples (idle gaps shaded), clocks and power for a run with samples alone, or a
profiler trace's busy fraction and copy rate (matplotlib, Agg backend).

Inputs are DataFrames (phases: gpuscope.schemas.PHASE_SCHEMA, epoch s; samples: the
samples.csv contract, a sample describing the interval that ends at its t_wall, so sample
panels are drawn as steps; intervals: ACTIVITY_INTERVAL_SCHEMA; counters:
TRACE_COUNTER_SCHEMA). No parsing, no GPU.
"""

from __future__ import annotations

import io
import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from gpuscope import safe_output
from gpuscope.reports.lanes import assign_lanes
from gpuscope.reports.phase_style import PhaseStyle, order_key, style_for
from gpuscope.reports.safe_text import mpl

if TYPE_CHECKING:
    from gpuscope.analysis.timeline_view import TimelineView

# shading of the classed intervals behind the sample panels
SHADE = {"idle_quiet": ("#bdbdbd", "idle, PCIe quiet"), "transferring": ("#f4a6a6", "moving bytes, SMs idle")}


def _has(df: pd.DataFrame | None, col: str) -> bool:
    return df is not None and len(df) > 0 and col in df and df[col].notna().any()


@dataclass
class _Panels:
    lanes: list
    pcie: bool
    sm: bool
    clocks: bool
    counters: bool


def render_timeline(
    phases: pd.DataFrame,
    samples: pd.DataFrame | None = None,
    *,
    title: str,
    line_rate_gbs: float | None = None,
    origin: float | None = None,
    view: tuple[float, float] | None = None,
    intervals: pd.DataFrame | None = None,
    counters: pd.DataFrame | None = None,
    lane_noun: str = "worker",
):
    """Build the matplotlib Figure (Agg canvas). Caller saves or closes it.

    Times are drawn as seconds after `origin` (default: the first phase start, else the first
    sample); `view` (epoch seconds lo, hi) limits the x axis to a window, keeping the run's
    time scale. Phases may be empty when samples or counters exist (a recording of any
    program); then the clocks and power get a panel too."""
    from matplotlib.figure import Figure

    phases = phases.dropna(subset=["t_start", "t_end"]) if phases is not None else phases
    have_phases = phases is not None and len(phases) > 0
    if not have_phases and not _has(samples, "t_wall") and not _has(counters, "t_wall"):
        raise ValueError("no phase intervals to draw")
    t0, t1 = _extent(phases if have_phases else None, samples, counters, origin, view)
    if samples is not None and len(samples) and "t_wall" in samples:
        samples = samples[(samples["t_wall"] >= t0 - 0.5) & (samples["t_wall"] <= t1 + 0.5)]
    p = _Panels(lanes=assign_lanes(phases, noun=lane_noun) if have_phases else [],
                pcie=_has(samples, "rx_gbs") or _has(samples, "tx_gbs"), sm=_has(samples, "sm_active"),
                clocks=not have_phases and (_has(samples, "sm_clock_mhz") or _has(samples, "power_w")),
                counters=_has(counters, "busy_fraction") and not _has(samples, "sm_active"))
    heights = ([max(1.6, 0.55 + 0.38 * len(p.lanes))] if p.lanes else []) + [h for ok, h in (
        (p.pcie, 1.9), (p.sm, 1.4), (p.clocks, 1.4), (p.counters, 1.6)) if ok]
    fig = Figure(figsize=(14, sum(heights) + 1.3), dpi=110, layout="constrained")
    axes = list(fig.subplots(len(heights), 1, sharex=True, gridspec_kw={"height_ratios": heights},
                             squeeze=False)[:, 0])
    fig.suptitle(mpl(title), x=0.01, ha="left", fontsize=12, fontweight="bold")
    last = axes[-1]
    if p.lanes:
        lo, hi = (view if view is not None else (t0, t1 if t1 > t0 else t0 + 1))
        _lanes_panel(axes.pop(0), p.lanes, t0, (lo, hi))
    shaded = False
    for ok, draw in ((p.pcie, lambda ax: _pcie_panel(ax, samples, t0, line_rate_gbs)),
                     (p.sm, lambda ax: _sm_panel(ax, samples, t0)),
                     (p.clocks, lambda ax: _clocks_panel(ax, samples, t0)),
                     (p.counters, lambda ax: _counters_panel(ax, counters, t0))):
        if ok:
            ax = axes.pop(0)
            draw(ax)
            shaded |= _shade(ax, intervals, t0, legend=not shaded)
    last.set_xlabel("time since the first phase (s)" if have_phases else "time since the recording began (s)")
    if view is not None:
        last.set_xlim(view[0] - t0, view[1] - t0)
    else:
        last.set_xlim(0, (t1 - t0) * 1.01 if t1 > t0 else 1)
    return fig


def _extent(phases, samples, counters, origin, view) -> tuple[float, float]:
    if phases is not None:
        lo, hi = float(phases["t_start"].min()), float(phases["t_end"].max())
    else:
        ts = [df["t_wall"] for df in (samples, counters) if _has(df, "t_wall")]
        lo, hi = min(float(t.min()) for t in ts), max(float(t.max()) for t in ts)
    t0 = lo if origin is None else float(origin)
    t1 = min(hi, view[1]) if view is not None else hi
    return t0, t1


# A lane with more intervals than the panel has pixel columns is drawn aggregated: its time
# is cut into AGG_COLUMNS buckets and each bucket is a column stacked by each phase's share
# of the bucket (the white above the stack: no phase), which a reader can see at any size;
# a million sub-pixel rectangles are slow to draw and come out as a faint smear.
AGG_COLUMNS = 1200
AGG_ROWS = 30  # vertical resolution of a stacked column


def _lanes_panel(ax: Any, lanes: list, t0: float, span: tuple[float, float] | None = None) -> None:
    from matplotlib.patches import Patch

    seen: dict[str, tuple[int, PhaseStyle]] = {}
    yticks, ylabels = [], []
    most = max((len(lane.main) + len(lane.side) for lane in lanes), default=0)
    aggregate = span is not None and most > AGG_COLUMNS and span[1] > span[0]
    for y, lane in enumerate(reversed(lanes)):
        yticks.append(y)
        # aggregated, a lane of a few short intervals is too thin to see: its label says how many
        ylabels.append(mpl(f"{lane.label} ({len(lane.main) + len(lane.side):,})" if aggregate else lane.label))
        for df, (y0, h, edge) in ((lane.main, (y - 0.2, 0.6, "white")), (lane.side, (y - 0.42, 0.2, "none"))):
            if aggregate:
                _shares_row(ax, df, span, t0, y0, h, seen)
                continue
            for phase, pg in df.groupby("phase", sort=False):
                st = style_for(str(phase))
                bars = list(zip(pg["t_start"] - t0, pg["t_end"] - pg["t_start"], strict=True))
                ax.broken_barh(bars, (y0, h), facecolors=st.color, edgecolor=edge, linewidth=0.4,
                               hatch=st.hatch or None)
                seen.setdefault(st.label, (order_key(str(phase))[0], st))
    ax.set_yticks(yticks, ylabels)
    ax.set_ylim(-1.05 if aggregate else -0.6, len(lanes) - 0.3)
    ax.grid(axis="x", alpha=0.3)
    handles = [Patch(facecolor=st.color, edgecolor="white" if st.hatch else None, hatch=st.hatch or None,
                     label=mpl(lab))
               for lab, (_, st) in sorted(seen.items(), key=lambda kv: kv[1][0])]
    longest = max((len(h.get_label()) for h in handles), default=0)
    ncol = 9 if len(handles) <= 9 and longest <= 22 else 6 if longest <= 28 else 4
    ax.legend(handles=handles, loc="lower left", bbox_to_anchor=(0, 1.0), ncol=min(ncol, len(handles)),
              fontsize=8.5, frameon=False)
    if aggregate:  # the note, under the lowest lane
        from matplotlib.transforms import blended_transform_factory

        width = (span[1] - span[0]) / AGG_COLUMNS
        ax.text(0.998, -0.8, f"aggregated (up to {most:,} intervals in a lane, its count beside its name): each "
                f"column is {_duration(width)}, stacked by the share of each phase (white: none)",
                transform=blended_transform_factory(ax.transAxes, ax.transData), ha="right", va="center",
                fontsize=8, color="#444444")


def _duration(s: float) -> str:
    if s >= 3600:
        return f"{s / 3600:.1f} h"
    if s >= 60:
        return f"{s / 60:.1f} min"
    if s >= 1:
        return f"{s:.1f} s"
    return f"{s * 1e3:.1f} ms"


def shares(df: pd.DataFrame, lo: float, hi: float, n: int) -> tuple[list[str], np.ndarray]:
    """(phase style labels in legend order, their share of each of n buckets of [lo, hi])."""
    from gpuscope.analysis.intervals import cumulative

    edges = np.linspace(lo, hi, n + 1)
    width = (hi - lo) / n
    out: dict[str, np.ndarray] = {}
    order: dict[str, int] = {}
    for phase, pg in df.groupby("phase", sort=False):
        st = style_for(str(phase))
        covered = np.diff(cumulative(pg["t_start"].to_numpy(float), pg["t_end"].to_numpy(float), 1.0, edges))
        out[st.label] = out.get(st.label, 0.0) + covered / width
        order.setdefault(st.label, order_key(str(phase))[0])
    labels = sorted(out, key=lambda lab: (order[lab], lab))
    return labels, (np.array([out[lab] for lab in labels]) if labels else np.zeros((0, n)))


def _shares_row(ax: Any, df: pd.DataFrame, span: tuple[float, float], t0: float, y0: float, h: float,
                seen: dict) -> None:
    """One lane row as an image: per bucket a column stacked by the phases' shares."""
    from matplotlib.colors import to_rgba

    if not len(df):
        return
    labels, sh = shares(df, span[0], span[1], AGG_COLUMNS)
    colors = {}
    for phase in df["phase"].unique():
        st = style_for(str(phase))
        colors[st.label] = st.color
        seen.setdefault(st.label, (order_key(str(phase))[0], st))
    bound = np.rint(np.cumsum(np.clip(sh, 0.0, 1.0), axis=0) * AGG_ROWS)  # (phases, buckets): stack tops
    rows = np.arange(AGG_ROWS)[None, :, None] + 0.5
    idx = (bound[:, None, :] <= rows).sum(axis=0)  # (rows, buckets): phase k at pixel rows below its top
    palette = np.array([to_rgba(colors[lab]) for lab in labels] + [(1.0, 1.0, 1.0, 0.0)])
    img = palette[np.minimum(idx, len(labels))]
    ax.imshow(img, extent=(span[0] - t0, span[1] - t0, y0, y0 + h), origin="lower", aspect="auto",
              interpolation="nearest", zorder=2)


def _per_gpu(samples: pd.DataFrame, col: str):
    """(legend suffix, the GPU's rows with `col`, sorted by time) per GPU."""
    several = samples["gpu"].nunique() > 1
    for gpu, g in samples.groupby("gpu", sort=True):
        g = g.dropna(subset=[col]).sort_values("t_wall")
        if len(g):
            yield (f" GPU{gpu}" if several else ""), g


def _pcie_panel(ax: Any, samples: pd.DataFrame, t0: float, line_rate_gbs: float | None) -> None:
    for col, label, style in (("rx_gbs", "PCIe RX (H2D)", {"color": "#e15759", "lw": 1.1}),
                              ("tx_gbs", "PCIe TX (D2H)", {"color": "#76b7b2", "lw": 1.0, "ls": "--"})):
        if col in samples:
            for tag, g in _per_gpu(samples, col):
                ax.plot(g["t_wall"] - t0, g[col], drawstyle="steps-pre", label=f"{label}{tag}", **style)
    if line_rate_gbs and math.isfinite(line_rate_gbs):
        ax.axhline(line_rate_gbs, color="black", lw=0.8, ls=":", label=f"pinned line rate {line_rate_gbs:.0f} GB/s")
    ax.set_ylabel("PCIe GB/s")
    ax.set_ylim(0, max(ax.get_ylim()[1], (line_rate_gbs or 0) * 1.25))
    ax.grid(alpha=0.3)
    ax.legend(loc="upper left", fontsize=8, ncol=3, framealpha=0.9)


def _sm_panel(ax: Any, samples: pd.DataFrame, t0: float) -> None:
    # GPM values come once per >= 100 ms window (NaN between): draw them as steps
    for tag, g in _per_gpu(samples, "sm_active"):
        ax.fill_between(g["t_wall"] - t0, g["sm_active"] * 100, step="pre", alpha=0.35, color="#4e79a7")
        ax.plot(g["t_wall"] - t0, g["sm_active"] * 100, lw=1.0, drawstyle="steps-pre", color="#4e79a7",
                label=f"SM active (GPM){tag}")
    ax.set_ylabel("SM active %")
    ax.set_ylim(0, 105)
    ax.grid(alpha=0.3)
    ax.legend(loc="upper left", fontsize=8, framealpha=0.9)


def _clocks_panel(ax: Any, samples: pd.DataFrame, t0: float) -> None:
    if "sm_clock_mhz" in samples:
        for tag, g in _per_gpu(samples, "sm_clock_mhz"):
            ax.plot(g["t_wall"] - t0, g["sm_clock_mhz"], lw=1.0, drawstyle="steps-post", color="#59a14f",
                    label=f"SM clock MHz{tag}")
    ax.set_ylabel("SM clock MHz")
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    if "power_w" in samples and samples["power_w"].notna().any():
        ax2 = ax.twinx()
        for tag, g in _per_gpu(samples, "power_w"):
            ax2.plot(g["t_wall"] - t0, g["power_w"], lw=1.0, drawstyle="steps-post", color="#b07aa1",
                     label=f"power W{tag}")
        ax2.set_ylabel("power W")
        ax2.set_ylim(bottom=0)
        lines = ax.get_legend_handles_labels()[0] + ax2.get_legend_handles_labels()[0]
        ax.legend(handles=lines, loc="upper left", fontsize=8, framealpha=0.9)
    else:
        ax.legend(loc="upper left", fontsize=8, framealpha=0.9)


def _counters_panel(ax: Any, counters: pd.DataFrame, t0: float) -> None:
    """A profiler trace without NVML samples: its busy fraction per bin and its copy rates."""
    for gpu, g in counters.sort_values("t_wall").groupby("gpu", sort=True):
        x = g["t_wall"] - t0 + g["bin_s"]  # a bin is drawn up to its end, like a sample
        ax.fill_between(x, g["busy_fraction"] * 100, step="pre", alpha=0.35, color="#4e79a7")
        ax.plot(x, g["busy_fraction"] * 100, lw=1.0, drawstyle="steps-pre", color="#4e79a7",
                label=f"GPU {gpu} busy (kernels, copies; profiler trace)")
    ax.set_ylabel("busy %")
    ax.set_ylim(0, 105)
    ax.grid(alpha=0.3)
    ax.legend(loc="upper left", fontsize=8, framealpha=0.9)


def _shade(ax: Any, intervals: pd.DataFrame | None, t0: float, *, legend: bool) -> bool:
    """Idle gaps behind a sample panel; True when something was shaded."""
    from matplotlib.patches import Patch

    if intervals is None or not len(intervals):
        return False
    done = False
    for cls, (color, _label) in SHADE.items():
        sub = intervals[intervals["class"] == cls]
        if len(sub):
            bars = list(zip(sub["t_start"] - t0, sub["t_end"] - sub["t_start"], strict=True))
            ax.broken_barh(bars, (0, 1), transform=ax.get_xaxis_transform(), facecolors=color, alpha=0.22,
                           zorder=0, linewidth=0)
            done = True
    if done and legend:
        handles, labels = ax.get_legend_handles_labels()
        extra = [Patch(facecolor=c, alpha=0.4, label=lab) for c, lab in SHADE.values()]
        ax.legend(handles=handles + extra, loc="upper left", fontsize=8, ncol=4, framealpha=0.9)
    return done


def timeline_png(phases: pd.DataFrame, samples: pd.DataFrame | None = None, *, title: str,
                 line_rate_gbs: float | None = None, origin: float | None = None,
                 view: tuple[float, float] | None = None, intervals: pd.DataFrame | None = None,
                 counters: pd.DataFrame | None = None, lane_noun: str = "worker") -> bytes:
    """The timeline as PNG bytes."""
    fig = render_timeline(phases, samples, title=title, line_rate_gbs=line_rate_gbs, origin=origin, view=view,
                          intervals=intervals, counters=counters, lane_noun=lane_noun)
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return buf.getvalue()


def view_png(tv: TimelineView, *, title: str) -> bytes:
    """The PNG of a timeline view (gpuscope.analysis.timeline_view): its window, its run's
    line rate, its time scale, its shaded idle gaps."""
    return timeline_png(tv.phases, tv.samples, title=title, line_rate_gbs=tv.line_rate_gbs, origin=tv.origin,
                        view=tv.view, intervals=tv.intervals, counters=tv.counters, lane_noun=tv.lane_noun)


def write_timeline_png(path: str | Path, phases: pd.DataFrame, samples: pd.DataFrame | None = None, *,
                       title: str, line_rate_gbs: float | None = None) -> int:
    """Write the PNG; returns its size in bytes."""
    data = timeline_png(phases, samples, title=title, line_rate_gbs=line_rate_gbs)
    safe_output.write(path, data, "the PNG")
    return len(data)

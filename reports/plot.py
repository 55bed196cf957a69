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
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from gpuscope.allocator import gc_paused
from gpuscope.coverage import cumulative
from gpuscope.errors import NoDataError
from gpuscope.reports import plot_panels as P
from gpuscope.reports.lanes import Lane, assign_lanes, factorize_phases
from gpuscope.reports.phase_style import PhaseStyle, order_key, style_for
from gpuscope.reports.safe_text import mpl

if TYPE_CHECKING:
    from gpuscope.analysis.result import TimelineView

_has = P.has


@dataclass
class _Panels:
    lanes: list
    pcie: bool
    activity: bool
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
    steps_per_record: int = 1,
    record_covers: bool = False,
):
    """Build the matplotlib Figure (Agg canvas). Caller saves or closes it.

    Times are drawn as seconds after `origin` (default: the first phase start, else the first
    sample); `view` (epoch seconds lo, hi) limits the x axis to a window, keeping the run's
    time scale. Phases may be empty when samples or counters exist (a recording of any
    program); then the clocks and power get a panel too. `steps_per_record`: a log printing
    every K-th step (ParsedLog.steps_per_record): the caption says each mark stands for K
    (`record_covers`: or spans the K, where the log's times cover them)."""
    Figure = figure_class()

    if phases is not None and (phases["t_start"].isna() | phases["t_end"].isna()).any():
        phases = phases.dropna(subset=["t_start", "t_end"])  # (copy-on-write: else the caller's frame, no copy)
    have_phases = phases is not None and len(phases) > 0
    if not have_phases and not _has(samples, "t_wall") and not _has(counters, "t_wall"):
        raise NoDataError("nothing to draw: no phase intervals and no samples")
    t0, t1 = _extent(phases if have_phases else None, samples, counters, origin, view)
    if samples is not None and len(samples) and "t_wall" in samples:
        inside = ((samples["t_wall"] >= t0 - 0.5) & (samples["t_wall"] <= t1 + 0.5)).to_numpy()
        samples = samples if inside.all() else samples[inside]  # (no copy of a whole recording)
    samples, left_out = P.drawn_gpus(samples)
    p = _Panels(lanes=fewer_lanes(assign_lanes(phases, noun=lane_noun)) if have_phases else [],
                pcie=_has(samples, "rx_gbs") or _has(samples, "tx_gbs"), activity=bool(P.activity_series(samples)),
                clocks=not have_phases and (_has(samples, "sm_clock_mhz") or _has(samples, "power_w")),
                counters=_has(counters, "busy_fraction") and not P.activity_series(samples))
    heights = ([max(1.6, 0.55 + 0.38 * len(p.lanes))] if p.lanes else []) + [h for ok, h in (
        (p.pcie, 1.9), (p.activity, 1.4), (p.clocks, 1.4), (p.counters, 1.6)) if ok]
    if not heights:  # samples of temperature or memory alone, or a window that kept only such rows
        raise NoDataError("nothing to draw: no phase intervals, and the samples hold none of PCIe RX/TX, "
                          "SM/DRAM activity, utilization, clocks or power")
    fig = Figure(figsize=(14, sum(heights) + 1.3), dpi=110, layout="constrained")
    axes = list(fig.subplots(len(heights), 1, sharex=True, gridspec_kw={"height_ratios": heights},
                             squeeze=False)[:, 0])
    fig.suptitle(mpl(title), x=0.01, ha="left", fontsize=12, fontweight="bold")
    last = axes[-1]
    if p.lanes:
        lo, hi = (view if view is not None else (t0, t1 if t1 > t0 else t0 + 1))
        _lanes_panel(axes.pop(0), p.lanes, t0, (lo, hi))
    paint = P.Painter(P.gpus_of(samples, counters))
    paint.gpu_legend(fig)
    shaded, shading = False, P.Shading.of(intervals)  # (the same bars behind every sample panel: made once)
    twin = 1.075 if _has(samples, "power_w") else 1.005  # the clocks' legend clears the power axis
    for ok, draw, right in ((p.pcie, lambda ax: P.pcie_panel(ax, samples, t0, line_rate_gbs, paint), 1.005),
                            (p.activity, lambda ax: P.activity_panel(ax, samples, t0, paint), 1.005),
                            (p.clocks, lambda ax: P.clocks_panel(ax, samples, t0, paint), twin),
                            (p.counters, lambda ax: P.counters_panel(ax, counters, t0, paint), 1.005)):
        if ok:
            ax = axes.pop(0)
            handles = draw(ax)
            shades = P.shade(ax, shading, t0)
            if shades and not shaded:  # the first shaded panel names the shades
                handles += shades
            shaded |= bool(shades)
            P.legend(ax, handles, right=right)
    last.set_xlabel(("time since the first phase (s)" if have_phases else "time since the recording began (s)")
                    + (f"\n{every_kth(steps_per_record, record_covers)}" if have_phases and steps_per_record > 1 else "")
                    + (f"\n{left_out}" if left_out else ""))  # (the GPUs not drawn: said under the axis)
    if view is not None:
        last.set_xlim(view[0] - t0, view[1] - t0)
    else:
        last.set_xlim(0, (t1 - t0) * 1.01 if t1 > t0 else 1)
    return fig


def figure_class() -> Any:
    """matplotlib's Figure, its modules imported without the `set()` signature and docstring
    matplotlib composes for each artist class as it defines it (Artist.__init_subclass__: an
    ArtistInspector reads the docstring of every setter and getter, and artist.kwdoc lays out
    their table): ~0.25 CPU-s of a picture's ~0.45 s import, for introspection no picture
    makes. While the modules a picture uses load, the two are no-ops, then both are put back:
    `set()` itself is the same (Artist.set, the same aliases), and an artist class defined
    later gets its signature and docstring as before. Where matplotlib is loaded already, or
    is not the matplotlib these names are found in, it is imported as it is."""
    import sys

    if "matplotlib.artist" not in sys.modules:
        import gc

        with gc_paused():  # (~1,000 classes and their tables, no garbage: no collection scans them while they load)
            _import_matplotlib()
        gc.freeze()  # (and none after: the modules stay for the process's life; ~10^5 objects no collection rescans)
    from matplotlib.figure import Figure

    return Figure


def _import_matplotlib() -> None:
    import matplotlib.artist as artist

    kwdoc = getattr(artist, "kwdoc", None)
    name = "_update_set_signature_and_docstring"  # (a classmethod each new artist class calls)
    compose = vars(artist.Artist).get(name)
    if callable(kwdoc) and isinstance(compose, classmethod):
        artist.kwdoc = lambda artist: ""
        setattr(artist.Artist, name, classmethod(lambda cls: None))
        try:
            import matplotlib.backends.backend_agg  # noqa: F401  (what savefig draws with)
            import matplotlib.figure  # noqa: F401
        finally:
            artist.kwdoc = kwdoc
            setattr(artist.Artist, name, compose)


def every_kth(k: int, covers: bool = False) -> str:
    """The caption of a log printing every k-th step (issue 33 class 7): its marks are the
    printed steps, each standing for k; the k - 1 steps between two are not drawn (the log
    gives no times for them), so a gap between marks is no idle time the log shows. `covers`:
    the log's times cover the k steps (fairseq's running wall clock): each mark spans them."""
    if covers:
        return (f"the log prints one line in {k} steps, its times covering them: each mark spans the {k} steps "
                "since the line before")
    return (f"the log prints one step in {k}: each mark is a printed step standing for {k}; the {k - 1} "
            f"between two marks ran in the gap, not drawn (the log gives no times for them)")


# A picture of thousands of lanes (a trace of 3,000 streams) is thousands of rows no one can
# read, and drawing them took minutes and a gigabyte: beyond MAX_LANES, the lanes of the most
# time keep their rows (in their order) and the rest are drawn together on one last row, its
# label saying how many. The Perfetto export keeps every lane (a viewer scrolls).
MAX_LANES = 48


def fewer_lanes(lanes: list) -> list:
    if len(lanes) <= MAX_LANES:
        return lanes

    def busy(lane) -> float:
        return float(sum((df["t_end"] - df["t_start"]).sum() for df in (lane.main, lane.side)))

    ranked = sorted(range(len(lanes)), key=lambda i: (-round(busy(lanes[i]), 9), i))
    keep = set(ranked[:MAX_LANES - 1])
    rest = [lanes[i] for i in range(len(lanes)) if i not in keep]
    merged = Lane(f"{len(rest):,} more lanes, on one row", "", pd.concat([ln.main for ln in rest], ignore_index=True),
                  pd.concat([ln.side for ln in rest], ignore_index=True))
    return [lanes[i] for i in range(len(lanes)) if i in keep] + [merged]


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
                assert span is not None  # (aggregate says so)
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
    longest = max((len(str(h.get_label())) for h in handles), default=0)
    ncol = 9 if len(handles) <= 9 and longest <= 22 else 6 if longest <= 28 else 4
    ax.legend(handles=handles, loc="lower left", bbox_to_anchor=(0, 1.0), ncol=min(ncol, len(handles)),
              fontsize=8.5, frameon=False)
    if aggregate:  # the note, under the lowest lane
        from matplotlib.transforms import blended_transform_factory

        assert span is not None

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
    edges = np.linspace(lo, hi, n + 1)
    width = (hi - lo) / n
    out: dict[str, np.ndarray] = {}
    order: dict[str, int] = {}
    # by phase in order of first appearance (groupby's sort=False) on numpy arrays: a lane of a
    # million phases is not copied per phase
    codes, names = factorize_phases(df["phase"])  # (not the str column's own factorize: 2x)
    ts, te = df["t_start"].to_numpy(float), df["t_end"].to_numpy(float)
    for k, phase in enumerate(names):
        st = style_for(str(phase))
        sel = codes == k
        covered = np.diff(cumulative(ts[sel], te[sel], 1.0, edges))
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
    for phase in factorize_phases(df["phase"], use_na_sentinel=False)[1]:  # (pd.unique of the names)
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


# What `plot -o FILE.<suffix>` writes: every format matplotlib's Agg canvas saves, by suffix
# (pgf is LaTeX code that needs a TeX install to write: left out).
FORMATS = {"png": "PNG", "svg": "SVG", "svgz": "SVG, gzipped", "pdf": "PDF", "eps": "EPS", "ps": "PostScript",
           "jpg": "JPEG", "jpeg": "JPEG", "tif": "TIFF", "tiff": "TIFF", "webp": "WebP", "gif": "GIF",
           "raw": "raw RGBA", "rgba": "raw RGBA", "avif": "AVIF"}


def format_of(path: str | Path) -> str | None:
    """The picture format a file name asks for by its suffix (FORMATS' key), None when it
    names none that can be written."""
    suffix = Path(str(path)).suffix.lower().lstrip(".")
    if suffix not in FORMATS:
        return None
    Figure = figure_class()
    return suffix if suffix in Figure().canvas.get_supported_filetypes() else None


def figure_bytes(fig: Any, fmt: str = "png") -> bytes:
    """The figure saved in `fmt` (a FORMATS key)."""
    import logging

    buf = io.BytesIO()
    ps = logging.getLogger("matplotlib.backends.backend_ps")
    level = ps.level
    ps.setLevel(logging.ERROR)  # PostScript draws the translucent shades opaque: it says so on stderr
    try:
        fig.savefig(buf, format=fmt)
    finally:
        ps.setLevel(level)
    return buf.getvalue()


def timeline_png(phases: pd.DataFrame, samples: pd.DataFrame | None = None, *, title: str,
                 line_rate_gbs: float | None = None, origin: float | None = None,
                 view: tuple[float, float] | None = None, intervals: pd.DataFrame | None = None,
                 counters: pd.DataFrame | None = None, lane_noun: str = "worker", fmt: str = "png",
                 steps_per_record: int = 1, record_covers: bool = False) -> bytes:
    """The timeline as PNG bytes (or in `fmt`, a FORMATS key)."""
    with gc_paused():
        fig = render_timeline(phases, samples, title=title, line_rate_gbs=line_rate_gbs, origin=origin, view=view,
                              intervals=intervals, counters=counters, lane_noun=lane_noun,
                              steps_per_record=steps_per_record, record_covers=record_covers)
        return figure_bytes(fig, fmt)


def view_png(tv: TimelineView, *, title: str, fmt: str = "png") -> bytes:
    """The picture of a timeline view (gpuscope.analysis.timeline_view): its window, its run's
    line rate, its time scale, its shaded idle gaps; PNG unless `fmt` says otherwise."""
    return timeline_png(tv.phases, tv.samples, title=title, line_rate_gbs=tv.line_rate_gbs, origin=tv.origin,
                        view=tv.view, intervals=tv.intervals, counters=tv.counters, lane_noun=tv.lane_noun,
                        fmt=fmt, steps_per_record=tv.steps_per_record, record_covers=tv.record_covers)

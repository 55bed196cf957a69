"""The sample panels of the timeline picture (reports.plot): PCIe RX/TX against the line rate,
GPU activity (SM and DRAM activity from GPM, utilization.gpu), clocks and power, a profiler
trace's busy fraction, and the shading of the idle gaps behind them.

Colours: with one GPU each series has its own colour; with several, each GPU has its own
colour (GPU_COLORS, the same in every panel, named once in the figure's GPU legend) and a
series is told by its line style. Legends sit to the right of their panel, clear of the
data. Samples describe the interval that ends at their t_wall, so they are drawn as steps.
No parsing, no GPU.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import numpy as np
import pandas as pd

from gpuscope.arrays import distinct

#: a panel's width in pixel columns (14 in at 110 dpi, less the legends): a series or a shading
#: of more is drawn at this resolution
PIXEL_COLUMNS = 1500
#: GPUs drawn one by one at most (their colours and a legend entry each); more: those with the most rows
MAX_DRAWN_GPUS = 16

# shading of the classed intervals behind the sample panels
SHADE = {"idle_quiet": ("#bdbdbd", "idle, PCIe quiet"), "idle": ("#d0d0d0", "idle, PCIe not measured"),
         "transferring": ("#f4a6a6", "moving bytes, SMs idle")}

# one colour per GPU (matplotlib's tab10, the series colours' own palette)
GPU_COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
              "#bcbd22", "#17becf")

# (column, legend label, colour with one GPU, line style) per activity series; the label says
# what the figure is, so a reader of an nvidia-smi capture knows utilization.gpu is no SM count
ACTIVITY_SERIES = (
    ("sm_active", "SM active (GPM)", "#4e79a7", "-"),
    ("dram_active", "DRAM active (GPM)", "#f28e2b", ":"),
    ("gpu_util_pct", "utilization.gpu (a kernel ran)", "#59a14f", "--"),
)
PCIE_SERIES = (("rx_gbs", "PCIe RX (H2D)", "#e15759", "-"), ("tx_gbs", "PCIe TX (D2H)", "#76b7b2", "--"))

LEGEND = {"loc": "upper left", "bbox_to_anchor": (1.005, 1.0), "fontsize": 8, "frameon": False,
          "borderaxespad": 0.0}


def has(df: pd.DataFrame | None, col: str) -> bool:
    if df is None or not len(df) or col not in df:
        return False
    a = df[col].to_numpy()
    if a.dtype.kind == "f":  # (a float column: numpy's NaN test, not a boolean Series of 10^6 rows)
        return not bool(np.isnan(a).all())
    return bool(df[col].notna().any())


def gpus_of(*frames: pd.DataFrame | None) -> list[int]:
    """The GPU indices the sample frames hold, sorted (their colours' order)."""
    out: set[int] = set()
    for df in frames:
        if df is not None and len(df) and "gpu" in df:
            out.update(int(g) for g in pd.unique(df["gpu"]) if pd.notna(g))
    return sorted(out)


def gpu_color(gpus: list[int], gpu: int) -> str:
    return GPU_COLORS[gpus.index(gpu) % len(GPU_COLORS)] if gpu in gpus else GPU_COLORS[0]


def per_gpu(samples: pd.DataFrame, col: str, *, solid: bool = False,
            memo: dict | None = None) -> Iterator[tuple[int, pd.DataFrame]]:
    """(GPU, its readings of `col` sorted by time: t_wall and col) per GPU, decimated to what
    the panel can show (decimate; `solid`: drawn as a solid line): the frame's other columns
    are never copied. `memo`: a picture's (Painter.memo): the times, and each set of rows'
    order and pixel columns, worked out once for every series of the same rows (the PCIe
    directions, the GPM figures: a pass over 10^6 rows each, not one per series)."""
    memo = {} if memo is None else memo
    if memo.get("frame") is not samples:
        memo.clear()
        memo.update(frame=samples, t=pd.to_numeric(samples["t_wall"], errors="coerce").to_numpy(dtype="float64"),
                    gpu=samples["gpu"].to_numpy(), rows=[])
    t, gpu = memo["t"], memo["gpu"]
    x = pd.to_numeric(samples[col], errors="coerce").to_numpy(dtype="float64")
    ids = gpu[:1] if gpu.size and gpu.min() == gpu.max() else distinct(gpu)  # (one GPU: no pass over every row)
    for g in ids.tolist():
        sel = ~np.isnan(x) if ids.size == 1 else (gpu == g) & ~np.isnan(x)
        rows = next((r for r in memo["rows"] if r[0] == g and np.array_equal(r[1], sel)), None)
        if rows is None:
            every = bool(sel.all())
            tt = t if every else t[sel]
            order = (np.argsort(tt, kind="stable") if tt.size > 1 and not bool((tt[1:] >= tt[:-1]).all())
                     else None)
            tt = tt[order] if order is not None else tt
            rows = (g, sel, every, order, tt, _columns(tt, PIXEL_COLUMNS))
            memo["rows"].append(rows)
        _, _, every, order, tt, cols = rows
        if not tt.size:
            continue
        xx = x if every else x[sel]
        tt, xx = _decimated(tt, xx[order] if order is not None else xx, cols, solid)
        yield int(g), pd.DataFrame({"t_wall": tt, col: xx})


def decimate(t: np.ndarray, y: np.ndarray, columns: int = PIXEL_COLUMNS, *,
             solid: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """A series of more readings than the panel has pixel columns as each column's highest and
    lowest reading (at the column's first and last time): the same picture from 2 x columns
    points; a shorter series as it is. `solid`: for a solid line, the two go in the order that
    goes on from where the column before ended (highest first, then lowest first in the next
    column, and so on): each column spans the same range, but one that started at its highest
    drew that range twice, up from the previous lowest and back down, and with the panels of a
    long noisy recording the doubled stroke was most of the picture's draw (~0.13 -> 0.06 CPU-s
    per series). A dashed or dotted line keeps the doubled stroke: drawn once, its dashes fall
    into a pattern across the columns (moiré) that the readings do not have."""
    return _decimated(t, y, _columns(t, columns), solid)


def _columns(t: np.ndarray, columns: int) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """Where decimate cuts the sorted times `t` (each pixel column's first and last reading,
    and their times): None for a series drawn as it is."""
    n = t.size
    if n <= 2 * columns or not (np.isfinite(t[0]) and np.isfinite(t[-1])) or t[-1] <= t[0]:
        return None
    col = np.minimum(((t - t[0]) * (columns / (t[-1] - t[0]))).astype(np.int64), columns - 1)
    starts = np.flatnonzero(np.concatenate([[True], col[1:] != col[:-1]]))
    ends = np.concatenate([starts[1:], [n]]) - 1
    tt = np.empty(2 * starts.size)
    tt[0::2], tt[1::2] = t[starts], t[ends]
    return starts, ends, tt


def _decimated(t: np.ndarray, y: np.ndarray, cols: tuple | None, solid: bool) -> tuple[np.ndarray, np.ndarray]:
    if cols is None:
        return t, y
    starts, _, tt = cols
    hi, lo = np.maximum.reduceat(y, starts), np.minimum.reduceat(y, starts)
    yy = np.empty(2 * starts.size)
    if solid:
        odd = (np.arange(starts.size) % 2).astype(bool)  # (these columns: lowest first)
        hi, lo = np.where(odd, lo, hi), np.where(odd, hi, lo)
    yy[0::2], yy[1::2] = hi, lo
    return tt, yy


def drawn_gpus(samples: pd.DataFrame | None) -> tuple[pd.DataFrame | None, str | None]:
    """(the samples of the GPUs drawn one by one, what the picture leaves out): past
    MAX_DRAWN_GPUS distinct GPUs, those with the most rows; a line saying so."""
    if samples is None or not len(samples) or "gpu" not in samples:
        return samples, None
    gpu = samples["gpu"].to_numpy()
    if gpu.min() == gpu.max():  # (one GPU: no sort of every row)
        return samples, None
    ids, counts = np.unique(gpu, return_counts=True)
    if ids.size <= MAX_DRAWN_GPUS:
        return samples, None
    keep = ids[np.lexsort((ids, -counts))[:MAX_DRAWN_GPUS]]
    note = (f"{ids.size:,} GPUs in the samples: the {MAX_DRAWN_GPUS} with the most rows are drawn, "
            f"{ids.size - MAX_DRAWN_GPUS:,} are not")
    return samples[samples["gpu"].isin(keep)], note


class Painter:
    """Draws series in the figure's colour scheme (module doc)."""

    def __init__(self, gpus: list[int]) -> None:
        self.gpus = gpus
        self.several = len(gpus) > 1
        self.memo: dict = {}  # (per_gpu's, for the picture's series)

    def color(self, series_color: str, gpu: int) -> str:
        return gpu_color(self.gpus, gpu) if self.several else series_color

    def handles(self, entries: list[tuple[str, str, str]], extra: list | None = None) -> list:
        """One legend entry per series drawn (label, colour, line style): with several GPUs in
        black, the style alone telling the series (the GPU legend says the colours)."""
        from matplotlib.lines import Line2D

        return [Line2D([], [], color="black" if self.several else c, ls=ls, lw=1.2, label=lab)
                for lab, c, ls in entries] + (extra or [])

    def gpu_legend(self, fig: Any) -> None:
        """The figure's one legend of GPU colours (several GPUs only), under the title."""
        if not self.several:
            return
        from matplotlib.lines import Line2D

        handles = [Line2D([], [], color=gpu_color(self.gpus, g), lw=2.5, label=f"GPU {g}") for g in self.gpus]
        fig.legend(handles=handles, loc="outside upper right", ncol=min(len(handles), 8), fontsize=8.5,
                   frameon=False)


def legend(ax: Any, handles: list, right: float = 1.005) -> None:
    """The panel's legend, right of it (`right`: where it starts, in axes widths)."""
    if handles:
        ax.legend(handles=handles, **{**LEGEND, "bbox_to_anchor": (right, 1.0)})


def pcie_panel(ax: Any, samples: pd.DataFrame, t0: float, line_rate_gbs: float | None, paint: Painter) -> list:
    entries = []
    for col, label, color, ls in PCIE_SERIES:
        drawn = False
        for gpu, g in per_gpu(samples, col, solid=ls == "-", memo=paint.memo) if col in samples else ():
            ax.plot(g["t_wall"] - t0, g[col], drawstyle="steps-pre", color=paint.color(color, gpu), ls=ls, lw=1.1)
            drawn = True
        if drawn:
            entries.append((label, color, ls))
    extra = []
    if line_rate_gbs and math.isfinite(line_rate_gbs):
        from matplotlib.lines import Line2D

        ax.axhline(line_rate_gbs, color="black", lw=0.8, ls=":")
        extra.append(Line2D([], [], color="black", lw=0.8, ls=":", label=f"pinned line rate {line_rate_gbs:.0f} GB/s"))
    ax.set_ylabel("PCIe GB/s")
    ax.set_ylim(0, max(ax.get_ylim()[1], (line_rate_gbs or 0) * 1.25))
    ax.grid(alpha=0.3)
    return paint.handles(entries, extra)


def activity_series(samples: pd.DataFrame | None) -> list[tuple[str, str, str, str]]:
    """The activity series the samples hold (ACTIVITY_SERIES rows)."""
    return [s for s in ACTIVITY_SERIES if has(samples, s[0])]


def activity_panel(ax: Any, samples: pd.DataFrame, t0: float, paint: Painter) -> list:
    """SM and DRAM activity (GPM) and utilization.gpu, in percent: what the activity figures
    of analyze were computed from (utilization.gpu is an nvidia-smi capture's only one)."""
    series = activity_series(samples)
    entries = []
    for col, label, color, ls in series:
        scale = 1.0 if col == "gpu_util_pct" else 100.0
        solid, filled = ls == "-", col == series[0][0]  # (the first series is the evidence: filled)
        # the fill from the readings in their first-and-last order (decimate's `solid` order would
        # fill every other column to its highest reading instead of its lowest)
        fills = dict(per_gpu(samples, col, memo=paint.memo)) if filled and solid else None
        for gpu, g in per_gpu(samples, col, solid=solid, memo=paint.memo):
            c = paint.color(color, gpu)
            y = g[col].clip(lower=0) * scale
            if filled:
                f = fills[gpu] if fills is not None else g
                ax.fill_between(f["t_wall"] - t0, f[col].clip(lower=0) * scale, step="pre", alpha=0.25, color=c, lw=0)
            ax.plot(g["t_wall"] - t0, y, lw=1.0, drawstyle="steps-pre", color=c, ls=ls)
        entries.append((label, color, ls))
    only_sm = [s[0] for s in series] == ["sm_active"]
    ax.set_ylabel("SM active %" if only_sm else "activity %")
    ax.set_ylim(0, 105)
    ax.grid(alpha=0.3)
    return paint.handles(entries)


def clocks_panel(ax: Any, samples: pd.DataFrame, t0: float, paint: Painter) -> list:
    entries = []
    if "sm_clock_mhz" in samples:
        for gpu, g in per_gpu(samples, "sm_clock_mhz", memo=paint.memo):
            ax.plot(g["t_wall"] - t0, g["sm_clock_mhz"], lw=1.0, drawstyle="steps-post",
                    color=paint.color("#59a14f", gpu))
        entries.append(("SM clock MHz", "#59a14f", "-"))
    ax.set_ylabel("SM clock MHz")
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    if has(samples, "power_w"):
        ax2 = ax.twinx()
        for gpu, g in per_gpu(samples, "power_w", memo=paint.memo):
            ax2.plot(g["t_wall"] - t0, g["power_w"], lw=1.0, drawstyle="steps-post", ls="--",
                     color=paint.color("#b07aa1", gpu))
        entries.append(("power W (right axis)", "#b07aa1", "--"))
        ax2.set_ylabel("power W")
        ax2.set_ylim(bottom=0)
    return paint.handles(entries)


def counters_panel(ax: Any, counters: pd.DataFrame, t0: float, paint: Painter) -> list:
    """A profiler trace without NVML samples: its busy fraction per bin, one track per rank
    and device (ranks that share a GPU each keep their own line, in their own colour)."""
    from matplotlib.lines import Line2D

    keys = ["rank", "gpu"] if "rank" in counters else ["gpu"]
    tracks = list(counters.sort_values("t_wall").groupby(keys, sort=True))
    by_rank = "rank" in counters and counters["rank"].nunique() > 1
    handles = []
    for i, (key, g) in enumerate(tracks):
        rank, gpu = (key if len(keys) == 2 else (None, key[0] if isinstance(key, tuple) else key))
        c = GPU_COLORS[i % len(GPU_COLORS)] if by_rank else paint.color("#4e79a7", int(gpu))
        x = g["t_wall"] - t0 + g["bin_s"]  # a bin is drawn up to its end, like a sample
        ax.fill_between(x, g["busy_fraction"] * 100, step="pre", alpha=0.2 if by_rank else 0.3, color=c, lw=0)
        ax.plot(x, g["busy_fraction"] * 100, lw=1.0, drawstyle="steps-pre", color=c)
        if by_rank:
            handles.append(Line2D([], [], color=c, lw=1.2, label=f"rank {rank} (GPU {gpu}) busy"))
    ax.set_ylabel("busy %")
    ax.set_ylim(0, 105)
    ax.grid(alpha=0.3)
    if by_rank:
        return handles + [Line2D([], [], color="none", label="(kernels, copies; profiler trace)")]
    return paint.handles([("GPU busy (kernels, copies; profiler trace)", "#4e79a7", "-")])


def shade(ax: Any, intervals: pd.DataFrame | Shading | None, t0: float) -> list:
    """Idle gaps behind a sample panel; the legend patches of the shades drawn. `intervals`:
    the classed intervals, or their Shading made once for every panel of a picture."""
    from matplotlib.patches import Patch

    sh = intervals if isinstance(intervals, Shading) else Shading.of(intervals)
    for color, band, x0, x1, alpha in sh.bars:
        broken_barh(ax, x0 - t0, x1 - x0, band, transform=ax.get_xaxis_transform(), facecolors=color, alpha=alpha,
                    zorder=0, linewidth=0)
    return [Patch(facecolor=color, alpha=0.4, label=label) for color, label in sh.legend]


class Shading:
    """The idle gaps' bars of a picture's sample panels, made once for all of them (each panel
    draws the same): (colour, GPU band, starts, ends, alpha) per bar group, and the legend's
    (colour, label) per class drawn."""

    def __init__(self, bars: list, legend: list) -> None:
        self.bars, self.legend = bars, legend

    @classmethod
    def of(cls, intervals: pd.DataFrame | None) -> Shading:
        if intervals is None or not len(intervals):
            return cls([], [])
        bars, legend = [], []
        # "idle, PCIe not measured" between the rows that did measure it (GPM rows beside PCIe
        # counter rows) is the same idle: shaded only where PCIe was never measured
        measured = bool(intervals["class"].isin(("idle_quiet", "transferring", "both")).any())
        klass = intervals["class"].to_numpy(dtype=object)
        lo, hi = float(intervals["t_start"].min()), float(intervals["t_end"].max())
        # several GPUs: each its own band (bottom to top in GPU order), never their union, and the
        # legend says which band is which GPU (one GPU idle beside a busy one is not "idle")
        gpus = sorted(int(g) for g in intervals["gpu"].unique()) if "gpu" in intervals else [0]
        bands = {g: (k / len(gpus), 1 / len(gpus)) for k, g in enumerate(gpus)}
        which = "" if len(gpus) == 1 else f" (a band per GPU, bottom to top: GPU {', '.join(map(str, gpus))})"
        ts, te = intervals["t_start"].to_numpy(dtype="float64"), intervals["t_end"].to_numpy(dtype="float64")
        gpu = intervals["gpu"].to_numpy() if len(gpus) > 1 else None
        for kls, (color, label) in SHADE.items():
            if kls == "idle" and measured:
                continue
            sub = klass == kls
            if not sub.any():
                continue
            for g in gpus:
                mine = sub if gpu is None else sub & (gpu == g)
                a, b = ts[mine], te[mine]
                for (x0, x1), alpha in _shading(a, b, lo, hi) if a.size else []:
                    bars.append((color, bands[g], x0, x1, alpha))
            legend.append((color, label + which))
        return cls(bars, legend)


def broken_barh(ax: Any, x0: np.ndarray, dx: np.ndarray, yrange: tuple[float, float], **kwargs: Any) -> Any:
    """ax.broken_barh(list(zip(x0, dx)), yrange, **kwargs) for float arrays: the same vertices
    ((x0, y0), (x0, y1), (x1, y1), (x1, y0)), x1 = x0 + dx, y1 = y0 + height, in the same
    PolyCollection, made by numpy instead of matplotlib's loop over the bars (its unit
    conversion of each bar: ~0.1 CPU-s for the shading of a day of samples)."""
    x0, dx = np.asarray(x0, dtype="float64"), np.asarray(dx, dtype="float64")
    y0, height = (float(v) for v in yrange)
    if not x0.size:
        return ax.broken_barh([], yrange, **kwargs)
    from matplotlib.collections import PolyCollection

    x1, y1 = x0 + dx, y0 + height
    vertices = np.empty((x0.size, 4, 2))
    vertices[:, 0, 0] = vertices[:, 1, 0] = x0
    vertices[:, 2, 0] = vertices[:, 3, 0] = x1
    vertices[:, 0, 1] = vertices[:, 3, 1] = y0
    vertices[:, 1, 1] = vertices[:, 2, 1] = y1
    # (an (n, 4, 2) array, as broken_barh passes it)
    col = PolyCollection(vertices, **kwargs)  # type: ignore[arg-type]
    ax.add_collection(col)
    return col


SHADE_ALPHA = 0.22
SHADE_LEVELS = 4


def _shading(a: np.ndarray, b: np.ndarray, lo: float, hi: float,
             columns: int = 2 * PIXEL_COLUMNS) -> list[tuple[tuple[np.ndarray, np.ndarray], float]]:
    """(bars, alpha) to draw one class's intervals [a, b): as they are when they are no more than
    the panel's columns; else per column, shaded by the share of the column they cover (in
    SHADE_LEVELS steps): the picture of a million sub-pixel gaps, drawn in bounded time."""
    if a.size <= columns or not hi > lo:
        return [((a, b), SHADE_ALPHA)]
    order = np.argsort(a, kind="stable")
    a, b = a[order], np.maximum(b[order], a[order])
    edges = np.linspace(lo, hi, columns + 1)
    covered = _covered(a, b, edges)
    share = np.diff(covered) / np.diff(edges)
    level = np.clip(np.rint(share * SHADE_LEVELS), 0, SHADE_LEVELS).astype(np.int64)
    out = []
    for k in range(1, SHADE_LEVELS + 1):
        on = level == k
        if on.any():
            m = np.concatenate([[False], on, [False]])
            d = np.diff(m.astype(np.int8))
            s, e = np.flatnonzero(d == 1), np.flatnonzero(d == -1)
            out.append(((edges[s], edges[e]), SHADE_ALPHA * k / SHADE_LEVELS))
    return out


def _covered(a: np.ndarray, b: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Time covered by the sorted disjoint intervals [a, b) before each x."""
    full = np.concatenate([[0.0], np.cumsum(b - a)])
    i = np.searchsorted(a, x, side="right")  # intervals that start before x
    j = np.maximum(i - 1, 0)
    part = np.where(i > 0, np.clip(x - a[j], 0.0, b[j] - a[j]), 0.0)
    return full[j] + part

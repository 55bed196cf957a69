"""One GPU's NVML samples as a grid of intervals, each with its figures and its class.

samples.csv rows come at different rates (docs/ARCHITECTURE.md "Sample semantics"): PCIe on
every tick (~50 Hz), GPM SM activity on its own rows (~10 Hz), the slow fields at ~5 Hz.
The grid is the GPU's row times t_0 < t_1 < ... ; interval i is (t_{i-1}, t_i], so the grid
covers the recording from its first sample to its last. Each column is resampled onto it
by what its reading means:

- window averages (sm_active, gpu_util_pct, GPM or throughput PCIe): a reading at T covers
  the time since the previous reading of that column, so it is filled backwards onto the
  intervals before it (none after the last reading: those stay NaN);
- PCIe byte counters (pcie_source `counter`): each row is its own tick, never filled;
  wrap-suspect rows are NaN (a whole counter wrap may hide in them);
- states read at an instant (memory used, power, clocks, temperature, clock-event reasons):
  filled forwards (the state holds until the next read), and backwards before the first.

Classes (module thresholds; docs/ANALYZE.md "From NVML samples alone"):

    computing     SM activity >= SM_IDLE, PCIe quiet (or not measured)
    both          SM activity >= SM_IDLE and RX or TX >= PCIE_BUSY_SHARE of the line rate
    transferring  SM idle, RX or TX >= PCIE_BUSY_SHARE of the line rate
    idle_quiet    SM idle, PCIe quiet: nothing computed or copied, the host is not feeding the GPU
    idle          SM idle, PCIe not measured
    unknown       no activity reading covers the interval
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

#: SM activity (GPM, 0-1) or utilization.gpu / 100 below which an interval is idle
SM_IDLE = 0.05
#: activity above this (or PCIe busy) counts as "the GPU was in use" (the active span)
SM_TRACE = 0.01
#: RX or TX at or above this share of the line rate: PCIe busy (a transfer is running). PCIe is
#: "quiet" only when both directions are below it: the trickle of an idle link (driver polls,
#: small reads: < 0.25 GB/s on the H200) stays under it, a crawl of 1-4 GB/s from pageable memory
#: (2-8% of a Gen5 x16 line) is above it, never "quiet" (docs/ANALYZE.md)
PCIE_BUSY_SHARE = 0.01
#: a reading at or above this share of the line rate is "at the line rate"
NEAR_LINE_SHARE = 0.85

CLASSES = ("computing", "both", "transferring", "idle_quiet", "idle", "unknown")
SM_IDLE_CLASSES = ("transferring", "idle_quiet", "idle")
WINDOW_COLUMNS = ("sm_active", "sm_occupancy", "dram_active", "gpu_util_pct", "mem_util_pct",
                  "tensor_active", "fp16_active", "fp32_active", "fp64_active")
#: GPM pipe readings (0-1, window averages) that tell what bounds the GPU while it works
PIPE_COLUMNS = ("sm_occupancy", "dram_active", "tensor_active", "fp16_active", "fp32_active", "fp64_active")
STATE_COLUMNS = ("mem_used_mib", "power_w", "sm_clock_mhz", "mem_clock_mhz", "temperature_c",
                 "clock_event_reasons")


@dataclass
class Grid:
    """One GPU's intervals (arrays of equal length n = rows - 1)."""

    gpu: int
    t_start: np.ndarray
    t_end: np.ndarray
    activity: np.ndarray           # SM activity or utilization.gpu / 100, 0-1, NaN unknown
    source: str | None             # "gpm_sm_active" | "utilization" | None
    resolution_s: float            # median spacing of the activity source's readings
    readings: int                  # how many readings of the activity source the rows hold
    rx: np.ndarray                 # GB/s, NaN unknown
    tx: np.ndarray
    pcie_source: str | None        # counter | gpm | throughput | None
    pcie_resolution_s: float
    cls: np.ndarray                # object array of CLASSES
    states: dict[str, np.ndarray]  # STATE_COLUMNS filled per interval
    util: np.ndarray               # utilization.gpu / 100 (NaN where not read), beside GPM
    time_basis: str                # "t_wall" (epoch s) | "t_mono" (no wall time in the file)
    pipes: dict[str, np.ndarray] | None = None  # PIPE_COLUMNS filled backwards (only those read)

    @property
    def dt(self) -> np.ndarray:
        return self.t_end - self.t_start

    @property
    def n(self) -> int:
        return int(self.t_end.size)


def _num(df: pd.DataFrame, col: str) -> np.ndarray:
    if col not in df:
        return np.full(len(df), np.nan)
    return pd.to_numeric(df[col], errors="coerce").to_numpy(dtype="float64")


def _bfill(x: np.ndarray) -> np.ndarray:
    return pd.Series(x).bfill().to_numpy(dtype="float64")


def _ffill_both(x: np.ndarray) -> np.ndarray:
    return pd.Series(x).ffill().bfill().to_numpy(dtype="float64")


def spacing_s(t: np.ndarray, x: np.ndarray) -> float:
    """Median spacing of the readings of x (rows where it is finite); NaN with fewer than two."""
    tt = t[np.isfinite(x)]
    d = np.diff(tt)
    d = d[d > 0]
    return float(np.median(d)) if d.size else float("nan")


def time_basis(samples: pd.DataFrame) -> str:
    """t_wall when every row has one (gpuscope, dmon -o T, query-gpu), else t_mono."""
    t = _num(samples, "t_wall")
    return "t_wall" if t.size and np.isfinite(t).all() else "t_mono"


def build_grid(rows: pd.DataFrame, gpu: int, line_rate_gbs: float, basis: str = "t_wall") -> Grid:
    """The grid of one GPU's rows (samples.csv schema)."""
    t_all = _num(rows, basis)
    ok = np.isfinite(t_all)
    rows = rows.loc[ok]
    t_all = t_all[ok]
    order = np.argsort(t_all, kind="stable")
    rows, t_all = rows.iloc[order], t_all[order]
    cols = {c: _num(rows, c) for c in (*WINDOW_COLUMNS, *STATE_COLUMNS, "rx_gbs", "tx_gbs", "wrap_suspect")}
    # rows of one instant (a GPM row and a PCIe row written at the same time): one grid point,
    # the first reading of each column
    t = np.unique(t_all)
    if t.size != t_all.size:
        g = pd.DataFrame(cols).groupby(t_all, sort=True).first()
        cols = {c: g[c].to_numpy(dtype="float64") for c in cols}
    src_vals = rows["pcie_source"].dropna().astype(str) if "pcie_source" in rows else pd.Series(dtype=str)
    src_vals = src_vals[src_vals != ""]
    pcie_source = str(src_vals.mode().iloc[0]) if len(src_vals) else None

    sm, util = cols["sm_active"], cols["gpu_util_pct"] / 100.0
    if np.isfinite(sm).any():
        source, raw = "gpm_sm_active", sm
    elif np.isfinite(util).any():
        source, raw = "utilization", util
    else:
        source, raw = None, np.full(t.size, np.nan)
    resolution = spacing_s(t, raw)
    activity = np.clip(_bfill(raw), 0.0, 1.0)[1:]
    util_f = np.clip(_bfill(util), 0.0, 1.0)[1:]

    wrap = cols["wrap_suspect"] == 1
    rx, tx = np.where(wrap, np.nan, cols["rx_gbs"]), np.where(wrap, np.nan, cols["tx_gbs"])
    pcie_resolution = spacing_s(t, cols["rx_gbs"])
    if pcie_source != "counter":
        rx, tx = _bfill(rx), _bfill(tx)
        rx, tx = np.where(wrap, np.nan, rx), np.where(wrap, np.nan, tx)
    rx, tx = rx[1:], tx[1:]
    states = {c: _ffill_both(cols[c])[1:] for c in STATE_COLUMNS}
    cls = classify(activity, rx, tx, line_rate_gbs)
    pipes = {c: np.clip(_bfill(cols[c]), 0.0, 1.0)[1:] for c in PIPE_COLUMNS if np.isfinite(cols[c]).any()}
    return Grid(gpu=int(gpu), t_start=t[:-1], t_end=t[1:], activity=activity, source=source,
                resolution_s=resolution, readings=int(np.isfinite(raw).sum()), rx=rx, tx=tx, pcie_source=pcie_source,
                pcie_resolution_s=pcie_resolution, cls=cls, states=states, util=util_f, time_basis=basis, pipes=pipes)


def pcie_busy(rx: np.ndarray, tx: np.ndarray, line_rate_gbs: float) -> np.ndarray:
    """1.0 busy, 0.0 quiet, NaN not measured (neither direction read)."""
    floor = PCIE_BUSY_SHARE * line_rate_gbs
    peak = np.fmax(rx, tx)
    return np.where(np.isnan(peak), np.nan, (peak >= floor).astype("float64"))


def classify(activity: np.ndarray, rx: np.ndarray, tx: np.ndarray, line_rate_gbs: float) -> np.ndarray:
    busy_sm = activity >= SM_IDLE
    busy_io = pcie_busy(rx, tx, line_rate_gbs)
    io_known = ~np.isnan(busy_io)
    io = busy_io == 1.0
    out = np.full(activity.size, "unknown", dtype=object)
    known = ~np.isnan(activity)
    out[known & busy_sm & ~io] = "computing"
    out[known & busy_sm & io] = "both"
    out[known & ~busy_sm & io] = "transferring"
    out[known & ~busy_sm & io_known & ~io] = "idle_quiet"
    out[known & ~busy_sm & ~io_known] = "idle"
    return out


def runs(mask: np.ndarray) -> list[tuple[int, int]]:
    """[start, end) index ranges of the consecutive True stretches of mask."""
    m = np.concatenate([[False], np.asarray(mask, dtype=bool), [False]])
    d = np.diff(m.astype(np.int8))
    return list(zip(np.flatnonzero(d == 1).tolist(), np.flatnonzero(d == -1).tolist(), strict=True))


def merged_intervals(grid: Grid) -> pd.DataFrame:
    """Consecutive intervals of one class merged: gpu, class, t_start, t_end."""
    if grid.n == 0:
        return pd.DataFrame({"gpu": pd.Series(dtype="int64"), "class": pd.Series(dtype=object),
                             "t_start": pd.Series(dtype="float64"), "t_end": pd.Series(dtype="float64")})
    c = grid.cls
    new = np.concatenate([[True], c[1:] != c[:-1]])
    starts = np.flatnonzero(new)
    ends = np.concatenate([starts[1:], [grid.n]]) - 1
    return pd.DataFrame({"gpu": np.full(starts.size, grid.gpu, dtype="int64"),
                         "class": pd.Series(c[starts], dtype=object),
                         "t_start": grid.t_start[starts], "t_end": grid.t_end[ends]})


PIPE_FULL = 0.6  # a GPM pipe this active while the SMs work is what bounds them (rules/bound.py)


def pipes_while_computing(grid: Grid, working: np.ndarray) -> dict[str, float | None]:
    """Time-weighted mean of SM activity and of each GPM pipe read (PIPE_COLUMNS) over the working
    intervals with SM activity >= SM_IDLE: what the GPU's units did while it computed;
    `computing_s` is that time."""
    comp = working & (np.nan_to_num(grid.activity) >= SM_IDLE)
    dt = grid.dt
    out: dict[str, float | None] = {"computing_s": float(dt[comp].sum())}
    for name, x in (("sm_active", grid.activity), *(grid.pipes or {}).items()):
        ok = comp & np.isfinite(x)
        w = float(dt[ok].sum())
        out[name] = float(np.sum(x[ok] * dt[ok]) / w) if w > 0 else None
    return out

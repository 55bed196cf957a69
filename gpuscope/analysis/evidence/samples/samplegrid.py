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

import itertools
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import pandas as pd

from gpuscope.analysis.evidence.samples import holes
from gpuscope.analysis.evidence.samples.gridsums import (  # noqa: F401 (re-exported: sg.masked_sum, ...)
    cover,
    first_last,
    masked_dot,
    masked_sum,
    run_bounds,
    segment_sums,
    small_pages,
    take,
    wmean,
)
from gpuscope.analysis.names import SM_IDLE
from gpuscope.arrays import median

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
#: GPM pipe readings (0-1, window averages) that tell what bounds the GPU while it works
PIPE_COLUMNS = ("sm_occupancy", "dram_active", "tensor_active", "fp16_active", "fp32_active", "fp64_active")
STATE_COLUMNS = ("mem_used_mib", "power_w", "sm_clock_mhz", "mem_clock_mhz", "temperature_c",
                 "clock_event_reasons")


CLASS_CODE = {c: i for i, c in enumerate(CLASSES)}
_CLASS_NAMES = np.array(CLASSES, dtype=object)


@dataclass
class Grid:
    """One GPU's intervals (arrays of equal length n = rows - 1). A column the GPU never read
    is one NaN seen n times (a read-only view, no memory). What the figures read once (the
    states, the GPM pipes) is made from the rows when asked for and not kept: `state(c)`,
    `pipe_items()`."""

    gpu: int
    t_start: np.ndarray
    t_end: np.ndarray
    activity: np.ndarray           # SM activity or utilization.gpu / 100, 0-1, NaN unknown
    source: str | None             # "gpm_sm_active" | "utilization" | None
    resolution_s: float            # median spacing of the activity source's readings
    readings: int                  # how many readings of the activity source the rows hold
    rx: np.ndarray                 # GB/s, NaN unknown
    tx: np.ndarray
    pcie_source: str | None        # counter | gpm | throughput | prometheus | dcgm | None
    pcie_resolution_s: float
    codes: np.ndarray              # int8 per interval: its class (CLASS_CODE; `cls` names them)
    util_pct: np.ndarray           # utilization.gpu filled backwards, in percent (float32 where exact)
    time_basis: str                # "t_wall" (epoch s) | "t_mono" (no wall time in the file)
    # the states' and the GPM pipes' readings on the grid points, not filled (the frame's own
    # arrays for one GPU's file; a pipe only where read): `state(c)`, `pipe_items()` fill them
    raw: dict[str, np.ndarray] = field(default_factory=dict)
    pipe_names: tuple[str, ...] = ()  # PIPE_COLUMNS read (a finite value in the rows)
    unknown_time: holes.Unknown = field(default_factory=holes.Unknown)  # holes, time gone back

    @cached_property
    def dt(self) -> np.ndarray:
        return self.t_end - self.t_start

    @cached_property
    def cls(self) -> np.ndarray:
        """Object array of CLASSES per interval (made from `codes` when first asked for)."""
        return _CLASS_NAMES[self.codes]

    @property
    def util(self) -> np.ndarray:
        """utilization.gpu / 100 per interval, 0-1 (NaN where not read), beside GPM; made on each
        call (the activity itself when utilization is the activity source)."""
        if self.source == "utilization":
            return self.activity
        u = self.util_pct
        if u.strides == (0,):
            return nan_view(u.size)
        out = np.divide(u, 100.0, dtype=np.float64)
        return np.clip(out, 0.0, 1.0, out=out)

    def state(self, c: str) -> np.ndarray:
        """STATE_COLUMNS c per interval: filled forwards, and backwards before its first reading
        (float32 where the frame holds it so: every value exact); made on each call."""
        x = self.raw.get(c)
        return nan_view(self.n) if x is None else _ffill_both(x)[1:]

    @property
    def states(self) -> dict[str, np.ndarray]:
        return {c: self.state(c) for c in STATE_COLUMNS}

    def pipe_items(self) -> Iterator[tuple[str, np.ndarray]]:
        """(name, the GPM pipe filled backwards, 0-1) of each PIPE_COLUMNS read, one at a time."""
        for c in self.pipe_names:
            yield c, _clip01(_bfill(self.raw[c]))[1:]

    @property
    def pipes(self) -> dict[str, np.ndarray]:
        return dict(self.pipe_items())

    def busy_io(self, line_rate_gbs: float) -> np.ndarray:
        """pcie_busy of this grid's RX and TX (computed once per line rate)."""
        memo = self.__dict__.setdefault("_busy_io", {})
        if line_rate_gbs not in memo:
            memo[line_rate_gbs] = pcie_busy(self.rx, self.tx, line_rate_gbs)
        return memo[line_rate_gbs]

    def in_classes(self, names: tuple[str, ...]) -> np.ndarray:
        """bool per interval: its class is one of `names`."""
        table = np.zeros(len(CLASSES), dtype=bool)
        table[[CLASS_CODE[c] for c in names]] = True
        return table[self.codes]

    @property
    def n(self) -> int:
        return int(self.t_end.size)


def nan_view(n: int) -> np.ndarray:
    """n NaNs in no memory (a read-only view of one)."""
    return np.broadcast_to(np.float64(np.nan), (n,))


def all_nan(x: np.ndarray) -> bool:
    if x.ndim == 1 and x.size and x.strides == (0,):
        return bool(np.isnan(x[0]))
    return bool(np.isnan(x).all())


def has_reading(x: np.ndarray) -> bool:
    """Whether x holds a finite value."""
    if x.ndim == 1 and x.size and x.strides == (0,):
        return bool(np.isfinite(x[0]))
    return bool(np.isfinite(x).any())


def _num(df: pd.DataFrame, col: str) -> np.ndarray:
    if col not in df:
        return nan_view(len(df))
    s = df[col]
    if s.dtype.kind == "f":
        x = s.to_numpy()
        return x if x.dtype == np.float64 else x.astype(np.float64)  # (float32 columns hold their values exactly)
    if s.dtype.kind in "iub":
        return s.to_numpy(dtype="float64")
    return pd.to_numeric(s, errors="coerce").to_numpy(dtype="float64")


def _own(out: np.ndarray, x: np.ndarray) -> np.ndarray:
    """out, or its copy when it may be x's memory or is read-only (pandas' copy-on-write may hand
    back the input itself when there is nothing to fill)."""
    return out.copy() if not out.flags.writeable or np.may_share_memory(out, x) else out


def _fill(x: np.ndarray, how: str, dtype) -> np.ndarray:
    """x filled ('b': backwards, 'fb': forwards, then backwards before the first reading) as a new
    array of dtype (pandas' fill)."""
    s = pd.Series(x, copy=False)
    s = s.bfill() if how == "b" else s.ffill().bfill()
    return _own(s.to_numpy(dtype=dtype), x)


def _bfill(x: np.ndarray) -> np.ndarray:
    """x filled backwards, float64 (a new array: the caller may change it in place)."""
    if all_nan(x):
        return nan_view(x.size)
    return _fill(x, "b", np.float64)


def _ffill_both(x: np.ndarray) -> np.ndarray:
    """x filled forwards, then backwards before its first reading (float32 stays float32)."""
    if all_nan(x):
        return nan_view(x.size)
    return _fill(x, "fb", np.float32 if x.dtype == np.float32 else np.float64)


def _bfill_keep(x: np.ndarray) -> np.ndarray:
    """x filled backwards in its own dtype (float32 stays float32: every value exact)."""
    if all_nan(x):
        return nan_view(x.size)
    return _fill(x, "b", np.float32 if x.dtype == np.float32 else np.float64)


def spacing_s(t: np.ndarray, x: np.ndarray) -> float:
    """Median spacing of the readings of x (rows where it is finite); NaN with fewer than two."""
    if all_nan(x):
        return float("nan")
    d = np.diff(take(t, np.isfinite(x)))
    d = take(d, d > 0)  # (d is ours: its median may partition it in place)
    return float(median(d, overwrite=True)) if d.size else float("nan")


def time_basis(samples: pd.DataFrame) -> str:
    """t_wall when every row has one (gpuscope, dmon -o T, query-gpu), else t_mono."""
    t = _num(samples, "t_wall")
    return "t_wall" if t.size and np.isfinite(t).all() else "t_mono"


def _mode(rows: pd.DataFrame, idx: np.ndarray | None) -> str | None:
    """The most frequent pcie_source (the smallest of a tie), None when none is named."""
    if "pcie_source" not in rows:
        return None
    s = rows["pcie_source"]
    if isinstance(s.dtype, pd.CategoricalDtype):
        codes = np.asarray(s.cat.codes.to_numpy())
        codes = codes if idx is None else codes[idx]
        codes = codes[codes >= 0]
        names = [str(c) for c in s.cat.categories]
        counts = np.bincount(codes, minlength=len(names)) if codes.size else np.zeros(len(names), dtype=np.int64)
        named = {n: 0 for n in names if n != ""}
        for n, k in zip(names, counts.tolist(), strict=True):
            if n != "":
                named[n] += k
        live = {n: k for n, k in named.items() if k > 0}
        return min(live, key=lambda n: (-live[n], n)) if live else None
    vals = (s if idx is None else s.iloc[idx]).dropna().astype(str)
    vals = vals[vals != ""]
    return str(vals.mode().iloc[0]) if len(vals) else None


def _first_of_instant(x: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """The first reading (non-NaN) of each group of rows of one instant (groups start at `starts`)."""
    if all_nan(x):
        return nan_view(starts.size)
    n = x.size
    pos = np.where(np.isnan(x), n, np.arange(n))
    first = np.minimum.reduceat(pos, starts)
    return np.append(x, np.nan)[first]


def build_grid(rows: pd.DataFrame, gpu: int, line_rate_gbs: float, basis: str = "t_wall") -> Grid:
    """The grid of one GPU's rows (samples.csv schema). Only the columns read are copied, and
    only where the rows need dropping (no time), sorting or merging (rows of one instant)."""
    t_all = _num(rows, basis)
    ok = np.isfinite(t_all)
    idx: np.ndarray | None = None if ok.all() else np.flatnonzero(ok)
    t_all = t_all if idx is None else t_all[idx]
    t_file = t_all  # (in the file's order: time that goes back is said, not sorted away in silence)
    if t_all.size > 1 and not bool((t_all[1:] >= t_all[:-1]).all()):
        order = np.argsort(t_all, kind="stable")
        idx = order if idx is None else idx[order]
        t_all = t_all[order]
    # rows of one instant (a GPM row and a PCIe row written at the same time): one grid point,
    # the first reading of each column
    new = np.concatenate([[True], t_all[1:] != t_all[:-1]]) if t_all.size else np.zeros(0, dtype=bool)
    starts = None if new.all() else np.flatnonzero(new)
    t = t_all if starts is None else t_all[starts]

    def col(c: str, wide: bool = True) -> np.ndarray:
        """Column c of the rows kept, in their order: float64, or (wide=False) as the frame holds
        an integer or float32 column (its values exactly)."""
        s = rows[c] if not wide and c in rows else None
        keep = s is not None and (s.dtype.kind in "iu" or s.dtype == np.float32)
        x = s.to_numpy() if keep and s is not None else _num(rows, c)
        if x.strides == (0,):
            return nan_view(t.size)
        x = x if idx is None else x[idx]
        return x if starts is None else _first_of_instant(x, starts)

    pcie_source = _mode(rows, idx)
    sm, util_raw = col("sm_active"), col("gpu_util_pct", wide=False)
    if has_reading(sm):
        source, raw = "gpm_sm_active", sm
    elif has_reading(util_raw):
        source, raw = "utilization", _percent(util_raw)
    else:
        source, raw = None, nan_view(t.size)
    resolution = spacing_s(t, raw)
    readings = int(np.count_nonzero(np.isfinite(raw))) if raw.strides != (0,) else 0
    activity = _clip01(_bfill(raw))[1:]
    gone = _unknown_time(t_file, t, raw, resolution)
    activity = _blank(activity, gone.mask)
    del raw, sm
    util_pct = nan_view(t.size - 1) if source == "utilization" else _bfill_keep(util_raw)[1:]
    del util_raw

    wrap = col("wrap_suspect", wide=False) == 1
    rx_raw = col("rx_gbs")
    rx, tx = _unwrapped(rx_raw, wrap), _unwrapped(col("tx_gbs"), wrap)
    pcie_resolution = spacing_s(t, rx_raw)
    if pcie_source != "counter":
        rx, tx = _unwrapped(_bfill(rx), wrap), _unwrapped(_bfill(tx), wrap)
        hole, _, _ = holes.hole_mask(t, rx_raw, pcie_resolution)
        pcie_gone = gone.mask if hole is None else hole if gone.mask is None else hole | gone.mask
    else:
        pcie_gone = gone.back_mask
    del rx_raw
    rx, tx = rx[1:], tx[1:]
    rx, tx = _blank(rx, pcie_gone), _blank(tx, pcie_gone)
    busy_io = pcie_busy(rx, tx, line_rate_gbs)
    codes = classify_codes(activity, rx, tx, line_rate_gbs, busy_io)
    unfilled = {c: col(c, wide=False) for c in STATE_COLUMNS}
    pipe_names = []
    for c in PIPE_COLUMNS:
        x = col(c, wide=False)
        if has_reading(x):
            unfilled[c] = x
            pipe_names.append(c)
    g = Grid(gpu=int(gpu), t_start=t[:-1], t_end=t[1:], activity=activity, source=source,
             resolution_s=resolution, readings=readings, rx=rx, tx=tx, pcie_source=pcie_source,
             pcie_resolution_s=pcie_resolution, codes=codes, util_pct=util_pct, time_basis=basis, raw=unfilled,
             pipe_names=tuple(pipe_names), unknown_time=gone)
    g.__dict__["_busy_io"] = {line_rate_gbs: busy_io}
    return g


def _unknown_time(t_file: np.ndarray, t: np.ndarray, raw: np.ndarray, resolution: float) -> holes.Unknown:
    """The activity's holes and the time the file went back over (holes.py)."""
    hole, n_holes, hole_s = holes.hole_mask(t, raw, resolution)
    back, steps, back_s = holes.backwards(t_file, t)
    mask = hole if back is None else back if hole is None else hole | back
    return holes.Unknown(mask, n_holes, hole_s, back, steps, back_s)


def _blank(x: np.ndarray, mask: np.ndarray | None) -> np.ndarray:
    """x with NaN where mask (in place where x is its own writable array)."""
    if mask is None or not mask.any() or x.strides == (0,):
        return x
    if not x.flags.writeable:
        x = x.copy()
    x[mask] = np.nan
    return x


def _percent(x: np.ndarray) -> np.ndarray:
    """utilization.gpu / 100 in float64."""
    return np.divide(x, 100.0, dtype=np.float64)


def _clip01(x: np.ndarray) -> np.ndarray:
    """x (a new float64 array: a fill's) clipped to 0-1 in place."""
    return x if x.strides == (0,) else np.clip(x, 0.0, 1.0, out=x)


def _unwrapped(x: np.ndarray, wrap: np.ndarray) -> np.ndarray:
    """x with its wrap-suspect rows NaN (x itself when there are none)."""
    return np.where(wrap, np.nan, x) if wrap.any() else x


def pcie_busy(rx: np.ndarray, tx: np.ndarray, line_rate_gbs: float) -> np.ndarray:
    """1.0 busy, 0.0 quiet, NaN not measured (neither direction read)."""
    floor = PCIE_BUSY_SHARE * line_rate_gbs
    peak = np.fmax(rx, tx)
    out = (peak >= floor).astype(np.float32)  # (1, 0 and NaN: float32 holds them exactly)
    out[np.isnan(peak)] = np.nan
    return out


def classify_codes(activity: np.ndarray, rx: np.ndarray, tx: np.ndarray, line_rate_gbs: float,
                   busy_io: np.ndarray | None = None) -> np.ndarray:
    """The class of each interval as int8 CLASS_CODE; `busy_io`: pcie_busy of rx and tx when the
    caller has it."""
    busy_sm = activity >= SM_IDLE
    busy_io = pcie_busy(rx, tx, line_rate_gbs) if busy_io is None else busy_io
    io_known = ~np.isnan(busy_io)
    io = busy_io == 1.0
    out = np.full(activity.size, CLASS_CODE["unknown"], dtype=np.int8)
    known = ~np.isnan(activity)
    out[known & busy_sm & ~io] = CLASS_CODE["computing"]
    out[known & busy_sm & io] = CLASS_CODE["both"]
    out[known & ~busy_sm & io] = CLASS_CODE["transferring"]
    out[known & ~busy_sm & io_known & ~io] = CLASS_CODE["idle_quiet"]
    out[known & ~busy_sm & ~io_known] = CLASS_CODE["idle"]
    return out


def runs(mask: np.ndarray) -> list[tuple[int, int]]:
    """[start, end) index ranges of the consecutive True stretches of mask."""
    a, b = run_bounds(mask)
    return list(zip(a.tolist(), b.tolist(), strict=True))


def merged_intervals(grid: Grid) -> pd.DataFrame:
    """Consecutive intervals of one class merged: gpu, class, t_start, t_end."""
    if grid.n == 0:
        return pd.DataFrame({"gpu": pd.Series(dtype="int64"), "class": pd.Series(dtype=object),
                             "t_start": pd.Series(dtype="float64"), "t_end": pd.Series(dtype="float64")})
    k = grid.codes
    new = np.concatenate([[True], k[1:] != k[:-1]])
    starts = np.flatnonzero(new)
    ends = np.concatenate([starts[1:], [grid.n]]) - 1
    return pd.DataFrame({"gpu": np.full(starts.size, grid.gpu, dtype="int64"),
                         "class": pd.Series(_CLASS_NAMES[k[starts]], dtype=object),
                         "t_start": grid.t_start[starts], "t_end": grid.t_end[ends]})


PIPE_FULL = 0.6  # a GPM pipe this active while the SMs work is what bounds them (rules/bound.py)


def pipes_while_computing(grid: Grid, working: np.ndarray) -> dict[str, float | None]:
    """Time-weighted mean of SM activity and of each GPM pipe read (PIPE_COLUMNS) over the working
    intervals with SM activity >= SM_IDLE: what the GPU's units did while it computed;
    `computing_s` is that time."""
    comp = working & (grid.activity >= SM_IDLE)
    dt = grid.dt
    out: dict[str, float | None] = {"computing_s": masked_sum(dt, comp)}
    for name, x in itertools.chain((("sm_active", grid.activity),), grid.pipe_items()):
        ok = np.isfinite(x)
        ok &= comp
        w = masked_sum(dt, ok)
        out[name] = float(np.float64(masked_dot(x, dt, ok)) / w) if w > 0 else None
        del x, ok  # (one pipe at a time)
    return out

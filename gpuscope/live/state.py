"""What the sampler saw, kept for the live view and the metrics exporter: a tap of its rows.

`LiveState` is a sink beside samples.csv (gpuscope.sampler.TeeSink): the sampler thread calls
`write_row`; the live panel and a Prometheus scrape read `snapshot()`. One sampler feeds all.

States are analyze's: each GPU's recent rows go through gpuscope.analysis.evidence.samples.samplegrid.build_grid
(the same resampling and the same classifier, the same thresholds), on the sampler's monotonic
clock. An interval's class is final once an activity reading covers it (a GPM or utilization
reading covers the time since the previous one), so `state_seconds` counts only intervals up to
the last activity reading, each once; the trailing intervals wait for the next reading.
PCIe bytes are each PCIe reading's rate times the time since the previous one (the counters'
own intervals), so `pcie_bytes` is what the counters counted.
"""

from __future__ import annotations

import bisect
import math
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from gpuscope import schemas
from gpuscope.analysis.evidence.samples.samplegrid import build_grid
from gpuscope.clock import CLOCK, Clock

#: the columns kept per row (the samples.csv columns a view or a scrape shows)
KEPT = ("t_mono", "t_wall", "rx_gbs", "tx_gbs", "sm_active", "sm_occupancy", "dram_active", "tensor_active",
        "fp16_active", "fp32_active", "fp64_active", "gpu_util_pct", "mem_util_pct", "mem_used_mib", "power_w",
        "sm_clock_mhz", "mem_clock_mhz", "temperature_c", "clock_event_reasons", "wrap_suspect")
LATEST = KEPT[2:-1]
WINDOW_S = 30.0
STRIP_BINS = 40


@dataclass
class GpuView:
    """One GPU as the live view and the exporter show it (a copy: safe to read unlocked)."""

    gpu: int
    name: str = ""
    uuid: str = ""
    line_rate_gbs: float = math.nan
    latest: dict[str, float] = field(default_factory=dict)   # last reading of each column
    state: str = "unknown"                                   # the class of the last classed interval
    shares: dict[str, float] = field(default_factory=dict)   # class -> share of the window
    window_s: float = 0.0                                    # how much of the window the rows cover
    strip: list[str] = field(default_factory=list)           # the window in STRIP_BINS, oldest first
    state_seconds: dict[str, float] = field(default_factory=dict)  # since the start, final intervals
    pcie_bytes: dict[str, float] = field(default_factory=dict)     # rx / tx since the start
    rows: int = 0
    age_s: float = math.nan                                  # since the last row


class _Gpu:
    def __init__(self, index: int, name: str, uuid: str, line_rate_gbs: float) -> None:
        self.view = GpuView(index, name, uuid, line_rate_gbs,
                            state_seconds={}, pcie_bytes={"rx": 0.0, "tx": 0.0})
        self.cols: dict[str, list[float]] = {k: [] for k in KEPT}
        self.accounted_until: float | None = None
        self.last_pcie_t: float | None = None
        self.pcie_source = ""  # the sampler's PCIe source of this GPU (one per GPU for a run)
        # final intervals, consecutive ones of one class merged (the window's: trimmed by _window)
        self.fs: list[float] = []
        self.fe: list[float] = []
        self.fc: list[str] = []

    def new_reading(self, first: int) -> bool:
        """An activity reading (or no activity column at all) after row `first`: something to class."""
        for col in ("sm_active", "gpu_util_pct"):
            vals = self.cols[col]
            if any(x == x for x in vals[first + 1:]):  # not NaN
                return True
        return not any(x == x for c in ("sm_active", "gpu_util_pct") for x in self.cols[c][first:])

    def final(self, start: float, end: float, cls: str) -> None:
        """A classed interval that no later reading changes: counted once, kept for the window."""
        v = self.view
        v.state_seconds[cls] = v.state_seconds.get(cls, 0.0) + (end - start)
        if self.fc and self.fc[-1] == cls and abs(self.fe[-1] - start) < 1e-9:
            self.fe[-1] = end
        else:
            self.fs.append(start)
            self.fe.append(end)
            self.fc.append(cls)

    def add(self, row: dict[str, Any]) -> None:
        t = row.get("t_mono")
        if t is None:
            return
        for k in KEPT:
            v = row.get(k)
            self.cols[k].append(math.nan if v is None else float(v))
        if row.get("pcie_source"):
            self.pcie_source = str(row["pcie_source"])
        v = self.view
        v.rows += 1
        for k in LATEST:
            x = row.get(k)
            if x is not None and math.isfinite(float(x)):
                v.latest[k] = float(x)
        rx, tx = row.get("rx_gbs"), row.get("tx_gbs")
        if rx is not None or tx is not None:
            if self.last_pcie_t is not None and t > self.last_pcie_t:
                dt = t - self.last_pcie_t
                v.pcie_bytes["rx"] += (rx or 0.0) * 1e9 * dt
                v.pcie_bytes["tx"] += (tx or 0.0) * 1e9 * dt
            self.last_pcie_t = t
        if self.accounted_until is None:
            self.accounted_until = t

    def trim(self, keep_from: float) -> None:
        """Drop rows before `keep_from`, keeping one row before it (the start of the first interval)."""
        t = self.cols["t_mono"]
        k = 0
        while k + 1 < len(t) and t[k + 1] <= keep_from:
            k += 1
        if k:
            for c in self.cols.values():
                del c[:k]


class LiveState:
    """The tap: `write_row` (sampler thread), `snapshot()` (any thread)."""

    def __init__(self, gpus: Sequence[dict[str, Any]], line_rate_gbs: float, *, window_s: float = WINDOW_S,
                 clock: Clock = CLOCK) -> None:
        self.window_s = float(window_s)
        self.line_rate_gbs = float(line_rate_gbs)
        self.line_rate_source = "option"  # how the line rate was found (gpuscope.linerate's keys)
        self.clock = clock
        self._lock = threading.Lock()
        self._gpus: dict[int, _Gpu] = {}
        for g in gpus:
            i = int(g["index"])
            self._gpus[i] = _Gpu(i, str(g.get("name") or ""), str(g.get("uuid") or ""), self.line_rate_gbs)
        self.rows = 0
        self._max_rows = int(self.window_s * 200) + 1000  # 200 rows/s (the 5 ms floor) over the window, and some

    def write_row(self, row: dict[str, Any]) -> None:
        i = int(row.get("gpu", 0))
        with self._lock:
            g = self._gpus.get(i)
            if g is None:
                g = self._gpus[i] = _Gpu(i, "", "", self.line_rate_gbs)
            g.add(row)
            self.rows += 1
            if len(g.cols["t_mono"]) > self._max_rows:  # nobody has looked for a while (record --metrics,
                self._view(g, float(row["t_mono"]))     # no scrape yet): class and trim, memory stays bounded

    def close(self) -> None:  # a sink's protocol; nothing to release
        pass

    def snapshot(self) -> list[GpuView]:
        """Every GPU now: states finalized so far, the window's shares and strip, latest readings."""
        now = self.clock.mono()
        with self._lock:
            return [self._view(g, now) for g in sorted(self._gpus.values(), key=lambda g: g.view.gpu)]

    def frame(self) -> Any:
        """The window's rows of every GPU as a samples frame (SAMPLE_SCHEMA), for a running analysis."""

        with self._lock:
            cols: dict[str, list[Any]] = {k: [] for k in (*KEPT, "gpu", "pcie_source")}
            for g in self._gpus.values():
                n = len(g.cols["t_mono"])
                for k in KEPT:
                    cols[k].extend(g.cols[k])
                cols["gpu"].extend([g.view.gpu] * n)
                cols["pcie_source"].extend([g.pcie_source or None] * n)
        cols["wrap_suspect"] = [0 if math.isnan(x) else int(x) for x in cols["wrap_suspect"]]
        return schemas.frame(cols, schemas.SAMPLE_SCHEMA)

    # -- one GPU ------------------------------------------------------------------------------
    def _view(self, g: _Gpu, now: float) -> GpuView:
        v = g.view
        t = g.cols["t_mono"]
        v.age_s = now - t[-1] if t else math.nan
        if len(t) >= 2:
            self._classify(g, now)
        g.trim(min(now - self.window_s, g.accounted_until if g.accounted_until is not None else now))
        return GpuView(v.gpu, v.name, v.uuid, v.line_rate_gbs, dict(v.latest), v.state, dict(v.shares),
                       v.window_s, list(v.strip), dict(v.state_seconds), dict(v.pcie_bytes), v.rows, v.age_s)

    def _classify(self, g: _Gpu, now: float) -> None:
        """Class the rows since the last final interval (build_grid over them alone: the cost
        of a refresh is the new rows, not the window), then the window's shares and strip."""
        import numpy as np
        import pandas as pd

        t = g.cols["t_mono"]
        first = bisect.bisect_left(t, (g.accounted_until if g.accounted_until is not None else t[0]) - 1e-9)
        if len(t) - first >= 2 and g.new_reading(first):
            cols = {k: np.asarray(vals[first:], dtype="float64") for k, vals in g.cols.items()}
            frame = pd.DataFrame(cols, copy=False)
            frame["pcie_source"] = g.pcie_source or None
            grid = build_grid(frame, g.view.gpu, self.line_rate_gbs, basis="t_mono")
            act = cols["sm_active"] if grid.source == "gpm_sm_active" else cols["gpu_util_pct"]
            read = cols["t_mono"][np.isfinite(act)]
            last_read = float(read.max()) if read.size else (float(cols["t_mono"][-1]) if grid.source is None
                                                              else None)
            if grid.n and last_read is not None:
                sel = np.flatnonzero(grid.t_end <= last_read + 1e-9)
                for k in sel.tolist():
                    g.final(float(grid.t_start[k]), float(grid.t_end[k]), str(grid.cls[k]))
                if sel.size:
                    g.accounted_until = float(grid.t_end[sel[-1]])
        self._window(g, now)

    def _window(self, g: _Gpu, now: float) -> None:
        import numpy as np

        lo = now - self.window_s
        while g.fe and g.fe[0] <= lo:
            g.fs.pop(0), g.fe.pop(0), g.fc.pop(0)
        known = [c for c in g.fc if c != "unknown"]
        g.view.state = known[-1] if known else "unknown"
        starts = np.maximum(np.asarray(g.fs, dtype="float64"), lo)
        ends = np.asarray(g.fe, dtype="float64")
        cls = np.asarray(g.fc, dtype=object)
        dur = ends - starts
        total = float(dur.sum())
        g.view.window_s = total
        g.view.shares = {c: float(dur[cls == c].sum()) / total for c in set(g.fc)} if total > 0 else {}
        g.view.strip = _strip(starts, ends, cls, lo, now)


def _strip(starts: Any, ends: Any, cls: Any, lo: float, hi: float, bins: int = STRIP_BINS) -> list[str]:
    """The window in `bins` equal bins, each named by the class that covers most of it ('' = no rows)."""
    import numpy as np

    edges = np.linspace(lo, hi, bins + 1)
    out: list[str] = []
    for a, b in zip(edges[:-1], edges[1:], strict=True):
        cover = np.clip(np.minimum(ends, b) - np.maximum(starts, a), 0.0, None)
        if not cover.size or cover.max() <= 0:
            out.append("")
            continue
        sums: dict[str, float] = {}
        for c, x in zip(cls.tolist(), cover.tolist(), strict=True):
            if x > 0:
                sums[c] = sums.get(c, 0.0) + x
        out.append(max(sums, key=lambda c: sums[c]))
    return out

"""samples.csv frames shaped like the sampler writes them, from functions of time, for the
activity tests: PCIe on every 20 ms tick, GPM SM activity every 100 ms (the window's mean),
slow fields every 200 ms (utilization the window's mean, the rest the state at the read)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd

from gpuscope.schemas import SAMPLE_SCHEMA, frame

T0 = 1_800_000_000.0
Fn = Callable[[np.ndarray], np.ndarray]


def _const(v: float) -> Fn:
    return lambda t: np.full(np.shape(t), float(v))


def _window_mean(fn: Fn, a: float, b: float) -> float:
    return float(np.mean(fn(np.linspace(a, b, 401)[1:])))


def synth(duration_s: float, *, sm: Fn | float = 0.0, rx: Fn | float | None = 0.001, tx: Fn | float | None = 0.001,
          util: Fn | float | None = None, mem_used_mib: Fn | float = 1000.0, power_w: float = 300.0,
          sm_clock: Fn | float = 1980.0, reasons: Fn | float | None = None, gpm: bool = True, gpu: int = 0,
          tick_s: float = 0.02, gpm_every: int = 5, slow_every: int = 10, t0: float = T0,
          pipes: dict[str, Fn | float] | None = None) -> pd.DataFrame:
    sm, mem_f, clk = (f if callable(f) else _const(f) for f in (sm, mem_used_mib, sm_clock))
    rx_f = rx if callable(rx) or rx is None else _const(rx)
    tx_f = tx if callable(tx) or tx is None else _const(tx)
    util_f = (lambda t: 100.0 * np.minimum(1.0, 2.0 * sm(t))) if util is None else (util if callable(util) else _const(util))
    rs_f = reasons if callable(reasons) or reasons is None else _const(reasons)
    n = int(round(duration_s / tick_s)) + 1
    cols: dict[str, list] = {c: [] for c in SAMPLE_SCHEMA}
    for k in range(n):
        t = t0 + k * tick_s
        row = {c: np.nan for c in SAMPLE_SCHEMA}
        row.update(t_wall=t, t_mono=k * tick_s, gpu=gpu, wrap_suspect=0,
                   pcie_source="counter" if rx_f is not None else None)
        if k and rx_f is not None:
            row["rx_gbs"] = _window_mean(rx_f, t - tick_s, t)
            row["tx_gbs"] = _window_mean(tx_f, t - tick_s, t) if tx_f is not None else np.nan
        if gpm and k and k % gpm_every == 0:
            row["sm_active"] = _window_mean(sm, t - gpm_every * tick_s, t)
            for col, f in (pipes or {}).items():  # GPM pipe readings (dram_active, tensor_active, ...)
                row[col] = _window_mean(f if callable(f) else _const(f), t - gpm_every * tick_s, t)
        if k % slow_every == 0:
            row["gpu_util_pct"] = _window_mean(util_f, t - slow_every * tick_s, t) if k else 0.0
            row.update(mem_used_mib=float(mem_f(np.array([t]))[0]), power_w=power_w,
                       sm_clock_mhz=float(clk(np.array([t]))[0]))
            if rs_f is not None:
                row["clock_event_reasons"] = float(rs_f(np.array([t]))[0])
        for c in SAMPLE_SCHEMA:
            cols[c].append(row[c])
    cols["wrap_suspect"] = [int(v) for v in cols["wrap_suspect"]]
    return frame(cols, SAMPLE_SCHEMA)


def periodic(period_s: float, on_s: float, high: float, low: float = 0.0, t0: float = T0, start_s: float = 0.0) -> Fn:
    """high for the first on_s of every period (after start_s), else low."""
    def f(t):
        t = np.asarray(t, dtype="float64") - t0 - start_s
        return np.where((t >= 0) & ((t % period_s) < on_s), high, low)
    return f


def segments(*parts) -> Fn:
    """A piecewise-constant function of time: parts (start_s, end_s, value) from T0, else 0."""
    def f(t):
        t = np.asarray(t, dtype="float64") - T0
        out = np.zeros(t.shape)
        for a, b, v in parts:
            out = np.where((t >= a) & (t < b), v, out)
        return out
    return f


def meta(*, total_mib: float = 143771.0, link: tuple[int, int, int, int] = (5, 5, 16, 16), gpu: int = 0,
         power_limit: tuple[float, float] | None = None) -> dict:
    """A run's meta.json `gpus` entry; power_limit: (enforced W, default W) where the recorder read them."""
    from gpuscope.units import pcie_link_rate_gbs

    gn, gm, wn, wm = link
    g = {"index": gpu, "memory_total_mib": total_mib,
         "pcie_link": {"gen_now": gn, "gen_max": gm, "width_now": wn, "width_max": wm,
                       "max_gbs": pcie_link_rate_gbs(gm, wm), "downgraded": gn < gm or wn < wm}}
    if power_limit is not None:
        g["power_limit"] = {"enforced_w": power_limit[0], "default_w": power_limit[1]}
    return {"gpus": [g]}

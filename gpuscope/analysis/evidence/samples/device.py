"""One GPU's state beside its work, from its NVML samples and meta.json: device memory, power, the SM
and memory clocks with their clock-event (throttle) reasons, temperature, the PCIe link and the
board power limits (the `memory`, `power`, `clocks`, `temperature_c`, `throttle`, `link` and
`power_limit` objects of SamplesGpuDoc; activity.gpu_figures adds them to the GPU's figures)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, cast

import numpy as np

from gpuscope.analysis.evidence.samples import samplegrid as sg
from gpuscope.arrays import median
from gpuscope.units import pcie_link_rate_gbs

if TYPE_CHECKING:
    from gpuscope.analysis.document import (
        ClocksDoc,
        LinkDoc,
        PowerDoc,
        PowerLimitDoc,
        SamplesGpuDoc,
        StatDoc,
        ThrottleDoc,
        ThrottleReasonDoc,
    )

#: NVML clock-event (throttle) reason bits (nvml.h nvmlClocksEventReason*)
REASONS = {1: "gpu_idle", 2: "applications_clocks_setting", 4: "sw_power_cap", 8: "hw_slowdown",
           16: "sync_boost", 32: "sw_thermal_slowdown", 64: "hw_thermal_slowdown",
           128: "hw_power_brake_slowdown", 256: "display_clock_setting"}



def _median(x: np.ndarray) -> float:
    """np.median of finite x as float64 computes it (float32 x: the same order statistics, their
    mean taken in float64), without a float64 copy of x."""
    if x.dtype == np.float64 or x.size == 0:
        return float(median(x))
    k = x.size // 2
    if x.size % 2:
        return float(np.mean(np.partition(x, k)[k:k + 1].astype(np.float64)))
    return float(np.mean(np.partition(x, [k - 1, k])[k - 1:k + 1].astype(np.float64)))


def _stat(x: np.ndarray, where: np.ndarray | None = None) -> StatDoc:
    """median, min and max of the finite values of x (and `where`); float32 x stays float32 (its
    values exact, the median's mean in float64)."""
    ok = np.isfinite(x)
    if where is not None:
        ok &= where
    x = sg.take(x, ok)
    if not x.size:
        return {"median": None, "min": None, "max": None}
    return {"median": _median(x), "min": float(x.min()), "max": float(x.max())}


def device_figures(grid: sg.Grid, meta_gpu: dict) -> SamplesGpuDoc:
    """memory, power, clocks, temperature_c, throttle, link and power_limit of SamplesGpuDoc."""
    # each state made when it is read, one at a time (float32 states: exact)
    dt = grid.dt
    busy = grid.activity >= sg.SM_IDLE
    used = grid.state("mem_used_mib")
    total = meta_gpu.get("memory_total_mib")
    used_max = float(np.nanmax(used)) if np.isfinite(used).any() else None
    used_stat = _stat(used)
    del used
    sm = grid.state("sm_clock_mhz")
    sm_stat = _stat(sm)
    clocks: ClocksDoc = {"sm_mhz": sm_stat, "sm_busy_median_mhz": _stat(sm, busy)["median"],
              "sm_max_mhz": meta_gpu.get("max_sm_clock_mhz") or sm_stat["max"],
              "sm_max_basis": "meta" if meta_gpu.get("max_sm_clock_mhz") else "highest reading",
              "mem_mhz": _stat(grid.state("mem_clock_mhz"))}
    del sm
    power = grid.state("power_w")
    pst = _stat(power)
    power_fig: PowerDoc = {"median_w": pst["median"], "min_w": pst["min"], "max_w": pst["max"], "mean_w": sg.wmean(power, dt)}
    del power
    return {
        "memory": {"used_max_mib": used_max, "used_median_mib": used_stat["median"],
                   "total_mib": total, "fraction": (used_max / total) if used_max is not None and total else None},
        "power": power_fig,
        "clocks": clocks,
        "temperature_c": _stat(grid.state("temperature_c")),
        "throttle": throttle_figures(grid.state("clock_event_reasons"), dt, busy),
        "link": _link(meta_gpu),
        "power_limit": _power_limit(meta_gpu),
    }


#: what meta.json's gpus[].pcie_link says (gpuscope.gpuinfo), passed on as read; other keys are not
LINK_KEYS = ("downgraded", "gen_max", "gen_now", "max_gbs", "width_max", "width_now")


def _link(meta_gpu: dict) -> LinkDoc | None:
    """meta.json's PCIe link with its rates now and at most (GB/s), None where it names none."""
    raw = meta_gpu.get("pcie_link")
    if not isinstance(raw, dict) or not raw:
        return None
    link = cast("LinkDoc", {k: v for k, v in raw.items() if k in LINK_KEYS})  # (in meta.json's order)
    link["now_gbs"] = pcie_link_rate_gbs(link.get("gen_now"), link.get("width_now"))
    link.setdefault("max_gbs", pcie_link_rate_gbs(link.get("gen_max"), link.get("width_max")))
    link["basis"] = "meta.json (read once, when the recording started)"
    return link


def _power_limit(meta_gpu: dict) -> PowerLimitDoc | None:
    """meta.json's board power limits (enforced, default; W), where the recorder read them."""
    pl = meta_gpu.get("power_limit")
    if not isinstance(pl, dict):
        return None
    out: PowerLimitDoc = {}
    keys: tuple[Literal["enforced_w", "default_w"], ...] = ("enforced_w", "default_w")
    for k in keys:
        if isinstance(v := pl.get(k), int | float) and not isinstance(v, bool) and 0 < v < 1e5:
            out[k] = float(v)
    return out or None


def throttle_figures(reasons: np.ndarray, dt: np.ndarray, busy: np.ndarray) -> ThrottleDoc:
    """Seconds (all, and while the SMs were busy) with each clock-event reason set."""
    ok = np.isfinite(reasons)
    if not ok.any():
        return {"recorded": False}
    bits = np.where(ok, reasons, 0).astype(np.int64)
    busy_s = float(dt[busy & ok].sum())
    per: dict[str, ThrottleReasonDoc] = {}
    for bit, name in REASONS.items():
        on = ok & ((bits & bit) != 0)
        if on.any():
            b = float(dt[on & busy].sum())
            per[name] = {"s": float(dt[on].sum()), "busy_s": b,
                         "busy_fraction": b / busy_s if busy_s > 0 else None}
    return {"recorded": True, "recorded_s": float(dt[ok].sum()), "busy_s": busy_s, "reasons": per}

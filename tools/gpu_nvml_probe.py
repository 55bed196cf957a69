"""What NVML gives on this GPU beyond what the sampler reads today: clock-event (throttle)
reasons, temperatures, power limit, memory, clocks, PCIe link; with each call's cost.

    python3 tools/gpu_nvml_probe.py > probe.json
"""

from __future__ import annotations

import json
import time

import pynvml as N


def timed(fn, *args):
    t0 = time.perf_counter()
    try:
        v = fn(*args)
    except Exception as e:  # NotSupported etc.
        v = f"error: {type(e).__name__}: {e}"
    return v, round((time.perf_counter() - t0) * 1e3, 4)


def main() -> None:
    N.nvmlInit()
    h = N.nvmlDeviceGetHandleByIndex(0)
    out = {}
    names = [
        ("clocks_event_reasons", "nvmlDeviceGetCurrentClocksEventReasons", ()),
        ("clocks_throttle_reasons", "nvmlDeviceGetCurrentClocksThrottleReasons", ()),
        ("supported_event_reasons", "nvmlDeviceGetSupportedClocksEventReasons", ()),
        ("temperature_gpu", "nvmlDeviceGetTemperature", (0,)),
        ("power_limit_mw", "nvmlDeviceGetEnforcedPowerLimit", ()),
        ("power_mw", "nvmlDeviceGetPowerUsage", ()),
        ("clock_sm", "nvmlDeviceGetClockInfo", (1,)),
        ("clock_mem", "nvmlDeviceGetClockInfo", (2,)),
        ("max_clock_sm", "nvmlDeviceGetMaxClockInfo", (1,)),
        ("max_clock_mem", "nvmlDeviceGetMaxClockInfo", (2,)),
        ("link_gen", "nvmlDeviceGetCurrPcieLinkGeneration", ()),
        ("link_width", "nvmlDeviceGetCurrPcieLinkWidth", ()),
        ("max_link_gen", "nvmlDeviceGetMaxPcieLinkGeneration", ()),
        ("max_link_width", "nvmlDeviceGetMaxPcieLinkWidth", ()),
        ("utilization", "nvmlDeviceGetUtilizationRates", ()),
    ]
    for key, fn, args in names:
        f = getattr(N, fn, None)
        if f is None:
            out[key] = {"value": "missing in pynvml", "ms": None}
            continue
        v, ms = timed(f, h, *args)
        if hasattr(v, "gpu"):
            v = {"gpu": v.gpu, "memory": v.memory}
        out[key] = {"value": v if isinstance(v, (int, float, str)) else str(v), "ms": ms}
    mem, ms = timed(N.nvmlDeviceGetMemoryInfo, h)
    out["memory"] = {"value": {"total": mem.total, "used": mem.used, "free": mem.free}
                     if hasattr(mem, "total") else str(mem), "ms": ms}
    out["reason_constants"] = {k: getattr(N, k) for k in dir(N)
                               if k.startswith("nvmlClocksEventReason") or k.startswith("nvmlClocksThrottleReason")}
    print(json.dumps(out, indent=1, default=str))


if __name__ == "__main__":
    main()

"""Diagnoses of the device itself from NVML samples and the run's meta: throttled clocks (and
why), a downgraded PCIe link, device memory nearly full. Per-GPU checks of the sample rules
(per_gpu.SampleRule: (figures, grid, working, context) -> (Diagnosis, impact) | None), each run over
every GPU by its decorated rule at the end of this module;
thresholds documented in docs/ANALYZE.md "From NVML samples alone".
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, TypeGuard

import numpy as np

from gpuscope.analysis.core import Diagnosis
from gpuscope.analysis.evidence.samples.samplegrid import PIPE_FULL, pipes_while_computing
from gpuscope.analysis.rules.engine import SAMPLES, rule
from gpuscope.analysis.rules.per_gpu import Finding, SampleRule, per_gpu  # noqa: F401 (SampleRule: the checks' type)

if TYPE_CHECKING:
    from gpuscope.analysis.document import PowerLimitDoc
    from gpuscope.analysis.evidence import Evidence
    from gpuscope.analysis.evidence.samples.context import SampleContext
    from gpuscope.analysis.evidence.samples.figures import GpuFigures
    from gpuscope.analysis.evidence.samples.samplegrid import Grid

THROTTLE_HIGH, THROTTLE_MEDIUM = 0.20, 0.05  # busy time with a throttling reason set
THROTTLE_BITS = {4: "sw_power_cap", 8: "hw_slowdown", 32: "sw_thermal_slowdown", 64: "hw_thermal_slowdown",
                 128: "hw_power_brake_slowdown"}
HW_BITS = {"hw_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown"}
CLOCK_LOW_SHARE = 0.90                   # busy SM clock median / max below this: clocks held down
CLOCK_DEEP_SHARE = 0.80                  # ... below this: held down hard
CLOCK_AT_MAX_SHARE = 0.99                # ... at or above this: a software reason set held nothing down
POWER_AT_LIMIT_SHARE = 0.90              # highest power read / enforced limit at or above this: at the limit
MEMORY_HIGH, MEMORY_MEDIUM = 0.99, 0.95  # memory used / total
LINK_UP_MARGIN = 1.05                    # a reading above the probed link's rate x this: it trained up
LIMIT_LOWERED_SHARE = 0.95               # enforced power limit / default below this: the limit was lowered



def rnd(x: float | None, nd: int = 3) -> float | None:
    return None if x is None or (isinstance(x, float) and not math.isfinite(x)) else round(float(x), nd)


def finite(x: object) -> TypeGuard[float]:
    return x is not None and isinstance(x, (int, float)) and math.isfinite(x)


def clocks_throttled(f: GpuFigures, g: Grid, working: np.ndarray, ctx: SampleContext) -> Finding | None:
    th, ck = f.throttle, f.clocks
    if not th.get("recorded"):
        med, mx = ck.sm_busy_median_mhz, ck.sm_max_mhz
        if not (finite(med) and finite(mx) and mx > 0 and med < CLOCK_LOW_SHARE * mx):
            return None
        ev: dict[str, Any] = {"sm_busy_median_mhz": med, "sm_max_mhz": mx, "sm_max_basis": ck.sm_max_basis,
              "could_not_see": "the recording has no clock-event reasons (an older gpuscope): the cause is unknown"}
        return (Diagnosis("clocks_below_max", "info",
                          f"SM clock ran at a median {med:.0f} MHz while busy, {med / mx:.0%} of {mx:.0f} MHz; "
                          "the samples do not say why (power cap and heat are the usual causes).",
                          ev, "Record with this gpuscope (it samples NVML's clock-event reasons) to see the cause."),
                0.0)
    busy_s = th.get("busy_s") or 0.0
    per = {name: v for name, v in th["reasons"].items() if name in THROTTLE_BITS.values()}
    if not per or busy_s <= 0:
        return None
    worst = max(per, key=lambda k: per[k]["busy_s"])
    frac = per[worst]["busy_s"] / busy_s
    if frac < THROTTLE_MEDIUM:
        return None
    hw = any(per[n]["busy_s"] / busy_s >= THROTTLE_HIGH for n in per if n in HW_BITS)
    # a software cap that leaves the clock near its max costs little: grade it by the clock it left
    med, mx = ck.sm_busy_median_mhz, ck.sm_max_mhz
    depth = med / mx if finite(med) and finite(mx) and mx > 0 else None
    limit: PowerLimitDoc = f.power_limit or {}
    lowered = _limit_lowered(limit)
    if not hw and depth is not None and depth >= CLOCK_AT_MAX_SHARE:
        # a software reason flagged while the busy clock stayed at its max (NVML sets sw_power_cap
        # around a boost decision, or on a brief peak): it held nothing down, so no finding says so
        return None
    if hw or (frac >= 2 * THROTTLE_HIGH and depth is not None and depth < CLOCK_DEEP_SHARE):
        sev = "high"
    elif depth is None or depth < CLOCK_LOW_SHARE:
        sev = "medium"
    else:
        sev = "low"
    at_rated = worst == "sw_power_cap" and not hw and not lowered
    if at_rated:
        # the board power limit binds at its default (or a limit not recorded): the GPU draws what
        # it is rated for, which is where heavy kernels end; a cost to know, not a fault to fix,
        # and no finding of what bounds the kernels (compute_bound, memory_bound) goes after it
        sev = "info" if _pipe_full(g, working) else "low"
    ev = {"reasons": {n: {"busy_s": rnd(v["busy_s"]), "busy_fraction": rnd(v["busy_s"] / busy_s)} for n, v in per.items()},
          "busy_s": rnd(busy_s), "sm_busy_median_mhz": med, "sm_max_mhz": mx, "clock_share_of_max": rnd(depth),
          "temperature_max_c": f.temperature_c.get("max"), "power_max_w": f.power.get("max_w"),
          "could_not_see": "reasons are read ~5 times a second: shorter throttling episodes are missed or stretched"}
    summary = (f"Clocks throttled: {worst.replace('_', ' ')} held the clocks down {frac:.0%} of the busy time"
               + (f" (SM clock median {ck.sm_busy_median_mhz:.0f} of {ck.sm_max_mhz:.0f} MHz)"
                  if finite(ck.sm_busy_median_mhz) and finite(ck.sm_max_mhz) else "") + ".")
    if worst == "sw_power_cap" and lowered:
        summary = summary[:-1] + (f"; the power limit is {limit['enforced_w']:.0f} W, lowered from the default "
                                  f"{limit['default_w']:.0f} W.")
    elif at_rated:
        summary = summary[:-1] + _power_clause(f, limit, lowered)
    ev["power_limit"] = limit or None
    if lowered is None and worst == "sw_power_cap":
        ev["could_not_see"] += "; the board power limits (an older recording): whether the limit was lowered"
    rec = {"sw_power_cap": ("The board power limit binds at its default: the GPU runs at its rated power, "
                            "where heavy kernels end; less work per result (lower precision, fused kernels) "
                            "is what gains here." if lowered is False else
                            "The power limit was lowered: nvidia-smi -q -d POWER shows it; restoring the default "
                            "limit gives the clocks back." if lowered else
                            "The board power limit binds: check nvidia-smi -q -d POWER (a lowered limit?); "
                            "power-efficient kernels or a higher limit help."),
           "sw_thermal_slowdown": "The GPU runs hot: check cooling and airflow (nvidia-smi -q -d TEMPERATURE).",
           "hw_thermal_slowdown": "Hardware thermal slowdown: the GPU overheats; fix cooling before anything else.",
           "hw_slowdown": "Hardware slowdown (thermal, power brake or an external signal): check the node's "
                          "power supply and cooling; nvidia-smi -q -d PERFORMANCE shows the active reasons.",
           "hw_power_brake_slowdown": "The power brake fired (the node's power supply asked the GPU to slow): "
                                      "check the PSU / rack power budget."}[worst]
    # the share of the working time it explains: the busy time under the reason, times the clock it cost
    work = (f.active.working_s if f.active is not None else 0.0) or 0.0
    lost = frac * (1.0 - depth if depth is not None else 0.5) * (busy_s / work if work > 0 else 1.0)
    return Diagnosis("clocks_throttled", sev, summary, ev, rec), min(lost, 1.0)


def _power_clause(f: GpuFigures, limit: PowerLimitDoc, lowered: bool | None) -> str:
    """What the power readings say beside a software power cap: at the limit only where the highest
    reading reaches POWER_AT_LIMIT_SHARE of it; below, the readings (~5 a second) may miss the
    peaks the driver capped."""
    top, cap = f.power.get("max_w"), limit.get("enforced_w")
    if lowered is None:
        return "; whether the power limit was lowered is not recorded" + (
            f" (power up to {top:.0f} W)." if finite(top) else ".")
    if not finite(top):
        return "; the power limit is at its default (no power readings)."
    if finite(cap) and cap > 0 and top >= POWER_AT_LIMIT_SHARE * cap:
        return f"; the GPU draws its rated power (up to {top:.0f} of its {cap:.0f} W limit)."
    of = f" of its {cap:.0f} W limit" if finite(cap) and cap > 0 else ""
    return (f"; power read up to {top:.0f} W{of}, at its default: readings ~5 a second miss the peaks "
            "the driver capped.")


def _limit_lowered(limit: PowerLimitDoc) -> bool | None:
    """True when the enforced power limit is below the default, False when at it, None unknown."""
    e, d = limit.get("enforced_w"), limit.get("default_w")
    if not (finite(e) and finite(d) and d > 0):
        return None
    return e < LIMIT_LOWERED_SHARE * d


def _pipe_full(g: Grid, working: np.ndarray) -> bool:
    """A GPM pipe (DRAM, tensor, FP) full while the SMs worked: what bounds the kernels is shown."""

    p = pipes_while_computing(g, working)
    return any(finite(v) and v >= PIPE_FULL for k, v in p.items() if k not in ("computing_s", "sm_active", "sm_occupancy"))


def link_downgraded(f: GpuFigures, g: Grid, working: np.ndarray, ctx: SampleContext) -> Finding | None:
    link = f.link
    if link is None or not link.get("downgraded"):
        return None
    now, mx = link["now_gbs"], link["max_gbs"]
    peak = max((x for x in (f.pcie.rx["max_gbs"], f.pcie.tx["max_gbs"]) if finite(x)), default=None)
    if finite(now) and finite(peak) and peak > LINK_UP_MARGIN * now:
        return None  # it ran faster than the probed link: it was down-clocked at idle, not degraded
    width_low = (link.get("width_now") or 0) < (link.get("width_max") or 0)
    moved = f.pcie.rx["busy_s"] + f.pcie.tx["busy_s"] > 0
    sev = "high" if width_low and moved else "medium" if width_low or moved else "low"
    ev = {**{k: link.get(k) for k in ("gen_now", "gen_max", "width_now", "width_max")},
          "now_gbs": rnd(now, 2), "max_gbs": rnd(mx, 2), "peak_reading_gbs": rnd(peak, 2), "transfers_seen": moved,
          "could_not_see": ("the link was read once, when the recording started: an idle GPU may lower its link "
                            "generation to save power and raise it under load")}
    summary = (f"PCIe link downgraded: Gen{link.get('gen_now')} x{link.get('width_now')} of Gen{link.get('gen_max')} "
               f"x{link.get('width_max')}" + (f", {now:.1f} of {mx:.1f} GB/s" if finite(now) and finite(mx) else "")
               + (f"; no reading went above {now:.1f} GB/s" if moved and finite(now) else "") + ".")
    rec = ("Check the slot and riser (a x8 slot, a loose card), BIOS PCIe settings and `nvidia-smi -q -d PCIE` "
           "under load (`gpuscope info` shows now vs max).")
    return Diagnosis("pcie_link_downgraded", sev, summary, ev, rec), 0.0


def memory_nearly_full(f: GpuFigures, g: Grid, working: np.ndarray, ctx: SampleContext) -> Finding | None:
    m = f.memory
    frac, used, total = m["fraction"], m["used_max_mib"], m["total_mib"]
    if not finite(frac) or frac < MEMORY_MEDIUM or not finite(used) or not finite(total):  # (a fraction: both are)
        return None
    ev = {"used_max_mib": rnd(used, 1), "total_mib": rnd(total, 1), "fraction": rnd(frac, 4),
          "could_not_see": ("memory.used is the whole device: the CUDA context, a caching allocator's reserve "
                            "(PyTorch keeps freed blocks) and other processes count too")}
    return (Diagnosis("memory_nearly_full", "high" if frac >= MEMORY_HIGH else "medium",
                      f"Device memory nearly full: {used / 1024:.1f} of {total / 1024:.1f} GiB "
                      f"used at the peak ({frac:.1%}).", ev,
                      "Leave headroom: out-of-memory errors and allocator thrashing (cudaMalloc/cudaFree per step) "
                      "come next; smaller batches, freeing caches or activation checkpointing help."), 0.0)


@rule("clocks_throttled", needs=SAMPLES, uses=("device",), emits={"clocks_throttled": "clocks", "clocks_below_max": None})
def clocks_throttled_rule(ev: Evidence) -> list[Finding]:
    return per_gpu(ev, clocks_throttled)


# (judged even on a recording too short for the rest: static)
@rule("pcie_link_downgraded", needs=SAMPLES, uses=("device", "copies"), emits={"pcie_link_downgraded": "link_degraded"})
def pcie_link_downgraded(ev: Evidence) -> list[Finding]:
    return per_gpu(ev, link_downgraded, static=True)


@rule("memory_nearly_full", needs=SAMPLES, uses=("device",), emits={"memory_nearly_full": "device_memory"})
def memory_nearly_full_rule(ev: Evidence) -> list[Finding]:
    return per_gpu(ev, memory_nearly_full, static=True)

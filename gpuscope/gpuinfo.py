"""One GPU described: NVML's device facts, its capability probe and the line rate measured
for it (`gpuscope bandwidth`'s cache), read once and written in the two shapes gpuscope
keeps them in:

- `GpuInfo.for_info()`: an entry of `gpuscope info --json`'s `gpus` (every capability,
  link gen/width now and max, their GB/s);
- `GpuInfo.for_meta()`: an entry of a run directory's meta.json `gpus` (`record` and
  `run`): `pcie_link` {gen_now, gen_max, width_now, width_max, max_gbs, downgraded},
  `power_limit` {enforced_w, default_w} and the capability flags.

A GPU that stops answering NVML while it is described becomes {"index", "error"} in both.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from gpuscope import linerate
from gpuscope import nvml as nvml_mod

#: The capability flags meta.json keeps (Capabilities' booleans).
CAPABILITY_FLAGS = ("gpm", "pcie_counters", "pcie_throughput", "utilization", "memory", "power", "clocks")


@dataclass
class GpuInfo:
    index: int
    device: dict[str, Any] | None = None  # Nvml.device(): index, name, uuid, pci_bus_id, memory_total_mib
    caps: nvml_mod.Capabilities | None = None
    line_rate_gbs: float | None = None
    power_limit: dict[str, float | None] | None = None  # Nvml.power_limits(): enforced_w, default_w
    error: str | None = None  # the GPU stopped answering

    def for_info(self) -> dict[str, Any]:
        if self.error is not None:
            return {"index": self.index, "error": self.error}
        assert self.device is not None and self.caps is not None  # (read together, or the error is set)
        return {**self.device, "capabilities": self.caps.to_dict(), "line_rate_gbs": self.line_rate_gbs}

    def for_meta(self) -> dict[str, Any]:
        if self.error is not None:
            return {"index": self.index, "error": self.error}
        assert self.device is not None and self.caps is not None
        c = self.caps
        return {
            **self.device,
            "pcie_link": {
                "gen_now": c.link_gen_now, "gen_max": c.link_gen_max,
                "width_now": c.link_width_now, "width_max": c.link_width_max,
                "max_gbs": c.link_max_gbs, "downgraded": c.link_downgraded,
            },
            "capabilities": {k: getattr(c, k) for k in CAPABILITY_FLAGS},
            "line_rate_gbs": self.line_rate_gbs,
            "power_limit": self.power_limit or {"enforced_w": None, "default_w": None},
        }


def describe_gpus(nv: nvml_mod.Nvml, gpus: Iterable[int]) -> list[GpuInfo]:
    """Each GPU of `gpus` in turn: its device facts, then its probe, then its line rate."""

    out = []
    for i in gpus:
        try:
            d = nv.device(i)
            caps = nv.probe(i)
            limits = nv.power_limits(i)
        except nvml_mod.GpuLost as e:
            out.append(GpuInfo(i, error=str(e)))
            continue
        rate = linerate.measured_line_rate(d["uuid"]) if d.get("uuid") else None
        out.append(GpuInfo(i, device=d, caps=caps, line_rate_gbs=rate, power_limit=limits))
    return out


def meta_gpus(nv: nvml_mod.Nvml, gpus: Iterable[int]) -> list[dict[str, Any]]:
    """meta.json's `gpus` for the GPUs a run or record uses."""
    return [g.for_meta() for g in describe_gpus(nv, gpus)]


def first_line_rate(entries: Iterable[dict[str, Any]]) -> float | None:
    """meta.json's `line_rate_gbs`: the first measured line rate among its `gpus` entries."""
    return next((g.get("line_rate_gbs") for g in entries if g.get("line_rate_gbs")), None)

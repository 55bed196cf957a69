"""One GPU's figures from its NVML samples as the sample rules read them: a typed view of its part of
the `activity` JSON object (activity.gpu_figures), built once per GPU (GpuActivity.fig).

    f = ga.fig
    f.readings, f.source, f.resolution_s, f.wall_s       # the recording
    f.active                                             # the working time's figures, None: no work
    f.pcie["rx"]["bursts"]                               # the copies each direction held

The top-level figures are fields (mypy checks every read); the nested objects (active, pcie, idle_gaps,
clocks, throttle, memory, power, link) keep the JSON's shape, documented in docs/ANALYZE.md
"From NVML samples alone".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class GpuFigures:
    source: str | None                  # gpm_sm_active | utilization
    resolution_s: float | None
    wall_s: float
    readings: int
    busy_fraction: float | None         # of the whole recording (computing)
    idle_fraction: float | None
    utilization_busy_fraction: float | None
    idle_gaps: dict[str, Any]
    active: dict[str, Any] | None       # the active span less its pauses; None: no GPU work
    pcie: dict[str, Any]
    clocks: dict[str, Any]
    throttle: dict[str, Any]
    memory: dict[str, Any]
    power: dict[str, Any]
    temperature_c: dict[str, Any]
    link: dict[str, Any] | None
    power_limit: dict[str, Any] | None

    @classmethod
    def of(cls, figures: dict[str, Any]) -> GpuFigures:
        """The typed view of one GPU's `activity` figures (activity.gpu_figures)."""
        return cls(source=figures["source"], resolution_s=figures["resolution_s"], wall_s=figures["wall_s"],
                   readings=figures["readings"], busy_fraction=figures["busy_fraction"],
                   idle_fraction=figures["idle_fraction"],
                   utilization_busy_fraction=figures["utilization_busy_fraction"], idle_gaps=figures["idle_gaps"],
                   active=figures["active"], pcie=figures["pcie"], clocks=figures["clocks"],
                   throttle=figures["throttle"], memory=figures["memory"], power=figures["power"],
                   temperature_c=figures["temperature_c"], link=figures["link"], power_limit=figures["power_limit"])

"""One GPU's figures from its NVML samples as the sample rules read them: a typed view of its part of
the `activity` JSON object (activity.gpu_figures), built once per GPU (GpuActivity.fig).

    f = ga.fig
    f.readings, f.source, f.resolution_s, f.wall_s       # the recording
    f.active.busy_fraction                               # the working time's figures (f.active None: no work)
    f.pcie.direction("rx")["bursts"]                     # the copies each direction held
    f.clocks.sm_max_mhz                                  # the SM clock's ceiling and where it came from

The figures a rule reads are fields (mypy checks every read): the top level and its active, pcie
and clocks objects; deeper objects (idle_gaps, classes, a direction's statistics, throttle, memory,
power, link) are the document's own TypedDicts (gpuscope.analysis.document), documented in
docs/ANALYZE.md "From NVML samples alone". The JSON stays the dicts (Activity.to_json); these
views are read from them, not written back.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gpuscope.analysis.document import (
        ActiveDoc,
        ActiveIdleGapsDoc,
        ClassesDoc,
        ClocksDoc,
        DirectionDoc,
        LinkDoc,
        MemoryDoc,
        PausesDoc,
        PipesDoc,
        PowerDoc,
        PowerLimitDoc,
        SamplesGpuDoc,
        SamplesIdleGapsDoc,
        SamplesPcieDoc,
        StatDoc,
        ThrottleDoc,
    )


@dataclass(frozen=True)
class ActiveFigures:
    """The active span (first to last sign of work) less its pauses: the `active` object."""

    t_start: float
    t_end: float
    span_s: float
    working_s: float
    busy_fraction: float | None             # computing, of the working time
    copy_fraction: float | None             # a copy ran (RX or TX above the trickle); None: PCIe not measured
    utilization_busy_fraction: float | None
    idle_fraction: float | None
    idle_gaps: ActiveIdleGapsDoc            # count, total_s, longest_s, distribution
    classes: ClassesDoc                     # share of the working time in each class (computing, idle, ...)
    pcie_measured_share: float | None
    pcie_quiet_share: float | None
    pipes: PipesDoc | None                  # what the units did while the SMs worked (GPM only)
    pauses: PausesDoc                       # count, total_s, longest_s, longest_at_s

    @classmethod
    def of(cls, a: ActiveDoc) -> ActiveFigures:
        return cls(t_start=a["t_start"], t_end=a["t_end"], span_s=a["span_s"], working_s=a["working_s"],
                   busy_fraction=a["busy_fraction"], copy_fraction=a["copy_fraction"],
                   utilization_busy_fraction=a["utilization_busy_fraction"], idle_fraction=a["idle_fraction"],
                   idle_gaps=a["idle_gaps"], classes=a["classes"], pcie_measured_share=a["pcie_measured_share"],
                   pcie_quiet_share=a["pcie_quiet_share"], pipes=a["pipes"], pauses=a["pauses"])


@dataclass(frozen=True)
class PcieFigures:
    """The PCIe traffic of the recording: the `pcie` object."""

    source: str | None                      # where RX/TX came from; None: PCIe not measured
    resolution_s: float | None
    line_rate_gbs: float
    line_rate_source: str
    busy_threshold_gbs: float
    near_line_rate_threshold_gbs: float
    time_near_line_rate_s: float
    rx: DirectionDoc                        # transfers.direction_stats: rates, bursts, ...
    tx: DirectionDoc

    def direction(self, name: str) -> DirectionDoc:
        """One direction's statistics: "rx" (host to GPU) or "tx" (GPU to host)."""
        if name == "rx":
            return self.rx
        if name == "tx":
            return self.tx
        raise ValueError(f"a PCIe direction is rx or tx, not {name!r}")

    @classmethod
    def of(cls, p: SamplesPcieDoc) -> PcieFigures:
        return cls(source=p["source"], resolution_s=p["resolution_s"], line_rate_gbs=p["line_rate_gbs"],
                   line_rate_source=p["line_rate_source"], busy_threshold_gbs=p["busy_threshold_gbs"],
                   near_line_rate_threshold_gbs=p["near_line_rate_threshold_gbs"],
                   time_near_line_rate_s=p["time_near_line_rate_s"], rx=p["rx"], tx=p["tx"])


@dataclass(frozen=True)
class ClockFigures:
    """The SM and memory clocks: the `clocks` object."""

    sm_mhz: StatDoc                         # median, min, max of the readings
    sm_busy_median_mhz: float | None        # the SM clock's median while computing
    sm_max_mhz: float | None                # meta.json's maximum, else the highest reading
    sm_max_basis: str                       # meta | highest reading
    mem_mhz: StatDoc

    @classmethod
    def of(cls, c: ClocksDoc) -> ClockFigures:
        return cls(sm_mhz=c["sm_mhz"], sm_busy_median_mhz=c["sm_busy_median_mhz"], sm_max_mhz=c["sm_max_mhz"],
                   sm_max_basis=c["sm_max_basis"], mem_mhz=c["mem_mhz"])


@dataclass(frozen=True)
class GpuFigures:
    source: str | None                  # gpm_sm_active | utilization
    resolution_s: float | None
    wall_s: float
    readings: int
    busy_fraction: float | None         # of the whole recording (computing)
    idle_fraction: float | None
    utilization_busy_fraction: float | None
    idle_gaps: SamplesIdleGapsDoc
    active: ActiveFigures | None        # the active span less its pauses; None: no GPU work
    pcie: PcieFigures
    clocks: ClockFigures
    throttle: ThrottleDoc
    memory: MemoryDoc
    power: PowerDoc
    temperature_c: StatDoc
    link: LinkDoc | None
    power_limit: PowerLimitDoc | None

    @classmethod
    def of(cls, figures: SamplesGpuDoc) -> GpuFigures:
        """The typed view of one GPU's `activity` figures (activity.gpu_figures)."""
        active = figures["active"]
        return cls(source=figures["source"], resolution_s=figures["resolution_s"], wall_s=figures["wall_s"],
                   readings=figures["readings"], busy_fraction=figures["busy_fraction"],
                   idle_fraction=figures["idle_fraction"],
                   utilization_busy_fraction=figures["utilization_busy_fraction"], idle_gaps=figures["idle_gaps"],
                   active=ActiveFigures.of(active) if active is not None else None,
                   pcie=PcieFigures.of(figures["pcie"]), clocks=ClockFigures.of(figures["clocks"]),
                   throttle=figures["throttle"], memory=figures["memory"], power=figures["power"],
                   temperature_c=figures["temperature_c"], link=figures["link"], power_limit=figures["power_limit"])

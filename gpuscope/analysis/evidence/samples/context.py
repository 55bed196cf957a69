"""What the sample rules read beside each GPU's figures: the program's own copy rates, which of the
log's phases lines up with the idle time, and the bytes the readings moved in each phase.

    ctx = sample_context(activity, upload_gbs=..., download_gbs=..., phases=..., pcie_by_phase=...)
    ctx.idle_by_component      # idle_overlap.idle_by_component: phases by their share of the idle time

Evidence.sample_context builds it once per analysis (the sample rules share it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

    from gpuscope.analysis.evidence.samples.activity import Activity


@dataclass(frozen=True)
class SampleContext:
    upload_gbs: float | None = None            # the program's own upload bytes/time (a log's h2d bytes)
    download_gbs: float | None = None          # ... and read-back bytes/time
    idle_by_component: pd.DataFrame | None = None  # the log's phases by the idle time inside them
    pcie_by_phase: pd.DataFrame | None = None  # the log's phases with the bytes the readings moved in each

    def program_rate(self, direction: str) -> float | None:
        """The program's own rate of copies in `direction` (rx: uploads, tx: read-backs)."""
        return self.upload_gbs if direction == "rx" else self.download_gbs


def sample_context(activity: Activity, *, upload_gbs: float | None = None, download_gbs: float | None = None,
                   phases: pd.DataFrame | None = None, pcie_by_phase: pd.DataFrame | None = None) -> SampleContext:
    """The context of `activity`'s rules: `phases` (PHASE_SCHEMA) are joined to its idle time."""
    lines_up = None
    if phases is not None and len(phases):
        from gpuscope.analysis.evidence.samples.idle_overlap import idle_by_component

        lines_up = idle_by_component(phases, activity)
    return SampleContext(upload_gbs, download_gbs, lines_up, pcie_by_phase)

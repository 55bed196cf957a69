"""What the trace rules read of a profiler trace (gpuscope.analysis.rules.trace and its
neighbours): the devices' views, every gap, the host events and the line rate. Evidence, made by
gpuscope.analysis.trace_analysis; the rules import it, never the other way round."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import pandas as pd

from gpuscope.analysis.evidence.trace.trace_activity import DeviceView

if TYPE_CHECKING:
    from gpuscope.parsers.trace.host_summary import HostSummary


@dataclass
class TraceRuleInput:
    views: list[DeviceView]
    gaps: pd.DataFrame                 # trace_gaps.GAP_COLUMNS, every device
    line_rate_gbs: float
    line_rate_source: str
    host: pd.DataFrame                 # every rank's host events the reader kept as rows
    host_summary: HostSummary          # what the rules read of all of them (TraceFrames.summary())
    gap_hosts: list[dict] = field(default_factory=list)  # the longest gaps' host activity (idle_gaps)
    # the frame the views slice, in their order (trace_activity.in_order): `gpu` is then that
    # frame itself, not a concatenation of the views made on every call (at 10M kernels a copy
    # of ~0.9 GB each time a rule read it)
    frame: pd.DataFrame | None = None

    @property
    def span_us(self) -> float:
        return float(sum(v.span_us for v in self.views))

    @property
    def busy_fraction(self) -> float | None:
        """The share of the traced span the devices computed (kernels, memsets, device-to-device
        copies; trace_activity.DeviceView.computing_us): one meaning of busy."""
        kern = sum(v.computing_us for v in self.views)
        return kern / self.span_us if self.span_us > 0 else None

    @property
    def gpu(self) -> pd.DataFrame:
        """Every device's events, the views' in their order (read only: the rules never write it)."""
        if self.frame is not None:
            return self.frame
        return pd.concat([v.gpu for v in self.views], ignore_index=True)

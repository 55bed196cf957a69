"""One side of a comparison (`Side`): the type compare.comparison, compare.figures and compare.stats share,
in a module of its own so none of them imports another for its annotations."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

    from gpuscope.analysis.document import (
        PciePhaseDoc,
        SamplesActivityDoc,
        TimelineDoc,
        TraceActivityDoc,
        TraceMemcpyDoc,
    )
    from gpuscope.parsers.log.parsed import ParsedLog


@dataclass
class Side:
    """One side of a comparison: a parsed log (None: the side has no timing lines, a trace or
    samples alone, and compare sets no figure of records beside it) plus what its run adds."""

    label: str
    parsed: ParsedLog | None
    source: str = ""
    mode: str | None = None                    # pinned | pageable | registered, when known
    held_key: str = "mutex_held"
    bytes_per_partition: float | None = None   # from --abc-bytes or the run's workload config
    timeline_summary: TimelineDoc | None = None  # LogPart.timeline (the document's log.timeline), when available
    samples: pd.DataFrame | None = None        # samples.csv contract
    phases: pd.DataFrame | None = None         # worker, gpu, partition, phase, t_start, t_end
    meta: dict | None = None
    pcie_phases: dict[str, PciePhaseDoc] | None = None  # LogDoc.pcie.phases, preferred when given
    diagnoses: list[dict] | None = None        # the side's own analysis diagnoses (JSON form)
    activity: TraceActivityDoc | SamplesActivityDoc | None = None  # its document's activity (a trace's, else the samples')
    memcpy: list[TraceMemcpyDoc] | None = None  # a profiler trace's copies (the `memcpy` rows)
    steps_ms: np.ndarray | None = None         # a profiler trace's step durations (ProfilerStep ranges)
    trace_samples: dict[str, np.ndarray] | None = None  # a trace's kernels and recurring ranges (trace_samples.py)
    lane_noun: str = "worker"                  # what its picture's lanes are (worker, stream)
    intervals: pd.DataFrame | None = None      # its samples' classed intervals (idle gaps shaded)
    counters: pd.DataFrame | None = None       # a trace's busy-fraction bins
    vocabulary: dict | None = None             # the model's words (Vocabulary.to_json()); None: CuZK's
    kind: str | None = None                    # what a side without timing lines is (trace | samples)

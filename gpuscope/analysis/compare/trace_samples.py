"""A profiler trace's own samples for compare's intervals, where it has no steps to compare.

    trace_samples(frames) -> {"kernel <short name>": ms per launch, "range <name>": ms per range}

Two traces with ProfilerStep ranges compare their steps (sources._profiler_steps_ms). Without
them (an Nsight Systems report of a window of training, a trace of a loop without the
profiler's schedule) there is no record per step, yet the trace holds samples of its own:
- each launch of a kernel is a sample of that kernel's duration: the TOP kernels by total time
  (each name on its own, so a kernel that got faster and one that got slower do not average out;
  named as the top-kernels table names them, top_kernels.unique_short_names);
- each instance of an annotation range that recurs (MIN_RANGES or more: an NVTX range around a
  step, a collective, a phase) is a sample of that range's wall time.
compare sets each name found on both sides side by side (stats.values_row: medians, B/A ratio,
bootstrap interval). What would make a row misleading, and why it is not one: a kernel name
shared by different shapes (a GEMM of two sizes) mixes them, as the trace's name does: the
p10-p90 beside the median shows the spread; ranges that open once (ProfilerStep#12) never recur and give no row;
emit_nvtx's per-operator ranges are operators (cpu_op), not annotations, and give none.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from gpuscope.analysis.evidence.trace.top_kernels import unique_short_names

if TYPE_CHECKING:
    from gpuscope.parsers.trace.kineto import TraceFrames

TOP = 8          # kernels by total time, per side
TOP_RANGES = 5   # recurring ranges by total time, per side
MIN_RANGES = 5   # instances a range name needs to be a sample set


def _top(durs_us: pd.Series, names: pd.Series, top: int, min_count: int) -> list[tuple[str, np.ndarray]]:
    g = durs_us.groupby(names.to_numpy(), sort=False)
    tot = g.sum()
    cnt = g.size()
    keep = tot[cnt.reindex(tot.index) >= min_count].sort_values(ascending=False, kind="stable").head(top)
    return [(str(n), durs_us[(names == n).to_numpy()].to_numpy(dtype=float) / 1e3) for n in keep.index]


def trace_samples(frames: TraceFrames) -> dict[str, np.ndarray]:
    """name -> millisecond samples (kernel launches, recurring ranges' instances)."""
    out: dict[str, np.ndarray] = {}
    gpu, host = frames.gpu, frames.host
    k = gpu[gpu["kind"].astype(object) == "kernel"]
    if len(k):
        top = _top(k["dur_us"].astype(float), k["name"].astype(object), TOP, 2)
        for short, (_, ms) in zip(unique_short_names([n for n, _ in top]), top, strict=True):
            out[f"kernel {short}"] = ms
    a = host[host["cat"].astype(object) == "user_annotation"]
    if len(a):
        for name, ms in _top(a["dur_us"].astype(float), a["name"].astype(object), TOP_RANGES, MIN_RANGES):
            out.setdefault(f"range {name}", ms)
    return out

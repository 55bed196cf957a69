"""The names the analysis gives what it finds, which the reports read: the phase names of a
profiler trace's ranges, the profiler's step, the SM activity below which a sample is idle, and
the role a range's name plays. Names and one lookup only: a report imports this (and the result
types of gpuscope.analysis.result), never the analysis that computes (tests/test_layers.py)."""

from __future__ import annotations

import re

from gpuscope.rolewords import guess_role as by_name

#: SM activity (GPM, 0-1) or utilization.gpu / 100 below which an interval is idle
SM_IDLE = 0.05

#: a trace's record_function range in the phase table: "range:" + its name (drawn on the CPU side)
RANGE_PREFIX = "range:"
#: the same range as it ran on the GPU (its gpu_user_annotation span), drawn under its stream
GPU_RANGE_PREFIX = "gpu_range:"

PROFILER_STEP_RE = re.compile(r"^ProfilerStep#?(\d+)?")
STEP = "ProfilerStep"


def guess_role(name: str) -> str | None:
    """The role a phase named like this plays (None: the name says nothing): the profiler's
    step is the whole (info); every other name by the rules timing lines use
    (gpuscope.rolewords.guess_role: upload -> h2d, data/load -> cpu_stall, forward -> gpu_compute)."""
    if PROFILER_STEP_RE.match(name) or name == STEP:
        return "info"

    return by_name(name)[0]

"""Every rule, once, as a Rule (rules.engine): what it needs, what it reads, what it supersedes.

The order is the tie-break of the ranking (severity, then share of the time explained).
- log rules (upload, tenure, readback): a program's printed parts; share = the part of
  the record time the finding is about;
- trace rules (trace, kernel_mix, trace_link): every kernel and copy; share = the time at stake / the traced span;
  a trace is the finest evidence of copies and gaps, so the sample rules about them yield to it;
- sample rules (activity, device, bound, duty, gpus): NVML samples of each GPU; share = the share of
  the working time the finding explains.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from gpuscope.analysis.rules.engine import Finding, Rule, run_rules

if TYPE_CHECKING:
    import pandas as pd

    from gpuscope.analysis.core import Diagnosis
    from gpuscope.analysis.evidence import Evidence
    from gpuscope.analysis.evidence.samples.activity import Activity
    from gpuscope.analysis.trace_analysis import TraceAnalysis


def _fn(path: str) -> Callable[..., Any]:
    """`module:function` of gpuscope.analysis, imported when the rule first runs: a log's analysis
    loads no pandas (the sample and trace rules need it), and no module imports the registry back."""
    mod, name = path.split(":")
    return getattr(importlib.import_module(f"gpuscope.analysis.{mod}"), name)

LOG_SHARE_KEYS = ("h2d_share", "d2h_share", "stall_share")


def _log_share(d: Diagnosis) -> float:
    for k in LOG_SHARE_KEYS:
        v = d.evidence.get(k)
        if isinstance(v, int | float) and v == v:
            return float(v)
    return 0.0


def _log(path: str) -> Callable[[Evidence], list[Finding]]:
    def run(ev: Evidence) -> list[Finding]:
        return [(d, _log_share(d)) for d in _fn(path)(ev.log)]
    return run


def _trace_share(d: Diagnosis, span_us: float) -> float:
    """The share of the traced span a trace finding explains: the copies' own time for slow copies
    (what they took, not only what pinning wins back), else the time at stake."""
    if d.id == "pageable_memcpy" and span_us > 0 and isinstance(d.evidence.get("copy_ms"), int | float):
        return float(d.evidence["copy_ms"]) * 1e3 / span_us
    return float(d.evidence.get("share_of_span") or 0.0)


def _trace(path: str) -> Callable[[Evidence], list[Finding]]:
    def run(ev: Evidence) -> list[Finding]:
        assert ev.trace is not None and ev.trace.rule_input is not None
        span = ev.trace.rule_input.span_us
        fn = _fn(path if ":" in path else f"rules.trace:{path}")
        return [(d, _trace_share(d, span)) for d in fn(ev.trace.rule_input)]
    return run


def _ctx(ev: Evidence) -> dict:
    if "sample_ctx" not in ev.extra:
        assert ev.activity is not None
        ev.extra["sample_ctx"] = _fn("rules.activity:sample_context")(ev.activity, upload_gbs=ev.upload_gbs,
                                                                    phases=ev.phases)
        # the log's phases with the bytes the readings moved in each (rules.copy_phase)
        ev.extra["sample_ctx"]["pcie_by_phase"] = ev.log.pcie if ev.log is not None else None
    return ev.extra["sample_ctx"]


def _sample(path: str) -> Callable[[Evidence], list[Finding]]:
    def run(ev: Evidence) -> list[Finding]:
        assert ev.activity is not None
        return _fn("rules.activity:rule_findings")(ev.activity, _fn(path), _ctx(ev))
    return run


def _whole(path: str) -> Callable[[Evidence], list[Finding]]:
    """A sample rule over all the GPUs at once (activity -> findings)."""
    def run(ev: Evidence) -> list[Finding]:
        return _fn(path)(ev.activity)
    return run


LOG, TRACE, SAMPLES = ("log",), ("trace",), ("samples",)
_UP = ("upload_bound_pageable",)

LOG_RULES = [
    Rule("h2d_bound", LOG, ("copies",), _log("rules.upload:h2d_bound"), supersedes=_UP, also=SAMPLES),
    Rule("pcie_underused", LOG, ("copies",), _log("rules.upload:pcie_underused"), supersedes=_UP, also=SAMPLES),
    Rule("d2h_bound", LOG, ("copies",), lambda ev: _fn("rules.readback:d2h_bound_rule")(ev),
         supersedes=("download_bound_pageable",), also=("samples", "trace")),
    Rule("cpu_stall_at_barrier", LOG, ("host",), _log("rules.tenure:cpu_stall_at_barrier")),
    Rule("lock_convoy", LOG, ("host",), _log("rules.tenure:lock_convoy")),
    Rule("unstable_component", LOG, ("host", "compute"), _log("rules.tenure:unstable_component")),
    Rule("inconsistent_records", LOG, (), _log("rules.tenure:inconsistent_records")),
    Rule("first_partition_warmup", LOG, ("compute",), _log("rules.tenure:first_partition_warmup")),
    # the stamps' pauses; beside samples their own long_pauses tells it (one finding, not two)
    Rule("log_long_pauses", LOG, ("idle",), _log("rules.log_pauses:long_pauses"), yields_to=SAMPLES),
]

TRACE_RULES = [
    Rule("pageable_memcpy", TRACE, ("copies",), _trace("pageable_memcpy")),
    Rule("host_starved", TRACE, ("compute", "host"), _trace("host_starved")),
    Rule("sync_bound", TRACE, ("compute", "host"), _trace("sync_bound")),
    Rule("launch_bound", TRACE, ("compute",), _trace("launch_bound")),
    Rule("copies_not_overlapped", TRACE, ("copies", "compute"), _trace("copies_not_overlapped")),
    # the bound by kernel names; the samples' GPM pipes are finer: beside a recording this one yields
    Rule("kernel_mix", TRACE, ("compute",), _trace("rules.kernel_mix:kernel_mix"), yields_to=SAMPLES),
    Rule("trace_link_bound", TRACE, ("copies",), _trace("rules.trace_link:link_bound")),
]

_BY_TRACE = ("trace",)
SAMPLE_RULES = [
    Rule("no_gpu_activity", SAMPLES, ("compute",), _sample("rules.activity:no_gpu_activity")),
    Rule("gpu_starved", SAMPLES, ("compute", "copies", "idle"), _sample("rules.activity:gpu_starved"), yields_to=_BY_TRACE,
         supersedes=("host_stall_cycle",), ranks_after=LOG),
    Rule("gpu_underused", SAMPLES, ("compute", "copies"), _sample("rules.activity:gpu_underused"), yields_to=_BY_TRACE,
         ranks_after=LOG),
    Rule("upload_bound_pageable", SAMPLES, ("copies", "compute"), _sample("rules.activity:UPLOAD_BOUND"), yields_to=_BY_TRACE),
    Rule("download_bound_pageable", SAMPLES, ("copies", "compute"), _sample("rules.activity:DOWNLOAD_BOUND"),
         yields_to=_BY_TRACE),
    # a printed phase the GPU idles through while it moves bytes: a copy, not host work
    Rule("copy_phase", SAMPLES, ("copies", "idle"), _sample("rules.copy_phase:copy_phase"), yields_to=_BY_TRACE,
         supersedes=("gpu_starved", "gpu_underused", "host_stall_cycle", "copies_unresolved", "copies_not_overlapped",
                     "upload_bound_pageable")),
    Rule("link_bound", SAMPLES, ("copies",), _sample("rules.activity:link_bound"), yields_to=_BY_TRACE),
    Rule("copies_unresolved", SAMPLES, ("copies",), _sample("rules.copies:copies_unresolved"), yields_to=_BY_TRACE),
    Rule("gpu_bound", SAMPLES, ("compute",), _sample("rules.bound:gpu_bound")),
    Rule("host_stall_cycle", SAMPLES, ("compute", "idle"), _sample("rules.duty:host_stall_cycle"),
         yields_to=_BY_TRACE, supersedes=("gpu_underused",), ranks_after=LOG),
    Rule("gpu_imbalance", SAMPLES, ("compute",), _whole("rules.gpus:gpu_imbalance")),
    Rule("upload_imbalance", SAMPLES, ("copies",), _whole("rules.gpus:upload_imbalance"), yields_to=_BY_TRACE),
    Rule("clocks_throttled", SAMPLES, ("device",), _sample("rules.device:clocks_throttled")),
    Rule("pcie_link_downgraded", SAMPLES, ("device", "copies"), _sample("rules.device:link_downgraded")),
    Rule("memory_nearly_full", SAMPLES, ("device",), _sample("rules.device:memory_nearly_full")),
    Rule("long_pauses", SAMPLES, ("idle",), _sample("rules.activity:long_pauses")),
    Rule("startup_idle", SAMPLES, ("idle",), _sample("rules.activity:startup_idle")),
    Rule("too_few_samples", SAMPLES, (), _whole("rules.activity:too_few_samples")),
]

RULES: list[Rule] = [*LOG_RULES, *TRACE_RULES, *SAMPLE_RULES]


def sample_diagnoses(activity: Activity, *, upload_gbs: float | None = None, download_gbs: float | None = None,
                     phases: pd.DataFrame | None = None) -> list[Diagnosis]:
    """The diagnoses of NVML samples alone (an activity.Activity), through the rule engine, most
    important first; `upload_gbs` / `download_gbs`: the program's own rates; `phases`: timing-line
    phases (the idle time is then tied to one)."""
    from gpuscope.analysis.evidence import collect

    ev = collect(activity=activity)
    ev.extra["sample_ctx"] = _fn("rules.activity:sample_context")(activity, upload_gbs=upload_gbs,
                                                                download_gbs=download_gbs, phases=phases)
    return run_rules(SAMPLE_RULES, ev)


def trace_diagnoses(trace: TraceAnalysis) -> list[Diagnosis]:
    """The diagnoses of a profiler trace alone (a trace_analysis.TraceAnalysis), through the rule
    engine, most important first; they are also kept as the trace's own (`trace.diagnoses`)."""
    from gpuscope.analysis.evidence import collect

    trace.diagnoses = run_rules(TRACE_RULES, collect(trace=trace))
    return trace.diagnoses

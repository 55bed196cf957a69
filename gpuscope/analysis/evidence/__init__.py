"""The evidence every source fills and every rule reads: per GPU, on one clock, each piece with
its source and its resolution.

    ev = collect(log=rule_input, phases=phases, activity=activity, trace=trace_analysis)
    ev.pieces                      # [Piece]: compute, copies, host, device, idle
    ev.get("copies", gpu=0)        # the pieces of one kind (most exact first)
    ev.joined                      # where two sources cover the same time: both figures, agree or not

Kinds (docs/ARCHITECTURE.md "Evidence"):

    compute  what the GPU computed: busy fraction (SM activity from GPM, utilization.gpu as an
             upper bound, kernel time from a trace) and, from GPM, the pipes while it worked
             (DRAM, tensor, FP16/32/64, SM occupancy)
    copies   one direction (HtoD, DtoH, peer): time, share, bytes, rate, host-memory kind where known
    host     host-side phases (timing lines, trace annotations) and what lines up with idle time
    device   clocks, power, throttle reasons, memory used
    idle     idle gaps and pauses

A piece is exact (a profiler trace), sampled (every `resolution_s`) or printed (by the program).
The more exact piece wins where two cover the same GPU time: `get` orders by EXACTNESS.
Plain data; the sources' own objects stay reachable (`log`, `activity`, `trace`) for the
rules written over them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

if TYPE_CHECKING:
    import pandas as pd

    from gpuscope.analysis.evidence.log.rule_input import RuleInput
    from gpuscope.analysis.evidence.samples.activity import Activity, GpuActivity
    from gpuscope.analysis.evidence.samples.context import SampleContext
    from gpuscope.analysis.evidence.trace.rule_input import TraceRuleInput


class TraceAnalysis(Protocol):
    """What the evidence reads of a trace_analysis.TraceAnalysis (a Protocol: the trace part is
    built over the evidence's own modules, so the evidence does not import it back)."""

    rule_input: TraceRuleInput | None

    @property
    def activity(self) -> Mapping[str, Any]: ...  # (document.TraceActivityDoc)
    @property
    def memcpy(self) -> Sequence[Mapping[str, Any]]: ...  # (document.TraceMemcpyDoc rows)
    @property
    def split(self) -> Sequence[Mapping[str, Any]]: ...  # (document.TracePhaseDoc rows)
    @property
    def trace(self) -> Mapping[str, Any]: ...  # (document.TraceInfoDoc: its reader, notes, counts)

#: how exact each source is (lower wins)
EXACTNESS = {"trace": 0, "gpm": 1, "log": 2, "utilization": 3}
#: a trace's busy fraction and the samples' over the same time disagree beyond this (plus one reading)
JOIN_TOLERANCE = 0.05
#: a trace shorter than this many sample readings is not compared with the samples
MIN_JOIN_READINGS = 5


@dataclass(frozen=True)
class Piece:
    kind: str                     # compute | copies | host | device | idle
    source: str                   # trace | gpm | utilization | log
    gpu: int | None               # None: not tied to one GPU (a log's printed parts)
    resolution: str               # "exact (profiler events)", "sampled every 0.12 s", "printed by the program"
    figures: dict[str, Any] = field(default_factory=dict)
    resolution_s: float | None = None
    direction: str | None = None  # copies: HtoD | DtoH | peer

    @property
    def label(self) -> str:
        """The name a finding cites: kind[:direction]:source[:gpuN]."""
        parts = [self.kind] + ([self.direction] if self.direction else []) + [self.source]
        return ":".join(parts) + (f":gpu{self.gpu}" if self.gpu is not None else "")

    def to_json(self) -> dict:
        return {"piece": self.label, "kind": self.kind, "source": self.source, "gpu": self.gpu,
                "direction": self.direction, "resolution": self.resolution, "resolution_s": self.resolution_s}


@dataclass
class Evidence:
    pieces: list[Piece]
    log: RuleInput | None = None            # the log's split, statistics, timeline, bounds
    phases: pd.DataFrame | None = None      # the log's phases (PHASE_SCHEMA), None without stamps
    activity: Activity | None = None        # NVML samples, per GPU
    trace: TraceAnalysis | None = None      # the profiler trace
    upload_gbs: float | None = None         # the program's own upload bytes/time
    download_gbs: float | None = None       # ... and read-back bytes/time
    joined: list[dict] = field(default_factory=list)

    @cached_property
    def sample_context(self) -> SampleContext:
        """What the sample rules read beside each GPU's figures (evidence.samples.context), built
        once, when a sample rule first reads it."""
        from gpuscope.analysis.evidence.samples.context import sample_context

        assert self.activity is not None
        return sample_context(self.activity, upload_gbs=self.upload_gbs, download_gbs=self.download_gbs,
                              phases=self.phases, pcie_by_phase=self.log.pcie if self.log is not None else None)

    @property
    def trace_input(self) -> TraceRuleInput:
        """What the trace rules read (a rule that needs the trace runs only where there is one)."""
        assert self.trace is not None and self.trace.rule_input is not None
        return self.trace.rule_input

    @property
    def log_input(self) -> RuleInput:
        """What the log rules read (a rule that needs the log runs only where there is one)."""
        assert self.log is not None
        return self.log

    @property
    def sources(self) -> set[str]:
        """Which kinds of source filled it: log, samples, trace."""
        out = set()
        if self.log is not None:
            out.add("log")
        if self.activity is not None and self.activity.gpus:
            out.add("samples")
        if self.trace is not None:
            out.add("trace")
        return out

    @property
    def gpus(self) -> list[int]:
        return sorted({p.gpu for p in self.pieces if p.gpu is not None})

    def get(self, kind: str, *, gpu: int | None = None, direction: str | None = None,
            source: str | None = None) -> list[Piece]:
        """The pieces of `kind` (on `gpu`, in `direction`, from `source` when given), most exact first."""
        sel = [p for p in self.pieces if p.kind == kind and (gpu is None or p.gpu == gpu)
               and (direction is None or p.direction == direction) and (source is None or p.source == source)]
        return sorted(sel, key=lambda p: EXACTNESS.get(p.source, 9))

    def to_json(self) -> dict:
        return {"pieces": [p.to_json() for p in self.pieces], "joined": self.joined}


def _f(x: Any) -> float | None:
    return float(x) if isinstance(x, (int, float)) and math.isfinite(float(x)) else None


def collect(*, log: RuleInput | None = None, phases: pd.DataFrame | None = None, activity: Activity | None = None,
            trace: TraceAnalysis | None = None, upload_gbs: float | None = None,
            download_gbs: float | None = None) -> Evidence:
    """Every piece the sources given hold, and where two cover the same time, the join."""
    pieces: list[Piece] = []
    if log is not None:
        pieces += _log_pieces(log, phases)
    if activity is not None:
        for ga in activity.gpus:
            pieces += _sample_pieces(ga)
    if trace is not None:
        pieces += _trace_pieces(trace)
    ev = Evidence(pieces, log=log, phases=phases, activity=activity, trace=trace,
                  upload_gbs=_f(upload_gbs), download_gbs=_f(download_gbs))
    if activity is not None and trace is not None:
        ev.joined = join_busy(activity, trace)
    return ev


# -- the log: printed by the program -------------------------------------------------------

PRINTED = "printed by the program"


def _log_pieces(log: RuleInput, phases: pd.DataFrame | None) -> list[Piece]:
    t = log.totals
    held = _f(t.get("held_ms"))
    if not held:
        return []
    out = [Piece("compute", "log", None, PRINTED, {"gpu_compute_ms": _f(t.get("gpu_compute_ms")),
                                                   "share": _f(t.get("gpu_compute_share"))})]
    for role, direction in (("h2d", "HtoD"), ("d2h", "DtoH")):
        ms = _f(t.get(f"{role}_ms"))
        if ms:
            figs = {"ms": ms, "share": _f(t.get(f"{role}_share"))}
            if role == "h2d":
                figs["gbs"] = _f(t.get("upload_gbs"))
            out.append(Piece("copies", "log", None, PRINTED, figs, direction=direction))
    if _f(t.get("cpu_stall_ms")):
        out.append(Piece("host", "log", None, PRINTED, {"cpu_stall_ms": _f(t.get("cpu_stall_ms")),
                                                        "share": _f(t.get("cpu_stall_share")),
                                                        "phases": phases is not None}))
    return out


# -- NVML samples: sampled ---------------------------------------------------------------------

def _sample_pieces(ga: GpuActivity) -> list[Piece]:
    from gpuscope.analysis.evidence.samples import (
        samplegrid as sg,  # (lazy: pandas, which a log alone never loads)
    )

    f, g = ga.figures, ga.grid
    src = "gpm" if f["source"] == "gpm_sm_active" else "utilization"
    res = _f(f.get("resolution_s"))
    how = f"sampled every {res:.2g} s" if res else "sampled"
    a = f.get("active")  # (None: no GPU work)
    work = _f(a["working_s"]) if a else None
    comp = {"busy_fraction": _f(a["busy_fraction"]) if a else None,
            "busy_fraction_of_recording": _f(f.get("busy_fraction")),
            "working_s": work, "upper_bound": src == "utilization",
            **(sg.pipes_while_computing(g, ga.working) if src == "gpm" else {})}
    out = [Piece("compute", src, ga.gpu, how, comp, res)]
    p = f["pcie"]
    pres = _f(p.get("resolution_s"))
    for st, direction in ((p["rx"], "HtoD"), (p["tx"], "DtoH")):
        b = st["bursts"]
        if not b["count"]:
            continue
        out.append(Piece("copies", f"{src}", ga.gpu, f"sampled every {pres:.2g} s" if pres else "sampled",
                         {"copy_s": _f(b["total_s"]), "share": (b["total_s"] / work) if work else None,
                          "gbs": _f(b["interior_gbs_median"]) if b["resolved"] else None, "resolved": b["resolved"],
                          "gb": _f(st["gb"]), "count": b["count"], "host_memory": None},
                         pres, direction))
    out.append(Piece("device", src, ga.gpu, how, {"clocks": f.get("clocks"), "throttle": f.get("throttle"),
                                                  "memory": f.get("memory"), "power": f.get("power")}, res))
    out.append(Piece("idle", src, ga.gpu, how, {"idle_gaps": a["idle_gaps"] if a else None,
                                                "pauses": a["pauses"] if a else None}, res))
    return out


# -- a profiler trace: exact ----------------------------------------------------------------------

EXACT = "exact (profiler events)"


def _trace_pieces(trace: TraceAnalysis) -> list[Piece]:
    out = []
    for d in trace.activity.get("devices", []):
        span = d["span_s"] or 0.0
        out.append(Piece("compute", "trace", d["device"], EXACT,
                         {"busy_fraction": d["busy_fraction"], "kernel_s": d["kernel_s"],
                          "span_s": span, "rank": d["rank"]}, 0.0))
    span = trace.activity.get("device_span_s") or 0.0
    for m in trace.memcpy:
        direction = {"HtoD": "HtoD", "DtoH": "DtoH"}.get(str(m.get("direction")), "peer")
        out.append(Piece("copies", "trace", None, EXACT,
                         {"ms": m.get("ms"), "share": (m.get("ms") or 0.0) / 1e3 / span if span else None,
                          "gbs": m.get("gbs"), "bytes": m.get("bytes"), "count": m.get("count"),
                          "host_memory": m.get("host_memory")}, 0.0, direction))
    if trace.split:
        out.append(Piece("host", "trace", None, EXACT, {"phases": len(trace.split)}, 0.0))
    return out


# -- joined on the clock ----------------------------------------------------------------------------

def join_busy(activity: Activity, trace: TraceAnalysis) -> list[dict]:
    """Where the trace's time (epoch seconds) falls inside a GPU's samples: the samples' SM activity
    over exactly that time beside the trace's kernel fraction; `agree` when they differ by less
    than JOIN_TOLERANCE plus one reading's share of the traced span."""
    a = trace.activity
    t0, t1 = _f(a.get("t_start")), _f(a.get("t_end"))
    if not a.get("epoch") or t0 is None or t1 is None or t1 <= t0:
        return []
    out = []
    for d in a.get("devices", []):
        ga = activity.gpu(int(d["device"]))
        if ga is None or not d.get("span_s"):
            continue
        g = ga.grid
        lo, hi = np.maximum(g.t_start, t0), np.minimum(g.t_end, t1)
        cover = np.clip(hi - lo, 0.0, None)
        ok = np.isfinite(g.activity) & (cover > 0)
        covered = float(cover[ok].sum())
        if covered < 0.5 * (t1 - t0):
            continue
        sampled = float(np.sum(g.activity[ok] * cover[ok]) / covered)
        exact = d["busy_fraction"]
        res = _f(g.resolution_s) or 0.0
        row = {"gpu": int(d["device"]), "what": "busy_fraction", "t_start": t0, "t_end": t1,
               "trace": exact, "samples": sampled, "samples_source": g.source, "winner": "trace"}
        if res and (t1 - t0) < MIN_JOIN_READINGS * res:
            row.update(tolerance=None, agree=None,
                       note=f"the trace spans {t1 - t0:.2f} s, under {MIN_JOIN_READINGS} readings "
                            f"({res:.2g} s each): the samples cannot be compared with it")
        else:
            tol = JOIN_TOLERANCE + res / (t1 - t0)
            row.update(tolerance=tol,
                       agree=bool(abs(exact - sampled) <= tol or (g.source == "utilization" and sampled >= exact)))
        out.append(row)
    return out

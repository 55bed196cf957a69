"""Many ranks at once: each rank's figures from its own analysis, the stragglers, the collectives.

A distributed job writes one profiler trace per rank (tensorboard_trace_handler), or one run
directory per rank. Each rank is opened and analyzed on its own by the usual facade
(gpuscope.sources.open_source + gpuscope.analysis.analyze: the caller does that, in parallel,
gpuscope/ranks_run.py); `rank_row(source, analysis)` reads that rank's results into one row,
`combine(rows)` compares the rows. Nothing here re-derives what the trace analysis measures:
busy, idle and its causes, copies and the first finding are the rank's own document
(Analysis.document(): its `trace` part typed, TraceDoc).

What is added per trace, from its events:
- collectives: NCCL kernels on the GPU (`nccl` in the kernel's name) and host-side collectives
  (operators and annotations named `gloo:*`, `nccl:*`, or `c10d::*` when no `gloo:`/`nccl:`
  range is there), each as the union of its intervals; `overlap_fraction` = the share of that
  time during which a compute kernel (any other kernel) ran on the rank's GPU.
- compute: the union of the non-collective kernels; per step with the trace's ProfilerStep count.

Stragglers (docs/CLI.md, analyze, "Many ranks"): a rank is one when its compute per step (run
directories: busy seconds) is at least STRAGGLER_RATIO x the median of the other ranks and
at least STRAGGLER_MIN_MS more; or when its step time differs from the others' median by that
much. In a synchronous job the others then wait: their extra time in collectives is named.
Traces without ProfilerStep ranges (no steps to divide by) are compared by their compute time.
When no rank computes more, the rank that waits least in the collectives is the one the others
wait for (it arrives last: its extra time is outside its kernels, host work or untraced work):
named when the others' median wait per step is STRAGGLER_RATIO x its own and STRAGGLER_MIN_MS
more, and every rank runs as many collectives per step (ranks doing different collectives, a
pipeline's stages, wait differently by design: no straggler is named from them).

One job or separate runs (issue 33, class 12): the rows are ranks of one job only when the
evidence says so: every trace names its own rank (distributedInfo), or the time spans overlap
(and run directories ran the same command). Else they are separate runs (a `runs/` folder of
recordings made at different times): a table side by side, no straggler, and why. What could
make it say "one job" falsely: one program started twice over the same minutes, independently
(tests/test_ranks_round4.py: the same command a day apart, or different programs, are separate);
`one_job_evidence` says what the decision rests on.
Figures are per rank (the rows); nothing here sums ranks.
"""

from __future__ import annotations

import math
import re
from statistics import median
from typing import TYPE_CHECKING, Any

from gpuscope.analysis.evidence.intervals import intersection_length, merge, total
from gpuscope.schemas import C10D, HOST_COLLECTIVE

if TYPE_CHECKING:
    from gpuscope.analysis.document import (
        ClassName,
        RankCollectivesDoc,
        RankErrorDoc,
        RankRowDoc,
        RanksDoc,
        SamplesActivityDoc,
        SharedDeviceDoc,
        StragglerDoc,
        StragglerMetric,
        TracePhaseDoc,
        WaitsDoc,
    )
    from gpuscope.analysis.result import Analysis
    from gpuscope.sources.source import Source

STRAGGLER_RATIO = 1.10
STRAGGLER_MIN_MS = 1.0
#: the samples' classes a run's idle time is told by, as the trace's idle causes are
IDLE_CLASSES: tuple[ClassName, ...] = ("idle_quiet", "transferring", "idle")
NCCL_KERNEL = re.compile(r"nccl", re.IGNORECASE)


def _f(x: Any) -> float | None:
    return float(x) if isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x) else None


def collectives(trace: Any, steps: int) -> tuple[float, RankCollectivesDoc]:
    """(compute ms, the collectives) of one rank's trace (frames in microseconds): the union of its
    non-collective kernels, and the collectives' kind, ms, count, overlap, per step of `steps` (0:
    no ProfilerStep, nothing per step)."""
    gpu, host = trace.gpu, trace.host
    kern = gpu[gpu["kind"] == "kernel"]
    names = kern["name"].astype(str)
    is_nccl = names.str.contains(NCCL_KERNEL).to_numpy(dtype=bool)
    ks = kern["ts_us"].to_numpy(dtype="float64")
    ke = ks + kern["dur_us"].to_numpy(dtype="float64")
    compute = merge(ks[~is_nccl], ke[~is_nccl])
    kind: str | None
    if is_nccl.any():
        coll = merge(ks[is_nccl], ke[is_nccl])
        kind, count = "nccl", int(is_nccl.sum())
    else:
        hn = host["name"].astype(str)
        sel = hn.str.contains(HOST_COLLECTIVE).to_numpy(dtype=bool)
        if not sel.any():
            sel = hn.str.contains(C10D).to_numpy(dtype=bool)
        hs = host["ts_us"].to_numpy(dtype="float64")[sel]
        coll = merge(hs, hs + host["dur_us"].to_numpy(dtype="float64")[sel])
        names_sel = hn[sel]
        kind = (None if not sel.any() else
                "gloo" if names_sel.str.startswith("gloo").any() else
                "nccl" if names_sel.str.startswith("nccl").any() else "c10d")
        count = int(sel.sum())
    coll_us = total(*coll)
    ms = coll_us / 1e3
    return total(*compute) / 1e3, {
        "kind": kind, "count": count, "ms": ms,
        "overlap_fraction": (intersection_length(coll, compute) / coll_us) if coll_us > 0 else None,
        "names": sorted(set(names[is_nccl].tolist()) if kind == "nccl" and is_nccl.any() else
                        set(host["name"].astype(str)[host["name"].astype(str).str.contains(HOST_COLLECTIVE)]
                            .tolist()))[:5],
        "ms_per_step": ms / steps if steps else None,
        "per_step_count": count / steps if steps else None,
    }


def _step(phases: list[TracePhaseDoc]) -> tuple[int, float | None]:
    """(steps, mean step ms) from the trace's ProfilerStep phase row (TraceDoc.phases)."""
    for p in phases:
        if p["phase"] == "ProfilerStep":
            return int(p["count"] or 0), _f(p["mean_ms"])
    return 0, None


def rank_row(source: Source, result: Analysis, *, name: str, position: int) -> RankRowDoc:
    """One rank's row: its own analysis' figures, and the collectives of its trace."""
    doc = result.document()
    tdoc = doc["trace"]  # the trace's activity is exact: it wins; else the samples'
    sdoc = doc["samples"]
    sact: SamplesActivityDoc = (sdoc["activity"] if sdoc is not None else None) or {}
    busy, idle = ((tdoc["activity"]["busy_fraction"], tdoc["activity"]["idle_fraction"]) if tdoc is not None
                  else (sact.get("busy_fraction"), sact.get("idle_fraction")))
    first = doc["findings"][0] if doc["findings"] else None
    finding, severity = (first["id"], first["severity"]) if first is not None else (None, None)
    if source.trace is not None and tdoc is not None:  # (a trace's analysis always has its part)
        tr = source.trace
        act = tdoc["activity"]
        on_clock = bool(act["epoch"])
        steps, step_ms = _step(tdoc["phases"])
        compute_ms, coll = collectives(tr, steps)
        return {
            "name": name, "rank": int(tr.ranks[0]) if len(tr.ranks) == 1 else position, "position": position,
            "kind": source.kind, "busy_fraction": _f(busy), "idle_fraction": _f(idle),
            "first_finding": finding, "first_finding_severity": severity,
            "rank_known": bool(tr.rank_known),
            "t_start": _f(act["t_start"]) if on_clock else None, "t_end": _f(act["t_end"]) if on_clock else None,
            "span_s": _f(act["span_s"]),
            "idle_by_cause_s": dict(act["idle_gaps"]["by_cause_s"]),
            "steps": steps, "step_ms": step_ms,
            "copies": [{"direction": m["direction"], "host_memory": m["host_memory"], "count": m["count"],
                        "bytes": m["bytes"], "ms": m["ms"], "gbs": m["gbs"]} for m in tdoc["memcpy"]],
            "compute_ms": compute_ms,
            "compute_ms_per_step": compute_ms / steps if steps else None,
            "collectives": coll,
        }
    classes = sact.get("classes")
    wall = _f(sact.get("wall_s"))
    recs = result.log.records if result.log is not None else 0
    held = _f(result.log.split.get("held_ms")) if result.log is not None else None
    pcie = sact.get("pcie")
    busy_fraction = _f(busy)
    meta = source.meta.raw if source.meta else {}
    cmd = meta.get("command")
    return {
        "name": name, "rank": position, "position": position, "kind": source.kind,
        "busy_fraction": busy_fraction, "idle_fraction": _f(idle),
        "first_finding": finding, "first_finding_severity": severity,
        "span_s": wall,
        "idle_by_cause_s": {k: share * wall for k in IDLE_CLASSES
                            if wall and classes and (share := _f(classes[k]))},
        "steps": recs, "step_ms": (held / recs) if recs and held else None,
        "copies": [{"direction": "rx", "mean_gbs": _f(pcie["rx"]["mean_gbs"]) if pcie else None},
                   {"direction": "tx", "mean_gbs": _f(pcie["tx"]["mean_gbs"]) if pcie else None}],
        "compute_ms": busy_fraction * wall * 1e3 if busy_fraction is not None and wall else None,
        "compute_ms_per_step": None,
        "collectives": None,
        "t_start": _epoch(meta.get("started")), "t_end": _epoch(meta.get("ended")),
        "command": " ".join(str(x) for x in cmd) if isinstance(cmd, list) and cmd else None,
    }


def _epoch(stamp: Any) -> float | None:
    """Epoch seconds of meta.json's ISO time (started, ended), None when it is not one."""
    from datetime import UTC, datetime

    if not isinstance(stamp, str):
        return None
    try:
        t = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return None
    return (t if t.tzinfo else t.replace(tzinfo=UTC)).timestamp()


def one_job(rows: list[RankRowDoc]) -> tuple[bool, str]:
    """Whether the rows are ranks of one job, and the evidence (or what is missing). Time spans
    that do not overlap on the common clock outweigh everything (two jobs' rank-0 traces both
    name a rank); then every trace naming its own rank; then overlapping spans, with the same
    command for run directories."""
    if len(rows) < 2:
        return True, "one rank"
    apart = _apart(rows)
    if apart:
        return False, apart
    traced = [r for r in rows if r["collectives"] is not None]
    if (len(traced) == len(rows) and all(r["kind"] == "trace" and r["rank_known"] for r in traced)
            and len({r["rank"] for r in rows}) == len(rows)):
        return True, "each trace names its own rank (distributedInfo)"
    # a rank's own number in its command (--local_rank 1, rank1.log) does not make another program
    cmds = {re.sub(r"\d+", "#", r["command"]) if r["collectives"] is None and r["command"] is not None else None
            for r in rows}
    if all(r["kind"] != "trace" for r in rows) and None not in cmds and len(cmds) > 1:
        return False, f"they ran {len(cmds)} different commands (meta.json)"
    if any(_f(r["t_start"]) is None or _f(r["t_end"]) is None for r in rows):
        return False, ("nothing shows they are one job: no distributedInfo rank in every trace, and not every "
                       "one has a time on a common clock (baseTimeNanoseconds, meta.json started/ended)")
    same = " and ran the same command" if None not in cmds and len(cmds) == 1 else ""
    return True, f"their time spans overlap{same}"


def _apart(rows: list[RankRowDoc]) -> str | None:
    """Why the rows cannot be one job's by their times (no instant inside every span), else None
    (also when some span is not on a common clock)."""
    starts = [x for r in rows if (x := _f(r["t_start"])) is not None]
    ends = [x for r in rows if (x := _f(r["t_end"])) is not None]
    if len(starts) < len(rows) or len(ends) < len(rows):
        return None
    first_end, last_start = min(ends), max(starts)
    if last_start < first_end:
        return None
    late = rows[starts.index(last_start)]["name"]
    early = rows[ends.index(first_end)]["name"]
    return f"their time spans do not overlap ({late} started {last_start - first_end:,.0f} s after {early} ended)"


def _metric(r: RankRowDoc, metric: StragglerMetric) -> float | None:
    return _f(r[metric])


def _collective_ms_per_step(r: RankRowDoc) -> float | None:
    return _f(r["collectives"]["ms_per_step"]) if r["collectives"] is not None else None


def _stragglers(rows: list[RankRowDoc], metric: StragglerMetric, what: str, *, waits: bool) -> list[StragglerDoc]:
    """The ranks whose `metric` is STRAGGLER_RATIO x the others' median and STRAGGLER_MIN_MS more;
    `waits`: with how much longer the others sat in collectives per step."""
    vals = [(r, v) for r in rows if (v := _metric(r, metric)) is not None]
    out: list[StragglerDoc] = []
    if len(vals) < 2:
        return out
    for r, v in vals:
        m = median([x for o, x in vals if o is not r])
        if m > 0 and v >= STRAGGLER_RATIO * m and v - m >= STRAGGLER_MIN_MS:
            w = _waits(rows, r["rank"]) if waits else None
            s: StragglerDoc = {"rank": r["rank"], "name": r["name"], "metric": metric, "what": what, "value_ms": v,
                               "others_median_ms": m, "excess_ms": v - m, "ratio": v / m, "waits": w, "summary": ""}
            s["summary"] = _sentence(s, w)
            out.append(s)
    return out


def _waits(rows: list[RankRowDoc], rank: int) -> WaitsDoc | None:
    """How much longer the other ranks sat in collectives per step than the straggler `rank`."""
    mine = next((_collective_ms_per_step(r) for r in rows if r["rank"] == rank), None)
    others = [x for r in rows if r["rank"] != rank and (x := _collective_ms_per_step(r)) is not None]
    if mine is None or not others:
        return None
    return {"straggler_ms_per_step": mine, "others_median_ms_per_step": median(others),
            "others_extra_ms_per_step": median(others) - mine}


def combine(rows: list[RankRowDoc], errors: list[RankErrorDoc] | None = None) -> RanksDoc:
    """The ranks document: the rows (by rank), the stragglers with by how much, the collectives."""
    notes = []
    job, evidence = one_job(rows)  # (before any renumbering: repeated distributedInfo ranks are no evidence)
    if len({r["rank"] for r in rows}) < len(rows):  # traces without distributedInfo.rank (or repeated)
        for r in rows:
            r["rank"] = r["position"]
        notes.append("ranks numbered by name order (distributedInfo.rank missing or repeated)")
    rows = sorted(rows, key=lambda r: (r["rank"], r["name"]))
    traces = all(r["kind"] == "trace" for r in rows)
    per_step = traces and all(_f(r["compute_ms_per_step"]) is not None for r in rows)
    metric: StragglerMetric
    metric, what = (("compute_ms_per_step", "compute per step") if per_step else
                    ("compute_ms", "compute time (no ProfilerStep to divide by)") if traces else
                    ("compute_ms", "GPU busy time"))
    strag = _stragglers(rows, metric, what, waits=traces) if job else []
    step = [s for s in _stragglers(rows, "step_ms", "step time", waits=False)
            if job and not any(x["rank"] == s["rank"] for x in strag)]
    if job and traces and not strag and not step:
        strag = _wait_straggler(rows)
    if not job:
        notes.append(f"not ranks of one job: {evidence}; each is analyzed on its own, no straggler is named")
    colls = [(r, c) for r in rows if (c := r["collectives"]) is not None]
    kinds = sorted({k for _, c in colls if (k := c["kind"]) is not None})
    overlap = [x for _, c in colls if (x := _f(c["overlap_fraction"])) is not None]
    return {
        "count": len(rows), "inputs": "traces" if traces else "runs",
        "one_job": job, "one_job_evidence": evidence,
        "table": rows, "stragglers": strag + step,
        "collectives": {"kinds": kinds,
                        "ms_per_step": {str(r["rank"]): r["collectives"]["ms_per_step"]
                                        if r["collectives"] is not None else None for r in rows},
                        "overlap_fraction_median": median(overlap) if overlap else None},
        "errors": list(errors or []),
        "notes": notes,
        "rule": {"ratio": STRAGGLER_RATIO, "min_ms": STRAGGLER_MIN_MS, "metric": metric},
    }


def _sentence(s: StragglerDoc, waits: WaitsDoc | None) -> str:
    text = (f"rank {s['rank']} is the straggler: its {s['what']} is {s['value_ms']:.1f} ms, "
            f"{s['ratio']:.2f}x the other ranks' median ({s['others_median_ms']:.1f} ms; +{s['excess_ms']:.1f} ms)")
    if waits and waits["others_extra_ms_per_step"] > 0:
        text += (f"; the others wait {waits['others_extra_ms_per_step']:.1f} ms per step longer in collectives "
                 f"({waits['others_median_ms_per_step']:.1f} ms against its {waits['straggler_ms_per_step']:.1f})")
    return text


def _wait_straggler(rows: list[RankRowDoc]) -> list[StragglerDoc]:
    """The rank the others wait for, from the collectives alone (see the module doc): [] unless
    every rank has its collectives per step, as many of them, and the least-waiting rank waits
    STRAGGLER_RATIO x and STRAGGLER_MIN_MS less than the others' median."""
    waits = [_collective_ms_per_step(r) for r in rows]
    counts = {round(x, 6) for r in rows if r["collectives"] is not None
              and (x := _f(r["collectives"]["per_step_count"])) is not None}
    if None in waits or len(counts) != 1 or not next(iter(counts)):
        return []
    w = [float(x) for x in waits if x is not None]
    i = min(range(len(w)), key=w.__getitem__)
    m = median(w[:i] + w[i + 1:])
    if not (m >= STRAGGLER_RATIO * w[i] and m - w[i] >= STRAGGLER_MIN_MS):
        return []
    r = rows[i]
    others_c = [x for o in rows if o is not r and (x := _f(o["compute_ms_per_step"])) is not None]
    mine_c = _f(r["compute_ms_per_step"])
    text = (f"rank {r['rank']} is the straggler: it waits {w[i]:.1f} ms per step in collectives, the other ranks "
            f"{m:.1f} ms (median), so they wait for it: it holds them back {m - w[i]:.1f} ms per step")
    if mine_c is not None and others_c:
        text += (f"; its compute per step ({mine_c:.1f} ms) is like theirs ({median(others_c):.1f} ms), so its "
                 "extra time is outside its kernels (host work, or work the trace does not show)")
    return [{"rank": r["rank"], "name": r["name"], "metric": "collective_ms_per_step",
             "what": "wait in collectives per step", "value_ms": w[i], "others_median_ms": m,
             "excess_ms": m - w[i], "ratio": (m / w[i]) if w[i] > 0 else None,
             "waits": {"straggler_ms_per_step": w[i], "others_median_ms_per_step": m,
                       "others_extra_ms_per_step": m - w[i]}, "summary": text}]


def shared_devices(trace: Any) -> list[SharedDeviceDoc]:
    """Devices that more than one rank of a folder names (the same device index in each trace, on
    the common clock): if they are one GPU shared by those ranks, its activity is the union of
    theirs, never their sum. A trace does not name its host, so this stays an "if": ranks on
    different hosts each using device 0 look the same (the report says so)."""
    if trace.epoch_offset_s is None:
        return []
    gpu, host_spans = trace.gpu, trace.summary().spans()
    out: list[SharedDeviceDoc] = []
    for dev, g in gpu.groupby("device", sort=True):
        ranks = sorted({int(r) for r in g["rank"].tolist()})
        if len(ranks) < 2:
            continue
        s = g["ts_us"].to_numpy(dtype="float64")
        e = s + g["dur_us"].to_numpy(dtype="float64")
        hs = [host_spans[r] for r in ranks if r in host_spans]  # every host event of the ranks
        t0 = min([float(s.min())] + [h[0] for h in hs])
        t1 = max([float(e.max())] + [h[2] for h in hs])
        union = total(*merge(s, e))
        rk = g["rank"].to_numpy()
        summed = sum(total(*merge(s[rk == r], e[rk == r])) for r in ranks)
        span = t1 - t0
        out.append({"device": int(dev), "ranks": ranks, "span_s": span / 1e6, "busy_s": union / 1e6,
                    "busy_fraction": union / span if span > 0 else None, "idle_s": max(span - union, 0.0) / 1e6,
                    "summed_busy_s": summed / 1e6})
    return out

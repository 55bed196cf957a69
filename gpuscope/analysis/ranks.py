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
    from gpuscope.analysis.document import RanksDoc, SamplesActivityDoc
    from gpuscope.analysis.result import Analysis
    from gpuscope.sources.source import Source

STRAGGLER_RATIO = 1.10
STRAGGLER_MIN_MS = 1.0
NCCL_KERNEL = re.compile(r"nccl", re.IGNORECASE)


def _f(x: Any) -> float | None:
    return float(x) if isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x) else None


def collectives(trace: Any) -> dict[str, Any]:
    """The collectives of one rank's trace (frames in microseconds): kind, ms, count, overlap."""
    gpu, host = trace.gpu, trace.host
    kern = gpu[gpu["kind"] == "kernel"]
    names = kern["name"].astype(str)
    is_nccl = names.str.contains(NCCL_KERNEL).to_numpy(dtype=bool)
    ks = kern["ts_us"].to_numpy(dtype="float64")
    ke = ks + kern["dur_us"].to_numpy(dtype="float64")
    compute = merge(ks[~is_nccl], ke[~is_nccl])
    out: dict[str, Any] = {"compute_ms": total(*compute) / 1e3}
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
    out.update(kind=kind, count=count, ms=coll_us / 1e3,
               overlap_fraction=(intersection_length(coll, compute) / coll_us) if coll_us > 0 else None,
               names=sorted(set(names[is_nccl].tolist()) if kind == "nccl" and is_nccl.any() else
                            set(host["name"].astype(str)[host["name"].astype(str).str.contains(HOST_COLLECTIVE)]
                                .tolist()))[:5])
    return out


def _step(phases: list[dict[str, Any]]) -> tuple[int, float | None]:
    """(steps, mean step ms) from the trace's ProfilerStep phase row (TraceDoc.phases)."""
    for p in phases:
        if p.get("phase") == "ProfilerStep":
            return int(p.get("count") or 0), _f(p.get("mean_ms"))
    return 0, None


def rank_row(source: Source, result: Analysis, *, name: str, position: int) -> dict[str, Any]:
    """One rank's row: its own analysis' figures, and the collectives of its trace."""
    doc = result.document()
    tdoc = doc["trace"]  # (typed: TraceDoc) the trace's activity is exact: it wins; else the samples'
    sdoc = doc["samples"]
    sact: SamplesActivityDoc = (sdoc["activity"] if sdoc is not None else None) or {}
    busy, idle = ((tdoc["activity"]["busy_fraction"], tdoc["activity"]["idle_fraction"]) if tdoc is not None
                  else (sact.get("busy_fraction"), sact.get("idle_fraction")))
    diag = (doc["findings"] or [{}])[0]
    row: dict[str, Any] = {"name": name, "rank": position, "position": position, "kind": source.kind,
                           "busy_fraction": _f(busy), "idle_fraction": _f(idle),
                           "first_finding": diag.get("id"), "first_finding_severity": diag.get("severity")}
    if source.trace is not None and tdoc is not None:  # (a trace's analysis always has its part)
        tr = source.trace
        if len(tr.ranks) == 1:
            row["rank"] = int(tr.ranks[0])
        row["rank_known"] = bool(tr.rank_known)
        act = tdoc["activity"]
        on_clock = bool(act["epoch"])
        row["t_start"], row["t_end"] = (_f(act["t_start"]), _f(act["t_end"])) if on_clock else (None, None)
        span = _f(act["span_s"])
        row["span_s"] = span
        row["idle_by_cause_s"] = dict(act["idle_gaps"]["by_cause_s"])
        steps, step_ms = _step(tdoc["phases"])
        row.update(steps=steps, step_ms=step_ms)
        row["copies"] = [{k: m.get(k) for k in ("direction", "host_memory", "count", "bytes", "ms", "gbs")}
                         for m in tdoc["memcpy"]]
        c = collectives(tr)
        per = steps if steps else None
        row["compute_ms"] = c.pop("compute_ms")
        row["compute_ms_per_step"] = row["compute_ms"] / per if per else None
        row["collectives"] = {**c, "ms_per_step": c["ms"] / per if per else None,
                              "per_step_count": c["count"] / per if per else None}
    else:
        classes = sact.get("classes") or {}
        wall = _f(sact.get("wall_s"))
        row["span_s"] = wall
        row["idle_by_cause_s"] = {k: classes[k] * wall for k in ("idle_quiet", "transferring", "idle")
                                  if wall and _f(classes.get(k))}
        recs = result.log.records if result.log is not None else 0
        held = _f(result.log.split.get("held_ms")) if result.log is not None else None
        row.update(steps=recs, step_ms=(held / recs) if recs and held else None)
        pcie = sact.get("pcie") or {}
        row["copies"] = [{"direction": d, "mean_gbs": _f((pcie.get(d) or {}).get("mean_gbs"))} for d in ("rx", "tx")]
        busy = row["busy_fraction"]
        row["compute_ms"] = busy * wall * 1e3 if busy is not None and wall else None
        row["compute_ms_per_step"] = None
        row["collectives"] = None
        meta = source.meta.raw if source.meta else {}
        row["t_start"], row["t_end"] = _epoch(meta.get("started")), _epoch(meta.get("ended"))
        cmd = meta.get("command")
        row["command"] = " ".join(str(x) for x in cmd) if isinstance(cmd, list) and cmd else None
    return row


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


def one_job(rows: list[dict]) -> tuple[bool, str]:
    """Whether the rows are ranks of one job, and the evidence (or what is missing). Time spans
    that do not overlap on the common clock outweigh everything (two jobs' rank-0 traces both
    name a rank); then every trace naming its own rank; then overlapping spans, with the same
    command for run directories."""
    if len(rows) < 2:
        return True, "one rank"
    apart = _apart(rows)
    if apart:
        return False, apart
    if (all(r.get("kind") == "trace" and r.get("rank_known") for r in rows)
            and len({r["rank"] for r in rows}) == len(rows)):
        return True, "each trace names its own rank (distributedInfo)"
    # a rank's own number in its command (--local_rank 1, rank1.log) does not make another program
    cmds = {re.sub(r"\d+", "#", c) if isinstance(c := r.get("command"), str) else None for r in rows}
    if all(r.get("kind") != "trace" for r in rows) and None not in cmds and len(cmds) > 1:
        return False, f"they ran {len(cmds)} different commands (meta.json)"
    if any(_f(r.get("t_start")) is None or _f(r.get("t_end")) is None for r in rows):
        return False, ("nothing shows they are one job: no distributedInfo rank in every trace, and not every "
                       "one has a time on a common clock (baseTimeNanoseconds, meta.json started/ended)")
    same = " and ran the same command" if None not in cmds and len(cmds) == 1 else ""
    return True, f"their time spans overlap{same}"


def _apart(rows: list[dict]) -> str | None:
    """Why the rows cannot be one job's by their times (no instant inside every span), else None
    (also when some span is not on a common clock)."""
    starts = [x for r in rows if (x := _f(r.get("t_start"))) is not None]
    ends = [x for r in rows if (x := _f(r.get("t_end"))) is not None]
    if len(starts) < len(rows) or len(ends) < len(rows):
        return None
    first_end, last_start = min(ends), max(starts)
    if last_start < first_end:
        return None
    late = rows[starts.index(last_start)]["name"]
    early = rows[ends.index(first_end)]["name"]
    return f"their time spans do not overlap ({late} started {last_start - first_end:,.0f} s after {early} ended)"


def _stragglers(rows: list[dict], key: str, what: str) -> list[dict]:
    vals: list[tuple[dict, float]] = [(r, v) for r in rows if (v := _f(r.get(key))) is not None]
    out: list[dict] = []
    if len(vals) < 2:
        return out
    for r, v in vals:
        others = [x for o, x in vals if o is not r]
        m = median(others)
        if m > 0 and v >= STRAGGLER_RATIO * m and v - m >= STRAGGLER_MIN_MS:
            out.append({"rank": r["rank"], "name": r["name"], "metric": key, "what": what, "value_ms": v,
                        "others_median_ms": m, "excess_ms": v - m, "ratio": v / m})
    return out


def _waits(rows: list[dict], s: dict) -> dict | None:
    """How much longer the other ranks sat in collectives per step than the straggler."""
    def per_step(r: dict) -> float | None:
        c = r.get("collectives") or {}
        return _f(c.get("ms_per_step"))

    mine = next((per_step(r) for r in rows if r["rank"] == s["rank"]), None)
    others = [x for r in rows if r["rank"] != s["rank"] and (x := per_step(r)) is not None]
    if mine is None or not others:
        return None
    return {"straggler_ms_per_step": mine, "others_median_ms_per_step": median(others),
            "others_extra_ms_per_step": median(others) - mine}


def combine(rows: list[dict], errors: list[dict] | None = None) -> RanksDoc:
    """The ranks document: the rows (by rank), the stragglers with by how much, the collectives."""
    notes = []
    job, evidence = one_job(rows)  # (before any renumbering: repeated distributedInfo ranks are no evidence)
    if len({r["rank"] for r in rows}) < len(rows):  # traces without distributedInfo.rank (or repeated)
        for r in rows:
            r["rank"] = r.get("position", r["rank"])
        notes.append("ranks numbered by name order (distributedInfo.rank missing or repeated)")
    rows = sorted(rows, key=lambda r: (r["rank"], r["name"]))
    traces = all(r["kind"] == "trace" for r in rows)
    per_step = traces and all(_f(r.get("compute_ms_per_step")) is not None for r in rows)
    key, what = (("compute_ms_per_step", "compute per step") if per_step else
                 ("compute_ms", "compute time (no ProfilerStep to divide by)") if traces else
                 ("compute_ms", "GPU busy time"))
    strag = _stragglers(rows, key, what) if job else []
    for s in strag:
        w = _waits(rows, s) if traces else None
        s["waits"] = w
        s["summary"] = _sentence(s, w)
    step = [s for s in _stragglers(rows, "step_ms", "step time")
            if job and not any(x["rank"] == s["rank"] for x in strag)]
    for s in step:
        s["waits"] = None
        s["summary"] = _sentence(s, None)
    if job and traces and not strag and not step:
        strag = _wait_straggler(rows)
    if not job:
        notes.append(f"not ranks of one job: {evidence}; each is analyzed on its own, no straggler is named")
    kinds = sorted({str(k) for r in rows if (k := (r.get("collectives") or {}).get("kind")) is not None})
    overlap = [x for r in rows if (x := _f((r.get("collectives") or {}).get("overlap_fraction"))) is not None]
    return {
        "count": len(rows), "inputs": "traces" if traces else "runs",
        "one_job": job, "one_job_evidence": evidence,
        "table": rows, "stragglers": strag + step,
        "collectives": {"kinds": kinds,
                        "ms_per_step": {str(r["rank"]): (r.get("collectives") or {}).get("ms_per_step") for r in rows},
                        "overlap_fraction_median": median(overlap) if overlap else None},
        "errors": list(errors or []),
        "notes": notes,
        "rule": {"ratio": STRAGGLER_RATIO, "min_ms": STRAGGLER_MIN_MS, "metric": key},
    }


def _sentence(s: dict, waits: dict | None) -> str:
    text = (f"rank {s['rank']} is the straggler: its {s['what']} is {s['value_ms']:.1f} ms, "
            f"{s['ratio']:.2f}x the other ranks' median ({s['others_median_ms']:.1f} ms; +{s['excess_ms']:.1f} ms)")
    if waits and waits["others_extra_ms_per_step"] > 0:
        text += (f"; the others wait {waits['others_extra_ms_per_step']:.1f} ms per step longer in collectives "
                 f"({waits['others_median_ms_per_step']:.1f} ms against its {waits['straggler_ms_per_step']:.1f})")
    return text


def _wait_straggler(rows: list[dict]) -> list[dict]:
    """The rank the others wait for, from the collectives alone (see the module doc): [] unless
    every rank has its collectives per step, as many of them, and the least-waiting rank waits
    STRAGGLER_RATIO x and STRAGGLER_MIN_MS less than the others' median."""
    colls = [r.get("collectives") or {} for r in rows]
    waits = [_f(c.get("ms_per_step")) for c in colls]
    counts = {round(x, 6) for c in colls if (x := _f(c.get("per_step_count"))) is not None}
    if None in waits or len(counts) != 1 or not next(iter(counts)):
        return []
    w = [float(x) for x in waits if x is not None]
    i = min(range(len(w)), key=w.__getitem__)
    m = median(w[:i] + w[i + 1:])
    if not (m >= STRAGGLER_RATIO * w[i] and m - w[i] >= STRAGGLER_MIN_MS):
        return []
    r = rows[i]
    others_c = [x for o in rows if o is not r and (x := _f(o.get("compute_ms_per_step"))) is not None]
    mine_c = _f(r.get("compute_ms_per_step"))
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


def shared_devices(trace: Any) -> list[dict[str, Any]]:
    """Devices that more than one rank of a folder names (the same device index in each trace, on
    the common clock): if they are one GPU shared by those ranks, its activity is the union of
    theirs, never their sum. A trace does not name its host, so this stays an "if": ranks on
    different hosts each using device 0 look the same (the report says so)."""
    if trace.epoch_offset_s is None:
        return []
    gpu, host_spans = trace.gpu, trace.summary().spans()
    out = []
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

"""GPU idle gaps of a profiler trace, and what the host was doing across each.

A gap is time between two busy blocks of a device (busy = union of its kernels, copies and
memsets over all streams), plus the idle head and tail of the rank's span; gaps shorter
than GAP_MIN_US are left out (a stream's back-to-back launches are a few us apart).

Per gap (docs/TRACES.md):
- launched_late: the runtime call that issued the GPU work ending the gap (found through the
  correlation id) started after the GPU went idle -- the GPU waited for the host. False:
  the work was queued before (it waited on something else: another stream, an event).
- coverage of the gap by host activity of the rank (any thread), per kind: data loading
  (operators/annotations named like a data loader), allocation calls, synchronising calls,
  and any traced host work (operators, runtime calls; annotations excluded);
- sync_at_start: a synchronising call was running when the GPU went idle (the host was
  waiting for this very work, so nothing else was queued);
- cause, first match: queued (not launched late), data_loading (>= half covered), allocation
  (>= half), after_sync (sync at start, and the gap short or mostly uncovered), host_work
  (>= half covered by traced host work), untraced (the host was outside every traced op).
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from gpuscope.analysis.evidence import intervals as iv
from gpuscope.analysis.evidence.trace.trace_activity import DeviceView, Epoch
from gpuscope.analysis.names import PROFILER_STEP_RE
from gpuscope.schemas import ALLOC_RE, DATA_RE, SYNC_RE

GAP_MIN_US = 10.0          # shorter gaps are not counted as idle gaps
LONG_GAP_US = 1000.0       # a gap this long is host starvation, not launch/sync latency
COVERED = 0.5              # a host activity "spans" a gap when it covers this share of it
NAMED_MIN = 0.1            # below this share no operator is named for a gap (its annotation still is)
LAUNCH_TOL_US = 1.0        # clock slack between host and device timestamps
RUNTIME_CATS = ("cuda_runtime", "cuda_driver")

CAUSES = ("queued", "data_loading", "allocation", "after_sync", "host_work", "untraced")

GAP_COLUMNS = ["rank", "device", "start_us", "end_us", "dur_us", "edge", "launched_late",
               "launch_us", "next_correlation", "cover_data", "cover_alloc", "cover_sync",
               "cover_host", "sync_at_start", "cause"]


def host_kind_masks(host: pd.DataFrame) -> dict[str, np.ndarray]:
    """Boolean masks over the host events kept as rows: sync / alloc / data / annotation (any
    traced work: the summary's `work`, over every host event, kept or not)."""
    names = host["name"].astype(object)
    cat = host["cat"].astype(object).to_numpy()
    uniq = pd.Series(names.unique())

    def by_name(rx: re.Pattern) -> np.ndarray:
        hit = set(uniq[uniq.map(lambda n: bool(rx.search(str(n))))])
        return names.isin(hit).to_numpy()

    runtime = np.isin(cat, RUNTIME_CATS)
    annotation = cat == "user_annotation"
    step = by_name(PROFILER_STEP_RE) & annotation
    return {
        "sync": by_name(SYNC_RE) & runtime,
        "alloc": by_name(ALLOC_RE) & runtime,
        "data": by_name(DATA_RE) & ~step,
        "annotation": annotation & ~step,
    }


def _merged_host(host: pd.DataFrame, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    s = host["ts_us"].to_numpy(dtype="float64")[mask]
    return iv.merge(s, s + host["dur_us"].to_numpy(dtype="float64")[mask])


def _inside(t: np.ndarray, merged: tuple[np.ndarray, np.ndarray], tol: float) -> np.ndarray:
    s, e = merged
    if s.size == 0:
        return np.zeros(t.size, dtype=bool)
    i = np.searchsorted(s, t + tol, side="right") - 1
    ok = i >= 0
    out = np.zeros(t.size, dtype=bool)
    out[ok] = t[ok] <= e[i[ok]] + tol
    return out


def gap_bounds(bs: np.ndarray, be: np.ndarray, span: tuple[float, float],
               step: int = 1 << 16) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(start, end, edge) of the gaps of GAP_MIN_US or more around the busy blocks (bs, be; at
    least one) within `span`: gap j runs from the end of block j - 1 (the span's start for the
    first) to the start of block j (the span's end after the last). The kept gaps alone are
    gathered (the every-gap arrays, four of 8 bytes a block at once, were the stage's peak at
    10M kernels); the same numbers as those arrays' [keep]."""
    keep = np.empty(bs.size + 1, dtype=bool)
    keep[0] = (bs[0] - span[0]) >= GAP_MIN_US
    keep[-1] = (span[1] - be[-1]) >= GAP_MIN_US
    # (the inner gaps' lengths a block of `step` at a time: no every-gap array of them)
    for a in range(0, bs.size - 1, step):
        b = min(a + step, bs.size - 1)
        np.greater_equal(bs[a + 1:b + 1] - be[a:b], GAP_MIN_US, out=keep[a + 1:b + 1])
    at = np.flatnonzero(keep)
    del keep
    last = bs.size  # (the gap after the last block)
    g0 = be[np.maximum(at - 1, 0)]
    g0[at == 0] = span[0]
    g1 = bs[np.minimum(at, last - 1)]
    g1[at == last] = span[1]
    return g0, g1, (at == 0) | (at == last)


def device_gaps(v: DeviceView, masks: dict[str, np.ndarray] | None = None) -> pd.DataFrame:
    """The gaps of one device (GAP_COLUMNS), in time order."""
    bs, be = v.busy
    if bs.size == 0:
        return pd.DataFrame({c: pd.Series(dtype="float64") for c in GAP_COLUMNS})
    g0, g1, edge = gap_bounds(bs, be, v.span)
    del bs, be
    n = g0.size
    # the GPU event that ends the gap: the first one starting at the next busy block
    ts = v.gpu["ts_us"].to_numpy(dtype="float64")
    corr = v.gpu["correlation"].to_numpy()
    nxt = np.searchsorted(ts, g1, side="left")
    has_next = nxt < ts.size
    next_corr = np.where(has_next, corr[np.minimum(nxt, ts.size - 1)], -1)
    # the start of the runtime call that carries each id (the gaps' alone: a lookup, not a table)
    launch = v.host_summary.calls(v.rank, next_corr)[0]
    launch[next_corr < 0] = np.nan
    late = np.where(np.isnan(launch), np.nan, (launch >= g0 - LAUNCH_TOL_US).astype(float))

    h = v.host
    masks = host_kind_masks(h) if masks is None else masks
    dur = g1 - g0
    cover = {}
    for key in ("data", "alloc", "sync"):
        cover[key] = iv.covered_lengths(g0, g1, *_merged_host(h, masks[key])) / dur
    cover["work"] = v.host_summary.work_cover(v.rank, g0, g1) / dur
    sync_at_start = _inside(g0, _merged_host(h, masks["sync"]), LAUNCH_TOL_US)

    cause = np.full(n, "untraced", dtype=object)
    cause[cover["work"] >= COVERED] = "host_work"
    cause[sync_at_start & ((dur < LONG_GAP_US) | (cover["work"] < COVERED))] = "after_sync"
    cause[cover["alloc"] >= COVERED] = "allocation"
    cause[cover["data"] >= COVERED] = "data_loading"
    cause[late == 0.0] = "queued"
    return pd.DataFrame({
        "rank": v.rank, "device": v.device, "start_us": g0, "end_us": g1, "dur_us": dur, "edge": edge,
        "launched_late": late, "launch_us": launch, "next_correlation": next_corr,
        "cover_data": cover["data"], "cover_alloc": cover["alloc"], "cover_sync": cover["sync"],
        "cover_host": cover["work"], "sync_at_start": sync_at_start, "cause": cause,
    }, columns=GAP_COLUMNS)


def host_across(host: pd.DataFrame, start: float, end: float, threads: dict | None = None) -> dict:
    """The host activity spanning [start, end] (`host`: the events overlapping it, or more): the
    shortest traced op (not an annotation) covering >= COVERED of it, else the one covering most;
    and the innermost annotation. `threads` ((rank, pid, tid) -> name, the trace's own: Nsight's
    ThreadNames) names the op's thread."""
    s = host["ts_us"].to_numpy(dtype="float64")
    e = s + host["dur_us"].to_numpy(dtype="float64")
    sel = np.flatnonzero((s < end) & (e > start))
    out: dict = {"op": None, "annotation": None}
    if sel.size == 0:
        return out
    cover = (np.minimum(e[sel], end) - np.maximum(s[sel], start)) / max(end - start, 1e-9)
    cat = host["cat"].astype(object).to_numpy()[sel]
    names = host["name"].astype(object).to_numpy()[sel]
    dur = e[sel] - s[sel]
    is_ann = cat == "user_annotation"
    not_step = np.array([PROFILER_STEP_RE.match(str(x)) is None for x in names])

    def pick(mask: np.ndarray) -> int | None:
        idx = np.flatnonzero(mask)
        if idx.size == 0:
            return None
        full = idx[cover[idx] >= COVERED]
        if full.size:
            return int(full[np.argmin(dur[full])])
        return int(idx[np.argmax(cover[idx])])

    k = pick(~is_ann)
    if k is not None and cover[k] >= NAMED_MIN:
        out["op"] = {"name": str(names[k]), "cat": str(cat[k]), "dur_ms": float(dur[k]) / 1e3,
                     "covered_fraction": float(cover[k])}
        if threads:
            row = host.iloc[int(sel[k])]
            out["op"]["thread"] = threads.get((int(row["rank"]), int(row["pid"]), int(row["tid"])))
    a = pick(is_ann & not_step)
    if a is not None:
        out["annotation"] = str(names[a])
    return out


def gaps_json(gaps: pd.DataFrame, views: dict[tuple[int, int], DeviceView], epoch: Epoch, *, top: int = 10,
              threads: dict | None = None) -> list[dict]:
    """The `idle_gaps` list: the longest gaps, each with the host activity across it."""
    out: list[dict] = []
    if not len(gaps):
        return out
    longest = list(gaps.sort_values("dur_us", ascending=False, kind="stable").head(top).itertuples(index=False))
    # the host events across each gap, one look-up per rank for all its gaps (an Nsight export's
    # are in SQL: one pass over its tables, not one per gap)
    rows: dict[int, pd.DataFrame] = {}
    for rank in sorted({int(r.rank) for r in longest}):
        mine = [i for i, r in enumerate(longest) if int(r.rank) == rank]
        v0 = views[(rank, int(longest[mine[0]].device))]
        for i, got in zip(mine, v0.host_summary.across(rank, [(float(longest[i].start_us), float(longest[i].end_us))
                                                             for i in mine]), strict=True):
            rows[i] = got
    for i, r in enumerate(longest):
        v = views[(int(r.rank), int(r.device))]
        across = host_across(rows[i], float(r.start_us), float(r.end_us), threads)
        out.append({
            "rank": int(r.rank), "device": int(r.device), "t_start": float(epoch(r.start_us)),
            "offset_s": (float(r.start_us) - v.span[0]) / 1e6, "ms": float(r.dur_us) / 1e3,
            "edge": bool(r.edge), "cause": str(r.cause),
            "launched_late": None if np.isnan(r.launched_late) else bool(r.launched_late),
            "sync_at_start": bool(r.sync_at_start), "host_traced_fraction": float(r.cover_host),
            "host_op": across["op"], "annotation": across["annotation"],
        })
    return out


def idle_summary(gaps: pd.DataFrame) -> dict:
    """activity.idle_gaps: count, total, longest (s), and the idle time per cause."""
    d = gaps["dur_us"].to_numpy(dtype="float64") if len(gaps) else np.zeros(0)
    by_cause = {c: float(gaps.loc[gaps["cause"] == c, "dur_us"].sum()) / 1e6 for c in CAUSES} if len(gaps) else {}
    return {"count": int(d.size), "total_s": float(d.sum()) / 1e6,
            "longest_s": float(d.max()) / 1e6 if d.size else 0.0, "min_gap_s": GAP_MIN_US / 1e6,
            "by_cause_s": {k: v for k, v in by_cause.items() if v > 0}}

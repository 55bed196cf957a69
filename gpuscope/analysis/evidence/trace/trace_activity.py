"""What each device did over a profiler trace: busy time, copies, memsets, kernels per stream.

All times are the trace's microseconds (TraceFrames' ts_us). A device's traced span is its
rank's span: first to last event of that rank, host and device events alike (the host's
work before the first kernel is time the GPU sat idle). Busy = the GPU computing, as SM and
DRAM activity see it for samples: kernels, memsets and device-to-device copies (`computing_us`);
copies to or from the host or a peer are `copy_fraction` beside it (`host_copies_us`); the union
of everything (`active_s`, DeviceView.busy) is what the idle gaps are the complement of. Plain functions, no printing.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from gpuscope.analysis.evidence import intervals as iv
from gpuscope.analysis.evidence.trace.device_sets import (
    covered_by,
    first_last,
    masked_ends,
    name_codes,
    totals,
    union,
)
from gpuscope.analysis.evidence.trace.device_sets import factorized as factorized
from gpuscope.analysis.evidence.trace.device_sets import first_come as first_come
from gpuscope.arrays import distinct, median
from gpuscope.schemas import TRACE_COUNTER_SCHEMA, TRACE_GBS_MAX, frame

if TYPE_CHECKING:
    from gpuscope.parsers.trace.host_summary import HostSummary
    from gpuscope.parsers.trace.kineto import TraceFrames

#: TraceFrames.epoch: trace microseconds (a number or an array) -> epoch seconds
Epoch = Callable[[Any], Any]

HOST_DIRECTIONS = ("HtoD", "DtoH")
NAME_CHARS = 100
COUNTER_MAX_BINS = 1000    # busy-fraction track: the span in this many bins ...
COUNTER_MIN_BIN_S = 1e-4   # ... of at least 100 us


@dataclass
class DeviceView:
    """One device of one rank: its events, the totals of their unions the figures read, and the
    unions themselves made when read (`busy`, `kernels`, `copies`: not held; issue 32)."""

    rank: int
    device: int
    name: str
    span: tuple[float, float]              # the rank's span (us)
    gpu: pd.DataFrame                      # this device's events, by ts
    host: pd.DataFrame                     # the rank's host events the reader kept as rows, by ts
    host_summary: HostSummary              # what the analysis reads of all of them (frames.summary())
    # the totals (us) of the unions of: everything (busy), the kernels, the copies, and the copies'
    # time under kernels; of the work on the device's own memory: kernels, memsets, device-to-device
    # copies (HBM traffic at TB/s, the GPU computing as SM and DRAM activity see it); and of the
    # copies to or from elsewhere. Taken when the view is made: their unions' blocks (~16 bytes a
    # kernel each) are not held (at 10M kernels busy, kernels and copies were ~330 MB)
    busy_us: float = 0.0
    kernel_us: float = 0.0
    copy_us: float = 0.0
    copy_kernel_overlap_us: float = 0.0
    computing_us: float = 0.0
    host_copies_us: float = 0.0

    @property
    def span_us(self) -> float:
        return self.span[1] - self.span[0]

    def union(self, kind: str | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The union of the device's events (of one kind), made now: read only (where no two
        events touch, as on a long Nsight export, the starts are the frame's own column)."""
        return union(self.gpu, kind)

    def covered(self, kind: str | None, qs: np.ndarray, qe: np.ndarray) -> np.ndarray:
        """intervals.covered_lengths(qs, qe, *self.union(kind)), to the bit, without the union's
        arrays where its events are apart (device_sets.covered_by)."""
        return covered_by(self.gpu, kind, qs, qe)

    def overlap(self, kind: str | None, other: tuple[np.ndarray, np.ndarray]) -> float:
        """intervals.intersection_length(other, self.union(kind)): `other` (disjoint sorted) under
        the union, made as `covered` makes it."""
        o_s, o_e = np.asarray(other[0], dtype="float64"), np.asarray(other[1], dtype="float64")
        if not o_s.size:
            return 0.0
        return float(np.sum(np.maximum(self.covered(kind, o_s, o_e), 0.0)))

    @property
    def busy(self) -> tuple[np.ndarray, np.ndarray]:
        """Union of kernels, copies, memsets."""
        return self.union()

    @property
    def kernels(self) -> tuple[np.ndarray, np.ndarray]:
        return self.union("kernel")

    @property
    def copies(self) -> tuple[np.ndarray, np.ndarray]:
        return self.union("memcpy")


ORDER_BLOCK = 1 << 20


def in_order(gpu: pd.DataFrame) -> pd.DataFrame:
    """The GPU frame sorted by (rank, device, ts_us), stably: as both readers make it (then as it
    is, not copied), else sorted once."""
    r, d, t = gpu["rank"].to_numpy(), gpu["device"].to_numpy(), gpu["ts_us"].to_numpy(dtype="float64")
    step = ORDER_BLOCK  # (row pairs checked a block at a time: seven masks of the whole frame were ~90 MB at 10M)
    for a in range(0, max(len(t) - 1, 0), step):
        b = min(a + step, len(t) - 1) + 1
        rr, dd, tt = r[a:b], d[a:b], t[a:b]
        same_r, same_d = rr[1:] == rr[:-1], dd[1:] == dd[:-1]
        ok = (rr[1:] > rr[:-1]) | (same_r & ((dd[1:] > dd[:-1]) | (same_d & (tt[1:] >= tt[:-1]))))
        if not bool(ok.all()):
            return gpu.sort_values(["rank", "device", "ts_us"], kind="stable", ignore_index=True)
    return gpu


def device_views(frames: TraceFrames, ordered: pd.DataFrame | None = None, *, totals_now: bool = True
                 ) -> list[DeviceView]:
    """One view per (rank, device) that has device events, in rank/device order. Each view's
    events are a slice of the sorted frame (`ordered`: in_order(frames.gpu), made here when not
    given; no copy of the frame's rows: at 10M kernels each copy was ~0.8 GB), and every row is
    in one view: the views' events in their order are `ordered`."""
    gpu = in_order(frames.gpu) if ordered is None else ordered
    host, summary = frames.host, frames.summary()
    names = {(int(r), int(d)): str(n) for r, d, n in
             frames.devices[["rank", "device", "name"]].itertuples(index=False)}
    host_spans = summary.spans()
    rk, dv = gpu["rank"].to_numpy(), gpu["device"].to_numpy()
    cut = np.concatenate([[0], np.flatnonzero((rk[1:] != rk[:-1]) | (dv[1:] != dv[:-1])) + 1, [len(gpu)]])
    groups: dict[int, list[tuple[int, int, int]]] = {}  # rank -> [(device, first row, end row)]
    for a, b in zip(cut[:-1].tolist(), cut[1:].tolist(), strict=True):
        if b > a:
            groups.setdefault(int(rk[a]), []).append((int(dv[a]), a, b))
    views = []
    for rank, devs in groups.items():
        h_r = host[host["rank"] == rank]
        made = []
        starts, ends = [], []
        for dev, a, b in devs:
            g = gpu.iloc[a:b].reset_index(drop=True)
            first, last = first_last(g)
            made.append((dev, g, totals(g) if totals_now else {}))
            starts.append(first)
            ends.append(last)
        # the rank's span: its GPU events' (NaN left out, as pandas' min and max leave it) and
        # every host event's, the rows `host` keeps or not
        lo, hi = np.asarray(starts, dtype="float64"), np.asarray(ends, dtype="float64")
        starts = [float(pd.Series(lo).min())]
        ends = [float(pd.Series(hi).max())]
        if rank in host_spans:
            starts.append(host_spans[rank][0])
            ends.append(host_spans[rank][2])
        span = (float(min(starts)), float(max(ends)))
        for dev, g, sums in made:
            views.append(DeviceView(rank=rank, device=dev, name=names.get((rank, dev), ""), span=span,
                                    gpu=g, host=h_r, host_summary=summary, **sums))
    return views


def fill_totals(views: list[DeviceView]) -> None:
    """The union totals of views made with totals_now=False (device_views), each view's in turn:
    analyze_trace takes the gaps first, so an export's host cover (~200 MB at 10M kernels) is
    released before the totals' transient (the run's peak at 10M while the cover was held)."""
    for v in views:
        for k, x in totals(v.gpu).items():
            setattr(v, k, x)


def _gbs(nbytes: float, us: float) -> float:
    return nbytes / (us * 1e3) if us > 0 else float("nan")


def memcpy_rows(gpu: pd.DataFrame, line_rate_gbs: float) -> list[dict]:
    """The `memcpy` list: one row per (direction, host memory), most time first.

    gbs = bytes / summed copy time (GB/s, 1e9): the byte-weighted harmonic mean of the
    per-event rates, i.e. what the copies achieved together; host copies (HtoD, DtoH) also
    get their share of the line rate and their time at it.
    """
    rows: list[dict] = []
    for direction, memory, at in _copy_groups(gpu):
        # (each group's columns taken by its rows, in their order, and summed by pandas as the
        # groupby's frames were: the same sums; no frame of the copies' rows, no object keys)
        dur, nb = gpu["dur_us"].to_numpy(dtype="float64")[at], gpu["bytes"].to_numpy(dtype="float64")[at]
        trace_gbs = pd.Series(gpu["trace_gbs"].to_numpy(dtype="float64")[at])
        us = float(pd.Series(dur).sum())
        nbytes = float(pd.Series(nb).sum())
        per_event = nb / (dur * 1e3)
        per_event = per_event[np.isfinite(per_event)]
        row = {
            "direction": direction, "host_memory": memory, "count": int(at.size), "bytes": int(nbytes),
            "ms": us / 1e3, "gbs": _gbs(nbytes, us),
            "per_event_gbs_median": float(median(per_event)) if per_event.size else None,
            "trace_gbs_median": float(trace_gbs.median()) if trace_gbs.notna().any() else None,
            "devices": sorted({int(d) for d in distinct(gpu["device"].to_numpy()[at])}),
        }
        if direction in HOST_DIRECTIONS and line_rate_gbs > 0:
            row["line_rate_share"] = row["gbs"] / line_rate_gbs
            row["ms_at_line_rate"] = nbytes / (line_rate_gbs * 1e6)
        rows.append(row)
    rows.sort(key=lambda r: -r["ms"])
    return rows


def _copy_groups(gpu: pd.DataFrame) -> list[tuple[Any, Any, np.ndarray]]:
    """(direction, host memory, the copies' row positions in order) per pair, in the order the
    pairs first come; a pair with a missing value left out: what groupby([direction, host_memory],
    sort=False) over the copies' rows gives, from the categoricals' codes (at 10M kernels the
    copies' frame, its object keys and the groupby's frames were ~300 MB at once; issue 32)."""
    at = np.flatnonzero((gpu["kind"] == "memcpy").to_numpy(dtype=bool))
    if not at.size:
        return []
    # (the categoricals' own codes where both columns are: a pair's key is its two codes, the
    # pairs in the order their keys first come, each pair's rows by a mask of its key; no
    # factorized copies, sort or inverse of the copies' rows, ~70 bytes a copy)
    (ca, la), (cb, lb) = (name_codes(gpu[c].iloc[at]) for c in ("direction", "host_memory"))
    width = len(lb) + 1
    key = np.multiply(ca, width, dtype=np.int64 if len(la) * width >= 2**31 else np.int32)
    np.add(key, cb, out=key)
    key[(ca < 0) | (cb < 0)] = -1
    del ca, cb
    out = []
    for k in pd.unique(key).tolist():
        if k >= 0:
            out.append((la[k // width], lb[k % width], at[key == k]))
    return out


# a host-copy kind (direction, host memory) whose copies moved at least this many bytes
# in all speaks for the link's rate (fewer are mostly launch latency)
FLOOR_MIN_BYTES = 64 << 20
# what a rule leaning on that floor says it did not see
TRACE_FLOOR_UNSEEN = ("the line rate {rate:g} GB/s is the trace's fastest host copies, which outran gpuscope's "
                      "default: the link carries at least that, maybe more (gpuscope bandwidth measures it)")


def line_rate_floor(gpu: pd.DataFrame, line_rate_gbs: float, line_rate_source: str) -> tuple[float, str]:
    """(GB/s, source key): gpuscope's default line rate raised to the trace's fastest host
    copies where they ran faster than it. Copies that moved at X GB/s show the link carries at
    least X: the default is an assumption, the trace is evidence of this machine ("trace": a
    floor of the link's rate, not a measurement of it). Any other source (an option, a
    measurement, the run's link) is kept as it is."""
    if line_rate_source not in ("default", "gpu_name"):  # (both assumed: copies faster than them win)
        return line_rate_gbs, line_rate_source
    rates = [r["gbs"] for r in memcpy_rows(gpu, 0.0)
             if r["direction"] in HOST_DIRECTIONS and r["bytes"] >= FLOOR_MIN_BYTES and np.isfinite(r["gbs"])]
    best = max(rates, default=0.0)
    # (up to the next 0.01 GB/s: no copy kind reads as faster than the line rate by the rounding)
    return (math.ceil(best * 100) / 100, "trace") if best > line_rate_gbs else (line_rate_gbs, line_rate_source)


def memset_rows(gpu: pd.DataFrame) -> list[dict]:
    """The `memset` list: one row per memory kind (count, bytes, ms)."""
    m = gpu.loc[gpu["kind"] == "memset", ["host_memory", "dur_us", "bytes"]]
    rows = []
    for memory, g in m.groupby(m["host_memory"].astype(object), sort=False):
        us = float(g["dur_us"].sum())
        rows.append({"memory": memory, "count": int(len(g)), "bytes": int(g["bytes"].sum()),
                     "ms": us / 1e3, "gbs": _gbs(float(g["bytes"].sum()), us)})
    rows.sort(key=lambda r: -r["ms"])
    return rows


def _q(x: np.ndarray, q: float) -> float | None:
    return float(np.quantile(x, q)) if x.size else None


def stream_groups(stream: np.ndarray) -> list[tuple[int, np.ndarray]]:
    """(stream, row positions in their order) per stream, streams ascending: what
    groupby("stream", sort=True) gives, in one sort instead of a frame per stream (a trace of
    3,000 streams spent 34 s in pandas' per-group machinery)."""
    stream = np.asarray(stream)
    if not stream.size:
        return []
    order = np.argsort(stream, kind="stable")
    cuts = np.flatnonzero(np.diff(stream[order])) + 1
    return [(int(stream[idx[0]]), idx) for idx in np.split(order, cuts)]


def _top(names: np.ndarray, dur: np.ndarray, top: int, n_names: int) -> list[tuple[int, int, float]]:
    """(name code, count, sum) of the `top` names of the largest summed duration, as
    groupby(sort=False).agg(["size", "sum"]).sort_values("sum", ascending=False).head(top)
    orders them (first appearance, pandas' descending quicksort); code -1 (no name) left out.
    `names`: codes 0 .. n_names - 1 (any integer width: a categorical's own); each name's sum
    is its durations added in row order, as bincount over their first-appearance rank added
    them (no sort of the rows, no inverse: at 10M kernels ~30 bytes a kernel)."""
    ok = names >= 0
    if not ok.all():
        names, dur = names[ok], dur[ok]
    del ok
    if not names.size:
        return []
    codes = first_come(names)
    size = np.bincount(names, minlength=n_names)[codes]
    sums = np.bincount(names, weights=dur, minlength=n_names)[codes]
    idx = np.arange(codes.size)[::-1]
    pick = idx[sums[::-1].argsort(kind="quicksort")][::-1][:top]
    return [(int(codes[i]), int(size[i]), float(sums[i])) for i in pick]


def _fraction(part: float, whole: float) -> float | None:
    """part / whole within 0..1: a union of intervals inside the span cannot exceed it, and
    the float sums of their lengths must not make it 1.000014."""
    return min(max(part / whole, 0.0), 1.0) if whole > 0 else None


OVERLAP_NOTE_MS = 0.001  # kernels overlapping on a stream by less than 1 us: the profiler's rounding


def damage_notes(counts: dict[str, int], rows: list[dict]) -> list[str]:
    """A note for copies whose bandwidth argument was damage (the reader's count), and one when
    kernels overlap on a stream (stream_rows' kernel_overlap_ms): the trace's times are damaged
    there, and its kernel time is the union."""
    out = []
    if counts.get("damaged_bandwidth"):
        out.append(f"{counts['damaged_bandwidth']} copy bandwidth argument(s) beyond 0..{TRACE_GBS_MAX:g} GB/s: "
                   "damaged, not read (the copies' bytes and times are)")
    bad = [r for r in rows if r.get("kernel_overlap_ms", 0.0) > OVERLAP_NOTE_MS]
    if not bad:
        return out
    where = ", ".join(f"rank {r['rank']} device {r['device']} stream {r['stream']}" for r in bad[:3])
    return out + [f"kernels overlap on {len(bad)} stream(s) ({where}{', ...' if len(bad) > 3 else ''}; "
            f"{sum(r['kernel_overlap_ms'] for r in bad):.3f} ms would be counted twice if summed): a stream "
            "runs one kernel at a time, so the trace's times are damaged there; kernel time is their union"]


def stream_rows(views: list[DeviceView], *, top: int = 3) -> list[dict]:
    """The `kernels` list: per device and stream, kernel/copy/memset counts and times."""
    rows = []
    for v in views:
        # (a categorical compares its codes: no object array of the kinds, nor of the names)
        kernel, memcpy, memset = ((v.gpu["kind"] == k).to_numpy(dtype=bool) for k in ("kernel", "memcpy", "memset"))
        ts = v.gpu["ts_us"].to_numpy(dtype="float64")
        dur = v.gpu["dur_us"].to_numpy(dtype="float64")
        names, labels = name_codes(v.gpu["name"])
        st = v.gpu["stream"].to_numpy()
        # a device of one stream: its rows as they are (views, not copies), and its unions' totals
        # the view's own (the same rows merged: device_views took them)
        one = bool(st.size) and st.min() == st.max()
        groups: list[tuple[int, Any]] = [(int(st[0]), slice(None))] if one else stream_groups(st)
        for stream, idx in groups:
            kd_all = dur[idx]
            is_k, is_c, is_m = kernel[idx], memcpy[idx], memset[idx]
            kd = kd_all[is_k]
            if one:
                busy_us, kernel_us = v.busy_us, v.kernel_us
            else:
                # one stream runs its kernels one at a time: kernel time is their union, and time
                # they overlap (a damaged trace, a clock that jumped) is said, never summed
                t = ts[idx]
                busy_us = iv.total(*iv.merge(t, t + kd_all, share=True))
                tk = t[is_k]
                del t
                kernel_us = iv.total(*iv.merge(tk, tk + kd, share=True))
                del tk
            rows.append({
                "rank": v.rank, "device": v.device, "stream": int(stream),
                "kernels": int(is_k.sum()), "kernel_ms": kernel_us / 1e3,
                "kernel_overlap_ms": max(float(kd.sum()) - kernel_us, 0.0) / 1e3,
                "kernel_median_us": _q(kd, 0.5), "kernel_p90_us": _q(kd, 0.9),
                "memcpy_count": int(is_c.sum()),
                "memcpy_ms": float(kd_all[is_c].sum()) / 1e3,
                "memset_count": int(is_m.sum()),
                "memset_ms": float(kd_all[is_m].sum()) / 1e3,
                "busy_ms": busy_us / 1e3,
                "busy_fraction": _fraction(busy_us, v.span_us),
                "top_kernels": [{"name": str(labels[c])[:NAME_CHARS], "count": n, "ms": t / 1e3}
                                for c, n, t in _top(names[idx][is_k], kd, top, len(labels))],
            })
            # (this stream's arrays freed before the next stream's are made, not after: at 10M
            # kernels a stream's are ~40 bytes a row, and the device's below ~20)
            del kd_all, is_k, is_c, is_m, kd
        del kernel, memcpy, memset, names, labels, st, groups
    return rows


def device_rows(views: list[DeviceView]) -> list[dict]:
    """Per device: span, busy, kernel and copy time, and how much copies overlapped kernels."""
    out = []
    for v in views:
        kind = v.gpu["kind"]
        span = v.span_us
        kern, cop, overlap = v.kernel_us, v.copy_us, v.copy_kernel_overlap_us
        work, moved = v.computing_us, v.host_copies_us
        out.append({
            "rank": v.rank, "device": v.device, "name": v.name, "span_s": span / 1e6,
            # busy = computing (kernels, memsets, device-to-device copies); copies to or from the host
            # or a peer beside it (copy_fraction); active = anything running
            "busy_s": work / 1e6, "busy_fraction": _fraction(work, span),
            "copy_fraction": _fraction(moved, span),
            "active_s": v.busy_us / 1e6,
            "kernel_s": kern / 1e6, "memcpy_s": cop / 1e6,
            "memset_s": float(v.gpu.loc[kind == "memset", "dur_us"].sum()) / 1e6,
            "copy_kernel_overlap_s": overlap / 1e6,
            "streams": sorted(int(s) for s in distinct(v.gpu["stream"].to_numpy())),  # (no int64 copy)
        })
    return out


def counters(views: list[DeviceView], epoch: Epoch) -> pd.DataFrame:
    """Busy-fraction track per device (TRACE_COUNTER_SCHEMA); `epoch` maps trace us to seconds."""
    cols: dict[str, list] = {c: [] for c in TRACE_COUNTER_SCHEMA}
    for v in views:
        span = v.span_us
        if span <= 0:
            continue
        width = max(COUNTER_MIN_BIN_S * 1e6, span / COUNTER_MAX_BINS)
        edges = np.linspace(v.span[0], v.span[1], max(int(np.ceil(span / width - 1e-6)), 1) + 1)
        lo, hi = edges[:-1], edges[1:]
        w = hi - lo
        busy = v.covered(None, lo, hi)
        kern = v.covered("kernel", lo, hi)
        # each direction's copies by a mask of the rows (no frame of the copies' rows, nor of each
        # direction's): their starts, ends and bytes gathered, one direction at a time
        ts = v.gpu["ts_us"].to_numpy(dtype="float64")
        dur = v.gpu["dur_us"].to_numpy(dtype="float64")
        copy = (v.gpu["kind"] == "memcpy").to_numpy(dtype=bool)  # (a categorical compares its codes)
        rates = {}
        for d in HOST_DIRECTIONS:
            sel = copy & (v.gpu["direction"] == d).to_numpy(dtype=bool)
            s, e = masked_ends(ts, dur, sel)
            r = np.divide(v.gpu["bytes"].to_numpy(dtype="float64")[sel], e - s, out=np.zeros(s.size), where=e > s)
            del sel
            moved = iv.cumulative(s, e, r, hi) - iv.cumulative(s, e, r, lo)  # bytes in the bin
            rates[d] = moved / (w * 1e3)  # bytes/us -> GB/s
            del s, e, r
        del copy
        with np.errstate(invalid="ignore", divide="ignore"):
            cols["t_wall"] += list(epoch(lo))
            cols["gpu"] += [v.device] * lo.size
            cols["bin_s"] += list(w / 1e6)
            # (a bin's covered time comes from sums of large trace times: clamped to its width)
            cols["busy_fraction"] += list(np.clip(busy / w, 0.0, 1.0))
            cols["kernel_fraction"] += list(np.clip(kern / w, 0.0, 1.0))
            cols["htod_gbs"] += list(rates["HtoD"])
            cols["dtoh_gbs"] += list(rates["DtoH"])
            cols["rank"] += [v.rank] * lo.size
    return frame(cols, TRACE_COUNTER_SCHEMA)

"""Phases of a profiler trace: user annotations (record_function ranges) as a split table,
and the phase intervals (PHASE_SCHEMA) the plot and the Perfetto export draw.

The split table: one row per annotation name (ProfilerStep#N counted as "ProfilerStep"),
with the role guessed from the name (the roles of gpuscope.rolemodel: an upload is h2d, a
forward/backward gpu_compute, a data fetch or a wait cpu_stall, the profiler's step info),
its wall time (the CPU ranges) and what the rank's GPUs did inside it: busy, kernel and copy
time (unions over the annotation's CPU ranges and its GPU-side gpu_user_annotation ranges), and
the idle rest. Where a rank has no GPU-side ranges (an Nsight Systems report: NVTX ranges are
host-only) the GPU figures are those of the work the range launched (its thread's runtime calls
inside it -> correlation -> GPU events), never what merely ran at the same wall-clock time.
Annotations nest, so rows do not add up.

Phase intervals: per device and stream (stream in `worker`, device in `gpu`), the device's
activity merged into blocks per kind (kernel, h2d, d2h, memcpy for the other directions,
memset; gaps shorter than span / MERGE_PER_SPAN closed, so a million kernels draw as blocks),
and the CPU annotations (worker -1, gpu -1, partition = the ProfilerStep they fall in).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from gpuscope.analysis.evidence import intervals as iv
from gpuscope.analysis.evidence.trace.device_sets import masked_ends, name_codes
from gpuscope.analysis.evidence.trace.trace_activity import DeviceView, Epoch, stream_groups
from gpuscope.analysis.names import PROFILER_STEP_RE, RANGE_PREFIX, STEP, guess_role
from gpuscope.arrays import distinct
from gpuscope.schemas import PHASE_COLUMNS, PHASE_SCHEMA, empty_phases, frame

if TYPE_CHECKING:
    from gpuscope.parsers.trace.host_summary import HostSummary

MERGE_PER_SPAN = 20000



def _phase_name(name: str) -> str:
    return STEP if PROFILER_STEP_RE.match(name) else name


def launched(a: pd.DataFrame, summary: HostSummary, rank: int, gpu: pd.DataFrame) -> np.ndarray:
    """Mask over `gpu`: the events launched from inside the annotation ranges `a` (runtime or
    driver calls on the range's own thread starting within it -> their correlation -> the GPU
    events that carry it). What the range asked the GPU to do, wherever it ran: kernels run after
    the host has moved on, and another thread's work overlapping the range in time is not its."""
    if not len(gpu):
        return np.zeros(len(gpu), dtype=bool)
    corr: list[np.ndarray] = []
    for (pid, tid), a_t in a.groupby(["pid", "tid"], sort=False):
        s = a_t["ts_us"].to_numpy(dtype="float64")
        ms, me = iv.merge(s, s + a_t["dur_us"].to_numpy(dtype="float64"))
        corr.append(summary.launched(rank, int(pid), int(tid), ms, me))
    if not corr:
        return np.zeros(len(gpu), dtype=bool)
    return gpu["correlation"].isin(np.concatenate(corr)).to_numpy() & (gpu["correlation"].to_numpy() >= 0)


def _annotations(host: pd.DataFrame) -> pd.DataFrame:
    a = host[host["cat"].astype(object) == "user_annotation"]
    return a.assign(phase=a["name"].astype(object).map(_phase_name))


def split_table(views: list[DeviceView], host: pd.DataFrame, span_us: float,
                gpu_annotations: pd.DataFrame | None = None, *, host_only_ranges: bool = False,
                summary: HostSummary | None = None) -> list[dict]:
    """The `phases` split table (see the module doc), longest wall time first. The GPU figures
    cover the annotation's CPU ranges and its GPU-side ranges (gpu_user_annotation of the same
    name: where the work it launched ran), since kernels run after the host has moved on.

    All names of a rank at once (issue 34, class 10: a loop per name cost ~4 ms each, 16,000
    names a minute): the ranges merged per name in one grouped pass, the rank's GPU activity
    merged once per kind, the overlaps summed per name with bincount. `host_only_ranges` (an
    Nsight Systems report): a rank without GPU-side ranges credits each phase with its launches."""
    ann = _annotations(host)
    if not len(ann):
        return []
    gann = gpu_annotations if gpu_annotations is not None else ann.iloc[:0]
    rows: dict[str, dict] = {}
    rank_of = ann["rank"].to_numpy()
    g_rank = gann["rank"].to_numpy()
    for rank in distinct(rank_of):
        a_r = ann[rank_of == rank]
        codes, uniq = pd.factorize(a_r["phase"].to_numpy(dtype=object), sort=False)
        n = len(uniq)
        dur = a_r["dur_us"].to_numpy(dtype="float64")
        g_r = gann[g_rank == rank]
        gcodes = pd.Index(uniq).get_indexer(g_r["name"].to_numpy(dtype=object)) if len(g_r) else np.zeros(0, int)
        keep = gcodes >= 0
        s = np.concatenate([a_r["ts_us"].to_numpy(dtype="float64"), g_r["ts_us"].to_numpy(dtype="float64")[keep]])
        e = s + np.concatenate([dur, g_r["dur_us"].to_numpy(dtype="float64")[keep]])
        bs, be, bc = _merge_per_code(s, e, np.concatenate([codes, gcodes[keep]]))
        count = np.bincount(codes, minlength=n)
        wall = np.bincount(codes, weights=dur, minlength=n)
        covered = np.bincount(bc, weights=be - bs, minlength=n)
        vs = [v for v in views if v.rank == rank]
        vs = [v for v in views if v.rank == rank]
        gpu = pd.concat([v.gpu for v in vs]) if vs else None
        # host-only ranges (an Nsight Systems report's NVTX) and no GPU-side ones: a phase's GPU figures
        # are those of the work its launches made (correlation), not its wall-clock overlap
        by_launch = (host_only_ranges and summary is not None and gpu is not None and not len(g_r)
                     and summary.has_calls(int(rank)))
        gpu_ms = _gpu_overlaps(gpu, bs, be, bc, n) if gpu is not None and not by_launch else {}
        for i, phase in enumerate(uniq.tolist()):
            row = rows.setdefault(str(phase), {"phase": str(phase), "role": guess_role(str(phase)), "count": 0,
                                               "wall_ms": 0.0, "gpu_busy_ms": 0.0, "kernel_ms": 0.0,
                                               "memcpy_ms": 0.0, "htod_ms": 0.0, "dtoh_ms": 0.0, "_range_ms": 0.0})
            row["count"] += int(count[i])
            row["wall_ms"] += float(wall[i]) / 1e3
            row["_range_ms"] += float(covered[i]) / 1e3
            for key, per in gpu_ms.items():
                row[key] += float(per[i]) / 1e3
            if by_launch:
                assert gpu is not None and summary is not None
                _add_launched(row, gpu[launched(a_r[codes == i], summary, int(rank), gpu)])
    out = []
    for row in rows.values():
        covered_ms = row.pop("_range_ms")
        row["mean_ms"] = row["wall_ms"] / row["count"]
        # (GPU-side annotation ranges may reach past the span: a share is at most 1)
        row["share_of_span"] = min(covered_ms * 1e3 / span_us, 1.0) if span_us > 0 else None
        row["gpu_idle_ms"] = max(covered_ms - row["gpu_busy_ms"], 0.0)
        row["gpu_busy_fraction"] = min(row["gpu_busy_ms"] / covered_ms, 1.0) if covered_ms > 0 else None
        out.append(row)
    out.sort(key=lambda r: -r["wall_ms"])
    return out


def _merge_per_code(s: np.ndarray, e: np.ndarray, code: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The union of the intervals of each code, as disjoint sorted blocks (starts, ends, code):
    intervals.merge done for every code in one grouped pass (the reach is a running maximum
    within the code)."""
    if not s.size:
        return s, e, code
    order = np.lexsort((s, code))
    s, e, code = s[order], e[order], code[order]
    reach = pd.Series(e).groupby(code).cummax().to_numpy()
    new = np.ones(s.size, dtype=bool)
    new[1:] = (code[1:] != code[:-1]) | (s[1:] > reach[:-1])
    first = np.flatnonzero(new)
    last = np.append(first[1:] - 1, s.size - 1)
    return s[first], reach[last], code[first]


def _gpu_overlaps(gpu: pd.DataFrame, bs: np.ndarray, be: np.ndarray, bc: np.ndarray, n: int) -> dict[str, np.ndarray]:
    """Per code, the microseconds of its blocks during which the GPU was busy, ran kernels, copied
    (any copy, HtoD, DtoH): each kind's activity merged once for all the codes."""
    kind, direction = gpu["kind"], gpu["direction"]  # (a categorical compares its codes: no object array)
    gs = gpu["ts_us"].to_numpy(dtype="float64")
    ge = gs + gpu["dur_us"].to_numpy(dtype="float64")
    out = {}
    for key, mask in (("gpu_busy_ms", np.ones(len(gpu), dtype=bool)), ("kernel_ms", kind == "kernel"),
                      ("memcpy_ms", kind == "memcpy"), ("htod_ms", direction == "HtoD"),
                      ("dtoh_ms", direction == "DtoH")):
        mask = np.asarray(mask, dtype=bool)
        merged = iv.merge(gs[mask], ge[mask])
        out[key] = np.bincount(bc, weights=iv.overlaps((bs, be), merged), minlength=n)
    return out


def _add_launched(row: dict, g: pd.DataFrame) -> None:
    """GPU figures of a phase from the events its ranges launched: unions of their intervals
    (busy, kernel, copy, HtoD, DtoH), not their overlap with the ranges' wall clock."""
    kind, direction = g["kind"], g["direction"]
    for key, mask in (("gpu_busy_ms", np.ones(len(g), dtype=bool)), ("kernel_ms", kind == "kernel"),
                      ("memcpy_ms", kind == "memcpy"), ("htod_ms", direction == "HtoD"),
                      ("dtoh_ms", direction == "DtoH")):
        sel = g[np.asarray(mask)]
        gs = sel["ts_us"].to_numpy(dtype="float64")
        row[key] += iv.total(*iv.merge(gs, gs + sel["dur_us"].to_numpy(dtype="float64"))) / 1e3


def _activity_kind(g: pd.DataFrame) -> tuple[np.ndarray, list]:
    """(code per row, label per code): the row's kind, a copy's HtoD as h2d and DtoH as d2h. The
    codes are the kind column's own categorical codes, two more for h2d and d2h (int8 where they
    fit: an object array of every row's kind was 8 bytes a row, three of them at once); a label
    is the kind as the column's values give it (a missing one NaN, as astype(object) reads it)."""
    kc, kl = name_codes(g["kind"])
    labels = [*kl, "h2d", "d2h", np.nan]
    width = np.int8 if len(labels) < 127 else np.int64
    codes = kc.astype(width)  # (a copy: the h2d and d2h rows are written below)
    codes[kc < 0] = len(labels) - 1
    memcpy = [i for i, x in enumerate(kl) if x == "memcpy"]
    if memcpy:
        dc, dl = name_codes(g["direction"])
        is_copy = kc == memcpy[0]
        for d, code in (("HtoD", len(kl)), ("DtoH", len(kl) + 1)):
            at = [i for i, x in enumerate(dl) if x == d]
            if at:
                codes[is_copy & (dc == at[0])] = code
    return codes, labels


# A record_function range is the user's name, not a measured phase: drawn under RANGE_PREFIX
# (gpuscope.analysis.names; reports.phase_style colours it by the role its name suggests and shows
# the name alone), so a range named "upload" is never taken for the measured copies.
# On one stream the merged blocks of different kinds may overlap (a kernel block swallows the
# gaps that hold a memset): the stronger kind wins the overlap, the weaker keeps the rest.
KIND_PRIORITY = ("h2d", "d2h", "memcpy", "kernel", "memset")


def _subtract(s: np.ndarray, e: np.ndarray, cs: np.ndarray, ce: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The parts of the disjoint sorted intervals (s, e) outside the disjoint sorted (cs, ce)."""
    out_s, out_e = [], []
    j = 0
    for a, b in zip(s.tolist(), e.tolist(), strict=True):
        while j < len(cs) and ce[j] <= a:
            j += 1
        k, cur = j, a
        while k < len(cs) and cs[k] < b:
            if cs[k] > cur:
                out_s.append(cur)
                out_e.append(float(cs[k]))
            cur = max(cur, float(ce[k]))
            k += 1
        if cur < b:
            out_s.append(cur)
            out_e.append(b)
    return np.asarray(out_s, dtype="float64"), np.asarray(out_e, dtype="float64")


def _stream_blocks(ts: np.ndarray, dur: np.ndarray, kinds: np.ndarray, labels: list,
                   tol: float) -> list[tuple[str, np.ndarray, np.ndarray]]:
    """One stream's activity as non-overlapping blocks per kind (KIND_PRIORITY order); `kinds`:
    a code per row into `labels` (_activity_kind)."""
    taken_s, taken_e = np.zeros(0), np.zeros(0)
    out = []
    by_label = {labels[c]: c for c in range(len(labels)) if bool((kinds == c).any())}  # (a few kinds)
    for kind in sorted(set(by_label), key=lambda k: KIND_PRIORITY.index(k) if k in KIND_PRIORITY else 99):
        # (a missing kind matched no row as an object NaN: its blocks empty)
        sel = kinds == by_label[kind] if isinstance(kind, str) else np.zeros(kinds.size, dtype=bool)
        # (the ends added after the gather, the reach made in them: the kind's rows' starts and
        # ends are the merge's only full-length arrays)
        s, e = iv.merge(*masked_ends(ts, dur, sel), gap=tol, share=True, spend=True)
        del sel
        s, e = _subtract(s, e, taken_s, taken_e)
        out.append((str(kind), s, e))
        taken_s, taken_e = iv.merge(np.concatenate([taken_s, s]), np.concatenate([taken_e, e]))
    return out


def _device_phases(views: list[DeviceView], epoch: Epoch) -> pd.DataFrame | None:
    """The device part of phase_frame: merged blocks per stream, one frame for them all
    (a frame per stream and a mask over the whole device per stream were quadratic). A device of
    one stream is read as it is (its columns, not a gather of them by a stream's sort)."""
    cols: dict[str, list] = {c: [] for c in ("worker", "gpu", "phase", "t_start", "t_end")}
    for v in views:
        tol = max(1.0, v.span_us / MERGE_PER_SPAN)
        kinds, labels = _activity_kind(v.gpu)
        ts = v.gpu["ts_us"].to_numpy(dtype="float64")
        dur = v.gpu["dur_us"].to_numpy(dtype="float64")
        st = v.gpu["stream"].to_numpy()
        one = bool(st.size) and st.min() == st.max()
        for stream, idx in ([(int(st[0]), slice(None))] if one else stream_groups(st)):
            for kind, s, e in _stream_blocks(ts[idx], dur[idx], kinds[idx], labels, tol):
                cols["worker"].append(np.full(s.size, stream, dtype=np.int64))
                cols["gpu"].append(np.full(s.size, v.device, dtype=np.int64))
                cols["phase"].append(np.full(s.size, kind, dtype=object))
                cols["t_start"].append(s)
                cols["t_end"].append(e)
        del kinds, ts, dur, st
    if not cols["worker"]:
        return None
    worker = np.concatenate(cols["worker"])
    return frame({"worker": worker, "gpu": np.concatenate(cols["gpu"]),
                  "partition": np.full(worker.size, -1, dtype=np.int64), "phase": np.concatenate(cols["phase"]),
                  "t_start": epoch(np.concatenate(cols["t_start"])), "t_end": epoch(np.concatenate(cols["t_end"]))},
                 PHASE_SCHEMA)


def phase_frame(views: list[DeviceView], host: pd.DataFrame, epoch: Epoch) -> pd.DataFrame:
    """PHASE_SCHEMA rows: device activity per stream (merged blocks, no two overlapping) and
    CPU annotations (phase RANGE_PREFIX + the range's name)."""
    parts = []
    device = _device_phases(views, epoch)
    if device is not None:
        parts.append(device)
    ann = _annotations(host)
    if len(ann):
        names = ann["name"].astype(object)
        step_no = names.map(lambda n: (m := PROFILER_STEP_RE.match(n)) and m.group(1))
        s = ann["ts_us"].to_numpy(dtype="float64")
        e = s + ann["dur_us"].to_numpy(dtype="float64")
        partition = np.full(len(ann), -1, dtype=np.int64)
        is_step = step_no.notna().to_numpy()
        ss, se = s[is_step], e[is_step]
        nums = step_no[is_step].astype("int64").to_numpy() if is_step.any() else np.zeros(0, dtype=np.int64)
        order = np.argsort(ss)
        ss, se, nums = ss[order], se[order], nums[order]
        if ss.size:
            k = np.searchsorted(ss, s, side="right") - 1
            inside = (k >= 0) & (s <= se[np.maximum(k, 0)])
            partition = np.where(inside, nums[np.maximum(k, 0)], -1)
        parts.append(frame({"worker": [-1] * len(ann), "gpu": [-1] * len(ann), "partition": partition,
                            "phase": (RANGE_PREFIX + ann["phase"].astype(str)).to_numpy(dtype=object),
                            "t_start": epoch(s),
                            "t_end": epoch(e)}, PHASE_SCHEMA))
    if not parts:
        return empty_phases()
    return pd.concat(parts, ignore_index=True)[PHASE_COLUMNS]

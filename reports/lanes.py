"""Which lane (row of the picture, thread of the trace) each phase interval goes to.

- synthesis intervals without a worker: "synthesis k" lanes, packed;
- phases of a known worker: one lane per worker (per GPU and worker on a multi-GPU run),
  its prep thread on a thin side row under it;
- phases whose worker the log does not say: GPU-side ones (lock wait, upload, compute,
  barrier) on "GPU" lanes, CPU-side ones on "CPU" lanes; `other` (the part of a printed
  line's whole its fields do not itemise) stays beside the parts it runs between, on the
  GPU lane when there is one: nothing says it ran on the CPU.

Inside a lane intervals never overlap: an overlapping one spills onto a numbered extra
lane (overlaps under JITTER_S are clipped instead). Zero-length phases are dropped.
Pure pandas/numpy.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from gpuscope.reports.phase_style import style_for

GPU_GROUPS = {"lock_wait", "upload", "compute", "barrier", "held"}


@dataclass
class Lane:
    label: str
    process: str           # "GPU 0", "CPU synthesis", "CPU": the trace's process
    main: pd.DataFrame     # phases on the lane's main row (never overlapping)
    side: pd.DataFrame     # phases on its thin side row (prep thread; never overlapping)
    rank: int | None = None  # a trace of several ranks: the rank whose lane it is


# Overlaps up to this much (s) are clock jitter, not concurrency: timing lines print whole
# milliseconds, so phases rebuilt from them overlap by a fraction of one.
JITTER_S = 0.005


def pack(starts: np.ndarray, ends: np.ndarray, tolerance: float = 0.0) -> np.ndarray:
    """Slot per interval so that intervals sharing a slot overlap by at most `tolerance`
    (greedy by start)."""
    slot = np.zeros(len(starts), dtype=int)
    order = _in_order(np.asarray(starts, dtype=float))
    first, last = np.asarray(starts, dtype=float)[order], np.asarray(ends, dtype=float)[order]
    if len(first) < 2 or bool((np.maximum.accumulate(last)[:-1] <= first[1:] + tolerance + 1e-9).all()):
        return slot  # each starts after every earlier one ended: all in the first slot (the greedy's answer)
    free_at: list[float] = []
    for i in order:
        for k, e in enumerate(free_at):
            if e <= starts[i] + tolerance + 1e-9:
                free_at[k] = max(e, ends[i])
                slot[i] = k
                break
        else:
            free_at.append(ends[i])
            slot[i] = len(free_at) - 1
    return slot


def _in_order(starts: np.ndarray, ends: np.ndarray | None = None) -> np.ndarray:
    """np.argsort(starts, kind="stable") (np.lexsort((ends, starts)) with `ends`), without the
    sort when they are in that order already (a log's phases: a million of them)."""
    d = np.diff(starts)
    ordered = (d > 0) | (d == 0) if ends is None else (d > 0) | ((d == 0) & (np.diff(ends) >= 0))
    if bool(ordered.all()):
        return np.arange(len(starts))
    return np.argsort(starts, kind="stable") if ends is None else np.lexsort((ends, starts))


def _rows(df: pd.DataFrame, keep) -> pd.DataFrame:
    """df[keep], or df itself when it keeps every row (pandas' copy-on-write: a lane never
    changes the caller's frame; a million phases are not copied to keep them all)."""
    keep = np.asarray(keep, dtype=bool)
    return df if bool(keep.all()) else df[keep]


def _split(df: pd.DataFrame) -> list[pd.DataFrame]:
    """Non-overlapping groups; jitter-sized overlaps are clipped (start moved to the
    previous end) so that a group is strictly sequential."""
    if not len(df):
        return []
    ts, te = df["t_start"].to_numpy(float), df["t_end"].to_numpy(float)
    slot = pack(ts, te, JITTER_S)
    out = []
    for k in range(int(slot.max()) + 1):
        # on numpy positions, one frame per group at the end (a trace of 3,000 streams is
        # 6,000 groups: masks and sort_values per group took most of the export)
        idx = np.flatnonzero(slot == k)
        idx = idx[_in_order(ts[idx], te[idx])]  # sort_values(["t_start", "t_end"], kind="stable")
        st, en = ts[idx].copy(), te[idx]
        st[1:] = np.maximum(st[1:], np.maximum.accumulate(en)[:-1])
        whole = len(idx) == len(df) and bool((idx == np.arange(len(idx))).all())
        g = df if whole else df.iloc[idx]
        if not (st == ts[idx]).all():  # nothing clipped: the times stand as they are
            g = g.assign(t_start=st)
        if not (en >= st).all():
            g = g.assign(t_end=np.maximum(en, st))
        out.append(g)
    return out


def factorize_phases(phase: pd.Series, use_na_sentinel: bool = True) -> tuple[np.ndarray, pd.Index]:
    """pd.factorize of a phase column's names (codes in order of first appearance, the names):
    a categorical column (a log's display phases: gpuscope.analysis.evidence.log.phases) from
    its codes, without hashing each of a million names again; else from the names."""
    if isinstance(phase.dtype, pd.CategoricalDtype):
        cat = phase.cat.codes.to_numpy()
        if not len(cat) or int(cat.min()) >= 0:  # (no missing name: its codes say it all)
            codes, first = pd.factorize(cat)
            return codes, pd.Index(phase.cat.categories.to_numpy(dtype=object)[first], dtype=object)
    codes, names = pd.factorize(phase.to_numpy(dtype=object), use_na_sentinel=use_na_sentinel)
    return codes, pd.Index(names, dtype=object)


def _is_named(phase: pd.Series, name: str) -> np.ndarray:
    """phase == name: numpy's compare of the names (pandas' str compare is 6x it), or of a
    categorical's codes (a log's display phases: no million names made to compare)."""
    if isinstance(phase.dtype, pd.CategoricalDtype):
        cats = phase.cat.categories
        return (phase.cat.codes.to_numpy() == cats.get_loc(name)) if name in cats else np.zeros(len(phase), dtype=bool)
    return phase.to_numpy(dtype=object) == name


def _side_rows(phase: pd.Series) -> np.ndarray:
    """Whether each phase is drawn on its lane's side row (one style look-up per distinct name)."""
    codes, names = factorize_phases(phase)
    side = np.array([style_for(str(p)).row == "side" for p in names], dtype=bool)
    return np.where(codes >= 0, side[np.maximum(codes, 0)], style_for("nan").row == "side") if len(names) else \
        np.full(len(phase), style_for("nan").row == "side", dtype=bool)


def _group_lanes(label: str, process: str, df: pd.DataFrame, spill: str = "{label} ({n})",
                 is_side: np.ndarray | None = None) -> list[Lane]:
    """`spill`: the name of the k-th extra lane overlapping intervals need ({label}, {n});
    `is_side`: _side_rows of df, when the caller has it."""
    if is_side is None:
        is_side = _side_rows(df["phase"])
    mains, sides = (_split(df[~is_side]), _split(df[is_side])) if is_side.any() else (_split(df), [])
    empty = df.iloc[:0]
    out = []
    for k in range(max(len(mains), len(sides))):
        name = label if k == 0 else spill.format(label=label, n=k + 1)
        out.append(Lane(name, process, mains[k] if k < len(mains) else empty,
                        sides[k] if k < len(sides) else empty))
    return out


# What the lanes of phases with no worker are called, by what a lane holds ("worker": a log's
# GPU workers; "stream": a profiler trace's CUDA streams, whose CPU side is annotations), and
# the extra CPU lanes their overlaps need: CPU work of a log that overlaps ran on another
# thread; a trace's ranges that overlap are nested in one another.
UNATTRIBUTED = {
    "worker": ("GPU (worker not logged)", "CPU (worker not logged)", "{label}, thread {n}"),
    "stream": ("GPU (no stream)", "CPU (record_function ranges)", "{label}, depth {n}"),
    # a timing log of any other program: its lines name no worker, and a worker is the prover's word
    "record": ("GPU work", "host (CPU) work", "{label}, thread {n}"),
}


def assign_lanes(phases: pd.DataFrame, noun: str = "worker") -> list[Lane]:
    """Lanes top to bottom: synthesis, workers or streams (by GPU), then unattributed GPU and
    CPU work; with a `rank` column of several ranks (a trace of several ranks), that for each
    rank in turn, its lanes' labels and processes prefixed with it. `noun` names what the `worker` column holds: "worker" (the prover's GPU
    workers), "stream" (a trace's CUDA streams) or "record" (a timing log of another program,
    whose lanes of unattributed work are "GPU work" and "host (CPU) work")."""
    if "rank" in phases and phases["rank"].nunique() > 1:  # a trace of several ranks: each its own lanes
        out = []
        for rank, grp in phases.groupby("rank", sort=True):
            for lane in assign_lanes(grp.drop(columns="rank"), noun):
                lane.label, lane.process, lane.rank = f"rank {rank} {lane.label}", f"rank {rank}, {lane.process}", int(rank)
                out.append(lane)
        return out
    gpu_label, cpu_label, cpu_spill = UNATTRIBUTED.get(noun, UNATTRIBUTED["worker"])
    phases = _rows(phases, phases["t_end"] > phases["t_start"])  # zero-length phases draw nothing (nor NaN)
    lanes: list[Lane] = []
    no_worker = phases["worker"] < 0
    synth = no_worker & _is_named(phases["phase"], "synth")
    for k, part in enumerate(_split(phases[synth])):
        lanes.append(Lane(f"synthesis {k}", "CPU synthesis", part, part.iloc[:0]))
    if len(lanes) == 1:
        lanes[0].label = "synthesis"

    owned = phases[~no_worker]
    gpus = sorted(int(g) for g in phases.loc[phases["gpu"] >= 0, "gpu"].unique())
    multi_gpu = len(gpus) > 1
    if len(owned):
        # A worker's lines without a GPU index belong to its GPU (one GPU: GPU 0).
        key_gpu = owned["gpu"].where(owned["gpu"] >= 0, gpus[0] if gpus else -1) if not multi_gpu else owned["gpu"]
        side = _side_rows(owned["phase"])
        word = "worker" if noun == "record" else noun
        # groupby([gpu, worker], sort=True) on numpy positions: thousands of streams are
        # thousands of groups, and pandas' per-group machinery was most of the time
        kg, kw = key_gpu.to_numpy(np.int64), owned["worker"].to_numpy(np.int64)
        order = np.lexsort((kw, kg))
        cuts = np.flatnonzero((np.diff(kg[order]) != 0) | (np.diff(kw[order]) != 0)) + 1
        for idx in np.split(order, cuts):
            idx = np.sort(idx)  # a group's rows in their order, as groupby keeps them
            gpu, worker = int(kg[idx[0]]), int(kw[idx[0]])
            label = f"GPU{gpu} {word} {worker}" if multi_gpu else f"{word} {worker}"
            lanes += _group_lanes(label, f"GPU {gpu}" if gpu >= 0 else "GPU", owned.iloc[idx], is_side=side[idx])

    rest = _rows(phases, no_worker & ~synth)
    if len(rest):
        codes, names = factorize_phases(rest["phase"])  # one style look-up per distinct name
        at = np.where(codes >= 0, codes, len(names))
        styles = [style_for(str(p)) for p in names] + [style_for("nan")]
        gpu_side = np.array([st.group in GPU_GROUPS for st in styles])[at]
        side = np.array([st.row == "side" for st in styles])[at]  # (_side_rows, from this factorization)
        if gpu_side.any() and "other" in names:  # a printed line's unitemised time runs between its parts
            gpu_side |= codes == names.get_loc("other")
        g = _rows(rest, gpu_side)
        if multi_gpu:
            for gpu, grp in g.groupby(g["gpu"], sort=True):
                lanes += _group_lanes(f"GPU{gpu} {gpu_label.removeprefix('GPU ')}", f"GPU {max(int(gpu), 0)}", grp)
        elif len(g):
            lanes += _group_lanes(gpu_label, "GPU 0", g, is_side=side[gpu_side])
        lanes += _group_lanes(cpu_label, "CPU", _rows(rest, ~gpu_side), spill=cpu_spill, is_side=side[~gpu_side])
    return lanes

"""Give log-derived phases their worker, from the TIMELINE's per-worker GPU intervals.

CUZK_TIMING lines do not say which worker printed them, but TIMELINE GPU_START..GPU_END
intervals do (worker=<w>). A GPU-side phase (upload, compute, barrier) whose midpoint lies
in a worker's GPU interval is that worker's; a lock wait belongs to the worker whose GPU
interval starts when the wait ends. CPU-side phases (prep, split_vectors, b_g2_msm) run on
other threads and stay unattributed. Phases already attributed are left alone.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from gpuscope.analysis.evidence.log import phases as ph
from gpuscope.analysis.evidence.log.stamps import place_unstamped

if TYPE_CHECKING:
    from gpuscope.schemas import Columns
    from gpuscope.sources import Source

GPU_SIDE = {"h2d", "ntt", "ntt_kernels", "coset_intt_sync", "msm", "barrier", "batch_add", "tail_msm", "d_b_alloc",
            "msm_init", "msm_dtor"}
LOCK_WAIT = {"lock_wait"}


def attribute_workers(phases: pd.DataFrame, worker_intervals: pd.DataFrame, *, tolerance_s: float = 0.05) -> pd.DataFrame:
    """Copy of `phases` with `worker` filled where the TIMELINE tells it.

    `worker_intervals`: rows with worker >= 0, t_start, t_end (epoch s): the TIMELINE's
    `gpu` phases (gpuscope.analysis.evidence.log.phases.from_timeline).
    """
    out = phases.copy()
    if not len(out) or worker_intervals is None or not len(worker_intervals):
        return out
    wi = worker_intervals[worker_intervals["worker"] >= 0].sort_values("t_start")
    if not len(wi):
        return out
    ws = wi["t_start"].to_numpy(float)
    we = wi["t_end"].to_numpy(float)
    ww = wi["worker"].to_numpy(np.int64)
    todo = (out["worker"] < 0).to_numpy()
    phase = out["phase"].astype(str).to_numpy()
    st = out["t_start"].to_numpy(float)
    en = out["t_end"].to_numpy(float)
    workers = out["worker"].to_numpy(np.int64).copy()

    gpu_side = todo & np.isin(phase, list(GPU_SIDE))
    mid = (st + en) / 2
    k = np.searchsorted(ws, mid, side="right") - 1
    ok = gpu_side & (k >= 0)
    kk = np.clip(k, 0, None)
    inside = ok & (mid <= we[kk] + tolerance_s)
    workers[inside] = ww[kk[inside]]

    lock = todo & np.isin(phase, list(LOCK_WAIT))
    j = np.searchsorted(ws, en - tolerance_s, side="left")
    jj = np.clip(j, 0, len(ws) - 1)
    near = lock & (j < len(ws)) & (np.abs(ws[jj] - en) <= tolerance_s)
    workers[near] = ww[jj[near]]

    out["worker"] = workers
    return out


def display_phases(source: Source) -> tuple[pd.DataFrame, str | None]:
    """The phase table to draw or export for a source, and where it came from.

    spans.csv when the run has it; else the phases rebuilt from timestamped timing lines,
    given their workers from the TIMELINE's GPU intervals and completed by its synthesis
    intervals; else the TIMELINE intervals alone. Lines the log did not stamp are placed
    between their stamped neighbours first (gpuscope.analysis.evidence.log.stamps), and the basis says so.
    """

    parsed = source.require_log()
    timeline, note = parsed.timeline, ""
    # the components as columns (codes for the names): a 10^6-line log's frame of 3M rows is
    # built only when some of its lines must be placed; the columns made for the phases (its
    # stamps, lines, workers...) are not kept after them (Columns.transient)
    columns = parsed.columns("components")
    with columns.transient():
        comps: pd.DataFrame | Columns = columns
        unstamped = bool(np.isnan(np.asarray(comps["ts"], dtype="float64")).any() or timeline["ts"].isna().any())
        if (source.spans is None or not len(source.spans)) and unstamped:
            placed = place_unstamped(parsed.components, timeline, source.model)
            if placed is not None:
                comps, timeline = placed.components, placed.timeline
                note = (f" ({placed.lines_placed} unstamped lines placed between their stamped neighbours, "
                        f"within {placed.uncertainty_s:.2f} s)")
        base, basis = ph.build_phases(source.spans, comps, timeline, source.model, display=True)
        del comps
    if basis is None or basis == "spans.csv":
        return base, basis
    tl = ph.from_timeline(timeline)
    if not len(tl) or basis.startswith("TIMELINE"):
        return base, basis + note
    out = attribute_workers(base, tl[tl["phase"] == "gpu"])
    if not (out["phase"] == "synth").any():
        out = pd.concat([out, tl[tl["phase"] == "synth"]], ignore_index=True)
    return out, basis + " + TIMELINE workers and synthesis" + note

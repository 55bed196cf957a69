"""Which part of the program lines up with the GPU's idle time: timing-line phases against
the classed sample intervals of gpuscope.analysis.evidence.samples.activity.

For each phase type (a PHASE_SCHEMA frame: from spans.csv, time-stamped timing lines or a
trace), on each GPU it applies to (gpu -1: every GPU):

    phase_s          merged length of the phase's intervals inside the recording
    idle_s           of it, time in SM-idle intervals (transferring, idle_quiet, idle)
    idle_quiet_s     of it, time with SMs idle and PCIe quiet (the host not feeding the GPU)
    transferring_s   of it, time with SMs idle and PCIe busy
    idle_weighted_s  sum of overlap x (1 - activity) over the sample intervals: the idle time
                     the readings imply, also where a phase is shorter than a reading (a
                     reading averages its whole window, so a short phase gets its window's)
    share_of_idle    idle_weighted_s / the idle-weighted time from the first sign of GPU work
                     or phase start to the last (start-up before either is left out)
    idle_share_of_phase  idle_weighted_s / phase_s

sorted by idle_weighted_s, largest first. Phases can overlap each other (synthesis beside
uploads), so shares need not add up to 1.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from gpuscope.analysis.evidence import intervals as iv
from gpuscope.analysis.evidence.samples import samplegrid as sg

if TYPE_CHECKING:
    from gpuscope.analysis.evidence.samples.activity import Activity

IDLE_OVERLAP_COLUMNS = ["phase", "phase_s", "idle_s", "idle_quiet_s", "transferring_s", "idle_weighted_s",
                        "share_of_idle", "idle_share_of_phase"]


def _empty() -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series(dtype=object if c == "phase" else "float64") for c in IDLE_OVERLAP_COLUMNS})


def idle_by_component(phases: pd.DataFrame | None, activity: Activity | pd.DataFrame) -> pd.DataFrame:
    """Overlap of each phase type with the idle time of `activity`: an activity.Activity, or
    its classed intervals alone (ACTIVITY_INTERVAL_SCHEMA; then there are no activity values,
    so idle_weighted_s = idle_s and the span starts at the first non-idle interval)."""
    if phases is None or not len(phases):
        return _empty()
    acc: dict[str, np.ndarray] = {}
    idle_total = 0.0
    for gpu, ts, te, cls, w, active in _per_gpu(activity):
        grid_iv = (ts, te)
        mine = phases[(phases["gpu"] < 0) | (phases["gpu"] == gpu)]
        idle_total += float(np.sum(iv.overlaps(grid_iv, _hull(active, mine)) * w))
        rec = (ts[:1], te[-1:])
        idle = np.isin(cls, sg.SM_IDLE_CLASSES)
        for phase, sub in mine.groupby("phase", sort=True):
            merged = iv.merge(sub["t_start"].to_numpy(), sub["t_end"].to_numpy())
            ov = iv.overlaps(grid_iv, merged)
            row = np.array([
                iv.intersection_length(merged, rec),
                float(ov[idle].sum()),
                float(ov[cls == "idle_quiet"].sum()),
                float(ov[cls == "transferring"].sum()),
                float(np.sum(ov * w)),
            ])
            acc[str(phase)] = acc.get(str(phase), np.zeros(5)) + row
    if not acc:
        return _empty()
    rows = []
    for phase, (phase_s, idle_s, quiet_s, xfer_s, weighted) in acc.items():
        rows.append({"phase": phase, "phase_s": phase_s, "idle_s": idle_s, "idle_quiet_s": quiet_s,
                     "transferring_s": xfer_s, "idle_weighted_s": weighted,
                     "share_of_idle": weighted / idle_total if idle_total > 0 else float("nan"),
                     "idle_share_of_phase": weighted / phase_s if phase_s > 0 else float("nan")})
    out = pd.DataFrame(rows, columns=IDLE_OVERLAP_COLUMNS)
    return out.sort_values(["idle_weighted_s", "phase"], ascending=[False, True], kind="stable").reset_index(drop=True)


def _per_gpu(activity: Activity | pd.DataFrame) -> Iterator[tuple]:
    """(gpu, t_start, t_end, class, idle weight, (active start, end) or None) per GPU."""
    if isinstance(activity, pd.DataFrame):
        for gpu, rows in activity.groupby("gpu", sort=True):
            rows = rows.sort_values("t_start")
            cls = rows["class"].to_numpy(dtype=object)
            ts, te = rows["t_start"].to_numpy(dtype="float64"), rows["t_end"].to_numpy(dtype="float64")
            busy = np.flatnonzero(~np.isin(cls, (*sg.SM_IDLE_CLASSES, "unknown")))
            active = (ts[busy[0]], te[busy[-1]]) if busy.size else None
            yield int(gpu), ts, te, cls, np.isin(cls, sg.SM_IDLE_CLASSES).astype("float64"), active
        return
    for ga in activity.gpus:
        g = ga.grid
        if g.n == 0:
            continue
        a = ga.figures.get("active")
        w = np.where(np.isfinite(g.activity), 1.0 - g.activity, 0.0)
        yield ga.gpu, g.t_start, g.t_end, g.cls, w, (a["t_start"], a["t_end"]) if a else None


def _hull(active: tuple[float, float] | None, phases: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """[first sign of work or phase start, last sign of work or phase end] of one GPU."""
    lo = [active[0]] if active else []
    hi = [active[1]] if active else []
    if len(phases):
        lo.append(float(phases["t_start"].min()))
        hi.append(float(phases["t_end"].max()))
    if not lo:
        return np.zeros(0), np.zeros(0)
    return np.array([min(lo)]), np.array([max(hi)])

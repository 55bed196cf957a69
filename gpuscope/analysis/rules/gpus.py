"""Several GPUs in one recording: one working while another waits is a finding (`gpu_imbalance`),
and so is one GPU's uploads running slower than another's (`upload_imbalance`).

Over the GPUs of one samples file, each GPU's busy fraction over the common span (the first
to the last sample of any GPU; a GPU with no work counts 0): when the least busy one is below
IMBALANCE_RATIO of the busiest, and the busiest is at least MIN_BUSY. Severity medium, high
when a GPU did no work at all. Nothing is summed over GPUs: each GPU's own figure is named.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from gpuscope.analysis.core import Diagnosis
from gpuscope.analysis.rules.device import Finding, rnd
from gpuscope.analysis.rules.engine import SAMPLES, TRACE, rule

if TYPE_CHECKING:
    from gpuscope.analysis.evidence import Evidence
    from gpuscope.analysis.evidence.samples.activity import Activity

IMBALANCE_RATIO = 0.5
MIN_BUSY = 0.2
UPLOAD_RATIO = 0.5  # upload_imbalance: the slowest GPU's resolved upload rate below this x the fastest's


def _busy_over(g, t0: float, t1: float) -> float:
    """Time-weighted activity of a GPU's grid over [t0, t1] (time without a reading counts idle)."""
    lo, hi = np.maximum(g.t_start, t0), np.minimum(g.t_end, t1)
    cover = np.clip(hi - lo, 0.0, None)
    x = np.nan_to_num(g.activity)
    return float(np.sum(x * cover) / (t1 - t0)) if t1 > t0 else float("nan")


def gpu_imbalance(activity: Activity) -> list[tuple[Diagnosis, float]]:
    gpus = [ga for ga in activity.gpus if ga.grid.n]
    if len(gpus) < 2:
        return []
    t0 = min(float(ga.grid.t_start[0]) for ga in gpus)
    t1 = max(float(ga.grid.t_end[-1]) for ga in gpus)
    busy = {ga.gpu: _busy_over(ga.grid, t0, t1) for ga in gpus}
    hi_gpu = max(busy, key=lambda k: busy[k])
    lo_gpu = min(busy, key=lambda k: busy[k])
    top, low = busy[hi_gpu], busy[lo_gpu]
    if not (top >= MIN_BUSY and low < IMBALANCE_RATIO * top):
        return []
    idle = [ga.gpu for ga in gpus if ga.fig.active is None]
    sev = "high" if idle else "medium"
    src = {ga.fig.source for ga in gpus}
    what = "SM activity" if src == {"gpm_sm_active"} else "activity (utilization.gpu where no GPM)"
    ev = {"span_s": rnd(t1 - t0), "busy_by_gpu": {str(k): rnd(v) for k, v in busy.items()}, "busiest_gpu": hi_gpu,
          "least_busy_gpu": lo_gpu, "ratio": rnd(low / top), "idle_gpus": idle, "gpus": sorted(busy),
          "thresholds": {"ratio": IMBALANCE_RATIO, "min_busy": MIN_BUSY},
          "could_not_see": ("why the idle one waits (its own input, a collective waiting for the slowest rank, "
                            "or no work assigned): per-rank timing lines or profiler traces tell")}
    each = ", ".join(f"GPU {k} {v:.0%}" for k, v in sorted(busy.items()))
    summary = (f"GPUs unevenly loaded over the same {t1 - t0:.1f} s: {what} {each}; GPU {lo_gpu} is at "
               f"{low / top:.0%} of GPU {hi_gpu}'s" + (f"; GPU {', '.join(map(str, idle))} did no work." if idle else "."))
    rec = ("Balance the work: give every GPU the same share (equal batch or shard sizes), check that every rank "
           "is placed on its own GPU (CUDA_VISIBLE_DEVICES, LOCAL_RANK), and look for a rank that waits in a "
           "collective for a straggler.")
    return [(Diagnosis("gpu_imbalance", sev, summary, ev, rec), 1.0 - low / top)]


def upload_imbalance(activity: Activity) -> list[tuple[Diagnosis, float]]:
    """The GPUs' uploads at different rates: each GPU's rate inside its resolved RX bursts (the
    samples' only honest rate); fires when the slowest is below UPLOAD_RATIO of the fastest."""
    rates = {}
    for ga in activity.gpus:
        b = ga.fig.pcie.rx["bursts"]
        inside = b["interior_gbs_median"] or np.nan
        if b["resolved"] and np.isfinite(inside):
            rates[ga.gpu] = (float(inside), float(b["total_s"]))
    if len(rates) < 2:
        return []
    fast = max(rates, key=lambda k: rates[k][0])
    slow = min(rates, key=lambda k: rates[k][0])
    if not rates[slow][0] < UPLOAD_RATIO * rates[fast][0]:
        return []
    slow_ga = activity.gpu(slow)
    active = slow_ga.fig.active if slow_ga is not None else None
    work = (active.working_s if active is not None else None) or 0.0
    share = rates[slow][1] / work if work > 0 else 0.0
    ev = {"upload_gbs_by_gpu": {str(k): rnd(v[0], 2) for k, v in rates.items()}, "fastest_gpu": fast,
          "slowest_gpu": slow, "ratio": rnd(rates[slow][0] / rates[fast][0]), "gpus": sorted(rates),
          "thresholds": {"ratio": UPLOAD_RATIO},
          "could_not_see": ("the host memory kind of each GPU's uploads (a trace names it), and the link each GPU "
                            "hangs off (gpuscope info: a narrower slot, or a GPU on the other socket)")}
    each = ", ".join(f"GPU {k} {v[0]:.1f} GB/s" for k, v in sorted(rates.items()))
    summary = (f"Uploads run at different rates on the GPUs: {each} (inside the copies); GPU {slow}'s at "
               f"{rates[slow][0] / rates[fast][0]:.0%} of GPU {fast}'s.")
    rec = ("Give the slow GPU's uploads the same path as the fast one's: pinned host buffers for every rank, "
           "the rank's memory on the GPU's own NUMA node (numactl / the launcher's binding), and a full-width link "
           "(gpuscope info).")
    return [(Diagnosis("upload_imbalance", "medium", summary, ev, rec), share)]


@rule("gpu_imbalance", needs=SAMPLES, uses=("compute",), emits={"gpu_imbalance": "imbalance"})
def gpu_imbalance_rule(ev: Evidence) -> list[Finding]:
    assert ev.activity is not None
    return gpu_imbalance(ev.activity)


@rule("upload_imbalance", needs=SAMPLES, uses=("copies",), emits={"upload_imbalance": "imbalance"}, yields_to=TRACE)
def upload_imbalance_rule(ev: Evidence) -> list[Finding]:
    assert ev.activity is not None
    return upload_imbalance(ev.activity)

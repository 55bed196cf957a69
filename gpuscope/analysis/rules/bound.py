"""What bounds the GPU while it works, from the pipe that is full (GPM readings of one GPU).

Over the working time's intervals with SM activity >= samplegrid.SM_IDLE (the time the GPU
computed; samplegrid.pipes_while_computing), time-weighted:

    memory_bound     DRAM active >= PIPE_FULL
    compute_bound    tensor active >= PIPE_FULL (tensor cores), else an FP16/FP32/FP64 pipe >= PIPE_FULL
    occupancy_bound  SM active >= SM_BUSY, SM occupancy < OCCUPANCY_LOW, every pipe read < PIPE_LOW
                     (few warps resident, each waiting on its own dependent chain: latency-bound)
    gpu_busy         no pipe full, or no pipe read (utilization.gpu, or a sampler without the pipe
                     columns), while the working time's mean activity >= OLD_BUSY and computing
                     >= OLD_SHARE of it: busy, the bound not shown, and it says so

Only when the GPU computed at least MIN_COMPUTING_SHARE of the working time and over at least
MIN_READINGS readings. SM activity alone never names compute-bound: GPM SM activity is high
for memory-bound kernels too. All info: being bound by the GPU is where a tuned program ends;
the advice says what moves that bound. docs/ANALYZE.md documents the thresholds.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

import numpy as np

from gpuscope.analysis.core import Diagnosis
from gpuscope.analysis.evidence.samples import samplegrid as sg
from gpuscope.analysis.rules.device import Finding, finite, rnd
from gpuscope.analysis.rules.engine import SAMPLES, rule
from gpuscope.analysis.rules.per_gpu import per_gpu

if TYPE_CHECKING:
    from gpuscope.analysis.evidence import Evidence
    from gpuscope.analysis.evidence.samples.context import SampleContext
    from gpuscope.analysis.evidence.samples.figures import ActiveFigures, GpuFigures

PIPE_FULL = sg.PIPE_FULL   # a pipe this active while the SMs work is what bounds them
PIPE_LOW = 0.3             # ... and under this, it is not close
SM_BUSY = 0.6              # SM activity while computing, for occupancy_bound and gpu_busy
OCCUPANCY_LOW = 0.05       # SM occupancy (resident warps / max) under this: latency-bound
MIN_COMPUTING_SHARE = 0.3  # computing time / working time
MIN_READINGS = 3           # readings of computing time (resolution_s each)
FP_PIPES = ("fp16_active", "fp32_active", "fp64_active")
OLD_BUSY, OLD_SHARE = 0.6, 0.9  # gpu_busy without pipes: working-time activity and computing share


def _pct(x: float | None) -> str:
    return "-" if not finite(x) else f"{x:.0%}"


def _pipes_line(p: dict) -> str:
    names = (("dram_active", "DRAM"), ("tensor_active", "tensor"), ("fp16_active", "FP16"),
             ("fp32_active", "FP32"), ("fp64_active", "FP64"), ("sm_occupancy", "occupancy"))
    return ", ".join(f"{label} {_pct(p[k])}" for k, label in names if k in p and p[k] is not None)


def gpu_bound(f: GpuFigures, g: sg.Grid, working: np.ndarray, ctx: SampleContext) -> Finding | None:
    a = f.active
    if a is None or not a.working_s:
        return None
    if f.source != "gpm_sm_active":
        return _busy_unshown(f, a, None)
    # (a PipesDoc's values are all float | None: read as the mapping pipes_while_computing gives)
    p = cast("dict[str, float | None]", a.pipes) if a.pipes else sg.pipes_while_computing(g, working)
    comp_s, work_s = float(p["computing_s"] or 0.0), float(a.working_s)
    res = f.resolution_s if finite(f.resolution_s) else 0.0
    share = comp_s / work_s if work_s else 0.0
    if share < MIN_COMPUTING_SHARE or comp_s < MIN_READINGS * res:
        return None
    ev: dict[str, Any] = {"computing_s": rnd(comp_s), "computing_share": rnd(share), "working_s": rnd(work_s),
          "while_computing": {k: rnd(v, 3) for k, v in p.items() if k != "computing_s" and v is not None},
          "source": f.source, "resolution_s": rnd(f.resolution_s),
          "thresholds": {"pipe_full": PIPE_FULL, "pipe_low": PIPE_LOW, "sm_busy": SM_BUSY,
                         "occupancy_low": OCCUPANCY_LOW},
          "could_not_see": ("GPM averages each reading's window: which kernel filled the pipe needs a profiler "
                            "trace (kernel names and durations) or Nsight Compute")}
    dram, tensor = p.get("dram_active"), p.get("tensor_active")
    fps: list[tuple[str, float]] = [(k, float(v)) for k in FP_PIPES if (v := p.get(k)) is not None]
    fp_name, fp_val = max(fps, key=lambda kv: kv[1]) if fps else ("", None)
    sm, occ = p.get("sm_active"), p.get("sm_occupancy")
    pipes = _pipes_line(p)
    over = f"while it computed ({comp_s:.1f} s, {share:.0%} of the working time)"
    if finite(dram) and dram >= PIPE_FULL and not (finite(tensor) and float(tensor) > dram):
        return (Diagnosis("memory_bound", "info",
                          f"Memory-bound: DRAM active {dram:.0%} {over}; {pipes}.", ev,
                          "DRAM bandwidth is the limit: make fewer passes over memory (fuse element-wise ops, "
                          "e.g. torch.compile; keep intermediates in registers/shared memory), move fewer bytes "
                          "(lower precision, in-place ops); faster math will not help."), share)
    if finite(tensor) and tensor >= PIPE_FULL:
        return (Diagnosis("compute_bound", "info",
                          f"Compute-bound on the tensor cores: tensor pipe active {tensor:.0%} {over}; {pipes}.", ev,
                          "The tensor cores are the limit: a lower precision (FP8 where accuracy allows), less "
                          "work (smaller models, sparsity), or more GPUs."), share)
    if fp_val is not None and fp_val >= PIPE_FULL:
        label = fp_name.split("_")[0].upper()
        return (Diagnosis("compute_bound", "info",
                          f"Compute-bound on the {label} pipe: {fp_val:.0%} active {over}; {pipes}.", ev,
                          "The arithmetic pipes are the limit: move the math to tensor cores (matmul-shaped work in "
                          "BF16/TF32), a lower precision, or fewer operations."), share)
    read = [float(v) for k in ("dram_active", "tensor_active", *FP_PIPES) if (v := p.get(k)) is not None]
    if finite(sm) and sm >= SM_BUSY and finite(occ) and occ < OCCUPANCY_LOW and read and max(read) < PIPE_LOW \
            and tensor is not None:
        return (Diagnosis("occupancy_bound", "info",
                          f"Latency/occupancy-bound: SMs active {sm:.0%} but occupancy {occ:.1%} {over}, every pipe "
                          f"well below full ({pipes}): few warps per SM, each waiting on its own work.", ev,
                          "Give the GPU more parallel work: more threads or blocks per launch (a larger batch, a "
                          "grid that fills every SM several times), fewer registers per thread, independent "
                          "operations instead of one dependent chain."), share)
    if finite(sm) and sm >= SM_BUSY and _busy_all_along(a):
        why = ("no pipe is full" if tensor is not None else
               "the samples hold no tensor/FP pipe readings (a sampler before the GPM pipe columns)")
        ev["could_not_see"] = f"{why}: what bounds the kernels is not shown; " + ev["could_not_see"]
        return (Diagnosis("gpu_busy", "info",
                          f"GPU busy: SMs active {sm:.0%} {over}; {pipes}; {why}, so the bound is not shown.", ev,
                          "A profiler trace or Nsight Compute names the kernels and what limits them."), share)
    return None


def _busy_all_along(a: ActiveFigures) -> bool:
    """The working time mostly computing (the bar the bound-less finding keeps): mean activity >= OLD_BUSY
    and computing (with or without copies) >= OLD_SHARE of it."""
    comp = (a.classes.get("computing") or 0.0) + (a.classes.get("both") or 0.0)
    return finite(a.busy_fraction) and a.busy_fraction >= OLD_BUSY and comp >= OLD_SHARE


def _busy_unshown(f: GpuFigures, a: ActiveFigures, p: dict | None) -> Finding | None:
    """utilization.gpu only says a kernel ran: busy, with the bound unknown."""
    busy = a.busy_fraction
    comp = (a.classes.get("computing") or 0.0) + (a.classes.get("both") or 0.0)
    if not (finite(busy) and busy >= OLD_BUSY and comp >= OLD_SHARE):
        return None
    ev = {"busy_fraction": rnd(busy), "computing_share": rnd(comp), "working_s": rnd(a.working_s),
          "source": f.source,
          "could_not_see": ("utilization.gpu says only that a kernel ran in each window: not how busy the SMs were, "
                            "nor which pipe (DRAM, tensor, FP) bounds them; GPM readings (gpuscope record) tell")}
    return (Diagnosis("gpu_busy", "info",
                      f"Kernels ran {busy:.0%} of the {a.working_s:.1f} s of work; utilization.gpu cannot say "
                      "whether they filled the GPU or which pipe bounds it.", ev,
                      "Record with gpuscope record (GPM SM, DRAM and tensor activity) to tell memory- from "
                      "compute-bound."), comp)


@rule("gpu_bound", needs=SAMPLES, uses=("compute",),
      emits={"memory_bound": "memory_bound", "compute_bound": "compute_bound", "occupancy_bound": "occupancy_bound",
             "gpu_busy": "gpu_busy"})
def gpu_bound_rule(ev: Evidence) -> list[Finding]:
    return per_gpu(ev, gpu_bound)

"""What bounds the GPU while it works, from a profiler trace: the kernels' names and durations.

A trace has no pipe counters (no DRAM or tensor activity), so the bound is read from what the
kernels are, at the confidence names allow, and said so:

    compute_bound   >= MIX_SHARE of kernel time in matrix kernels (GEMM, convolution, attention:
                    cuBLAS/cuDNN/CUTLASS/nvjet names), the GPU computing >= MIX_BUSY of the span
    memory_bound    >= MIX_SHARE in streaming kernels (element-wise, reductions, copies, fills,
                    normalisations: a pass over memory each), likewise

Otherwise nothing: a mix of both says no bound. The samples' GPM pipes are the finer evidence
(rules/bound.py); where a recording is beside the trace its rule speaks and this one yields.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from gpuscope.analysis.core import Diagnosis
from gpuscope.analysis.rules.engine import SAMPLES, TRACE, Finding, rule, span_findings

if TYPE_CHECKING:
    from gpuscope.analysis.evidence import Evidence
    from gpuscope.analysis.evidence.trace.rule_input import TraceRuleInput

MIX_SHARE = 0.7   # of kernel time in one family
MIX_BUSY = 0.5    # the GPU computing at least this share of the traced span
_MATRIX = re.compile(r"gemm|cutlass|wgmma|hmma|xmma|nvjet|cublas|matmul|conv|implicit_|fmha|flash|attention|"
                     r"sm\d\d_xmma|_mma|splitk", re.I)
_STREAM = re.compile(r"elementwise|reduce|reduction|copy|fill|memset|cat_|index|scatter|gather|"
                     r"norm|softmax|dropout|transpose|unary|binary|foreach", re.I)


def family(name: str) -> str:
    """matrix | streaming | other, from a kernel's name."""
    if _MATRIX.search(name):
        return "matrix"
    if _STREAM.search(name):
        return "streaming"
    return "other"


def _families(names: pd.Series) -> dict[str, np.ndarray]:
    """family -> which of the kernels (`names`) are of it: per category of a categorical column."""
    if isinstance(names.dtype, pd.CategoricalDtype) and not bool((names.cat.codes < 0).any()):
        fam = np.array([family(str(c)) for c in names.cat.categories], dtype=object)
        codes = names.cat.codes.to_numpy()
        return {f: (fam == f)[codes] if len(fam) else np.zeros(len(codes), dtype=bool)
                for f in ("matrix", "streaming", "other")}
    each = names.astype(str).map(family).to_numpy()
    return {f: each == f for f in ("matrix", "streaming", "other")}


def kernel_mix(inp: TraceRuleInput) -> list[Diagnosis]:
    g = inp.gpu
    if not len(g):
        return []
    # the kernels' two columns read, not their rows copied (at 10M kernels a frame of them was
    # ~0.7 GB, twice over with the family column assigned), each name's family found once
    kern = (g["kind"] == "kernel").to_numpy(dtype=bool)
    busy = inp.busy_fraction
    if not kern.any() or busy is None or busy < MIX_BUSY:
        return []
    dur = pd.Series(g["dur_us"].to_numpy()[kern]).astype(float).clip(lower=0.0)
    total = float(dur.sum())
    if total <= 0:
        return []
    names = pd.Series(g["name"].array[kern])
    share = {f: float(dur[is_f].sum()) / total for f, is_f in _families(names).items()}
    top = dur.groupby(names).sum().sort_values(ascending=False)
    examples = {f: [n for n in top.index if family(str(n)) == f][:2] for f in ("matrix", "streaming")}
    ev = {"kernel_ms": round(total / 1e3, 3), "busy_fraction": round(busy, 4),
          "matrix_share": round(share["matrix"], 4), "streaming_share": round(share["streaming"], 4),
          "other_share": round(share["other"], 4), "thresholds": {"mix_share": MIX_SHARE, "mix_busy": MIX_BUSY},
          "basis": "kernel names and durations (a trace has no pipe counters)",
          "could_not_see": ("how full the DRAM or tensor pipes were: a recording with GPM (gpuscope record) "
                            "or Nsight Compute measures it")}
    # (family, finding id, its summary, its advice): the first family over MIX_SHARE names the bound
    verdicts = (
        ("matrix", "compute_bound",
         f"Compute-bound on matrix kernels (likely, by kernel names): {share['matrix']:.0%} of the kernel time is "
         f"GEMM/convolution/attention kernels while the GPU computed {busy:.0%} of the traced span; a trace "
         "cannot show how full the tensor pipes were.",
         "The matrix math is the limit: a lower precision (BF16/FP8 where accuracy allows), less work (smaller "
         "models, sparsity), or more GPUs; a recording's tensor activity would confirm the pipes are full."),
        ("streaming", "memory_bound",
         f"Memory-bound (likely, by kernel names): {share['streaming']:.0%} of the kernel time is element-wise, "
         f"reduction and copy kernels, each a pass over memory, while the GPU computed {busy:.0%} of the traced "
         "span; a trace cannot show DRAM activity.",
         "Make fewer passes over memory: fuse the element-wise ops (torch.compile), keep intermediates on chip, "
         "move fewer bytes (lower precision, in-place ops); a recording's DRAM activity would confirm it."),
    )
    for fam_name, ident, summary, advice in verdicts:
        if share[fam_name] >= MIX_SHARE:
            ev["examples"] = [str(n)[:120] for n in examples[fam_name]]
            return [Diagnosis(ident, "info", summary, ev, advice)]
    return []


# the bound by kernel names; the samples' GPM pipes are finer: beside a recording this one yields
@rule("kernel_mix", needs=TRACE, uses=("compute",), yields_to=SAMPLES,
      emits={"compute_bound": "compute_bound", "memory_bound": "memory_bound"})
def kernel_mix_rule(ev: Evidence) -> list[Finding]:
    return span_findings(kernel_mix(ev.trace_input))

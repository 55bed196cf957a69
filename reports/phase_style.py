"""How each phase is named and coloured in the PNG timeline and the Perfetto trace.

Phase names are those of spans.csv (docs/ARCHITECTURE.md) plus the coarser ones a log
without spans yields (a GPU-lock tenure, a TIMELINE GPU interval). Unknown names are
kept and drawn in grey.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuscope.analysis.names import GPU_RANGE_PREFIX, RANGE_PREFIX, guess_role


@dataclass(frozen=True)
class PhaseStyle:
    label: str       # legend / slice name
    color: str       # matplotlib colour
    group: str       # synthesis | lock_wait | upload | compute | barrier | cpu | held | other
    row: str = "main"  # main: the worker's lane; side: the thin CPU row under it (prep thread)
    hatch: str = ""    # matplotlib hatch: a phase that is partly something else (upload + NTT)


STYLES: dict[str, PhaseStyle] = {
    "synth": PhaseStyle("synthesis (CPU)", "#59a14f", "synthesis"),
    "lock_wait": PhaseStyle("lock wait", "#d3d3d3", "lock_wait"),
    "mutex_wait": PhaseStyle("lock wait", "#d3d3d3", "lock_wait"),
    "h2d": PhaseStyle("upload H2D", "#e15759", "upload"),
    "upload": PhaseStyle("upload H2D", "#e15759", "upload"),
    "ntt": PhaseStyle("NTT", "#9ecae1", "compute"),
    # a CuZK log's own fields where spans.csv's words would claim more (analysis.phases)
    "ntt_kernels": PhaseStyle("upload + NTT (ntt_kernels; no h2d field)", "#e15759", "upload", hatch="////"),
    "coset_intt_sync": PhaseStyle("NTT sync (coset_intt_sync)", "#c6dbef", "compute"),
    "msm": PhaseStyle("MSM", "#3182bd", "compute"),
    "batch_add": PhaseStyle("batch_add", "#6baed6", "compute"),
    "tail_msm": PhaseStyle("tail MSM", "#08519c", "compute"),
    "gpu": PhaseStyle("GPU (start..end)", "#4e79a7", "held"),
    "held": PhaseStyle("GPU lock held", "#4e79a7", "held"),
    "tenure": PhaseStyle("GPU lock held", "#4e79a7", "held"),
    "mutex_held": PhaseStyle("GPU lock held", "#4e79a7", "held"),
    "barrier": PhaseStyle("barrier (GPU idle, waits on CPU prep)", "#f28e2b", "barrier"),
    "barrier_wait": PhaseStyle("barrier (GPU idle, waits on CPU prep)", "#f28e2b", "barrier"),
    "d_b_alloc": PhaseStyle("GPU setup (alloc, MSM init)", "#bab0ac", "compute"),
    "msm_init": PhaseStyle("GPU setup (alloc, MSM init)", "#bab0ac", "compute"),
    "msm_dtor": PhaseStyle("GPU setup (alloc, MSM init)", "#bab0ac", "compute"),
    "split_vectors": PhaseStyle("CPU before the lock", "#edc948", "cpu"),
    "pre_lock_cpu": PhaseStyle("CPU before the lock", "#edc948", "cpu"),
    "b_g2_msm": PhaseStyle("CPU after the lock (b_g2_msm)", "#ff9da7", "cpu"),
    "prep": PhaseStyle("prep (CPU thread)", "#b07aa1", "cpu", row="side"),
    "prep_msm": PhaseStyle("prep (CPU thread)", "#b07aa1", "cpu", row="side"),
    # a profiler trace's stream activity (gpuscope.analysis.evidence.trace.trace_phases)
    "kernel": PhaseStyle("kernels", "#3182bd", "compute"),
    "d2h": PhaseStyle("download D2H", "#76b7b2", "upload"),
    "memcpy": PhaseStyle("copy (device)", "#9c755f", "upload"),
    "memset": PhaseStyle("memset", "#bab0ac", "compute"),
    "ProfilerStep": PhaseStyle("profiler step", "#e6e6e6", "other"),
    # names other programs print (format `lines`): GPU work on the GPU lane, the rest on the CPU's
    "compute": PhaseStyle("compute", "#3182bd", "compute"),
    "forward": PhaseStyle("forward", "#6baed6", "compute"),
    "fwd": PhaseStyle("forward", "#6baed6", "compute"),
    "backward": PhaseStyle("backward", "#08519c", "compute"),
    "bwd": PhaseStyle("backward", "#08519c", "compute"),
    "optimizer": PhaseStyle("optimizer", "#9ecae1", "compute"),
    "data": PhaseStyle("data (host)", "#b07aa1", "cpu"),
    # the part of a printed line's whole its fields do not itemise (analysis.phases)
    "other": PhaseStyle("other (not itemised)", "#9d9d9d", "other"),
}

# A phase the table does not name (a user's record_function range, a timing line's own
# component) is coloured by the role its name suggests, and keeps its own name.
ROLE_COLOR = {"h2d": "#f1a3a4", "gpu_compute": "#9ecae1", "cpu": "#f1ce63", "cpu_stall": "#f7b87b",
              "contention": "#d3d3d3"}
MAX_LABEL = 40
# A name without a role gets its own colour from these (by a hash of the name: the same name,
# the same colour, in every picture), never the grey of `other`, which it would read as.
NAMED_COLORS = ("#86bcb6", "#d4a6c8", "#b6992d", "#499894", "#a0cbe8", "#ffbe7d", "#8cd17d", "#d37295",
                "#79706e", "#9c755f")


def _named_color(name: str) -> str:
    import zlib

    return NAMED_COLORS[zlib.crc32(name.encode("utf-8", "surrogatepass")) % len(NAMED_COLORS)]

# Legend order: the pipeline's order.
ORDER = ["synth", "split_vectors", "lock_wait", "h2d", "ntt_kernels", "d_b_alloc", "ntt", "coset_intt_sync", "msm", "barrier", "batch_add",
         "tail_msm", "b_g2_msm", "prep", "gpu", "held"]


def style_for(phase: str) -> PhaseStyle:
    s = STYLES.get(phase)
    if s is not None:
        return s
    if phase.startswith(GPU_RANGE_PREFIX):  # the same range as it ran on the GPU: under its stream
        cpu = style_for(RANGE_PREFIX + phase[len(GPU_RANGE_PREFIX):])
        return PhaseStyle(cpu.label, cpu.color, "cpu", row="side")
    if phase.startswith(RANGE_PREFIX):  # a profiler trace's record_function range: the user's name, CPU side
        name = phase[len(RANGE_PREFIX):]
        if name == "ProfilerStep":
            return STYLES["ProfilerStep"]
        label = name if len(name) <= MAX_LABEL else name[: MAX_LABEL - 1] + "…"
        return PhaseStyle(label, ROLE_COLOR.get(guess_role(name) or "") or _named_color(name), "cpu")

    label = phase if len(phase) <= MAX_LABEL else phase[: MAX_LABEL - 1] + "…"
    return PhaseStyle(label, ROLE_COLOR.get(guess_role(phase) or "") or _named_color(phase), "other")


def order_key(phase: str) -> tuple[int, str]:
    label = style_for(phase).label
    for i, name in enumerate(ORDER):
        if style_for(name).label == label:
            return i, label
    return len(ORDER), label

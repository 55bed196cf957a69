"""The upload rules: `h2d_bound` (the uploads' share of the held time, its variation, the
projection at the line rate, and advice that depends on how near the line the uploads already
run) and `pcie_underused` (uploads well below the line rate, by the log's own bytes/time or
the PCIe RX samples during h2d phases). Thresholds: docs/ANALYZE.md.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from gpuscope.analysis.core import Diagnosis
from gpuscope.analysis.evidence.log.quantities import finite_median, upload_gbs
from gpuscope.analysis.evidence.log.rule_input import (
    NAN,
    RuleInput,
    coef_var,
    correlation,
    floats,
    rnd,
)
from gpuscope.analysis.evidence.samples.pcie import MIN_SAMPLE_INTERVALS, resolved_by_samples
from gpuscope.analysis.rules.engine import (
    LOG,
    SAMPLES,
    Finding,
    link_when_near_line,
    log_findings,
    rule,
)
from gpuscope.arrays import median

if TYPE_CHECKING:
    import pandas as pd

    from gpuscope.analysis.evidence import Evidence

# h2d_bound: share of held time spent in h2d-role components
H2D_SHARE_HIGH, H2D_SHARE_MEDIUM, H2D_SHARE_LOW = 0.40, 0.20, 0.10
# pcie_underused: upload rate / line rate (the log's bytes/time, else the median RX during
# h2d phases that last >= pcie.MIN_SAMPLE_INTERVALS sample intervals); at or above the
# medium share h2d_bound gives no pinning advice either
PCIE_SHARE_HIGH, PCIE_SHARE_MEDIUM = 0.20, 0.50
# h2d_bound: records covering less of the run than this (by their stamps) weigh the uploads by the run
WHOLE_BUSY_FULL = 0.90
# h2d_bound's advice: uploads at this share of the line rate or above are at it (the link is the limit)
AT_LINE_SHARE = 0.95


def _phase_rx(pcie: pd.DataFrame | None, phase: str) -> Any:
    if pcie is None or pcie.empty or phase not in set(pcie["phase"]):
        return None
    return pcie.loc[pcie["phase"] == phase].iloc[0]


def _upload_bytes(inp: RuleInput) -> tuple[np.ndarray | None, str]:
    """Bytes per tenure: measured ones from the log win; --abc-bytes fills tenures without."""
    n = len(inp.split)
    logged = inp.upload_bytes
    if logged is not None and len(logged) == n and np.isfinite(logged).any():
        if inp.options.abc_bytes:
            logged = np.where(np.isfinite(logged), logged, float(inp.options.abc_bytes))
        return np.asarray(logged, dtype="float64"), f"the log's {inp.upload_bytes_key or 'h2d_bytes'} field"
    if inp.options.abc_bytes:
        return np.full(n, float(inp.options.abc_bytes)), "--abc-bytes"
    return None, "unknown"


def _whole_busy(inp: RuleInput) -> tuple[float, float]:
    """(the share of the run the records' wholes cover in their steady state, the run's seconds)
    from the records' stamps (timeline_summary.steady_cover: a one-off pause does not count);
    NaN where the log cannot tell (no stamps)."""
    busy, wall = inp.timeline.get("steady_busy_fraction"), inp.timeline.get("wall_s")
    if isinstance(busy, int | float) and math.isfinite(busy) and isinstance(wall, int | float) and wall > 0:
        return float(busy), float(wall)
    return NAN, NAN


def _severity(share: float) -> str:
    return "high" if share >= H2D_SHARE_HIGH else "medium" if share >= H2D_SHARE_MEDIUM else "low"


def h2d_bound(inp: RuleInput) -> list[Diagnosis]:
    """The uploads (h2d-role time) take a large share of the held time. Four steps: the
    evidence, the projection at the line rate (`_h2d_projection`), the summary, the advice
    (`_h2d_advice`: pinned memory, or, for uploads already near the line, fewer bytes).

    Its weight is the uploads' share of the run: where the records' stamps show the wholes cover
    less than WHOLE_BUSY_FULL of it (a lock held 12% of the run and free the rest, steps apart),
    the uploads' share of the whole times that cover (steady state: one record's length over the
    time from one to the next, medians) is what faster uploads could win, and the
    severity follows it (the GPU then waits on what fills the rest: gpu_starved, host)."""
    t = inp.totals
    share = t.get("h2d_share", NAN)
    if not len(inp.split) or math.isnan(share) or share < H2D_SHARE_LOW:
        return []
    v = inp.model.vocabulary
    ev = _h2d_evidence(inp, share)
    covered, wall_s = _whole_busy(inp)
    run_share = share * covered if covered < WHOLE_BUSY_FULL else NAN
    sev = _severity(run_share if math.isfinite(run_share) else share)
    if math.isfinite(run_share):
        ev["whole_share_of_run"] = rnd(covered, 3)
        ev["h2d_share_of_run"] = rnd(run_share, 4)
        ev["run_s"] = rnd(wall_s, 3)
    what_if, measured = _h2d_projection(inp, ev, "held time" if v.cuzk else v.whole)
    rx = _phase_rx(inp.pcie, "h2d")
    if rx is not None:
        ev["pcie_rx_gbs_during_h2d"] = rnd(rx["rx_gbs_median"], 2)
        ev["pcie_rx_share_of_line_rate"] = rnd(rx["rx_share_of_line_rate"], 3)
        ev["pcie_rx_resolved_by_samples"] = resolved_by_samples(rx)
        ev["pcie_rx_gbs_mean_during_h2d"] = rnd(rx.get("rx_gbs_mean", NAN), 2)
        ev["pcie_rx_gb_per_h2d_phase"] = rnd(rx.get("gb_per_phase_median", NAN), 3)
    summary = f"H2D takes {share:.1%} of the {v.whole} ({t['h2d_ms']:.0f} of {t['held_ms']:.0f} ms)"
    hcv, gcv = ev["h2d_cv"], ev["gpu_compute_cv"]
    if not (math.isnan(hcv) or math.isnan(gcv)):
        if hcv > 2 * gcv:
            summary += f"; it varies (cv {hcv:.2f}) while GPU compute is stable (cv {gcv:.2f})"
        else:
            summary += f" (cv {hcv:.2f}; GPU compute cv {gcv:.2f})"
    if not measured and rx is not None:
        measured = _sampled_clause(inp, rx)
    summary += measured
    if math.isfinite(run_share):
        free = "the lock free between them" if v.lock else f"no {v.record} running between them"
        summary += (f"; the {v.records} cover {covered:.0%} of the run in their steady state ({free}), "
                    f"so the uploads are {run_share:.0%} of it")
    summary += "."
    return [Diagnosis("h2d_bound", sev, summary, ev, _h2d_advice(inp, what_if))]


def _sampled_clause(inp: RuleInput, rx: Any) -> str:
    """The summary's rate clause from the PCIe readings (no bytes in the log): what they moved
    per upload and at what rate, when _upload_rate_share can say it."""
    share, basis = _upload_rate_share(inp)
    gb = float(rx.get("gb_per_phase_median", NAN))
    if math.isnan(share) or math.isnan(gb):
        return ""
    least = "at least " if "lower bound" in basis else ""
    line = inp.options.line_rate_gbs
    return (f"; PCIe RX moved {gb:.2f} GB per upload, {least}{share * line:.1f} GB/s, "
            f"{share:.0%} of the {round(line, 1):g} GB/s line rate (by the samples)")


def _h2d_evidence(inp: RuleInput, share: float) -> dict:
    """The uploads' share, spread and correlation with the held time, and the line rate."""
    t, sp = inp.totals, inp.split
    h2d = floats(sp, "h2d_ms")
    held = floats(sp, "held_ms")
    gpu = floats(sp, "gpu_compute_ms")
    return {
        "h2d_components": [c for c in inp.wide.columns if inp.model.role_of(c) == "h2d"],
        "h2d_share": rnd(share, 4),
        "copies_could_hide_under_compute": inp.copies_could_hide_under_compute("h2d_ms"),
        "h2d_ms": rnd(t["h2d_ms"]),
        "held_ms": rnd(t["held_ms"]),
        "h2d_median_ms": rnd(float(median(h2d))),
        "h2d_min_ms": rnd(float(h2d.min())),
        "h2d_max_ms": rnd(float(h2d.max())),
        "h2d_cv": rnd(coef_var(h2d), 3),
        "gpu_compute_cv": rnd(coef_var(gpu), 3),
        "h2d_held_corr": rnd(correlation(h2d, held), 3),
        "line_rate_gbs": inp.options.line_rate_gbs,
        "line_rate_source": inp.options.line_rate_source,
    }


def _h2d_projection(inp: RuleInput, ev: dict, held_words: str) -> tuple[str, str]:
    """The held time with the uploads at the line rate, added to `ev`; returns the advice's
    what-if sentence and the summary's measured-rate clause (empty without the log's bytes)."""
    nbytes, bsrc = _upload_bytes(inp)
    ev["bytes_source"] = bsrc
    if nbytes is None:
        return (f" Pass --abc-bytes SIZE (bytes uploaded per {inp.model.vocabulary.unit}) to project the "
                f"{held_words} at line rate."), ""
    sp, line = inp.split, inp.options.line_rate_gbs
    h2d = floats(sp, "h2d_ms")
    held = floats(sp, "held_ms")
    # bytes per GPU: the split's h2d_ms is the tenure's upload time averaged over its GPUs
    n_gpus = np.maximum(floats(sp, "n_gpus"), 1.0)
    upload_ms = nbytes / n_gpus / (line * 1e9) * 1000.0
    projected = held - h2d + np.where(np.isnan(upload_ms), h2d, np.minimum(upload_ms, h2d))
    gbs_med = rnd(finite_median(upload_gbs(nbytes, h2d, n_gpus)), 2)
    ev["bytes_per_record"] = float(median(nbytes, skip_nan=True))
    measured = ""
    if bsrc.startswith("the log"):
        ev["measured_upload_gbs_median"] = gbs_med
        ev["measured_upload_share_of_line_rate"] = rnd(gbs_med / line, 3)
        if not math.isnan(gbs_med):
            measured = (f"; uploads ran at a median {gbs_med:.2f} GB/s, "
                        f"{gbs_med / line:.0%} of the {round(line, 1):g} GB/s line rate")
    else:
        ev["implied_upload_gbs_median"] = gbs_med
    ev.update(
        upload_ms_at_line_rate=rnd(float(median(upload_ms, skip_nan=True))),
        projected_held_median_ms=rnd(float(median(projected))),
        projected_held_ms=rnd(float(projected.sum())),
        projected_saving_share=rnd(1 - float(projected.sum()) / float(held.sum()), 4)
        if held.sum() > 0 else NAN,
    )
    what_if = (
        f" At {round(line, 1):g} GB/s the {float(median(nbytes, skip_nan=True)) / 2**30:.2f} GiB "
        f"upload would take ~{ev['upload_ms_at_line_rate']:.0f} ms and the median {held_words} would drop "
        f"from {float(median(held)):.0f} to ~{ev['projected_held_median_ms']:.0f} ms "
        f"(assumes all h2d-role time is upload; bytes from {bsrc})."
    )
    return what_if, measured


def _h2d_advice(inp: RuleInput, what_if: str) -> str:
    """Pinned host memory (the prover's a/b/c pool, or any program's buffers), unless the
    uploads already run near the line rate: then fewer bytes or overlap."""
    v = inp.model.vocabulary
    rate_share, rate_basis = _upload_rate_share(inp)
    if not math.isnan(rate_share) and rate_share >= PCIE_SHARE_MEDIUM:
        # already near the line: pinning cannot make the copy faster, only fewer bytes or overlap help
        least = "at least " if "lower bound" in rate_basis else ""
        # (near the line the link is the limit, said without a word of pinning; below it, how much pinning could give)
        limit = ("the link, not the copy path, is the limit" if rate_share >= AT_LINE_SHARE else
                 "copies from pageable memory run far below half of it, so pinning has little left to gain "
                 f"(at most {1 / rate_share:.1f}x on the copy)")
        return (
            f"The uploads already run {least or 'at '}{rate_share:.0%} of the line rate ({rate_basis}): {limit}. "
            "Send fewer bytes (keep data resident on the GPU, upload only what changed), "
            f"overlap the upload with compute (double-buffer on a second stream, the next {v.record}'s input "
            "uploaded while this one computes)" + (", or move it out of the lock." if v.cuzk else ".")
        )
    if math.isnan(rate_share):
        return _h2d_advice_rate_unknown(inp, what_if)
    if v.cuzk:
        return (
            "Upload from pinned memory: allocate the a/b/c vectors from a reusable cudaHostAlloc pool, or "
            "cudaHostRegister them once, so the copy runs at PCIe line rate instead of staging through "
            "the driver's bounce buffer." + what_if
        )
    return (
        "Copy from pinned (page-locked) host memory: allocate the host buffers pinned (cudaHostAlloc, "
        "PyTorch's pin_memory()) or register them once (cudaHostRegister), so the copy runs at PCIe line "
        "rate instead of staging through the driver's bounce buffer; then overlap it with compute."
        + what_if
    )


def _h2d_advice_rate_unknown(inp: RuleInput, what_if: str) -> str:
    """Advice where nothing shows how fast the uploads ran: pinning helps only pageable copies far
    below the line, so the advice names what would tell before it names either fix (`what_if` says
    --abc-bytes where no bytes are known, or projects the upload with those given)."""
    v = inp.model.vocabulary
    rx = _phase_rx(inp.pcie, "h2d")
    if rx is None:
        why = "the log prints no bytes per upload and no PCIe readings were joined to its uploads"
    else:
        why = (f"the log prints no bytes per upload and the PCIe readings, "
               f"{float(rx.get('sample_interval_s', NAN)) * 1e3:.0f} ms apart, cannot resolve uploads of "
               f"~{float(rx.get('duration_median_s', NAN)) * 1e3:.0f} ms")
    buffers = "the a/b/c vectors" if v.cuzk else "the host buffers"
    return (
        f"How fast the uploads run is not known ({why}): print the bytes of each upload beside its time, "
        "or record a profiler trace, whose copies name their host memory. "
        f"Far below the line rate they are pageable: pin {buffers} (cudaHostAlloc, PyTorch's pin_memory(), "
        "or cudaHostRegister once). Near it the link is the limit: send fewer bytes or overlap the upload "
        f"with compute (the next {v.record}'s input on a second stream)." + what_if
    )


def _upload_rate_share(inp: RuleInput) -> tuple[float, str]:
    """(upload rate / line rate, where it came from): the log's own bytes/time when it prints
    byte counts, else the bytes the PCIe readings moved during the h2d phases over their time
    (pcie.py; not the RX median, which hides a burst inside a longer phase). For h2d phases
    shorter than MIN_SAMPLE_INTERVALS readings that rate is a lower bound (a reading that
    straddles a phase's edge spreads its bytes outside it): it can say "at the line rate",
    never "slow"; NaN when nothing says. (It would read too high only where a neighbouring
    phase's own copy shares a reading with a short upload: the log's bytes then decide.)"""
    line = inp.options.line_rate_gbs
    if not line or line <= 0:
        return NAN, "unknown"
    log_gbs = inp.totals.get("upload_gbs", NAN)
    if log_gbs is not None and math.isfinite(log_gbs):
        return float(log_gbs) / line, "the log's own bytes / upload time"
    rx = _phase_rx(inp.pcie, "h2d")
    if rx is None:
        return NAN, "unknown"
    share = float(rx.get("rx_mean_share_of_line_rate", NAN))
    if not math.isfinite(share):  # (a frame without the integrated bytes: the median of long uploads)
        med = float(rx["rx_share_of_line_rate"])
        ok = resolved_by_samples(rx) and math.isfinite(med)
        return (med, "median PCIe RX during the uploads") if ok else (NAN, "unknown")
    if resolved_by_samples(rx):
        return share, "the bytes PCIe RX moved during the uploads over their time"
    if share >= PCIE_SHARE_MEDIUM:
        return share, ("the bytes PCIe RX moved during the uploads over their time, a lower bound: the uploads "
                       "last fewer readings than it takes to resolve them")
    return NAN, "unknown"


def pcie_underused(inp: RuleInput) -> list[Diagnosis]:
    """Uploads well below the line rate while samples were joined to h2d phases. The log's own
    bytes/time rate wins over the samples; without it the samples judge only h2d phases that
    last >= MIN_SAMPLE_INTERVALS sample intervals (a shorter copy is smeared over readings
    that mostly cover other phases, so its RX median says nothing about its rate)."""
    rx = _phase_rx(inp.pcie, "h2d")
    line = inp.options.line_rate_gbs
    if rx is None or not line or line <= 0:
        return []
    share, basis = _upload_rate_share(inp)
    if math.isnan(share) or share >= PCIE_SHARE_MEDIUM:
        return []
    sev = "high" if share < PCIE_SHARE_HIGH else "medium"
    resolved = resolved_by_samples(rx)
    log_gbs = inp.totals.get("upload_gbs", NAN)
    ev: dict[str, Any] = {"rx_gbs_median_during_h2d": rnd(rx["rx_gbs_median"], 2), "line_rate_gbs": line,
          "share_of_line_rate": rnd(share, 3), "rate_basis": basis, "samples": int(rx["samples"]),
          "h2d_duration_median_s": rnd(rx.get("duration_median_s", NAN), 4),
          "sample_interval_s": rnd(rx.get("sample_interval_s", NAN), 4),
          "resolved_by_samples": resolved, "min_sample_intervals": MIN_SAMPLE_INTERVALS}
    if log_gbs is not None and math.isfinite(log_gbs):
        ev["log_upload_gbs"] = rnd(log_gbs, 2)
    if inp.pcie is not None:
        ev["rx_gbs_median_by_phase"] = {str(r.phase): rnd(r.rx_gbs_median, 2) for r in inp.pcie.itertuples()}
    if basis.startswith("the log"):
        seen = (f"samples during h2d phases: median RX {rx['rx_gbs_median']:.1f} GB/s" if resolved else
                f"the samples, {ev['sample_interval_s'] * 1e3:.0f} ms apart, cannot resolve uploads of "
                f"~{ev['h2d_duration_median_s'] * 1e3:.0f} ms")
        summary = (f"PCIe underused during uploads: {float(log_gbs):.1f} GB/s by the log's own bytes/time, "
                   f"{share:.0%} of the {round(line, 1):g} GB/s line rate ({seen}).")
    elif basis.startswith("the bytes"):
        ev["gb_per_upload_median"] = rnd(rx["gb_per_phase_median"], 3)
        summary = (f"PCIe underused during uploads: RX moved {rx['gb_per_phase_median']:.2f} GB per upload, "
                   f"{share * line:.1f} GB/s over the uploads' time (median reading {rx['rx_gbs_median']:.1f} GB/s), "
                   f"{share:.0%} of the {round(line, 1):g} GB/s line rate.")
    else:
        summary = (f"PCIe underused during uploads: median RX {rx['rx_gbs_median']:.1f} GB/s while h2d phases "
                   f"ran, {share:.0%} of the {round(line, 1):g} GB/s line rate.")
    rec = ("The link is not the limit: the copy path is. Pageable memory staging through the driver's bounce "
           "buffer is the usual cause at this rate (many small copies look alike): pin the upload buffers "
           "(a reusable cudaHostAlloc pool, or cudaHostRegister once).")
    return [Diagnosis("pcie_underused", sev, summary, ev, rec)]


_UP = ("upload_bound_pageable",)  # the samples' guess at the same uploads: the log's bytes/time tell them


@rule("h2d_bound", needs=LOG, uses=("copies",), emits={"h2d_bound": "upload"}, cause=link_when_near_line("upload"),
      supersedes=_UP, also=SAMPLES)
def h2d_bound_rule(ev: Evidence) -> list[Finding]:
    return log_findings(h2d_bound(ev.log_input))


@rule("pcie_underused", needs=LOG, uses=("copies",), emits={"pcie_underused": "upload"}, supersedes=_UP, also=SAMPLES)
def pcie_underused_rule(ev: Evidence) -> list[Finding]:
    return log_findings(pcie_underused(ev.log_input))

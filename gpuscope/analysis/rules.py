"""Diagnosis rules: each a plain function RuleInput -> list[Diagnosis] (0..n).

Severity thresholds are the module constants below; docs/ANALYZE.md documents them.
Evidence holds numbers from this log only. Summaries and advice speak the model's words
(RoleModel.vocabulary): the CuZK prover's (tenures, partitions, a/b/c vectors, prep_msm)
only for its model, a step's or record's for any other program.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from gpuscope.analysis.pcie import MIN_SAMPLE_INTERVALS, resolved_by_samples
from gpuscope.analysis.quantities import finite_median, upload_gbs
from gpuscope.analysis.result import AnalyzeOptions, Diagnosis
from gpuscope.rolemodel import SPLIT_ROLES, RoleModel

NAN = float("nan")

# h2d_bound: share of held time spent in h2d-role components
H2D_SHARE_HIGH, H2D_SHARE_MEDIUM, H2D_SHARE_LOW = 0.40, 0.20, 0.10
# cpu_stall_at_barrier: share of held time the GPU waited on the CPU
STALL_SHARE_HIGH, STALL_SHARE_MEDIUM = 0.10, 0.03
# lock_convoy: median mutex_wait / median held
CONVOY_RATIO_HIGH, CONVOY_RATIO_MEDIUM = 1.0, 0.5
# unstable_component: share of held-time variance the component explains (cov/var), and its cv
# a non-CuZK loop's host-side parts (data, prep) below this share of its time: no diagnosis
STALL_SHARE_FLOOR = 0.01
UNSTABLE_EXPLAINED_HIGH, UNSTABLE_EXPLAINED_MEDIUM = 0.8, 0.5
UNSTABLE_MIN_CV, UNSTABLE_MIN_CORR, UNSTABLE_MIN_RECORDS = 0.2, 0.7, 3
STABLE_CV = 0.10
# inconsistent_records: fraction of records
INCONSISTENT_MEDIUM = 0.05
# first_partition_warmup: first tenure's d_b_alloc vs the median of the rest
WARMUP_FACTOR, WARMUP_MIN_MS = 5.0, 100.0
# pcie_underused: upload rate / line rate (the log's bytes/time, else the median RX during
# h2d phases that last >= pcie.MIN_SAMPLE_INTERVALS sample intervals); at or above the
# medium share h2d_bound gives no pinning advice either
PCIE_SHARE_HIGH, PCIE_SHARE_MEDIUM = 0.20, 0.50
# h2d_bound outside the CuZK model: uploads measured at this share of the line rate are not
# told to pin their buffers
NEAR_LINE_RATE = 0.80


@dataclass
class RuleInput:
    split: pd.DataFrame          # per-record split
    wide: pd.DataFrame           # record x component (GPU-averaged ms)
    stats: pd.DataFrame          # component statistics
    totals: dict                 # split totals
    timeline: dict
    bounds: dict
    options: AnalyzeOptions
    model: RoleModel
    pcie: pd.DataFrame | None = None
    # upload bytes per split row (tenure), from the log's quantities (analysis.quantities)
    upload_bytes: np.ndarray | None = None
    upload_bytes_key: str | None = None


def _cv(x: np.ndarray) -> float:
    x = x[~np.isnan(x)]
    if x.size < 2 or x.mean() == 0:
        return NAN
    return float(x.std(ddof=1) / x.mean())


def _corr(a: np.ndarray, b: np.ndarray) -> float:
    ok = ~(np.isnan(a) | np.isnan(b))
    a, b = a[ok], b[ok]
    if a.size < 3 or a.std() == 0 or b.std() == 0:
        return NAN
    return float(np.corrcoef(a, b)[0, 1])


def _r(x: float, nd: int = 1) -> float:
    return NAN if x is None or (isinstance(x, float) and math.isnan(x)) else round(float(x), nd)


def _col(wide: pd.DataFrame, name: str) -> np.ndarray | None:
    return wide[name].to_numpy(dtype="float64") if name in wide.columns else None


def _phase_rx(pcie: pd.DataFrame | None, phase: str) -> pd.Series | None:
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


def h2d_bound(inp: RuleInput) -> list[Diagnosis]:
    t = inp.totals
    share = t.get("h2d_share", NAN)
    if not len(inp.split) or math.isnan(share) or share < H2D_SHARE_LOW:
        return []
    sev = "high" if share >= H2D_SHARE_HIGH else "medium" if share >= H2D_SHARE_MEDIUM else "low"
    v = inp.model.vocabulary
    held_words = "held time" if v.cuzk else v.whole
    sp = inp.split
    h2d = sp["h2d_ms"].to_numpy(dtype="float64")
    held = sp["held_ms"].to_numpy(dtype="float64")
    gpu = sp["gpu_compute_ms"].to_numpy(dtype="float64")
    h2d_comps = [c for c in inp.wide.columns if inp.model.role_of(c) == "h2d"]
    ev = {
        "h2d_components": h2d_comps,
        "h2d_share": _r(share, 4),
        "h2d_ms": _r(t["h2d_ms"]),
        "held_ms": _r(t["held_ms"]),
        "h2d_median_ms": _r(float(np.median(h2d))),
        "h2d_min_ms": _r(float(h2d.min())),
        "h2d_max_ms": _r(float(h2d.max())),
        "h2d_cv": _r(_cv(h2d), 3),
        "gpu_compute_cv": _r(_cv(gpu), 3),
        "h2d_held_corr": _r(_corr(h2d, held), 3),
        "line_rate_gbs": inp.options.line_rate_gbs,
        "line_rate_source": inp.options.line_rate_source,
    }
    nbytes, bsrc = _upload_bytes(inp)
    ev["bytes_source"] = bsrc
    what_if = ""
    measured = ""
    if nbytes is not None:
        rate = inp.options.line_rate_gbs * 1e9
        # bytes per GPU: the split's h2d_ms is the tenure's upload time averaged over its GPUs
        n_gpus = np.maximum(sp["n_gpus"].to_numpy(dtype="float64"), 1.0)
        upload_ms = nbytes / n_gpus / rate * 1000.0
        projected = held - h2d + np.where(np.isnan(upload_ms), h2d, np.minimum(upload_ms, h2d))
        gbs = upload_gbs(nbytes, h2d, n_gpus)
        gbs_med = _r(finite_median(gbs), 2)
        ev["bytes_per_record"] = float(np.nanmedian(nbytes))
        if bsrc.startswith("the log"):
            ev["measured_upload_gbs_median"] = gbs_med
            ev["measured_upload_share_of_line_rate"] = _r(gbs_med / inp.options.line_rate_gbs, 3)
            if not math.isnan(gbs_med):
                measured = (
                    f"; uploads ran at a median {gbs_med:.2f} GB/s, "
                    f"{gbs_med / inp.options.line_rate_gbs:.0%} of the {round(inp.options.line_rate_gbs, 1):g} GB/s line rate"
                )
        else:
            ev["implied_upload_gbs_median"] = gbs_med
        ev.update(
            upload_ms_at_line_rate=_r(float(np.nanmedian(upload_ms))),
            projected_held_median_ms=_r(float(np.median(projected))),
            projected_held_ms=_r(float(projected.sum())),
            projected_saving_share=_r(1 - float(projected.sum()) / float(held.sum()), 4)
            if held.sum() > 0 else NAN,
        )
        what_if = (
            f" At {round(inp.options.line_rate_gbs, 1):g} GB/s the {float(np.nanmedian(nbytes)) / 2**30:.2f} GiB "
            f"upload would take ~{ev['upload_ms_at_line_rate']:.0f} ms and the median {held_words} would drop "
            f"from {float(np.median(held)):.0f} to ~{ev['projected_held_median_ms']:.0f} ms "
            f"(assumes all h2d-role time is upload; bytes from {bsrc})."
        )
    else:
        what_if = (f" Pass --abc-bytes SIZE (bytes uploaded per {v.unit}) to project the {held_words} "
                   "at line rate.")
    rx = _phase_rx(inp.pcie, "h2d")
    if rx is not None:
        ev["pcie_rx_gbs_during_h2d"] = _r(rx["rx_gbs_median"], 2)
        ev["pcie_rx_share_of_line_rate"] = _r(rx["rx_share_of_line_rate"], 3)
        ev["pcie_rx_resolved_by_samples"] = resolved_by_samples(rx)
    rate_share, rate_basis = _upload_rate_share(inp)
    summary = f"H2D takes {share:.1%} of the {v.whole} ({t['h2d_ms']:.0f} of {t['held_ms']:.0f} ms)"
    hcv, gcv = ev["h2d_cv"], ev["gpu_compute_cv"]
    if not (math.isnan(hcv) or math.isnan(gcv)):
        if hcv > 2 * gcv:
            summary += f"; it varies (cv {hcv:.2f}) while GPU compute is stable (cv {gcv:.2f})"
        else:
            summary += f" (cv {hcv:.2f}; GPU compute cv {gcv:.2f})"
    summary += measured + "."
    if not math.isnan(rate_share) and rate_share >= PCIE_SHARE_MEDIUM:
        # already near the line: pinning cannot make the copy faster, only fewer bytes or overlap help
        rec = (
            f"The uploads already run at {rate_share:.0%} of the line rate ({rate_basis}): the link, not "
            "the copy path, is the limit. Send fewer bytes (keep data resident on the GPU, upload only what changed), "
            f"overlap the upload with compute (double-buffer on a second stream, the next {v.record}'s input "
            "uploaded while this one computes)" + (", or move it out of the lock." if v.cuzk else ".")
        )
    elif v.cuzk:
        rec = (
            "Upload from pinned memory: allocate the a/b/c vectors from a reusable cudaHostAlloc pool, or "
            "cudaHostRegister them once, so the copy runs at PCIe line rate instead of staging through "
            "the driver's bounce buffer." + what_if
        )
    else:
        rec = (
            "Copy from pinned (page-locked) host memory: allocate the host buffers pinned (cudaHostAlloc, "
            "PyTorch's pin_memory()) or register them once (cudaHostRegister), so the copy runs at PCIe line "
            "rate instead of staging through the driver's bounce buffer; then overlap it with compute."
            + what_if
        )
    return [Diagnosis("h2d_bound", sev, summary, ev, rec)]


def _upload_rate_share(inp: RuleInput) -> tuple[float, str]:
    """(upload rate / line rate, where it came from): the log's own bytes/time when it prints
    byte counts, else the RX median of h2d phases long enough for the samples to resolve
    them; NaN when neither says."""
    line = inp.options.line_rate_gbs
    if not line or line <= 0:
        return NAN, "unknown"
    log_gbs = inp.totals.get("upload_gbs", NAN)
    if log_gbs is not None and math.isfinite(log_gbs):
        return float(log_gbs) / line, "the log's own bytes / upload time"
    rx = _phase_rx(inp.pcie, "h2d")
    if rx is not None and resolved_by_samples(rx) and math.isfinite(rx["rx_share_of_line_rate"]):
        return float(rx["rx_share_of_line_rate"]), "median PCIe RX during the uploads"
    return NAN, "unknown"


def cpu_stall_at_barrier(inp: RuleInput) -> list[Diagnosis]:
    sp = inp.split
    if not len(sp):
        return []
    stall = sp["cpu_stall_ms"].to_numpy(dtype="float64")
    nz = stall[stall > 0]
    if nz.size == 0:
        return []
    share = inp.totals.get("cpu_stall_share", NAN)
    if not inp.model.vocabulary.cuzk and share < STALL_SHARE_FLOOR:
        return []  # a loop's host parts under 1% of its time are not a stall worth a word
    sev = "high" if share >= STALL_SHARE_HIGH else "medium" if share >= STALL_SHARE_MEDIUM else "low"
    known = not math.isnan(share)  # (no held time: no share of it)
    ev = {
        "stalled_records": int(nz.size),
        "records": int(len(sp)),
        "stalled_fraction": _r(nz.size / len(sp), 4),
        "stall_ms": _r(float(nz.sum())),
        "stall_share": _r(share, 4),
        "stall_median_ms": _r(float(np.median(nz))),
        "stall_max_ms": _r(float(nz.max())),
        "worst_record": int(sp["record"].to_numpy()[int(np.argmax(stall))]),
        "worst_line": int(sp["last_line"].to_numpy()[int(np.argmax(stall))]),
    }
    if "prep_msm" in inp.stats.index:
        ev["prep_msm_median_ms"] = _r(float(inp.stats.at["prep_msm", "median_ms"]))
        ev["prep_msm_p90_ms"] = _r(float(inp.stats.at["prep_msm", "p90_ms"]))
    v = inp.model.vocabulary
    if v.cuzk:
        summary = (
            f"The GPU waited for the CPU at the barrier in {nz.size} of {len(sp)} tenures "
            f"({ev['stall_ms']:.0f} ms, " + (f"{share:.1%} of held time; " if known else "")
            + f"worst {ev['stall_max_ms']:.0f} ms)."
        )
        rec = (
            "Start the CPU prep (prep_msm) earlier or give it more threads so it finishes before the GPU "
            "reaches the barrier; the GPU holds the lock idle while it waits."
        )
    else:
        host = [c for c in inp.wide.columns if inp.model.role_of(c) == "cpu_stall"]
        ev["host_components"] = host
        summary = (
            f"The GPU waited for host-side work ({', '.join(host)}) in {nz.size} of {len(sp)} {v.records} "
            f"({ev['stall_ms']:.0f} ms, " + (f"{share:.1%} of the {v.whole}; " if known else "")
            + f"worst {ev['stall_max_ms']:.0f} ms)."
        )
        rec = (
            f"Overlap the host-side work with the GPU's: prepare the next {v.record}'s input while this one "
            "computes (more loader workers, prefetching, pinned-memory batches), or make it cheaper; while "
            f"{', '.join(host) or 'it'} runs the {v.record} has nothing for the GPU."
        )
    return [Diagnosis("cpu_stall_at_barrier", sev, summary, ev, rec)]


def lock_convoy(inp: RuleInput) -> list[Diagnosis]:
    sp = inp.split
    wait = sp["contention_ms"].to_numpy(dtype="float64") if len(sp) else np.zeros(0)
    if wait.size == 0 or np.all(np.isnan(wait)):
        return []
    held = sp["held_ms"].to_numpy(dtype="float64")
    med_wait = float(np.nanmedian(wait))
    med_held = float(np.median(held))
    ratio = med_wait / med_held if med_held > 0 else NAN
    if math.isnan(ratio) or ratio < CONVOY_RATIO_MEDIUM:
        return []
    sev = "high" if ratio >= CONVOY_RATIO_HIGH else "medium"
    prev = np.concatenate([[np.nan], held[:-1]])
    ev = {
        "wait_median_ms": _r(med_wait),
        "held_median_ms": _r(med_held),
        "wait_over_held": _r(ratio, 3),
        "wait_ms": _r(float(np.nansum(wait))),
        "wait_max_ms": _r(float(np.nanmax(wait))),
        "wait_held_corr": _r(_corr(wait, held), 3),
        "wait_prev_held_corr": _r(_corr(wait, prev), 3),
    }
    summary = (
        f"Workers wait a median {med_wait:.0f} ms for the GPU lock, "
        f"{ratio:.2f}x the median {inp.model.vocabulary.record} ({med_held:.0f} ms)."
    )
    rec = (
        "The wait is a consequence of long tenures: shorten what runs under the lock (the dominant "
        "part above) rather than adding workers; move uploads and CPU prep outside the lock."
    )
    return [Diagnosis("lock_convoy", sev, summary, ev, rec)]


# A first record this many times the median of the others is a warm-up (CUDA context, cuDNN
# autotuning, JIT, a first allocation): it is left out of the variance analysis and said apart.
WARMUP_FACTOR = 5.0


def unstable_component(inp: RuleInput) -> list[Diagnosis]:
    """The part whose variation makes the held time vary; when the first record alone makes it
    (it is the longest, and the rest is stable without it, or it is WARMUP_FACTOR times the
    others), that record is a warm-up and said so instead."""
    held = inp.split["held_ms"].to_numpy(dtype="float64")
    full = _unstable(inp, slice(None))
    first_is_max = len(held) > UNSTABLE_MIN_RECORDS and np.isfinite(held).all() and held[0] == held.max()
    if not first_is_max:
        return full
    med = float(np.median(held[1:]))
    rest = _unstable(inp, slice(1, None))
    huge = med > 0 and held[0] > WARMUP_FACTOR * med
    if huge or (full and not rest):
        v = inp.model.vocabulary
        warm = Diagnosis(
            "first_record_warmup", "low",
            f"The first {v.record} took {held[0]:.0f} ms, {held[0] / med:.1f}x the median of the others "
            f"({med:.0f} ms): a warm-up, left out of the variation analysis.",
            {"first_ms": _r(float(held[0])), "median_others_ms": _r(med), "factor": _r(float(held[0] / med), 1)},
            f"Leave the first {v.record} out when judging throughput, or warm up (a first call with the same "
            "shapes: CUDA context, cuDNN autotuning, JIT compilation, first allocations) before timing.")
        return [warm, *rest]
    return full


def _unstable(inp: RuleInput, rows_sel: slice) -> list[Diagnosis]:
    sp, wide = inp.split.iloc[rows_sel], inp.wide.iloc[rows_sel]
    held = sp["held_ms"].to_numpy(dtype="float64")
    if np.isfinite(held).sum() < UNSTABLE_MIN_RECORDS or not np.isfinite(held).all() or held.var() == 0:
        return []  # (a record without a held time explains nothing: no "explains nan%")
    rows = []
    for c in wide.columns:
        if inp.model.role_of(c) not in SPLIT_ROLES:
            continue
        x = wide[c].to_numpy(dtype="float64")
        ok = ~np.isnan(x)
        if ok.sum() < UNSTABLE_MIN_RECORDS:
            continue
        h = held[ok]
        if h.var() == 0:
            continue
        explained = float(np.cov(x[ok], h)[0, 1] / np.var(h, ddof=1))
        if not math.isfinite(explained):
            continue
        rows.append((c, explained, _corr(x, held), _cv(x)))
    if not rows:
        return []
    rows.sort(key=lambda r: -r[1])
    name, explained, corr, cv = rows[0]
    if explained < UNSTABLE_EXPLAINED_MEDIUM or (corr or 0) < UNSTABLE_MIN_CORR or not cv >= UNSTABLE_MIN_CV:
        return []
    sev = "high" if explained >= UNSTABLE_EXPLAINED_HIGH else "medium"
    stable = {c: _r(v, 3) for c, _, _, v in rows if not math.isnan(v) and v < STABLE_CV}
    ev = {
        "component": name,
        "role": inp.model.role_of(name),
        "explained_held_variance": _r(explained, 3),
        "corr_with_held": _r(corr, 3),
        "cv": _r(cv, 3),
        "held_cv": _r(_cv(held), 3),
        "stable_components_cv": stable,
        "others": {c: {"explained": _r(e, 3), "cv": _r(v, 3)} for c, e, _, v in rows[1:]},
    }
    # cov/var can pass 100% when the other parts move slightly against this one
    v = inp.model.vocabulary
    held_words = "held time" if v.cuzk else v.whole
    share = (f"all of the variation in {held_words} (covariance share {explained:.0%}: the other parts "
             "move slightly against it)" if explained > 1 else
             f"{explained:.0%} of the variation in {held_words}")
    summary = (
        f"{name} varies with the symptom: it explains {share} "
        f"(corr {corr:.2f}, cv {cv:.2f}) while {len(stable)} other part(s) stay within cv {STABLE_CV}."
    )
    rec = f"Investigate {name} first: the stable parts are not what makes slow {v.records} slow."
    return [Diagnosis("unstable_component", sev, summary, ev, rec)]


def inconsistent_records(inp: RuleInput) -> list[Diagnosis]:
    sp = inp.split
    bad = sp.loc[sp["inconsistent"]]
    if bad.empty:
        return []
    frac = len(bad) / len(sp)
    sev = "medium" if frac >= INCONSISTENT_MEDIUM else "low"
    ev = {
        "inconsistent_records": int(len(bad)),
        "records": int(len(sp)),
        "fraction": _r(frac, 4),
        "excess_ms": _r(float(bad["excess_ms"].sum())),
        "excess_max_ms": _r(float(bad["excess_ms"].max())),
        "examples": [
            {"record": int(r.record), "lines": f"{int(r.first_line)}-{int(r.last_line)}",
             "held_ms": _r(r.held_ms), "parts_ms": _r(r.parts_ms)}
            for r in bad.head(5).itertuples()
        ],
    }
    first = bad.iloc[0]
    v = inp.model.vocabulary
    held_words = "the held time" if v.cuzk else f"their whole ({v.held})"
    summary = (
        f"{len(bad)} of {len(sp)} records are inconsistent: their parts add up to more than {held_words} "
        f"(e.g. record {int(first.record)}, lines {int(first.first_line)}-{int(first.last_line)}: "
        f"{first.parts_ms:.0f} > {first.held_ms:.0f} ms)."
    )
    if v.cuzk:
        rec = (
            "Their 'other' is shown as 0 and they stay in every sum. Check the instrumentation: timers that "
            "overlap or run past the lock release, or lines of another tenure grouped into this one."
        )
    else:
        rec = (
            "Their 'other' is shown as 0 and they stay in every sum. Check the instrumentation: timers that "
            f"overlap or run past the {v.record}'s end, or lines of another {v.record} grouped into this one."
        )
    return [Diagnosis("inconsistent_records", sev, summary, ev, rec)]


def first_partition_warmup(inp: RuleInput, component: str = "d_b_alloc") -> list[Diagnosis]:
    col = _col(inp.wide, component)
    if col is None or col.size < 2 or np.isnan(col[0]):
        return []
    rest = col[1:][~np.isnan(col[1:])]
    if rest.size == 0:
        return []
    first, med = float(col[0]), float(np.median(rest))
    if first < WARMUP_FACTOR * max(med, 1.0) or first - med < WARMUP_MIN_MS:
        return []
    ev = {"component": component, "first_ms": _r(first), "rest_median_ms": _r(med),
          "ratio": _r(first / med, 1) if med > 0 else NAN, "first_line": int(inp.split["first_line"].iloc[0])}
    summary = (
        f"First-partition warm-up: {component} took {first:.0f} ms on the first tenure vs a median "
        f"{med:.0f} ms afterwards (device memory pool warm-up)."
    )
    rec = (
        "Pre-allocate / warm the device pool before the first job (or set the pool release threshold), "
        "and leave the first partition out of steady-state comparisons."
    )
    return [Diagnosis("first_partition_warmup", "low", summary, ev, rec)]


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
    ev = {"rx_gbs_median_during_h2d": _r(rx["rx_gbs_median"], 2), "line_rate_gbs": line,
          "share_of_line_rate": _r(share, 3), "rate_basis": basis, "samples": int(rx["samples"]),
          "h2d_duration_median_s": _r(rx.get("duration_median_s", NAN), 4),
          "sample_interval_s": _r(rx.get("sample_interval_s", NAN), 4),
          "resolved_by_samples": resolved, "min_sample_intervals": MIN_SAMPLE_INTERVALS}
    if log_gbs is not None and math.isfinite(log_gbs):
        ev["log_upload_gbs"] = _r(log_gbs, 2)
    if inp.pcie is not None:
        ev["rx_gbs_median_by_phase"] = {str(r.phase): _r(r.rx_gbs_median, 2) for r in inp.pcie.itertuples()}
    if basis.startswith("the log"):
        seen = (f"samples during h2d phases: median RX {rx['rx_gbs_median']:.1f} GB/s" if resolved else
                f"the samples, {ev['sample_interval_s'] * 1e3:.0f} ms apart, cannot resolve uploads of "
                f"~{ev['h2d_duration_median_s'] * 1e3:.0f} ms")
        summary = (f"PCIe underused during uploads: {float(log_gbs):.1f} GB/s by the log's own bytes/time, "
                   f"{share:.0%} of the {round(line, 1):g} GB/s line rate ({seen}).")
    else:
        summary = (f"PCIe underused during uploads: median RX {rx['rx_gbs_median']:.1f} GB/s while h2d phases "
                   f"ran, {share:.0%} of the {round(line, 1):g} GB/s line rate.")
    rec = ("The link is not the limit: the copy path is. Pageable memory staging through the driver's bounce "
           "buffer is the usual cause at this rate (many small copies look alike): pin the upload buffers "
           "(a reusable cudaHostAlloc pool, or cudaHostRegister once).")
    return [Diagnosis("pcie_underused", sev, summary, ev, rec)]


RULES: list[Callable[[RuleInput], list[Diagnosis]]] = [
    h2d_bound, pcie_underused, cpu_stall_at_barrier, lock_convoy, unstable_component,
    inconsistent_records, first_partition_warmup,
]


def run_rules(inp: RuleInput) -> list[Diagnosis]:
    from gpuscope.analysis.result import SEVERITY_ORDER

    out: list[Diagnosis] = []
    for rule in RULES:
        out.extend(rule(inp))
    return sorted(out, key=lambda d: SEVERITY_ORDER.get(d.severity, 9))

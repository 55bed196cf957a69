"""Compare two runs or logs: per-component medians, B/A ratios with bootstrap CIs, a verdict.

Statistics (docs/COMPARE.md):
- per component: count, median, p10, p90 of its values on each side;
- ratio = median(B) / median(A), with a 95% percentile-bootstrap confidence interval:
  both sides resampled with replacement, independently, `n_boot` times, from a seeded
  numpy Generator (the same seed gives the same interval);
- throughput: complete tenures (partitions) per minute over the span from the first
  tenure's start to the last one's end (timestamps needed);
- GPU busy: the analysis' merged GPU_START..GPU_END fraction when both sides have it,
  else the share of that span with the GPU lock held;
- upload GB/s: bytes per partition / median upload time; PCIe RX/TX and SM activity per
  phase from samples where both samples and phase intervals exist.

Pure: no printing; `Comparison.to_json()` is the `compare --json` contract.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from gpuscope.analysis import intervals as iv
from gpuscope.analysis.quantities import finite_median, tenure_bytes, upload_gbs
from gpuscope.analysis.result import clean
from gpuscope.analysis.whatif import (
    COMBINED_UPLOAD,
    EXPLICIT_UPLOAD,
    WhatIf,
    per_record_components,
    stalled_tenures,
)

DEFAULT_BOOTSTRAP = 2000
CONFIDENCE = 0.95


@dataclass
class Side:
    """One side of a comparison: a parsed log plus what its run directory adds."""

    label: str
    parsed: Any                                # ParsedLog contract
    source: str = ""
    mode: str | None = None                    # pinned | pageable | registered, when known
    held_key: str = "mutex_held"
    bytes_per_partition: float | None = None   # from --abc-bytes or the run's workload config
    timeline_summary: dict | None = None       # Analysis.to_json()["timeline"], when available
    samples: pd.DataFrame | None = None        # samples.csv contract
    phases: pd.DataFrame | None = None         # worker, gpu, partition, phase, t_start, t_end
    meta: dict | None = None
    pcie_phases: dict | None = None            # Analysis.to_json()["pcie"]["phases"], preferred when given
    diagnoses: list[dict] | None = None        # the side's own analysis diagnoses (JSON form)
    activity: dict | None = None               # the `activity` object (NVML samples or a trace)
    memcpy: list[dict] | None = None           # a profiler trace's copies (the `memcpy` rows)
    steps_ms: Any = None                       # a profiler trace's step durations (ProfilerStep ranges)
    vocabulary: dict | None = None             # the model's words (Vocabulary.to_json()); None: CuZK's


@dataclass
class Comparison:
    a: dict[str, Any]
    b: dict[str, Any]
    components: dict[str, dict[str, Any]]
    verdict: str
    winner: str | None
    seed: int
    n_boot: int
    prediction: dict[str, Any] | None = None
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return clean(
            {
                "a": self.a,
                "b": self.b,
                "components": self.components,
                "verdict": self.verdict,
                "winner": self.winner,
                "bootstrap": {"n": self.n_boot, "seed": self.seed, "confidence": CONFIDENCE},
                "prediction": self.prediction,
                "notes": list(self.notes),
            }
        )


# --- statistics --------------------------------------------------------------------------

def _finite(values: Any) -> np.ndarray:
    v = np.asarray(values, dtype=float)
    return v[np.isfinite(v)]


def describe(values: Any) -> dict[str, float]:
    """count, median, p10, p90 (ms) of the finite values."""
    v = _finite(values)
    if not len(v):
        return {"count": 0, "median_ms": math.nan, "p10_ms": math.nan, "p90_ms": math.nan}
    p10, med, p90 = np.percentile(v, [10, 50, 90])
    return {"count": int(len(v)), "median_ms": float(med), "p10_ms": float(p10), "p90_ms": float(p90)}


def _boot_medians(v: np.ndarray, n_boot: int, rng: np.random.Generator, chunk_cells: int = 4_000_000) -> np.ndarray:
    out = np.empty(n_boot)
    step = max(1, chunk_cells // max(1, len(v)))
    for s in range(0, n_boot, step):
        k = min(step, n_boot - s)
        idx = rng.integers(0, len(v), size=(k, len(v)))
        out[s : s + k] = np.median(v[idx], axis=1)
    return out


def bootstrap_ratio(
    a: Any, b: Any, *, seed: int = 0, n_boot: int = DEFAULT_BOOTSTRAP, confidence: float = CONFIDENCE
) -> tuple[float, float, float]:
    """median(b) / median(a) and its percentile-bootstrap CI. NaNs when undefined
    (an empty side or a zero median on A)."""
    va, vb = _finite(a), _finite(b)
    if not len(va) or not len(vb) or n_boot < 1:
        return math.nan, math.nan, math.nan
    ma = float(np.median(va))
    if ma == 0:
        return math.nan, math.nan, math.nan
    ratio = float(np.median(vb)) / ma
    rng = np.random.default_rng(seed)
    ba = _boot_medians(va, n_boot, rng)
    bb = _boot_medians(vb, n_boot, rng)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = bb / ba
    r = r[np.isfinite(r)]
    if not len(r):
        return ratio, math.nan, math.nan
    alpha = (1 - confidence) / 2
    lo, hi = np.quantile(r, [alpha, 1 - alpha])
    return ratio, float(lo), float(hi)


def component_values(parsed: Any, name: str, held_key: str = "mutex_held") -> np.ndarray:
    """All values of a component (one per line per GPU). The held key comes from the
    complete tenures (one per tenure)."""
    if name == held_key:
        recs = parsed.records
        if "complete" in recs:
            recs = recs[recs["complete"].astype(bool)]
        return recs["held_ms"].to_numpy(dtype=float)
    c = parsed.components
    return c.loc[c["component"] == name, "value_ms"].to_numpy(dtype=float)


def compare_components(
    a: Side, b: Side, *, seed: int = 0, n_boot: int = DEFAULT_BOOTSTRAP, names: list[str] | None = None
) -> dict[str, dict[str, Any]]:
    """Per component present on both sides: medians, p10-p90, B/A ratio with its CI.

    Order: the held key first, then by A's median, largest first. Components (always
    milliseconds; byte counts are quantities, not components) on one side only are listed
    with null ratio.
    """
    if names is None:
        na = set(a.parsed.components["component"].unique())
        nb = set(b.parsed.components["component"].unique())
        names = sorted(na | nb)
    out: dict[str, dict[str, Any]] = {}
    for name in names:
        va = component_values(a.parsed, name, a.held_key)
        vb = component_values(b.parsed, name, b.held_key)
        out[name] = _values_row(va, vb, seed=seed, n_boot=n_boot, name=name)
    held = a.held_key
    first = [held] if held in out else []
    rest = sorted((k for k in out if k != held),
                  key=lambda k: (-(out[k]["a_median_ms"] if math.isfinite(out[k]["a_median_ms"]) else -1), k))
    return {k: out[k] for k in first + rest}


STEP_KEY = "ProfilerStep"


def _values_row(va: Any, vb: Any, *, seed: int, n_boot: int, name: str) -> dict[str, Any]:
    """One component's row: both sides' medians and p10-p90, the B/A ratio with its CI."""
    da, db = describe(va), describe(vb)
    # Each component gets its own stream, derived from the seed and its name, so adding a
    # component does not change the others' intervals.
    ratio, lo, hi = bootstrap_ratio(va, vb, seed=_component_seed(seed, name), n_boot=n_boot)
    return {
        "a_count": da["count"], "a_median_ms": da["median_ms"], "a_p10_ms": da["p10_ms"], "a_p90_ms": da["p90_ms"],
        "b_count": db["count"], "b_median_ms": db["median_ms"], "b_p10_ms": db["p10_ms"], "b_p90_ms": db["p90_ms"],
        "ratio": ratio, "ci_low": lo, "ci_high": hi,
    }


def _component_seed(seed: int, name: str) -> list[int]:
    # A stable (not hash-randomised) per-name entropy word.
    h = 0
    for ch in name.encode():
        h = (h * 131 + ch) % (2**32)
    return [int(seed), h]


# --- run-level figures ---------------------------------------------------------------------

def merged_length(starts: np.ndarray, ends: np.ndarray) -> float:
    """Total length of the union of intervals."""
    return iv.total(*iv.merge(starts, ends))


def pcie_per_phase(samples: pd.DataFrame | None, phases: pd.DataFrame | None) -> dict[str, dict[str, float]]:
    """Median PCIe RX/TX (GB/s) and SM activity of the samples taken inside each phase type.

    A sample belongs to a phase when its t_wall falls inside one of that phase's intervals
    on the same GPU (phases with gpu < 0 match every GPU).
    """
    if samples is None or phases is None or not len(samples) or not len(phases):
        return {}
    out: dict[str, dict[str, float]] = {}
    t = samples["t_wall"].to_numpy(dtype=float)
    sg = samples["gpu"].to_numpy() if "gpu" in samples else np.zeros(len(samples), dtype=int)
    for phase, grp in phases.groupby("phase", sort=True):
        mask = np.zeros(len(samples), dtype=bool)
        for gpu, g in grp.groupby("gpu"):
            st = g["t_start"].to_numpy(dtype=float)
            en = g["t_end"].to_numpy(dtype=float)
            order = np.argsort(st)
            st, en = st[order], np.maximum.accumulate(en[order])
            k = np.searchsorted(st, t, side="right") - 1
            inside = (k >= 0) & (t <= en[np.clip(k, 0, None)])
            mask |= inside & ((sg == gpu) | (int(gpu) < 0))
        if not mask.any():
            continue
        sel = samples[mask]
        row: dict[str, float] = {"samples": int(mask.sum())}
        for col in ("rx_gbs", "tx_gbs", "sm_active"):
            if col in sel:
                v = _finite(sel[col])
                row[f"{col}_median"] = float(np.median(v)) if len(v) else math.nan
        out[str(phase)] = row
    return out


def run_figures(side: Side) -> dict[str, Any]:
    """Throughput, the lock-held share, SM activity, upload rate and per-phase PCIe figures
    for one side."""
    wide = per_record_components(side.parsed.components, side.parsed.records)
    n = len(wide)
    ts0 = wide["ts_start"].to_numpy(dtype=float) if "ts_start" in wide else np.full(n, np.nan)
    ts1 = wide["ts_end"].to_numpy(dtype=float) if "ts_end" in wide else np.full(n, np.nan)
    ok = np.isfinite(ts0) & np.isfinite(ts1)
    span_s = float(ts1[ok].max() - ts0[ok].min()) if ok.any() else math.nan
    tl = side.timeline_summary or {}
    if not (span_s > 0) and tl.get("wall_s"):
        span_s = float(tl["wall_s"])
    throughput = n / span_s * 60.0 if span_s > 0 and n else math.nan

    busy, busy_method = math.nan, None
    if tl.get("gpu_busy_fraction") is not None:
        busy, busy_method = float(tl["gpu_busy_fraction"]), "timeline"
    elif span_s > 0 and ok.any():
        held = wide["held_ms"].to_numpy(dtype=float)
        busy = merged_length(ts0[ok], ts1[ok]) / span_s if ok.sum() == n else float(np.nansum(held) / 1e3 / span_s)
        busy_method = "lock_held"

    explicit = [c for c in EXPLICIT_UPLOAD if c in wide.columns]
    up_cols = explicit or [c for c in COMBINED_UPLOAD if c in wide.columns]
    per_upload = wide[up_cols].sum(axis=1, min_count=1).to_numpy(dtype=float) if up_cols else np.full(n, math.nan)
    upload_ms = finite_median(per_upload)
    logged, key = tenure_bytes(side.parsed, wide.index.to_numpy())
    if logged is not None:
        # measured: each tenure's logged bytes over its own upload time, median over tenures
        recs = side.parsed.records.set_index("record")
        gpus = recs["n_gpus"].reindex(wide.index).to_numpy(dtype=float) if "n_gpus" in recs else None
        bytes_pp, bytes_src = finite_median(logged), f"log ({key})"
        gbs = finite_median(upload_gbs(logged, per_upload, gpus))
    else:
        bytes_pp = side.bytes_per_partition
        bytes_src = "--abc-bytes or run meta.json" if bytes_pp else None
        gbs = bytes_pp / (upload_ms / 1e3) / 1e9 if bytes_pp and upload_ms > 0 else math.nan

    sm = _finite(side.samples["sm_active"]) if side.samples is not None and "sm_active" in side.samples else []
    return {
        "label": side.label,
        "source": side.source or str(getattr(side.parsed, "source", "")),
        "mode": side.mode,
        "format": getattr(side.parsed, "format", None),
        "partitions": n,
        "span_s": span_s,
        "throughput_ppm": throughput,
        # the share of the span in which a worker held the GPU lock: not how busy the SMs were
        "lock_held_fraction": busy,
        "gpu_busy_fraction": busy,  # the same figure under its first name, kept for scripts
        "gpu_busy_method": busy_method,
        # measured SM activity (NVML GPM), mean over the recording's samples
        "sm_active_mean": float(np.mean(sm)) if len(sm) else math.nan,
        "activity": activity_figures(side.activity),
        "memcpy": side.memcpy,
        "diagnoses": side.diagnoses,
        "upload_field": up_cols[0] if up_cols else None,
        "upload_ms_median": upload_ms,
        "bytes_per_partition": bytes_pp,
        "bytes_source": bytes_src,
        "upload_gbs": gbs,
        "pcie_per_phase": side.pcie_phases if side.pcie_phases else pcie_per_phase(side.samples, side.phases),
        "vocabulary": side.vocabulary,
    }


def activity_figures(act: dict | None) -> dict[str, Any] | None:
    """The few activity figures a before/after comparison sets side by side."""
    if not act or act.get("busy_fraction") is None:
        return None
    active = act.get("active") or {}
    gaps = act.get("idle_gaps") or {}
    rx = ((act.get("pcie") or {}).get("rx")) or {}
    return {
        "source": act.get("source"),
        "span_s": act.get("span_s", act.get("wall_s")),
        "busy_fraction": act.get("busy_fraction"),
        # NVML: the working time (first to last sign of work, long pauses out); a trace: its span
        "working_busy_fraction": active.get("busy_fraction", act.get("busy_fraction")),
        "idle_fraction": active.get("idle_fraction", act.get("idle_fraction")),
        "idle_total_s": gaps.get("total_s"),
        "idle_longest_s": gaps.get("longest_s"),
        "rx_p90_gbs": rx.get("p90_gbs"),
        "time_near_line_rate_s": (act.get("pcie") or {}).get("time_near_line_rate_s"),
    }


# A change in the GPU's busy fraction smaller than this (relative and in points) is no change.
MIN_BUSY_CHANGE = 0.10
MIN_BUSY_POINTS = 0.02


def activity_verdict(a: dict, b: dict) -> tuple[str, str | None]:
    """When neither side has timing records: which one kept its GPU busier over its working time."""
    fa, fb = a.get("activity") or {}, b.get("activity") or {}
    ba, bb = fa.get("working_busy_fraction"), fb.get("working_busy_fraction")
    if ba is None or bb is None:
        return "no timing records and no GPU activity on both sides to compare", None
    la, lb = a["label"], b["label"]
    what = "busy" if fa.get("source") == fb.get("source") == "trace" else "SM activity"
    text = f"GPU {what} over the working time {la} {ba * 100:.1f}% -> {lb} {bb * 100:.1f}%"
    if abs(bb - ba) < MIN_BUSY_POINTS or (ba > 0 and abs(bb / ba - 1) < MIN_BUSY_CHANGE):
        return f"no clear change: {text}", None
    winner = "b" if bb > ba else "a"
    if fa.get("source") != fb.get("source"):
        text += f" (measured differently: {fa.get('source')} vs {fb.get('source')})"
    return f"{lb if winner == 'b' else la} keeps the GPU busier: {text}", (lb if winner == "b" else la)


# --- verdict ------------------------------------------------------------------------------

def _fmt_x(x: float) -> str:
    return f"{x:.1f}" if x < 10 else f"{x:.0f}"


# A held-time ratio closer to 1 than this is "no material change", however narrow its CI
# (thousands of tenures make a 3% shift significant); the winner then goes by throughput,
# when the two throughputs differ by at least MIN_THROUGHPUT_CHANGE.
MIN_HELD_CHANGE = 0.05
MIN_THROUGHPUT_CHANGE = 0.10


def verdict(a: dict, b: dict, comps: dict, held_key: str) -> tuple[str, str | None]:
    """One sentence naming the winner, and the winner's label (None when unclear)."""
    la, lb = a["label"], b["label"]
    parts: list[str] = []
    winner: str | None = None
    h = comps.get(held_key)
    if h is None or not math.isfinite(h["ratio"]):
        parts.append(f"no {held_key} on both sides to compare")
    elif abs(h["ratio"] - 1) < MIN_HELD_CHANGE and (h["ci_low"] > 1 or h["ci_high"] < 1):
        parts.append(f"no material change in {held_key}: {lb}/{la} = {h['ratio']:.2f} "
                     f"(95% CI {h['ci_low']:.2f}-{h['ci_high']:.2f})")
    elif math.isfinite(h["ci_low"]) and h["ci_low"] > 1:
        winner = "a"
        parts.append(f"{la} cut {held_key} {_fmt_x(h['ratio'])}x ({_fmt_x(h['ci_low'])}-{_fmt_x(h['ci_high'])})")
    elif math.isfinite(h["ci_high"]) and h["ci_high"] < 1:
        winner = "b"
        parts.append(f"{lb} cut {held_key} {_fmt_x(1 / h['ratio'])}x "
                     f"({_fmt_x(1 / h['ci_high'])}-{_fmt_x(1 / h['ci_low'])})")
    else:
        parts.append(f"no clear change in {held_key}: {lb}/{la} = {h['ratio']:.2f} "
                     f"(95% CI {h['ci_low']:.2f}-{h['ci_high']:.2f})")
    ta, tb = a.get("throughput_ppm"), b.get("throughput_ppm")
    if ta and tb and math.isfinite(ta) and math.isfinite(tb) and ta > 0 and tb > 0:
        if winner is None:
            parts.append(f"throughput {lb}/{la} = {tb / ta:.2f}x")
            if abs(tb / ta - 1) >= MIN_THROUGHPUT_CHANGE:
                winner = "b" if tb > ta else "a"
        else:
            w, other = (ta, tb) if winner == "a" else (tb, ta)
            x = w / other
            parts.append(f"throughput +{_fmt_x(x)}x" if x >= 1 else f"throughput {x:.2f}x (lower)")
    if winner is not None:
        win, lose = (a, b) if winner == "a" else (b, a)
        g = win.get("upload_gbs")
        if g and math.isfinite(g):
            was = lose.get("upload_gbs")
            was_s = f" (was {was:.1f})" if was and math.isfinite(was) else ""
            parts.append(f"upload now {g:.0f} GB/s{was_s}")
    return ", ".join(parts), (la if winner == "a" else lb if winner == "b" else None)


def compare(
    a: Side, b: Side, *, seed: int = 0, n_boot: int = DEFAULT_BOOTSTRAP, whatif: WhatIf | None = None,
    predicted_for: str | None = None,
) -> Comparison:
    """Compare side B against side A. `whatif` (predicted from one side) is set against the
    other side's measurement when given; `predicted_for` names that other side ('a'/'b')."""
    comps = compare_components(a, b, seed=seed, n_boot=n_boot)
    fa, fb = run_figures(a), run_figures(b)
    held_key = a.held_key
    if a.steps_ms is not None and b.steps_ms is not None and a.held_key not in comps:
        held_key = STEP_KEY  # two profiler traces: their steps are the records
        comps = {STEP_KEY: _values_row(a.steps_ms, b.steps_ms, seed=seed, n_boot=n_boot, name=STEP_KEY), **comps}
        for f, side in ((fa, a), (fb, b)):
            f["partitions"] = len(side.steps_ms)
    if not fa["partitions"] and not fb["partitions"]:  # no timing records: compare what the GPU did
        text, winner = activity_verdict(fa, fb)
    else:
        text, winner = verdict(fa, fb, comps, held_key)
    notes: list[str] = []
    if fa["gpu_busy_method"] != fb["gpu_busy_method"] and fa["gpu_busy_method"] and fb["gpu_busy_method"]:
        notes.append("GPU busy is measured differently on the two sides (timeline vs lock held)")
    prediction = None
    if whatif is not None and predicted_for in ("a", "b"):
        target = fa if predicted_for == "a" else fb
        target_side = a if predicted_for == "a" else b
        source_side = b if predicted_for == "a" else a
        held = _finite(component_values(target_side.parsed, target_side.held_key, target_side.held_key))
        prediction = prediction_vs_measured(
            whatif, describe(held)["median_ms"], target["throughput_ppm"], target["label"],
            source=source_side.source or whatif.source,
            held_mean_ms=float(held.mean()) if len(held) else math.nan,
            stalled=stalled_tenures(target_side.parsed))
    return Comparison(a=fa, b=fb, components=comps, verdict=text, winner=winner, seed=seed, n_boot=n_boot,
                      prediction=prediction, notes=notes)


def prediction_vs_measured(whatif: WhatIf, held_ms: float, throughput_ppm: float, label: str,
                           source: str | None = None, *, held_mean_ms: float = math.nan,
                           stalled: tuple[int, int] | None = None) -> dict[str, Any]:
    """The what-if set against the other side's measurement: median and mean mutex_held,
    throughput, and tenures stalled at the barrier (predicted / measured). Held times are often
    bimodal (a tenure stalls at the barrier or it does not), so the median can jump where the
    mean, which is what the GPU's occupancy follows, does not."""
    def err(p: float | None, m: float | None) -> float:
        if p is None or m is None or not (math.isfinite(p) and math.isfinite(m)) or m == 0:
            return math.nan
        return (p - m) / m

    pred = whatif.predicted
    ph, pt, pm = pred["held_ms_median"], pred["throughput_ppm"], pred.get("held_ms_mean", math.nan)
    out = {
        "from": source or whatif.source,
        "against": label,
        "line_rate_gbs": whatif.line_rate_gbs,
        "held_ms_predicted": ph,
        "held_ms_measured": held_ms,
        "held_error": err(ph, held_ms),
        "held_mean_ms_predicted": pm,
        "held_mean_ms_measured": held_mean_ms,
        "held_mean_error": err(pm, held_mean_ms),
        "throughput_ppm_predicted": pt,
        "throughput_ppm_measured": throughput_ppm,
        "throughput_error": err(pt, throughput_ppm),
        "whatif": whatif.to_json(),
    }
    if stalled is not None:
        out["stalled_predicted"] = [pred.get("stalled_tenures"), whatif.partitions]
        out["stalled_measured"] = list(stalled)
    return out

"""Phase intervals (worker, gpu, partition, phase, t_start, t_end in epoch seconds).

Three sources, best first:
1. spans.csv of a gpuscope run (exact intervals);
2. timestamped CUZK / key=value / printed lines: a line's time stamp is the end of the last
   phase it reports; the phases printed on one line ran one after another, in print order,
   so each ends where the next one starts (end = stamp - the later phases' durations, start
   = end - duration). The whole (the model's held component) and aggregates (role info) are
   not phases. On lines of the `lines` format every other field is a phase (one without a
   role under its own name; one with the h2d role is `h2d`); the part of the line's whole
   its phases do not cover is the phase `other` (the split's word), after the host-side
   waits that open the line (a step waits for its input first) and before its other parts; and
   a line's phases never start before the previous such line's stamp (where its parts add
   up to more than the time since, the earliest are cut: phases never overlap). A component
   the model says contains another (`[contains]`: ntt_kernels holds the h2d that the same
   record and GPU print on a line of their own) is cut in two: the inner phase at its
   start, the rest after it (ntt_kernels - h2d: the NTT kernels); the inner's own line
   draws nothing more (its stamp says when it was printed, not when the upload ran), so
   the upload appears once, where it ran;
3. TIMELINE events when their lines carry an absolute time (anchor = stamp - offset),
   giving `synth` and `gpu` phases.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from gpuscope.analysis.evidence import intervals as iv
from gpuscope.rolemodel import RoleModel
from gpuscope.schemas import PHASE_COLUMNS, empty_phases

#: component -> phase name of spans.csv (what the analysis joins the samples to)
PHASE_OF = {
    "mutex_wait": "lock_wait",
    "h2d": "h2d",
    "ntt_kernels": "h2d",          # upload of a/b/c + NTTs: upload-dominated
    "coset_intt_sync": "ntt",
    "msm_invoke": "msm",
    "msm": "msm",
    "barrier_wait": "barrier",
    "batch_add": "batch_add",
    "tail_msm": "tail_msm",
    "prep_msm": "prep",
    "synth": "synth",
}

#: the phase of what is left of an outer component once its inner one is cut out of it
#: (`[contains]`); an outer not listed keeps its own name
REMAINDER_PHASE = {"ntt_kernels": "ntt"}   # upload + NTT kernels, less the upload

#: pictures and traces (display=True) name these for what the log measured, where
#: spans.csv's word would claim more: ntt_kernels without an h2d field is the upload *and*
#: the NTT kernels; coset_intt_sync is the wait for the NTT kernels (reports.phase_style)
DISPLAY_PHASE_OF = {"ntt_kernels": "ntt_kernels", "coset_intt_sync": "coset_intt_sync"}


def from_spans(spans: pd.DataFrame) -> pd.DataFrame:
    out = empty_phases()
    if spans is None or spans.empty:
        return out
    df = pd.DataFrame(
        {
            "worker": pd.to_numeric(spans.get("worker", -1), errors="coerce").fillna(-1).astype("int64"),
            "gpu": pd.to_numeric(spans.get("gpu", -1), errors="coerce").fillna(-1).astype("int64"),
            "partition": pd.to_numeric(spans.get("partition", -1), errors="coerce").fillna(-1).astype("int64"),
            "phase": spans["phase"].astype(str),
            "t_start": pd.to_numeric(spans["t_start"], errors="coerce").astype("float64"),
            "t_end": pd.to_numeric(spans["t_end"], errors="coerce").astype("float64"),
        }
    )
    return df.dropna(subset=["t_start", "t_end"]).reset_index(drop=True)


def from_log_lines(components: pd.DataFrame, model: RoleModel, *, display: bool = False) -> pd.DataFrame:
    """The phases of the timestamped timing lines; `display`: named for a picture
    (DISPLAY_PHASE_OF), else by spans.csv's phases."""
    c = components.loc[components["ts"].notna()]
    if c.empty:
        return empty_phases()
    role = c["component"].map(model.roles)
    printed = c["source"] == "lines"  # every field of such a line is a phase of its record
    wholes = c.loc[printed & (c["component"] == model.held)] if model.held else c.iloc[:0]
    keep = (c["component"] != model.held) & (role != "info") & (role.notna() | printed)
    c, role, printed = c.loc[keep], role.loc[keep], printed.loc[keep].to_numpy()
    if len(wholes):
        c, role, printed = _with_other(c, role, printed, wholes)
    if c.empty:
        return empty_phases()
    v = c["value_ms"].to_numpy(dtype="float64") / 1000.0
    line = c["line"].to_numpy()
    g = pd.Series(v, index=c.index).groupby(line)
    later = (g.transform("sum") - g.cumsum()).to_numpy()
    ts = c["ts"].to_numpy(dtype="float64")
    end = ts - later
    start = end - v
    if printed.any():
        floor = _previous_stamp(line, ts, printed)
        start = np.where(printed, np.maximum(start, floor), start)
        end = np.where(printed, np.maximum(end, floor), end)
    phase = c["component"].map({**PHASE_OF, **DISPLAY_PHASE_OF} if display else PHASE_OF)
    phase = phase.where(phase.notna(), np.where(role == "h2d", "h2d", c["component"]))
    out = pd.DataFrame(
        {
            "worker": c["worker"].to_numpy(dtype="int64"),
            "gpu": c["gpu"].to_numpy(dtype="int64"),
            "partition": c["partition"].to_numpy(dtype="int64"),
            "phase": phase.to_numpy(dtype="object"),
            "t_start": start,
            "t_end": end,
        }
    )
    if printed.any():
        out = out.loc[~printed | (end > start)]  # cut away entirely
    if model.contains:
        out = _nest_contained(out, c.iloc[out.index.to_numpy()], model)
    return out.reset_index(drop=True)


def _nest_contained(out: pd.DataFrame, comps: pd.DataFrame, model: RoleModel) -> pd.DataFrame:
    """Cut an outer component's phase (`[contains]`) in two where its record and GPU also
    print the inner component: the inner for its time (at most the outer's) at the outer's
    start, then the rest as REMAINDER_PHASE. The inner's own rows of those records go.
    `comps`: the components the rows of `out` were made from, row for row."""
    comp = comps["component"].to_numpy(dtype="object")
    key = pd.MultiIndex.from_arrays([comps["record"].to_numpy(dtype="int64"), out["gpu"].to_numpy(dtype="int64")])
    tied = comps["record"].to_numpy(dtype="int64") >= 0
    dur = (out["t_end"] - out["t_start"]).to_numpy(dtype="float64")
    order = np.arange(len(out), dtype="float64")
    drop = np.zeros(len(out), dtype=bool)
    parts = []
    for outer, spec in model.contains.items():
        is_outer, is_inner = tied & (comp == outer), tied & (comp == spec.inner)
        if not is_outer.any() or not is_inner.any():
            continue
        inner_s = pd.Series(dur[is_inner], index=key[is_inner]).groupby(level=[0, 1]).sum()
        inner_phase = pd.Series(out["phase"].to_numpy()[is_inner], index=key[is_inner]).groupby(level=[0, 1]).first()
        outer_at = pd.Series(np.flatnonzero(is_outer), index=key[is_outer]).groupby(level=[0, 1]).first()
        both = outer_at.index.intersection(inner_s.index)
        if not len(both):
            continue
        at = outer_at.loc[both].to_numpy()
        cut = np.minimum(inner_s.loc[both].to_numpy(), dur[at])
        start = out["t_start"].to_numpy(dtype="float64")[at]
        inner = out.iloc[at].assign(phase=inner_phase.loc[both].to_numpy(), t_end=start + cut,
                                    _order=order[at] - 0.5)
        parts.append(inner)
        out = out.copy()
        out.iloc[at, out.columns.get_loc("t_start")] = start + cut
        out.iloc[at, out.columns.get_loc("phase")] = REMAINDER_PHASE.get(outer, outer)
        drop |= is_inner & key.isin(both)
    if not parts:
        return out
    out = pd.concat([out.assign(_order=order).loc[~drop], *parts])
    return out.sort_values("_order", kind="stable").drop(columns="_order")


def _with_other(c: pd.DataFrame, role: pd.Series, printed: np.ndarray, wholes: pd.DataFrame):
    """Add, per printed line with a whole, a row `other` for the whole's time its parts do not
    cover: after the host-side waits (role cpu_stall) that open its line, before its other
    parts (a step waits for its input first: `Time 0.217 Data 0.188` is 188 ms of waiting for
    the batch, then 29 ms of the unprinted rest, the compute); first when no such wait opens
    it. The line's phases end at its stamp."""
    parts = pd.Series(c["value_ms"].to_numpy(dtype="float64")[printed], index=c["line"].to_numpy()[printed])
    covered = parts.groupby(level=0).sum()
    w = wholes.drop_duplicates("line", keep="last")
    gap = w["value_ms"].to_numpy(dtype="float64") - covered.reindex(w["line"].to_numpy()).fillna(0.0).to_numpy()
    big = gap > 1e-3 * w["value_ms"].to_numpy(dtype="float64")  # not the printed rounding
    w = w.loc[big].assign(value_ms=gap[big], component="other")
    if w.empty:
        return c, role, printed
    w.index = pd.RangeIndex(-len(w), 0)
    lines = c["line"].to_numpy()
    host = pd.Series((role == "cpu_stall").to_numpy(dtype=bool).astype(np.int64), index=c.index)
    opening = host.groupby(lines).cumprod()  # 1 while every part before it on its line is a wait
    n_open = opening.groupby(lines).sum()
    key = pd.concat([pd.Series(n_open.reindex(w["line"].to_numpy()).fillna(0).to_numpy() - 0.5, index=w.index),
                     pd.Series(c.groupby(lines).cumcount().to_numpy(dtype="float64"), index=c.index)])
    both = pd.concat([w, c])
    out = both.assign(_key=key.loc[both.index].to_numpy()).sort_values(["line", "_key"], kind="stable")
    out = out.drop(columns="_key")
    r = pd.concat([pd.Series(np.nan, index=w.index, dtype="object"), role.astype("object")]).loc[out.index]
    pr = pd.Series(np.concatenate([np.ones(len(w), dtype=bool), printed]),
                   index=np.concatenate([w.index.to_numpy(), c.index.to_numpy()])).loc[out.index].to_numpy()
    return out, r, pr


def _previous_stamp(line: np.ndarray, ts: np.ndarray, printed: np.ndarray) -> np.ndarray:
    """Per row: the stamp of the previous printed line (in line order), -inf for the first or
    when stamps run backwards (then nothing is cut)."""
    lines, first = np.unique(line[printed], return_index=True)
    stamp = ts[printed][first]
    prev = np.concatenate(([-np.inf], stamp[:-1]))
    prev = np.where(prev <= stamp, prev, -np.inf)
    pos = np.searchsorted(lines, line)
    pos = np.clip(pos, 0, len(lines) - 1)
    return np.where(printed & (lines[pos] == line), prev[pos], -np.inf)


def from_timeline(timeline: pd.DataFrame) -> pd.DataFrame:
    if timeline is None or timeline.empty:
        return empty_phases()
    ok = timeline["ts"].notna() & timeline["offset_ms"].notna()
    if not ok.any():
        return empty_phases()
    anchor = float(np.median(timeline.loc[ok, "ts"] - timeline.loc[ok, "offset_ms"] / 1000.0))
    parts = []
    for phase, (s, e, keys) in {
        "synth": ("SYNTH_START", "SYNTH_END", ["job_id", "partition"]),
        "gpu": ("GPU_START", "GPU_END", ["job_id", "partition", "worker"]),
    }.items():
        p = iv.pair_events(timeline, s, e, keys)
        if p.empty:
            continue
        parts.append(
            pd.DataFrame(
                {
                    "worker": p["worker"].astype("int64") if "worker" in p else -1,
                    "gpu": -1,
                    "partition": p["partition"].astype("int64"),
                    "phase": phase,
                    "t_start": anchor + p["start"] / 1000.0,
                    "t_end": anchor + p["end"] / 1000.0,
                }
            )
        )
    if not parts:
        return empty_phases()
    return pd.concat(parts, ignore_index=True)[PHASE_COLUMNS].astype(
        {"worker": "int64", "gpu": "int64", "partition": "int64"}
    )


def build_phases(
    spans: pd.DataFrame | None, components: pd.DataFrame, timeline: pd.DataFrame | None, model: RoleModel,
    *, display: bool = False,
) -> tuple[pd.DataFrame, str | None]:
    """The best phase table available and where it came from (None when there is none);
    `display`: phases of timing lines named for a picture (from_log_lines)."""
    p = from_spans(spans) if spans is not None else empty_phases()
    if len(p):
        return p, "spans.csv"
    p = from_log_lines(components, model, display=display)
    if len(p):
        return p, "timestamped timing lines (stamp = end of the line's last phase)"
    p = from_timeline(timeline)
    if len(p):
        return p, "TIMELINE offsets anchored on the lines' time stamps"
    return empty_phases(), None

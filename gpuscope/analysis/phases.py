"""Phase intervals (worker, gpu, partition, phase, t_start, t_end in epoch seconds).

Three sources, best first:
1. spans.csv of a gpuscope run (exact intervals);
2. timestamped CUZK / key=value lines: a line's time stamp is the end of the last phase it
   reports; the phases printed on one line ran one after another, so each ends where the
   next one starts (end = stamp - the later phases' durations, start = end - duration);
3. TIMELINE events when their lines carry an absolute time (anchor = stamp - offset),
   giving `synth` and `gpu` phases.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from gpuscope.analysis import intervals as iv
from gpuscope.rolemodel import RoleModel
from gpuscope.schemas import PHASE_COLUMNS, empty_phases

#: component -> phase name of spans.csv
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


def from_log_lines(components: pd.DataFrame, model: RoleModel) -> pd.DataFrame:
    c = components.loc[components["ts"].notna()]
    if c.empty:
        return empty_phases()
    role = c["component"].map(model.roles)
    keep = (c["component"] != model.held) & role.notna() & (role != "info")
    c = c.loc[keep]
    if c.empty:
        return empty_phases()
    v = c["value_ms"].to_numpy(dtype="float64") / 1000.0
    g = pd.Series(v, index=c.index).groupby(c["line"].to_numpy())
    later = (g.transform("sum") - g.cumsum()).to_numpy()
    end = c["ts"].to_numpy(dtype="float64") - later
    phase = c["component"].map(PHASE_OF).fillna(c["component"])
    return pd.DataFrame(
        {
            "worker": c["worker"].to_numpy(dtype="int64"),
            "gpu": c["gpu"].to_numpy(dtype="int64"),
            "partition": c["partition"].to_numpy(dtype="int64"),
            "phase": phase.to_numpy(dtype="object"),
            "t_start": end - v,
            "t_end": end,
        }
    )


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
    spans: pd.DataFrame | None, components: pd.DataFrame, timeline: pd.DataFrame | None, model: RoleModel
) -> tuple[pd.DataFrame, str | None]:
    """The best phase table available and where it came from (None when there is none)."""
    p = from_spans(spans) if spans is not None else empty_phases()
    if len(p):
        return p, "spans.csv"
    p = from_log_lines(components, model)
    if len(p):
        return p, "timestamped timing lines (stamp = end of the line's last phase)"
    p = from_timeline(timeline)
    if len(p):
        return p, "TIMELINE offsets anchored on the lines' time stamps"
    return empty_phases(), None

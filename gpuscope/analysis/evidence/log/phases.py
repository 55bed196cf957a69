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

from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from gpuscope.analysis.evidence import intervals as iv
from gpuscope.arrays import median
from gpuscope.rolemodel import RoleModel
from gpuscope.schemas import PHASE_COLUMNS, Columns, empty_phases

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


def from_log_lines(components: pd.DataFrame | Columns, model: RoleModel, *, display: bool = False) -> pd.DataFrame:
    """The phases of the timestamped timing lines; `display`: named for a picture
    (DISPLAY_PHASE_OF), else by spans.csv's phases. `components`: the log's components as a
    frame or as its columns (ParsedLog.columns: names as codes), read column by column as
    numpy arrays, a name once per distinct name (a 10^6-line log is 3M rows: copies of the
    whole frame, its text columns included, were most of what drawing it cost)."""
    every = _Rows.of(components)
    if not every.n:
        return empty_phases()
    roles = [model.roles.get(name) for name in every.names] + [None]  # (the last code: `other`, no role)
    held = every.per_code([bool(model.held) and name == model.held for name in every.names] + [False])
    # a field with a role is a phase; on a printed line (`lines`) every field is one of its record
    keep = every.per_code([r != "info" for r in roles]) & (every.per_code([r is not None for r in roles]) | every.printed)
    r = every.take(np.flatnonzero(keep & ~held))
    wholes = every.take(np.flatnonzero(every.printed & held)) if held.any() and every.printed.any() else None
    del every, keep, held  # (3M rows of a 10^6-line log: not kept beside the phases)
    if wholes is not None:
        r = _with_other(r, wholes, roles)
    del wholes  # (a 10^6-line log's million totals: not held beside the phases' sums)
    if not r.n:
        return empty_phases()
    v = r.value_ms / 1000.0
    end = r.ts - _later_in_line(v, r.line)  # a line's later phases' time before its stamp
    start = end - v
    del v
    kept: slice | np.ndarray = slice(None)
    if r.printed.any():
        floor = _previous_stamp(r.line, r.ts, r.printed)
        np.copyto(start, np.maximum(start, floor), where=r.printed)
        np.copyto(end, np.maximum(end, floor), where=r.printed)
        del floor
        kept = np.flatnonzero(~r.printed | (end > start))  # a phase cut away entirely goes
    names = {**PHASE_OF, **DISPLAY_PHASE_OF} if display else PHASE_OF
    phase = [names.get(n) or ("h2d" if role == "h2d" else n) for n, role in zip(r.names, roles[:-1], strict=True)]
    comp, pos, every_name, frame = r.comp[kept], r.pos[kept], [*r.names, "other"], r.frame
    if isinstance(kept, np.ndarray):
        start, end = start[kept], end[kept]
    del r, kept  # (the 2M kept rows of a 10^6-line log: freed before the table is built)
    # a picture's phases (display, nothing nested) as a categorical made from the codes at hand: the
    # lanes, the shares and the trace read its codes instead of hashing a million names again each
    names_of = _categorical(phase + ["other"], comp) if display and not model.contains else _table(phase + ["other"])[comp]
    out = pd.DataFrame({"worker": _column(frame, "worker", pos), "gpu": _column(frame, "gpu", pos),
                        "partition": _column(frame, "partition", pos), "phase": names_of,
                        "t_start": start, "t_end": end})
    if model.contains:
        out = _nest_contained(out, pd.DataFrame({"component": _table(every_name)[comp],
                                                 "record": _column(frame, "record", pos)}), model)
    return out.reset_index(drop=True)


def _column(components: pd.DataFrame | Columns, name: str, pos: np.ndarray) -> np.ndarray:
    """An int64 column of the components at positions `pos`."""
    return np.asarray(components[name])[pos].astype("int64", copy=False)


def _categorical(names: list, codes: np.ndarray) -> pd.Categorical:
    """names[codes] as a categorical, each distinct name one category (names may repeat: two
    fields drawn as one phase)."""
    cats = list(dict.fromkeys(names))
    at = {name: k for k, name in enumerate(cats)}
    remap = np.array([at[name] for name in names], dtype=np.int32 if len(cats) >= 2**15 else np.int16)
    return pd.Categorical.from_codes(remap[codes], categories=cats)


def _table(values: list) -> np.ndarray:
    """`values` as a 1-d array (object for text) to index by code."""
    if all(isinstance(x, (bool, np.bool_)) for x in values):
        return np.asarray(values, dtype=bool)
    table = np.empty(len(values), dtype=object)
    table[:] = values
    return table


@dataclass
class _Rows:
    """The stamped component rows as numpy arrays, only what the phases need: `comp` codes
    into `names` (the code len(names) is `other`, _with_other's rows), `pos` the row's
    position in the components (other columns are read there at the end: `_column`)."""

    names: list
    comp: np.ndarray
    printed: np.ndarray  # from a line of the `lines` format
    pos: np.ndarray
    value_ms: np.ndarray
    line: np.ndarray
    ts: np.ndarray
    frame: pd.DataFrame | Columns  # the components read

    @classmethod
    def of(cls, components: pd.DataFrame | Columns) -> _Rows:
        if isinstance(components, Columns):
            comp, names = components.codes("component")
            source, sources = components.codes("source")
            printed = source == sources.index("lines") if "lines" in sources else np.zeros(len(source), dtype=bool)
        else:
            comp, uniq = pd.factorize(components["component"], use_na_sentinel=False)
            names, printed = list(uniq), (components["source"] == "lines").to_numpy(dtype=bool)
        ts = np.asarray(components["ts"], dtype="float64")
        pos = np.flatnonzero(~np.isnan(ts)).astype(np.int32 if len(ts) < 2**31 else np.int64)
        value_ms = np.asarray(components["value_ms"], dtype="float64")
        line = np.asarray(components["line"])
        if len(pos) < len(ts):
            comp, printed, value_ms, line, ts = comp[pos], printed[pos], value_ms[pos], line[pos], ts[pos]
        return cls(list(names), np.asarray(comp), np.asarray(printed, dtype=bool), pos, value_ms,
                   line, ts, components)

    n = property(lambda self: len(self.comp))

    def per_code(self, values: list) -> np.ndarray:
        """Each row's entry of `values` (one per code, `other`'s last)."""
        return _table(values)[self.comp]

    def take(self, at: np.ndarray) -> _Rows:
        return replace(self, comp=self.comp[at], printed=self.printed[at], pos=self.pos[at],
                       value_ms=self.value_ms[at], line=self.line[at], ts=self.ts[at])


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


def _with_other(c: _Rows, wholes: _Rows, roles: list) -> _Rows:
    """Add, per printed line with a whole, a row `other` for the whole's time its parts do not
    cover: after the host-side waits (role cpu_stall) that open its line, before its other
    parts (a step waits for its input first: `Time 0.217 Data 0.188` is 188 ms of waiting for
    the batch, then 29 ms of the unprinted rest, the compute); first when no such wait opens
    it. The line's phases end at its stamp. `roles`: per code of `c`. The `other` row is its
    whole's row (worker, GPU, stamp) with the time left over."""
    w, covered = _covered(c, wholes)
    gap = w.value_ms - covered
    big = gap > 1e-3 * w.value_ms  # not the printed rounding
    if not big.any():
        return c
    w = replace(w.take(np.flatnonzero(big)), value_ms=gap[big])
    w = replace(w, comp=np.full(w.n, len(c.names), dtype=c.comp.dtype), printed=np.ones(w.n, dtype=bool))
    lines = c.line
    host = pd.Series(c.per_code([r == "cpu_stall" for r in roles]).astype(np.int64))
    opening = host.groupby(lines).cumprod()  # 1 while every part before it on its line is a wait
    n_open = opening.groupby(lines).sum()
    key = np.concatenate([n_open.reindex(w.line).fillna(0).to_numpy() - 0.5,
                          pd.Series(lines).groupby(lines).cumcount().to_numpy(dtype="float64")])
    both = replace(c, comp=np.concatenate([w.comp, c.comp]), printed=np.concatenate([w.printed, c.printed]),
                   pos=np.concatenate([w.pos, c.pos]), value_ms=np.concatenate([w.value_ms, c.value_ms]),
                   line=np.concatenate([w.line, c.line]), ts=np.concatenate([w.ts, c.ts]))
    return both.take(np.lexsort((key, both.line)))  # (stable: by line, then key)


def _later_in_line(v: np.ndarray, line: np.ndarray) -> np.ndarray:
    """Per row, its line's total less the running sum to it (the later rows' time): pandas'
    groupby(line) transform("sum") - cumsum(), to the bit. Lines in order, finite values:
    the total as pandas makes it (np.add.reduceat per line) and the running sum as its
    group_cumsum does (Kahan-compensated), the k-th rows of every line at once, without the
    groupby machinery (a 10^6-line log: factorizing 2M line numbers, taking the totals back)."""
    if not (len(v) and bool(np.isfinite(v).all()) and bool((line[1:] >= line[:-1]).all())):
        g = pd.Series(v).groupby(line)
        return (g.transform("sum") - g.cumsum()).to_numpy()
    starts = np.flatnonzero(np.concatenate(([True], line[1:] != line[:-1])))
    sizes = np.diff(starts, append=len(v))
    running = np.empty_like(v)
    acc, comp = np.zeros(len(starts)), np.zeros(len(starts))
    lines = np.arange(len(starts))
    for k in range(int(sizes.max())):
        if k:
            lines = lines[sizes[lines] > k]
        at = starts[lines] + k
        y = v[at] - comp[lines]
        t = acc[lines] + y
        comp[lines] = t - acc[lines] - y
        acc[lines] = t
        running[at] = t
    del acc, comp, lines, at, y, t
    later = np.add.reduceat(v, starts).repeat(sizes)
    later -= running  # (in place: one array of 2M rows fewer at the peak)
    return later


def _covered(c: _Rows, wholes: _Rows) -> tuple[_Rows, np.ndarray]:
    """The last whole of each printed line, and the time its line's parts (`c`'s printed rows)
    cover, 0 where it has none: pandas' groupby(line).sum() (np.add.reduceat over lines in
    order) and reindex, to the bit; on numpy where the lines come in order (a 10^6-line log:
    no factorization, duplicated() or reindex of a million lines)."""
    pv, pl, wl = c.value_ms[c.printed], c.line[c.printed], wholes.line
    if (len(pl) and len(wl) and bool(np.isfinite(pv).all()) and bool((pl[1:] >= pl[:-1]).all())
            and bool((wl[1:] >= wl[:-1]).all())):
        starts = np.flatnonzero(np.concatenate(([True], pl[1:] != pl[:-1])))
        lines, sums = pl[starts], np.add.reduceat(pv, starts)
        w = wholes.take(np.flatnonzero(np.concatenate((wl[1:] != wl[:-1], [True]))))  # (the last of a line's)
        if len(w.line) == len(lines) and bool((w.line == lines).all()):
            return w, sums
        at = np.minimum(np.searchsorted(lines, w.line), len(lines) - 1)
        return w, np.where(lines[at] == w.line, sums[at], 0.0)
    parts = pd.Series(pv, index=pl)
    covered = parts.groupby(level=0).sum()
    w = wholes.take(np.flatnonzero(~pd.Series(wl).duplicated(keep="last").to_numpy()))
    return w, covered.reindex(w.line).fillna(0.0).to_numpy()


def _previous_stamp(line: np.ndarray, ts: np.ndarray, printed: np.ndarray) -> np.ndarray:
    """Per row: the stamp of the previous printed line (in line order), -inf for the first or
    when stamps run backwards (then nothing is cut)."""
    every = bool(printed.all())
    at = line if every else line[printed]
    if len(at) and bool((at[1:] >= at[:-1]).all()):  # in line order already (np.unique's answer, no sort)
        first = np.flatnonzero(np.concatenate(([True], at[1:] != at[:-1])))
        lines = at[first]
    else:
        lines, first = np.unique(at, return_index=True)
        every = False
    stamp = (ts if every else ts[printed])[first]
    prev = np.concatenate(([-np.inf], stamp[:-1]))
    prev = np.where(prev <= stamp, prev, -np.inf)
    if every:  # every row printed, in line order: a row's line is its run's (no search of each row's line)
        return prev.repeat(np.diff(first, append=len(line)))
    pos = np.searchsorted(lines, line)
    pos = np.clip(pos, 0, len(lines) - 1)
    return np.where(printed & (lines[pos] == line), prev[pos], -np.inf)


def from_timeline(timeline: pd.DataFrame) -> pd.DataFrame:
    if timeline is None or timeline.empty:
        return empty_phases()
    ok = timeline["ts"].notna() & timeline["offset_ms"].notna()
    if not ok.any():
        return empty_phases()
    anchor = float(median(timeline.loc[ok, "ts"] - timeline.loc[ok, "offset_ms"] / 1000.0))
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

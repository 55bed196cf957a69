"""Build ParsedLog objects (the parsers' contract, docs/ARCHITECTURE.md) directly, for analysis tests."""

from __future__ import annotations

import math

from gpuscope.parsers.log.parsed import ParsedLog, is_quantity_key
from gpuscope.schemas import (
    COMPONENT_COLUMNS,
    QUANTITY_COLUMNS,
    RECORD_COLUMNS,
    SKIPPED_COLUMNS,
    TIMELINE_COLUMNS,
    frame,
)

NAN = math.nan

ARTICLE = [  # the article's four partitions (condensed form)
    dict(mutex_wait=1149, barrier_wait=0, ntt_kernels=287, msm=634, batch_add=401, tail_msm=198, held=1634, total_fn=4215),
    dict(mutex_wait=2064, barrier_wait=0, ntt_kernels=1673, msm=631, batch_add=405, tail_msm=197, held=2385, total_fn=7473),
    dict(mutex_wait=6477, barrier_wait=0, ntt_kernels=5617, msm=630, batch_add=404, tail_msm=196, held=6960, total_fn=9824),
    dict(mutex_wait=2864, barrier_wait=1105, ntt_kernels=1036, msm=631, batch_add=400, tail_msm=196, held=3481, total_fn=4631),
]


def _cols(rows: list[dict], schema: dict) -> dict:
    return {k: [r[k] for r in rows] for k in schema}


class LogBuilder:
    """Add tenures (with optional per-GPU parts), side lines and TIMELINE events; build()."""

    def __init__(self, fmt: str = "cuzk") -> None:
        self.fmt = fmt
        self.line = 0
        self.comps: list[dict] = []
        self.recs: list[dict] = []
        self.tl: list[dict] = []
        self.skipped: list[dict] = []
        self.quants: list[dict] = []

    def _next(self) -> int:
        self.line += 1
        return self.line

    def value(self, component, ms, *, record=-1, gpu=-1, ts=NAN, line=None, worker=-1, partition=-1,
              source="CUZK_TIMING"):
        if is_quantity_key(component):  # h2d_bytes=...: a count, kept apart as the parsers do
            self.quants.append(dict(record=record, gpu=gpu, name=component, value=float(ms),
                                    line=line if line is not None else self._next(), ts=ts))
            return
        self.comps.append(dict(record=record, gpu=gpu, component=component, value_ms=float(ms),
                               line=line if line is not None else self._next(), ts=ts, source=source,
                               worker=worker, partition=partition))

    def tenure(self, held=None, *, gpus: list[dict] | None = None, ts_end=NAN, **parts) -> int:
        """`parts` are per-tenure values (gpu = -1); `gpus` a list of per-GPU dicts (gpu = index).
        held=None makes a tenure cut off at the end of the log (complete False)."""
        r = len(self.recs)
        first = self.line + 1
        for name, v in parts.items():
            self.value(name, v, record=r)
        for g, d in enumerate(gpus or []):
            ln = self._next()
            for name, v in d.items():
                self.value(name, v, record=r, gpu=g, line=ln)
        if held is not None:
            self.value("mutex_held", held, record=r, ts=ts_end)
        self.recs.append(dict(record=r, first_line=first, last_line=self.line, ts_start=NAN, ts_end=ts_end,
                              n_gpus=max(1, len(gpus or [])), held_ms=NAN if held is None else float(held),
                              complete=held is not None))
        return r

    def event(self, offset_ms, event, *, job="job-1", partition=-1, worker=-1, synth_ms=NAN, gpu_ms=NAN, ts=NAN):
        self.tl.append(dict(line=self._next(), ts=ts, offset_ms=float(offset_ms), event=event, job_id=job,
                            partition=partition, worker=worker, synth_ms=synth_ms, gpu_ms=gpu_ms))

    def skip(self, reason="bad value", text="CUZK_TIMING: mutex_held_ms=12x"):
        self.skipped.append(dict(line=self._next(), reason=reason, text=text))

    def build(self, source="<built>") -> ParsedLog:
        return ParsedLog(
            format=self.fmt, source=source, total_lines=self.line,
            timing_lines=self.line,
            components=frame(_cols(self.comps, COMPONENT_COLUMNS), COMPONENT_COLUMNS),
            records=frame(_cols(self.recs, RECORD_COLUMNS), RECORD_COLUMNS),
            timeline=frame(_cols(self.tl, TIMELINE_COLUMNS), TIMELINE_COLUMNS),
            skipped=frame(_cols(self.skipped, SKIPPED_COLUMNS), SKIPPED_COLUMNS),
            quantities=frame(_cols(self.quants, QUANTITY_COLUMNS), QUANTITY_COLUMNS),
        )


def article_log() -> ParsedLog:
    b = LogBuilder("condensed")
    for t in ARTICLE:
        t = dict(t)
        held = t.pop("held")
        b.tenure(held, **t)
    return b.build("article")


def src(parsed: ParsedLog, model=None, *, samples=None, spans=None, meta=None, line_rate_gbs: float = 50.0):
    """A Source around a ParsedLog built here (what gpuscope.sources.open_source gives for a
    file), at a fixed line rate so no test depends on this machine's bandwidth cache."""
    from gpuscope.rolemodel import RoleModel, load_model
    from gpuscope.sources import Source

    if model is not None and not isinstance(model, RoleModel):
        model = load_model(model)
    return Source.from_parsed(parsed, model, samples=samples, spans=spans, meta=meta,
                              line_rate_gbs=line_rate_gbs, line_rate_source="default")

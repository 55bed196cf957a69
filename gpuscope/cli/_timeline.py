"""Shared by `plot`, `export` and the --html reports: a source's phases, samples and title."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpuscope.errors import NoDataError, UsageError

NO_PHASES = ("no phase times to draw: the input has no time stamps "
             "(need timestamped timing lines, TIMELINE events with stamped lines, or a run's spans.csv)")


@dataclass
class TimelineInputs:
    phases: Any            # DataFrame (worker, gpu, partition, phase, t_start, t_end)
    samples: Any           # DataFrame (samples.csv) or None
    title: str
    line_rate_gbs: float | None
    basis: str | None


def title_for(path: str, meta: dict | None, n_partitions: int | None, units: str = "partitions") -> str:
    name = Path(path).name or str(path)
    bits = []
    mode = (meta or {}).get("mode")
    if mode:
        bits.append(f"{mode} host memory")
    if n_partitions:
        bits.append(f"{n_partitions} {units}")
    w = ((meta or {}).get("workload") or {}) if isinstance((meta or {}).get("workload"), dict) else {}
    if w.get("log_n"):
        bits.append(f"log-n {w['log_n']}")
    return f"gpuscope timeline: {name}" + (f" ({', '.join(bits)})" if bits else "")


def window(phases, samples, start: float | None, end: float | None):
    """Keep what overlaps [start, end] seconds after the first phase."""
    if start is None and end is None:
        return phases, samples
    if start is not None and end is not None and end <= start:
        raise UsageError(f"--end ({end}) must be after --start ({start})")
    t0 = float(phases["t_start"].min())
    lo = t0 + (start or 0.0)
    hi = t0 + end if end is not None else float("inf")
    keep = (phases["t_end"] >= lo) & (phases["t_start"] <= hi)
    if not keep.any():
        raise UsageError(f"no phase in the window {start or 0:g}..{end if end is not None else 'end'} s")
    phases = phases[keep]
    if samples is not None and len(samples):
        samples = samples[(samples["t_wall"] >= lo) & (samples["t_wall"] <= hi)]
    return phases, samples


def load_timeline(source: str, *, fmt: str | None = None, model: str | None = None,
                  samples_file: str | None = None) -> TimelineInputs:
    from gpuscope.analysis import open_source
    from gpuscope.analysis.attribution import display_phases
    from gpuscope.linerate import meta_line_rate
    from gpuscope.parsers import parse_log
    from gpuscope.rolemodel import held_key, model_for, user_model

    user = user_model(model)
    ctx = open_source(source)
    parsed = parse_log(str(ctx.timing_log), fmt, held_key=held_key(user))
    role_model = model_for(parsed, user)
    phases, basis = display_phases(parsed, ctx, role_model)
    if not len(phases):
        raise NoDataError(NO_PHASES)
    samples = ctx.samples
    if samples_file:
        from gpuscope.cli.analyze import _read_samples_file

        samples = _read_samples_file(samples_file)
    n = int(parsed.records["complete"].sum()) if len(parsed.records) else None
    return TimelineInputs(phases=phases, samples=samples, title=title_for(source, ctx.meta, n, role_model.vocabulary.units),
                          line_rate_gbs=meta_line_rate(ctx.meta), basis=basis)


def write_output(path: str, data: bytes | str, what: str) -> None:
    p = Path(path)
    try:
        if isinstance(data, str):
            p.write_text(data, encoding="utf-8")
        else:
            p.write_bytes(data)
    except OSError as e:
        raise UsageError(f"cannot write {what} to {p}: {e.strerror or e}") from None

"""The work of `gpuscope plot` and `gpuscope export` (gpuscope/cli/plot.py, export.py), shared with
the fast path (gpuscope/cli/fast.py), which runs their usual command lines without typer. No typer
here: the typer commands pass their options on, the fast path its own reading of the same words.
Loaded only when one of the two runs (both paths import it in the command), so what they draw
with is imported at the top; matplotlib itself loads when the picture is made."""

from __future__ import annotations

import sys

from gpuscope.allocator import for_long_inputs
from gpuscope.cli._common import (
    loading_for_good,
    open_to_draw,
    say_samples_damage,
    source_title,
    write_file,
)
from gpuscope.cli.progress import Progress
from gpuscope.errors import NoDataError, UsageError
from gpuscope.reports.safe_text import visible
from gpuscope.safe_output import stream_target

with loading_for_good():  # (pandas and the reports, for the process's life: no collection scans them as they load)
    from gpuscope.analysis.timeline_view import timeline_view, window
    from gpuscope.reports.plot import FORMATS, format_of, view_png
    from gpuscope.reports.trace import trace_text


def plot(source: str, *, output: str, start: float | None = None, end: float | None = None,
         title: str | None = None, samples: str | None = None, fmt: str | None = None, trace: str | None = None,
         model: str | None = None) -> None:
    """`gpuscope plot SOURCE -o FILE`: the timeline picture, in the format FILE's suffix names."""
    for_long_inputs()  # (as analyze: the 10^6-line log it reads, read with freed memory kept)
    kind = format_of(output)
    if kind is None and stream_target(output):
        kind = "png"  # /dev/null, /dev/stdout, a pipe: no suffix to read, PNG bytes as before
    if kind is None:  # before reading anything: a name that asks for no picture format
        raise UsageError(f"-o {output}: say the picture format by the suffix: "
                         + ", ".join(f".{k}" for k in FORMATS if format_of(f"x.{k}")))
    with Progress(source) as progress:
        src = open_to_draw("plot", source, f"-o {visible(output)}", fmt=fmt, model=model, samples=samples, trace=trace,
                           progress=progress.reading)
        say_samples_damage(src)
        progress.step("drawing")
        tv = window(timeline_view(src), start, end)
        png = view_png(tv, title=title or source_title(src, tv.records), fmt=kind)
    write_file(output, png, f"the {FORMATS[kind]}")
    smp = tv.samples
    sys.stdout.write(f"wrote {visible(output)} ({len(png) / 1024:.0f} KiB; {len(tv.phases)} phases"
                     + (f", {len(smp)} samples" if smp is not None and len(smp) else ", no samples")
                     + f"; phases from {tv.basis})\n")


def export(source: str, *, perfetto: str | None = None, samples: str | None = None, fmt: str | None = None,
           trace: str | None = None, model: str | None = None) -> None:
    """`gpuscope export SOURCE --perfetto FILE.json`: the timeline as Chrome trace JSON."""
    if not perfetto:
        raise UsageError("say what to export: --perfetto FILE.json")
    for_long_inputs()
    src = open_to_draw("export", source, f"--perfetto {visible(perfetto)}", fmt=fmt, model=model, samples=samples,
                       trace=trace)
    say_samples_damage(src)
    tv = timeline_view(src, classed=False)  # (the trace shades no idle gaps)
    doc = trace_text(tv.phases, tv.samples, title=source_title(src, tv.records),
                     metadata={"source": source, "phases_from": tv.basis,
                               **({} if tv.wall_clock else {"t0_epoch_s": None})}, counters=tv.counters,
                     lane_noun=tv.lane_noun)
    n_x, n_c = doc.slices, doc.counter_events
    if not n_x and not n_c:  # before writing: an empty trace is no export
        raise NoDataError(f"nothing to export from {source}: no phase intervals and no sample figures")
    size = [0]

    def text():  # written as made (a million events are never one string); ASCII: a character is a byte
        for chunk in doc.chunks():
            size[0] += len(chunk)
            yield chunk
    write_file(perfetto, text(), "the trace")
    sys.stdout.write(f"wrote {visible(perfetto)} ({size[0] / 1024:.0f} KiB: {n_x} slices, {n_c} counter events); "
                     "open it in ui.perfetto.dev\n")

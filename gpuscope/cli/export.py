"""`gpuscope export RUN|LOG --perfetto trace.json`: Chrome trace JSON for ui.perfetto.dev."""

from __future__ import annotations

import sys

import typer

from gpuscope.cli import options
from gpuscope.cli._common import (
    handle_errors,
    open_to_draw,
    say_samples_damage,
    source_title,
    write_file,
)
from gpuscope.cli.app import app
from gpuscope.errors import NoDataError, UsageError
from gpuscope.reports.safe_text import visible


@app.command(
    "export",
    help=(
        "Export the timeline as Chrome trace JSON (opens in ui.perfetto.dev or chrome://tracing): "
        "a slice per phase per worker (a trace's kernels, copies and record_function / NVTX ranges per "
        "stream), counter tracks per GPU for what the samples measured (PCIe RX/TX, SM and DRAM "
        "activity, utilization.gpu, memory, power, SM clock), process and thread names. Exit 4 when "
        "there is nothing to export.\n\n"
        "Example: gpuscope export runs/20261130-120000-pageable --perfetto trace.json"
    ),
)
@handle_errors
def export_cmd(
    source: str = typer.Argument(..., metavar="SOURCE",
                                help="Run directory, timing log, samples file or profiler trace."),
    perfetto: str | None = typer.Option(None, "--perfetto", metavar="FILE.json", help="Write Chrome/Perfetto trace JSON here."),
    samples: options.Samples = None,
    fmt: options.Format = None,
    trace: options.Trace = None,
    model: options.Model = None,
) -> None:
    if not perfetto:
        raise UsageError("say what to export: --perfetto FILE.json")
    from gpuscope.analysis.timeline_view import timeline_view
    from gpuscope.reports.trace import trace_text

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

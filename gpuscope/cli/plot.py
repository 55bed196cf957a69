"""`gpuscope plot RUN|LOG -o timeline.png`: the timeline picture, in the format its suffix names."""

from __future__ import annotations

import sys

import typer

from gpuscope.cli import bounds, options
from gpuscope.cli._common import (
    handle_errors,
    open_to_draw,
    say_samples_damage,
    source_title,
    write_file,
)
from gpuscope.cli.app import app
from gpuscope.errors import UsageError
from gpuscope.reports.safe_text import visible


@app.command(
    "plot",
    help=(
        "Draw the timeline: one lane per worker (or a trace's stream) with its phases and, on the same "
        "time axis, what the samples measured: PCIe RX/TX, SM and DRAM activity, utilization.gpu "
        "(an nvidia-smi capture's activity), clocks and power; each GPU its own colour. The suffix of "
        "-o picks the format: .png, .svg, .pdf, .eps, .ps, .jpg, .tif, .webp, ...\n\n"
        "Example: gpuscope plot runs/20261130-120000-pageable -o timeline.png\n\n"
        "Example: gpuscope plot examples/cuzk_daemon.log -o daemon.png --start 0 --end 60"
    ),
)
@handle_errors
def plot_cmd(
    source: str = typer.Argument(..., metavar="SOURCE",
                                help="Run directory, timing log, samples file or profiler trace."),
    output: str = typer.Option(..., "-o", "--output", metavar="FILE.png",
                                help="Picture to write; its suffix says the format (.png, .svg, .pdf, ...)."),
    start: float | None = typer.Option(None, "--start", metavar="S", callback=bounds.START.callback, help="Window start, seconds after the first phase."),
    end: float | None = typer.Option(None, "--end", metavar="S", callback=bounds.END.callback, help="Window end, seconds after the first phase."),
    title: str | None = typer.Option(None, "--title", help="Title (default: the run's name, mode, partitions)."),
    samples: options.Samples = None,
    fmt: options.Format = None,
    trace: options.Trace = None,
    model: options.Model = None,
) -> None:
    from gpuscope.analysis.timeline_view import timeline_view, window
    from gpuscope.cli.progress import Progress
    from gpuscope.reports.plot import FORMATS, format_of, view_png
    from gpuscope.safe_output import stream_target

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

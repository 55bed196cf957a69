"""`gpuscope plot RUN|LOG -o timeline.png`: the PNG timeline."""

from __future__ import annotations

import sys

import typer

from gpuscope.cli._common import handle_errors
from gpuscope.cli.app import app


@app.command(
    "plot",
    help=(
        "Draw the timeline as a PNG: one lane per worker with its phases (synthesis, lock wait, "
        "upload, compute, barrier, prep) and, on the same time axis, PCIe RX/TX and SM activity "
        "when the run has NVML samples.\n\n"
        "Example: gpuscope plot runs/20261130-120000-pageable -o timeline.png\n\n"
        "Example: gpuscope plot examples/cuzk_daemon.log -o daemon.png --start 0 --end 60"
    ),
)
@handle_errors
def plot_cmd(
    source: str = typer.Argument(..., metavar="SOURCE",
                                help="Run directory, timing log, samples file or profiler trace."),
    output: str = typer.Option(..., "-o", "--output", metavar="FILE.png", help="PNG file to write."),
    start: float | None = typer.Option(None, "--start", metavar="S", help="Window start, seconds after the first phase."),
    end: float | None = typer.Option(None, "--end", metavar="S", help="Window end, seconds after the first phase."),
    title: str | None = typer.Option(None, "--title", help="Title (default: the run's name, mode, partitions)."),
    samples: str | None = typer.Option(None, "--samples", metavar="FILE", help="NVML samples to draw (default: the run's)."),
    fmt: str | None = typer.Option(None, "--format", metavar="F", help="Force the log format: cuzk, condensed, kv, lines."),
    trace: str | None = typer.Option(None, "--trace", metavar="TRACE",
                                     help="A PyTorch profiler trace of the same program (.json[.gz] or a folder)."),
    model: str | None = typer.Option(None, "--model", metavar="FILE.toml", help="Role model (default: cuzk for CuZK logs, else guessed from the names)."),
) -> None:
    from gpuscope.analysis.timeline_view import timeline_view, window
    from gpuscope.cli._common import say_samples_damage, write_file
    from gpuscope.cli.progress import Progress
    from gpuscope.reports.plot import view_png
    from gpuscope.reports.titles import source_title
    from gpuscope.sources import open_source

    with Progress(source) as progress:
        src = open_source(source, fmt=fmt, model=model, samples=samples, trace=trace, progress=progress.reading)
        say_samples_damage(src)
        progress.step("drawing")
        tv = window(timeline_view(src), start, end)
        png = view_png(tv, title=title or source_title(src, tv.records))
    write_file(output, png, "the PNG")
    smp = tv.samples
    sys.stdout.write(f"wrote {output} ({len(png) / 1024:.0f} KiB; {len(tv.phases)} phases"
                     + (f", {len(smp)} samples" if smp is not None and len(smp) else ", no samples")
                     + f"; phases from {tv.basis})\n")


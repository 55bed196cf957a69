"""`gpuscope plot RUN|LOG -o timeline.png`: the timeline picture, in the format its suffix names.
The work is in gpuscope/cli/draw_run.py (shared with the fast path, gpuscope/cli/fast.py)."""

from __future__ import annotations

import typer

from gpuscope.cli import bounds, options
from gpuscope.cli._common import handle_errors
from gpuscope.cli.app import app


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
    from gpuscope.cli import draw_run  # (what it draws with: loaded when it runs)

    draw_run.plot(source, output=output, start=start, end=end, title=title, samples=samples, fmt=fmt, trace=trace,
                  model=model)

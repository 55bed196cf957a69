"""`gpuscope plot RUN|LOG -o timeline.png`: the PNG timeline."""

from __future__ import annotations

import sys

import typer

from gpuscope.cli import app
from gpuscope.cli._common import handle_errors


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
    source: str = typer.Argument(..., metavar="RUN|LOG", help="Run directory or timing log."),
    output: str = typer.Option(..., "-o", "--output", metavar="FILE.png", help="PNG file to write."),
    start: float | None = typer.Option(None, "--start", metavar="S", help="Window start, seconds after the first phase."),
    end: float | None = typer.Option(None, "--end", metavar="S", help="Window end, seconds after the first phase."),
    title: str | None = typer.Option(None, "--title", help="Title (default: the run's name, mode, partitions)."),
    samples: str | None = typer.Option(None, "--samples", metavar="FILE", help="NVML samples to draw (default: the run's)."),
    fmt: str | None = typer.Option(None, "--format", metavar="F", help="Force the log format: cuzk, condensed, kv, lines."),
    model: str | None = typer.Option(None, "--model", metavar="FILE.toml", help="Role model (default: cuzk for CuZK logs, else guessed from the names)."),
) -> None:
    from gpuscope.cli._timeline import load_timeline, window, write_output
    from gpuscope.reports.plot import timeline_png

    t = load_timeline(source, fmt=fmt, model=model, samples_file=samples)
    phases, smp = window(t.phases, t.samples, start, end)
    origin = float(t.phases["t_start"].min())  # the window keeps the run's time scale
    view = None
    if start is not None or end is not None:
        view = (origin + (start or 0.0), origin + end if end is not None else float(phases["t_end"].max()))
    png = timeline_png(phases, smp, title=title or t.title, line_rate_gbs=t.line_rate_gbs,
                       origin=origin, view=view)
    write_output(output, png, "the PNG")
    sys.stdout.write(f"wrote {output} ({len(png) / 1024:.0f} KiB; {len(phases)} phases"
                     + (f", {len(smp)} samples" if smp is not None and len(smp) else ", no samples")
                     + f"; phases from {t.basis})\n")

"""`gpuscope export RUN|LOG --perfetto trace.json`: Chrome trace JSON for ui.perfetto.dev.
The work is in gpuscope/cli/draw_run.py (shared with the fast path, gpuscope/cli/fast.py)."""

from __future__ import annotations

import typer

from gpuscope.cli import options
from gpuscope.cli._common import handle_errors
from gpuscope.cli.app import app


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
    from gpuscope.cli import draw_run  # (what it draws with: loaded when it runs)

    draw_run.export(source, perfetto=perfetto, samples=samples, fmt=fmt, trace=trace, model=model)

"""`gpuscope export RUN|LOG --perfetto trace.json`: Chrome trace JSON for ui.perfetto.dev."""

from __future__ import annotations

import sys

import typer

from gpuscope.cli import app
from gpuscope.cli._common import handle_errors


@app.command(
    "export",
    help=(
        "Export the timeline as Chrome trace JSON (opens in ui.perfetto.dev or chrome://tracing): "
        "a slice per phase per worker, counter tracks for PCIe RX/TX and SM activity, process and "
        "thread names.\n\n"
        "Example: gpuscope export runs/20261130-120000-pageable --perfetto trace.json"
    ),
)
@handle_errors
def export_cmd(
    source: str = typer.Argument(..., metavar="RUN|LOG", help="Run directory or timing log."),
    perfetto: str | None = typer.Option(None, "--perfetto", metavar="FILE.json", help="Write Chrome/Perfetto trace JSON here."),
    samples: str | None = typer.Option(None, "--samples", metavar="FILE", help="NVML samples to export (default: the run's)."),
    fmt: str | None = typer.Option(None, "--format", metavar="F", help="Force the log format: cuzk, condensed, kv, lines."),
    model: str | None = typer.Option(None, "--model", metavar="FILE.toml", help="Role model (default: cuzk for CuZK logs, else guessed from the names)."),
) -> None:
    from gpuscope.errors import UsageError

    if not perfetto:
        raise UsageError("say what to export: --perfetto FILE.json")
    import json

    from gpuscope.cli._timeline import load_timeline, write_output
    from gpuscope.reports.trace import build_trace

    t = load_timeline(source, fmt=fmt, model=model, samples_file=samples)
    trace = build_trace(t.phases, t.samples, title=t.title, metadata={"source": source, "phases_from": t.basis})
    text = json.dumps(trace, allow_nan=False)
    write_output(perfetto, text, "the trace")
    evs = trace["traceEvents"]
    n_x = sum(1 for e in evs if e["ph"] == "X")
    n_c = sum(1 for e in evs if e["ph"] == "C")
    sys.stdout.write(f"wrote {perfetto} ({len(text) / 1024:.0f} KiB: {n_x} slices, {n_c} counter events); "
                     "open it in ui.perfetto.dev\n")

"""`gpuscope analyze SOURCE`: where the time went (a log, run directory, samples or trace), with a diagnosis.
The work is in gpuscope/cli/analyze_run.py (shared with the fast path, gpuscope/cli/fast.py)."""

from __future__ import annotations

import typer

from gpuscope.cli import options
from gpuscope.cli._common import handle_errors
from gpuscope.cli.app import app


@app.command(
    "analyze",
    help=(
        "Where the time went, from whatever SOURCE holds, told apart by its content: a timing log "
        "(the split of each record's time into H2D / GPU compute / CPU stall / other, component "
        "statistics, timeline, bounds), a run directory of `run` or `record` (plus its NVML samples: "
        "GPU activity, idle gaps, PCIe against the line rate, clocks), a samples file, or a profiler "
        "trace: PyTorch's, or an Nsight Systems report (its `nsys export --type sqlite` file, or the "
        ".nsys-rep with nsys on the PATH) (every kernel and copy, idle gaps and what the host did). "
        "Diagnoses most important first, each with its evidence.\n\n"
        "Example: gpuscope analyze runs/20261201-101500-record\n\n"
        "Example: gpuscope analyze trace.pt.trace.json.gz --line-rate 55\n\n"
        "Example: gpuscope analyze report.sqlite\n\n"
        "Example: gpuscope analyze examples/article_excerpt.log --records\n\n"
        "Example: gpuscope analyze runs/20261130-120000-pageable --json --abc-bytes 1.5G"
    ),
)
@handle_errors
def analyze_cmd(
    source: str = typer.Argument(..., metavar="SOURCE",
                                help="Timing log, run directory, samples file, profiler trace or Nsight Systems report (- for stdin)."),
    as_json: options.Json = False,
    csv_dir: str | None = typer.Option(None, "--csv", metavar="DIR", help="Also write CSV files into DIR."),
    records: bool = typer.Option(False, "--records", help="Add the per-record table (one row per step, or per GPU-lock tenure of a CuZK log)."),
    fmt: options.Format = None,
    model: options.Model = None,
    line_rate: options.LineRate = None,
    abc_bytes: options.AbcBytes = None,
    samples: options.Samples = None,
    trace: options.Trace = None,
    verbose: bool = typer.Option(False, "-v", "--verbose", help="List skipped lines on stderr; show evidence."),
    what_if: bool = typer.Option(
        False, "--what-if", help="Also predict the run with pinned uploads (simulation of the mutex pipeline)."
    ),
    html_file: options.Html = None,
) -> None:
    from gpuscope.allocator import for_long_inputs
    from gpuscope.cli import analyze_run

    for_long_inputs()
    analyze_run.run(source, as_json=as_json, csv_dir=csv_dir, records=records, fmt=fmt, model=model,
                    line_rate=line_rate, abc_bytes=abc_bytes, samples=samples, trace=trace, verbose=verbose,
                    what_if=what_if, html_file=html_file)

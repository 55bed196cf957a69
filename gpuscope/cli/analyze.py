"""`gpuscope analyze SOURCE`: where the time went (a log, run directory, samples or trace), with a diagnosis.
The work is in gpuscope/cli/analyze_run.py (shared with the fast path, gpuscope/cli/fast.py)."""

from __future__ import annotations

import typer

from gpuscope.cli._common import handle_errors
from gpuscope.cli.app import app


@app.command(
    "analyze",
    help=(
        "Where the time went, from whatever SOURCE holds, told apart by its content: a timing log "
        "(the split of each record's time into H2D / GPU compute / CPU stall / other, component "
        "statistics, timeline, bounds), a run directory of `run` or `record` (plus its NVML samples: "
        "GPU activity, idle gaps, PCIe against the line rate, clocks), a samples file, or a PyTorch "
        "profiler trace (every kernel and copy, idle gaps and what the host did). Diagnoses most "
        "important first, each with its evidence.\n\n"
        "Example: gpuscope analyze runs/20261201-101500-record\n\n"
        "Example: gpuscope analyze trace.pt.trace.json.gz --line-rate 55\n\n"
        "Example: gpuscope analyze examples/article_excerpt.log --records\n\n"
        "Example: gpuscope analyze runs/20261130-120000-pageable --json --abc-bytes 1.5G"
    ),
)
@handle_errors
def analyze_cmd(
    source: str = typer.Argument(..., metavar="SOURCE",
                                help="Timing log, run directory, samples file or profiler trace (- for stdin)."),
    as_json: bool = typer.Option(False, "--json", help="Print the analysis as JSON (stable keys)."),
    csv_dir: str | None = typer.Option(None, "--csv", metavar="DIR", help="Also write CSV files into DIR."),
    records: bool = typer.Option(False, "--records", help="Add the per-record table (one row per step, or per GPU-lock tenure of a CuZK log)."),
    fmt: str | None = typer.Option(None, "--format", metavar="F",
                                   help="Force the log format: cuzk, condensed, kv, lines."),
    model: str | None = typer.Option(
        None, "--model", metavar="FILE.toml",
        help="Role model (default: built-in cuzk for CuZK logs, else roles guessed from the names)."),
    line_rate: float | None = typer.Option(
        None, "--line-rate", metavar="GBPS", help="Pinned H2D line rate for projections (default 50, or the run's measured rate)."
    ),
    abc_bytes: str | None = typer.Option(
        None, "--abc-bytes", metavar="SIZE", help="Bytes uploaded per partition (1536M, 1.5G) for the H2D projection."
    ),
    samples: str | None = typer.Option(
        None, "--samples", metavar="FILE", help="NVML samples (samples.csv, nvidia-smi dmon or query-gpu output)."
    ),
    trace: str | None = typer.Option(None, "--trace", metavar="TRACE",
                                     help="A PyTorch profiler trace of the same program (.json[.gz] or a folder)."),
    verbose: bool = typer.Option(False, "-v", "--verbose", help="List skipped lines on stderr; show evidence."),
    what_if: bool = typer.Option(
        False, "--what-if", help="Also predict the run with pinned uploads (simulation of the mutex pipeline)."
    ),
    html_file: str | None = typer.Option(
        None, "--html", metavar="FILE", help="Also write a self-contained HTML report (tables, diagnosis, timeline)."
    ),
) -> None:
    from gpuscope.cli import analyze_run

    analyze_run.run(source, as_json=as_json, csv_dir=csv_dir, records=records, fmt=fmt, model=model,
                    line_rate=line_rate, abc_bytes=abc_bytes, samples=samples, trace=trace, verbose=verbose,
                    what_if=what_if, html_file=html_file)

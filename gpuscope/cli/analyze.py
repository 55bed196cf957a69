"""`gpuscope analyze LOG|RUNDIR`: where the time under the GPU lock goes, with a diagnosis."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import typer

from gpuscope.cli._common import handle_errors, say, say_samples_damage, write_file
from gpuscope.cli.app import app

if TYPE_CHECKING:
    from gpuscope.parsers.parsed import ParsedLog


def _warn_skipped(parsed: ParsedLog, verbose: bool) -> None:
    from gpuscope.reports.safe_text import visible

    n = len(parsed.skipped)
    if not n:
        return
    err = sys.stderr
    if verbose:  # the lines as the log has them, their control characters made visible
        err.write(f"gpuscope: {n} damaged timing line(s) skipped:\n")
        for r in parsed.skipped.itertuples():
            err.write(visible(f"  line {int(r.line)}: {r.reason}: {r.text}") + "\n")
    else:
        err.write(f"gpuscope: {n} damaged timing line{'s' if n != 1 else ''} skipped (use -v to list)\n")


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
    records: bool = typer.Option(False, "--records", help="Add the per-tenure table."),
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
    from gpuscope.analysis import AnalyzeOptions, analyze
    from gpuscope.sources import open_source
    from gpuscope.units import parse_size

    nbytes = parse_size(abc_bytes, "--abc-bytes") if abc_bytes is not None else None
    src = open_source(source, fmt=fmt, model=model, samples=samples, trace=trace, line_rate=line_rate)
    result = analyze(src, AnalyzeOptions(abc_bytes=nbytes, what_if=what_if))
    if src.log is not None:
        _warn_skipped(src.log, verbose)
    say_samples_damage(src)
    if src.trace is not None and src.trace.skipped_events:
        say(f"{src.trace.skipped_events} damaged trace event(s) skipped")
    if html_file:
        from gpuscope.analysis.projection import whatif_doc
        from gpuscope.reports.html import analysis_report

        wi = result.what_if if what_if else whatif_doc(src, abc_bytes=nbytes)
        write_file(html_file, analysis_report(result, whatif=wi), "the HTML report")
        say(f"wrote {html_file}")
    if csv_dir:
        from gpuscope.reports.csvout import write_csv

        written = write_csv(result, csv_dir)
        say(f"wrote {len(written)} CSV files to {csv_dir}")
    if as_json:
        from gpuscope.reports.jsonout import to_json_text

        sys.stdout.write(to_json_text(result) + "\n")
        sys.stdout.flush()
        return
    from gpuscope.cli._common import stdout_console
    from gpuscope.reports.console import render_summary

    con = stdout_console()
    render_summary(result, con, records=records, verbose=verbose)
    if what_if and result.what_if is not None:
        from gpuscope.reports.compare_console import render_whatif_doc

        render_whatif_doc(result.what_if, con)

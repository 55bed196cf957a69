"""`gpuscope analyze LOG|RUNDIR`: where the time under the GPU lock goes, with a diagnosis."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import typer

from gpuscope.cli import app
from gpuscope.cli._common import handle_errors
from gpuscope.errors import UsageError

_SIZE = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*([kmgt]?)(i?b?)\s*$", re.IGNORECASE)
_POW = {"": 0, "k": 1, "m": 2, "g": 3, "t": 4}


def parse_size(text: str) -> int:
    """Bytes from `1536M`, `1.5G`, `1.5GiB`, `1610612736`, `1.6GB`.

    K/M/G/T and KiB/MiB/GiB/TiB are binary (1536M = 1.5G); KB/MB/GB/TB are decimal.
    """
    m = _SIZE.match(text or "")
    if not m:
        raise UsageError(f"--abc-bytes: cannot read {text!r} as a size (e.g. 1536M, 1.5G, 1610612736)")
    value, unit, suffix = float(m.group(1)), m.group(2).lower(), m.group(3).lower()
    if suffix == "b" and unit:
        base = 1000  # MB, GB: decimal
    elif suffix == "b" and not unit:
        base = 1024  # plain "B"
    else:
        base = 1024
    n = int(round(value * base ** _POW[unit]))
    if n <= 0:
        raise UsageError(f"--abc-bytes: must be positive, got {text!r}")
    return n


def _read_samples_file(path: str):
    from gpuscope.errors import InputError

    p = Path(path)
    if not p.is_file():
        raise InputError(f"--samples: no such file: {p}")
    from gpuscope.parsers import read_samples  # samples.csv, nvidia-smi dmon, query-gpu

    return read_samples(p)


def _line_rate(option: float | None, ctx) -> tuple[float, str]:
    if option is not None:
        if not option > 0:
            raise UsageError(f"--line-rate: must be a positive number of GB/s, got {option}")
        return float(option), "option"
    from gpuscope.linerate import resolve_line_rate

    return resolve_line_rate(None, ctx.meta)


def _warn_skipped(parsed, verbose: bool) -> None:
    n = len(parsed.skipped)
    if not n:
        return
    err = sys.stderr
    if verbose:
        err.write(f"gpuscope: {n} damaged timing line(s) skipped:\n")
        for r in parsed.skipped.itertuples():
            err.write(f"  line {int(r.line)}: {r.reason}: {r.text}\n")
    else:
        err.write(f"gpuscope: {n} damaged timing line{'s' if n != 1 else ''} skipped (use -v to list)\n")


@app.command(
    "analyze",
    help=(
        "Split the GPU-lock time of a timing log (or run directory) into H2D / GPU compute / "
        "CPU stall / other, with component statistics, timeline, bounds and a diagnosis.\n\n"
        "Example: gpuscope analyze examples/article_excerpt.log --records\n\n"
        "Example: gpuscope analyze runs/20261130-120000-pageable --json --abc-bytes 1.5G"
    ),
)
@handle_errors
def analyze_cmd(
    source: str = typer.Argument(..., metavar="LOG|RUNDIR", help="Timing log file or run directory."),
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
    verbose: bool = typer.Option(False, "-v", "--verbose", help="List skipped lines on stderr; show evidence."),
    what_if: bool = typer.Option(
        False, "--what-if", help="Also predict the run with pinned uploads (simulation of the mutex pipeline)."
    ),
    html_file: str | None = typer.Option(
        None, "--html", metavar="FILE", help="Also write a self-contained HTML report (tables, diagnosis, timeline)."
    ),
) -> None:
    from gpuscope.analysis import AnalyzeOptions, analyze, open_source
    from gpuscope.parsers import FORMATS, parse_log
    from gpuscope.rolemodel import held_key, model_for, user_model

    if fmt is not None and fmt not in FORMATS:
        raise UsageError(f"--format: unknown format {fmt!r} (choose {', '.join(FORMATS)})")
    nbytes = parse_size(abc_bytes) if abc_bytes is not None else None
    user = user_model(model)
    ctx = open_source(source)
    rate, rate_src = _line_rate(line_rate, ctx)
    sample_df = _read_samples_file(samples) if samples else None
    parsed = parse_log(str(ctx.timing_log), fmt, held_key=held_key(user))
    role_model = model_for(parsed, user)
    result = analyze(
        parsed, role_model, AnalyzeOptions(line_rate_gbs=rate, line_rate_source=rate_src, abc_bytes=nbytes),
        context=ctx, samples=sample_df,
    )
    result.model = role_model  # the reports' words (until Analysis carries its model)
    _warn_skipped(parsed, verbose)
    wi = None
    if what_if or html_file:
        from gpuscope.cli._analyze_extras import whatif_doc

        wi = whatif_doc(parsed, ctx, line_rate=line_rate, abc_bytes=nbytes)
    if html_file:
        from gpuscope.cli._analyze_extras import write_html

        write_html(html_file, result, parsed, ctx, role_model, wi)
    if csv_dir:
        from gpuscope.reports.csvout import write_csv

        written = write_csv(result, csv_dir)
        sys.stderr.write(f"gpuscope: wrote {len(written)} CSV files to {csv_dir}\n")
    if as_json:
        from gpuscope.reports.jsonout import to_json_text

        if what_if:
            import json

            from gpuscope.reports.jsonout import analysis_doc

            sys.stdout.write(json.dumps({**analysis_doc(result), "what_if": wi}, indent=2, allow_nan=False) + "\n")
        else:
            sys.stdout.write(to_json_text(result) + "\n")
        sys.stdout.flush()
        return
    from gpuscope.cli._common import stdout_console
    from gpuscope.reports.console import render_summary

    con = stdout_console()
    render_summary(result, con, records=records, verbose=verbose)
    if what_if:
        from gpuscope.cli._analyze_extras import print_whatif

        print_whatif(wi, con, role_model.vocabulary.to_json())

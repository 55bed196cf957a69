"""`gpuscope record -- CMD ARGS...`: sample NVML while any command runs and keep its log."""

from __future__ import annotations

import sys

import typer

from gpuscope.cli import app
from gpuscope.cli._common import handle_errors, say


def _summarize(path) -> None:
    """Print the analyze summary of the run directory; never fail the recording over it."""
    try:
        from gpuscope.analysis import AnalyzeOptions, analyze, load_source
    except ImportError:
        say("analysis not available in this install: run `gpuscope analyze` later")
        return
    from gpuscope.errors import GpuscopeError, NoDataError
    from gpuscope.rundir import RunDir

    try:
        from gpuscope.linerate import resolve_line_rate
        from gpuscope.rolemodel import model_for

        parsed, ctx = load_source(path)
        rate, rate_src = resolve_line_rate(None, ctx.meta)
        opts = AnalyzeOptions(line_rate_gbs=rate, line_rate_source=rate_src)
        role_model = model_for(parsed)  # the CuZK model for CuZK logs, else roles from the names
        result = analyze(parsed, role_model, opts, context=ctx)
        result.model = role_model
    except NoDataError:
        say("the command printed no timing lines: nothing to analyze (timing.log keeps its output)")
        return
    except GpuscopeError as e:
        say(f"no summary: {e.one_line()}")
        return
    except Exception as e:  # analysis bug: the recording itself is fine
        say(f"no summary (analysis failed: {type(e).__name__}: {e}); run `gpuscope analyze {path}`")
        return
    from gpuscope.reports.jsonout import analysis_doc

    RunDir(path, on_error=say).write_json("summary.json", analysis_doc(result))
    try:
        from gpuscope.reports.console import render_summary
    except ImportError:
        say(f"summary written to {path}/summary.json (console report not available in this install)")
        return
    from gpuscope.cli._common import stdout_console

    sys.stdout.flush()
    render_summary(result, stdout_console())


@app.command(
    "record",
    context_settings={"allow_interspersed_args": False},
    help=(
        "Run a command while sampling NVML (PCIe RX/TX, SM activity, clocks, power) and keep its "
        "output, each line stamped with its arrival time, in a run directory; then print the "
        "analyze summary. The command's output still reaches the terminal, Ctrl-C and SIGTERM "
        "are forwarded to it, and gpuscope exits with its exit code (128+N if signal N ended "
        "it, 127 if it was not found). Without NVML the command still runs and meta.json says "
        "why there are no samples.\n\n"
        "Example: gpuscope record --interval 10 --out runs/daemon -- ./cuzk-daemon --config c.toml\n\n"
        "Example: gpuscope record -- python prove.py"
    ),
)
@handle_errors
def record_cmd(
    command: list[str] = typer.Argument(None, metavar="-- CMD [ARGS...]", help="The command to run."),
    out: str | None = typer.Option(
        None, "--out", metavar="DIR", help="Run directory (default runs/<YYYYmmdd-HHMMSS>-record)."
    ),
    interval: float = typer.Option(20.0, "--interval", metavar="MS", help="Sampling interval in ms (>= 5)."),
    gpus: str | None = typer.Option(None, "--gpus", metavar="0,1", help="GPUs to sample (default: all)."),
    pcie: str = typer.Option(
        "auto", "--pcie", metavar="SRC",
        help="PCIe source: auto (byte counters, else GPM), counter, gpm (10 Hz; ~0.6% of a core "
             "instead of ~5-8%: each counter read costs ~0.75 ms of CPU on an H200), throughput.",
    ),
    summary: bool = typer.Option(True, "--summary/--no-summary", help="Print the analyze summary at the end."),
) -> None:
    from gpuscope.recorder import parse_gpus, record

    res = record(command or [], out=out, interval_s=interval / 1e3, gpus=parse_gpus(gpus), pcie=pcie,
                 on_error=say, argv=sys.argv)
    if res.path is not None:
        if res.no_samples:
            say(res.no_samples)
        elif res.sampler:
            s = res.sampler
            say(f"{res.sample_rows} samples at {s['achieved_hz']} Hz "
                 f"(interval p50 {s['interval_p50_ms']} ms, p99 {s['interval_p99_ms']} ms, "
                 f"sampler CPU {100 * (s['cpu_fraction_of_core'] or 0):.1f}% of a core)")
        say(f"run directory: {res.path} (status {res.status}, exit code {res.exit_code})")
        if summary:
            _summarize(res.path)
    raise typer.Exit(res.exit_code)

"""`gpuscope record -- CMD ARGS...`: sample NVML while any command runs and keep its log."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

import typer

from gpuscope.cli import bounds
from gpuscope.cli._common import handle_errors, say, stdout_console
from gpuscope.cli.app import app

if TYPE_CHECKING:
    from gpuscope.recorder import RecordResult


def _summarize(path: str | os.PathLike[str]) -> None:
    """Print the analyze summary of the run directory; never fail the recording over it. A
    stop signal while it is made ends gpuscope with 128+N, meta.json saying so."""
    from gpuscope.summary import summarize_run

    summary = summarize_run(path, on_error=say)
    if summary.interrupted:
        say(f"{summary.error}; the recording is complete: run `gpuscope analyze {path}`")
        raise typer.Exit(128 + summary.interrupted)
    if summary.analysis is None:
        if summary.no_data:
            say("the command printed no timing lines: nothing to analyze (timing.log keeps its output)")
        else:
            say(f"no summary: {summary.error}; run `gpuscope analyze {path}`")
        return
    from gpuscope.reports.console import render_summary

    sys.stdout.flush()
    render_summary(summary.analysis, stdout_console())


@app.command(
    "record",
    context_settings={"allow_interspersed_args": False},
    help=(
        "Run a command while sampling NVML (PCIe RX/TX, SM activity, clocks, power) and keep its "
        "output, each line stamped with its arrival time, in a run directory; then print the "
        "analyze summary. The command's stdout goes through a pseudo-terminal, so a program that "
        "buffers its output when it is not on a terminal (printf, python without -u) still sends "
        "each line as it prints it (--no-pty: plain pipes); stderr is a pipe. The output still "
        "reaches the terminal. Ctrl-C or SIGTERM is forwarded to the command's process group, a "
        "second sends SIGTERM, a third SIGKILL; SIGHUP or SIGQUIT is forwarded and followed by "
        "SIGTERM and SIGKILL if the command does not end. gpuscope exits with the command's exit "
        "code (128+N if signal N ended it, 127 if it was not found). Without NVML the command "
        "still runs and meta.json says why there are no samples.\n\n"
        "Example: gpuscope record --interval 10 --out runs/daemon -- ./cuzk-daemon --config c.toml\n\n"
        "Example: gpuscope record -- python prove.py\n\n"
        "Example: gpuscope record --live --metrics 127.0.0.1:9400 -- python train.py"
    ),
)
@handle_errors
def record_cmd(
    command: list[str] = typer.Argument(None, metavar="-- CMD [ARGS...]", help="The command to run."),
    out: str | None = typer.Option(
        None, "--out", metavar="DIR", help="Run directory (default runs/<YYYYmmdd-HHMMSS>-record)."
    ),
    interval: float = typer.Option(
        20.0, "--interval", metavar="MS", callback=bounds.INTERVAL_MS.callback,
        help="Sampling interval in ms (>= 5) while PCIe is busy; while it is quiet the byte counters are read "
             "every 50 ms (each read costs 0.4-0.8 ms of CPU on an H200). --steady keeps every tick.",
    ),
    steady: bool = typer.Option(False, "--steady", help="Sample at --interval all the time, also while PCIe is quiet."),
    gpus: str | None = typer.Option(None, "--gpus", metavar="0,1", help="GPUs to sample (default: all)."),
    pcie: str = typer.Option(
        "auto", "--pcie", metavar="SRC",
        help="PCIe source: auto (byte counters, else GPM), counter, gpm (10 Hz; ~0.6% of a core: no "
             "counter reads), throughput.",
    ),
    summary: bool = typer.Option(True, "--summary/--no-summary", help="Print the analyze summary at the end."),
    use_pty: bool = typer.Option(
        True, "--pty/--no-pty",
        help="Capture the command's stdout through a pseudo-terminal (default) or a plain pipe.",
    ),
    live: bool = typer.Option(False, "--live", help="Show the live view (as `gpuscope watch`) while the command "
                                                    "runs; its output scrolls above the panel (plain lines on "
                                                    "stderr when stdout is not a terminal)."),
    metrics: str | None = typer.Option(None, "--metrics", metavar="ADDR:PORT",
                                       help="Serve the samples and states as OpenMetrics for Prometheus here."),
) -> None:
    from gpuscope.recorder import parse_gpus, record

    if live or metrics:
        from gpuscope.cli.record_live import record_live

        res = record_live(command or [], live=live, metrics=metrics, out=out, interval_s=interval / 1e3,
                          gpus=parse_gpus(gpus), pcie=pcie, use_pty=use_pty, steady=steady)
    else:
        res = record(command or [], out=out, interval_s=interval / 1e3, gpus=parse_gpus(gpus), pcie=pcie,
                     use_pty=use_pty, steady=steady, on_error=say, argv=sys.argv)
    try:
        _report(res, summary)
    except OSError:  # our terminal is gone (SIGHUP): the run directory is finished, keep the exit code
        pass
    raise typer.Exit(res.exit_code)


def _report(res: RecordResult, summary: bool) -> None:
    """The sampler's figures, where the run went, and the analyze summary."""
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

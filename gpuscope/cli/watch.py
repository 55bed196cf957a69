"""`gpuscope watch`: what every GPU is doing now, and why it is idle, until Ctrl-C."""

from __future__ import annotations

import typer

from gpuscope.cli import bounds
from gpuscope.cli._common import handle_errors, say
from gpuscope.cli.app import app


@app.command(
    "watch",
    help=(
        "Watch the GPUs live: a panel refreshing about twice a second, one block per GPU with SM, "
        "DRAM and tensor activity, PCIe RX/TX against the line rate, power and clocks, the current "
        "state (computing, moving bytes with the SMs idle, idle with PCIe quiet, ...: analyze's "
        "classes) with its share of the last --window seconds, a history strip, and the first "
        "finding of analyze over that window. Plain lines, one per GPU and refresh, when stdout "
        "is not a terminal (or with --plain). --metrics ADDR:PORT serves the samples and states to "
        "Prometheus (OpenMetrics). Ctrl-C or SIGTERM quits (exit 0); nothing is written to disk "
        "(use `gpuscope record --live -- CMD` to keep a run directory). Exit 5 without NVML.\n\n"
        "Example: gpuscope watch\n\n"
        "Example: gpuscope watch --metrics 127.0.0.1:9400 --gpus 0"
    ),
)
@handle_errors
def watch_cmd(
    gpus: str | None = typer.Option(None, "--gpus", metavar="0,1", help="GPUs to watch (default: all)."),
    interval: float = typer.Option(20.0, "--interval", metavar="MS", callback=bounds.INTERVAL_MS.callback,
                                   help="Sampling interval in ms (>= 5) while PCIe is busy (as record)."),
    refresh: float = typer.Option(0.5, "--refresh", metavar="S", callback=bounds.REFRESH.callback, help="Seconds between refreshes of the view."),
    window: float = typer.Option(30.0, "--window", metavar="S", callback=bounds.WINDOW.callback,
                                 help="The last seconds the shares, the strip and the finding cover."),
    seconds: float | None = typer.Option(None, "--seconds", metavar="S", callback=bounds.SECONDS.callback, help="Stop after this many seconds."),
    metrics: str | None = typer.Option(None, "--metrics", metavar="ADDR:PORT",
                                       help="Serve OpenMetrics for Prometheus here (PORT alone: 127.0.0.1)."),
    plain: bool = typer.Option(False, "--plain", help="Plain lines even on a terminal."),
    line_rate: float | None = typer.Option(None, "--line-rate", metavar="GBS", callback=bounds.LINE_RATE.callback,
                                           help="PCIe line rate in GB/s (default: measured, else 50)."),
    pcie: str = typer.Option("auto", "--pcie", metavar="SRC", help="PCIe source: auto, counter, gpm, throughput."),
) -> None:
    from gpuscope.live.session import watch
    from gpuscope.recorder import parse_gpus

    res = watch(parse_gpus(gpus), interval_s=interval / 1e3, refresh_s=refresh, window_s=window, seconds=seconds,
                metrics=metrics, plain=True if plain else None, line_rate=line_rate, pcie=pcie, on_note=say)
    s = res.sampler
    say(f"watched {res.duration_s:.1f} s: {res.renders} refreshes ({res.refresh_hz:.2f} Hz), "
        f"gpuscope CPU {res.cpu_s:.2f} s ({100 * res.cpu_s / max(res.duration_s, 1e-9):.1f}% of a core; "
        f"sampler {100 * (s.get('cpu_fraction_of_core') or 0):.1f}%), {s.get('rows', 0)} samples at "
        f"{s.get('achieved_hz')} Hz" + (f"; stopped by {res.stopped_by}" if res.stopped_by != "time" else ""))

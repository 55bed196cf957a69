"""`gpuscope compare A B`: two runs or logs side by side, or `compare pinned pageable` to run both."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from gpuscope.cli import bounds, options
from gpuscope.cli._common import (
    emit,
    fail,
    handle_errors,
    say,
    say_samples_damage,
    stdout_console,
    write_file,
)
from gpuscope.cli.app import app
from gpuscope.cli.run import raise_if_failed, run_workload, say_setup
from gpuscope.errors import EXIT_INTERRUPTED, InputError, UsageError

RUN_MODES = ("pinned", "pageable", "unpinned", "registered")


def _run_mode(mode: str, opts: dict) -> str:
    """Run the reference workload in `mode` with the shared settings, as `gpuscope run` does
    (progress on stderr, Ctrl-C stops at the next phase boundary); the run directory."""
    from gpuscope.recorder import parse_gpus
    from gpuscope.rundir import default_path
    from gpuscope.workload.backends import get_backend
    from gpuscope.workload.hostmem import normalize_mode
    from gpuscope.workload.pipeline_types import PipelineConfig
    from gpuscope.workload.runner import WorkloadRun, default_log_n

    gpus = parse_gpus(opts["gpus"])
    if not gpus:
        raise UsageError("--gpus: give at least one GPU index (e.g. 0 or 0,1)")
    be = get_backend(opts["backend"])
    log_n = opts["log_n"] if opts["log_n"] is not None else default_log_n(be.name)
    cfg = PipelineConfig(mode=normalize_mode(mode), log_n=log_n, partitions=opts["partitions"],
                         workers=opts["workers"], synth_threads=opts["synth_threads"], gpus=gpus,
                         contention=opts["contention"], seed=opts["seed"])
    out = str(default_path(cfg.mode, root=opts["out_root"])) if opts["out_root"] else None
    run = WorkloadRun(cfg, backend=be.name, out=out, argv=sys.argv, on_error=say, on_setup=say_setup)

    def announce() -> None:
        assert run.rd is not None  # (run_workload calls it once the run directory exists)
        if be.name != "gpu":
            say(f"no GPU backend: the {mode} run is the CPU reference at log-n {cfg.log_n} (modes have no effect)")
        say(f"running {cfg.mode}: log-n {cfg.log_n}, {cfg.partitions} partitions, {cfg.workers} workers "
             f"-> {run.rd.path}")

    outcome = run_workload(run, label=f"gpuscope compare: {cfg.mode} run", on_prepared=announce)
    raise_if_failed(outcome, f"{mode} run")
    if outcome.status == "interrupted":
        done = outcome.result.done if outcome.result else 0
        raise fail(f"interrupted: the {mode} run stopped after {done} of {cfg.partitions} partitions; "
                   f"run directory {outcome.path} (status interrupted); nothing compared", EXIT_INTERRUPTED)
    return str(outcome.path)


@app.command(
    "compare",
    help=(
        "Compare two runs or logs: per-component medians [p10-p90], the ratio B/A with a 95% "
        "bootstrap confidence interval, throughput, GPU busy, upload rate and PCIe RX per phase, a "
        "verdict, and the pinned what-if predicted from the slower side against the other's "
        "measurement. A and B may be mode names: `compare pinned pageable` runs the reference "
        "workload in both modes back to back with the same settings, then compares.\n\n"
        "Example: gpuscope compare runs/20261130-120000-pinned runs/20261130-121000-pageable\n\n"
        "Example: gpuscope compare pinned pageable --log-n 24 --partitions 16 --html report.html"
    ),
)
@handle_errors
def compare_cmd(
    a: str = typer.Argument(..., metavar="A", help="Run directory, timing log, or a mode name to run."),
    b: str = typer.Argument(..., metavar="B", help="Run directory, timing log, or a mode name to run."),
    as_json: options.Json = False,
    html_file: options.Html = None,
    seed: int = typer.Option(0, "--seed", metavar="N", callback=bounds.SEED.callback, help="Bootstrap seed (same seed, same intervals)."),
    n_boot: int = typer.Option(2000, "--bootstrap", metavar="N", callback=bounds.BOOTSTRAP.callback, help="Bootstrap resamples."),
    abc_bytes: options.AbcBytes = None,
    line_rate: options.LineRate = None,
    fmt: options.Format = None,
    model: options.Model = None,
    log_n: int | None = typer.Option(None, "--log-n", callback=bounds.LOG_N.callback, metavar="K", help="Runs: 2^K elements per vector."),
    partitions: int = typer.Option(16, "--partitions", callback=bounds.PARTITIONS.callback, metavar="N", help="Runs: partitions to prove."),
    workers: int = typer.Option(2, "--workers", callback=bounds.WORKERS.callback, metavar="N", help="Runs: GPU workers sharing the mutex."),
    synth_threads: int = typer.Option(4, "--synth-threads", callback=bounds.SYNTH_THREADS.callback, metavar="N", help="Runs: synthesis threads."),
    gpus: str = typer.Option("0", "--gpus", metavar="0[,1]", help="Runs: GPUs to use."),
    contention: int = typer.Option(0, "--contention", callback=bounds.CONTENTION.callback, metavar="N", help="Runs: host threads copying memory."),
    backend: str = typer.Option("auto", "--backend", metavar="B", help="Runs: auto, gpu or cpu."),
    run_seed: int = typer.Option(1, "--run-seed", callback=bounds.RUN_SEED.callback, metavar="S", help="Runs: synthesis seed."),
    out_root: str | None = typer.Option(None, "--out-root", metavar="DIR", help="Runs: where the two run directories go."),
) -> None:
    from gpuscope.analysis.compare.sources import compare_sources
    from gpuscope.sources import open_source
    from gpuscope.units import parse_size

    # (--bootstrap, --seed, --line-rate: checked as the line is read, gpuscope.cli.bounds)
    nbytes = parse_size(abc_bytes, "--abc-bytes") if abc_bytes else None
    opts = dict(log_n=log_n, partitions=partitions, workers=workers, synth_threads=synth_threads, gpus=gpus,
                contention=contention, backend=backend, seed=run_seed, out_root=out_root)
    paths: list[tuple[str, str | None]] = []  # (path, its label: the mode run for it)
    for arg in (a, b):
        if arg.lower() in RUN_MODES and not Path(arg).exists():
            paths.append((_run_mode(arg.lower(), opts), arg.lower()))
        elif not Path(arg).exists():
            raise InputError(f"no such file or directory: {arg}",
                             hint=f"or name a mode to run: {', '.join(RUN_MODES)}")
        else:
            paths.append((arg, None))
    from gpuscope.allocator import for_long_inputs

    for_long_inputs()  # (two long logs' arrays: see gpuscope/allocator.py)
    src_a, src_b = (open_source(p, fmt=fmt, model=model, line_rate=line_rate) for p, _ in paths)
    for s in (src_a, src_b):
        say_samples_damage(s)
    result, sides = compare_sources(src_a, src_b, labels=(paths[0][1], paths[1][1]), seed=seed, n_boot=n_boot,
                                    abc_bytes=nbytes, pictures=bool(html_file))
    doc = result.to_json()
    if html_file:
        from gpuscope.reports.html import compare_report

        write_file(html_file, compare_report(doc, sides), "the HTML report")
        say(f"wrote {html_file}")
    if as_json:
        emit(doc)
        return
    from gpuscope.reports.compare_console import render_compare

    render_compare(doc, stdout_console())

"""`gpuscope run`: the CuZK-model proving pipeline in pinned, pageable or registered mode."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from types import FrameType
from typing import TYPE_CHECKING

import typer

from gpuscope.cli import bounds
from gpuscope.cli._common import emit, handle_errors, say, stdout_console
from gpuscope.cli.app import app
from gpuscope.errors import GpuscopeError, UsageError

if TYPE_CHECKING:
    from rich.table import Table

    from gpuscope.workload.runner import RunOutcome, WorkloadRun

MiB = 1 << 20  # --host-budget-mib, --pinned-budget-mib


def _fmt_progress(p: dict) -> str:
    """One plain-text progress line (non-terminal stderr)."""
    workers = " ".join(f"w{w}:{ph}" + (f"[p{part}]" if part >= 0 else "")
                       for _g, w, ph, part, _d in p.get("workers", []))
    s = f"{p.get('done', 0)}/{p.get('total', 0)} partitions done, {p.get('queued', 0)} queued; {workers}"
    for g, row in sorted(p.get("samples", {}).items()):
        rx, sm = row.get("rx_gbs"), row.get("sm_active")
        s += f"; gpu{g} rx {rx:.1f} GB/s" if isinstance(rx, float) else ""
        s += f" sm {sm * 100:.0f}%" if isinstance(sm, float) else ""
    return s


def _live_table(p: dict, title: str) -> Table:
    from rich.table import Table

    t = Table(title=title, title_justify="left", expand=False)
    t.add_column("worker")
    t.add_column("gpu", justify="right")
    t.add_column("phase")
    t.add_column("partition", justify="right")
    t.add_column("done", justify="right")
    for g, w, ph, part, d in p.get("workers", []):
        t.add_row(str(w), str(g), ph, str(part) if part >= 0 else "-", str(d))
    cap = f"{p.get('done', 0)}/{p.get('total', 0)} partitions done, {p.get('queued', 0)} queued, " \
          f"{p.get('elapsed_s', 0.0):.1f} s"
    for g, row in sorted(p.get("samples", {}).items()):
        rx, sm = row.get("rx_gbs"), row.get("sm_active")
        cap += f" | GPU {g}: PCIe RX " + (f"{rx:.1f} GB/s" if isinstance(rx, float) else "n/a")
        cap += ", SM active " + (f"{sm * 100:.0f}%" if isinstance(sm, float) else "n/a")
    if p.get("stopping"):
        cap += " | stopping at the next phase boundary"
    t.caption = cap
    return t


def _watch(run: WorkloadRun, title: str) -> None:
    """Show progress until the pipeline ends: rich Live on a terminal, else a line every 2 s."""
    if sys.stderr.isatty():
        from rich.console import Console
        from rich.live import Live

        with Live(_live_table(run.progress(), title), console=Console(stderr=True),
                  refresh_per_second=4, transient=False) as live:
            while run.alive():
                run.wait(0.25)
                live.update(_live_table(run.progress(), title))
        return
    last = 0.0
    while run.alive():
        run.wait(0.25)
        now = time.monotonic()
        if now - last >= 2.0:
            last = now
            say(_fmt_progress(run.progress()))


STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def _say_in_handler(message: str) -> None:
    """say() from a signal handler: never raises (a dead terminal after SIGHUP, or stderr in
    the middle of a write of the main thread's, which a handler must not re-enter)."""
    try:
        say(message)
    except (OSError, RuntimeError, ValueError):
        pass


def _install_stop_signals(run: WorkloadRun) -> dict:
    """SIGINT (Ctrl-C), SIGTERM and SIGHUP: the first stops the run at the next phase boundary
    (during set-up: after the current set-up step); a second of any of them marks meta.json
    interrupted and exits at once (130)."""
    if threading.current_thread() is not threading.main_thread():
        return {}

    def on_stop(signum: int, frame: FrameType | None) -> None:
        name = "Ctrl-C" if signum == signal.SIGINT else signal.Signals(signum).name
        if run.interrupts == 0:
            run.request_stop(why=signal.Signals(signum).name)
            where = "at the next phase boundary" if run.pipeline is not None else "after the current set-up step"
            _say_in_handler(f"interrupted ({name}): stopping {where} ({name} again to quit at once)")
            return
        rd = run.rd
        if rd is not None:
            why = f"second stop signal ({signal.Signals(signum).name}): exited at once"
            rd.mark_interrupted(notes=run.notes + [why])
        _say_in_handler("interrupted twice: exiting now")
        os._exit(130)

    return {s: signal.signal(s, on_stop) for s in STOP_SIGNALS}


def say_setup(message: str) -> None:
    """A set-up step of a workload run (WorkloadRun's on_setup), on stderr."""
    say(f"setup: {message} ...")


def run_workload(run: WorkloadRun, *, label: str, on_prepared: Callable[[], None] | None = None) -> RunOutcome:
    """Prepare, start, watch and finish `run` (a WorkloadRun) with run's signal handling:
    the first Ctrl-C, SIGTERM or SIGHUP stops at the next phase boundary (during set-up: after
    the current step, status interrupted, SetupInterrupted: exit 130), a second exits at once.
    Shared by `gpuscope run` and `compare pinned pageable`. `on_prepared()` runs once the run
    directory exists, before the pipeline starts. Returns the RunOutcome; raises what
    prepare() raised."""
    old = _install_stop_signals(run)
    try:
        try:
            run.prepare()
            if on_prepared is not None:
                on_prepared()
            run.check_stop()
        except BaseException:
            run.finish_failed_setup()
            raise
        run.start()
        assert run.rd is not None  # (prepare() made the run directory)
        try:
            _watch(run, f"{label} ({run.cfg.mode}, log-n {run.cfg.log_n}) -> {run.rd.path}")
        except OSError:  # our terminal is gone (SIGHUP): no more progress, the run goes on to its end
            run.wait()
        return run.finish()
    finally:
        for s, h in old.items():
            signal.signal(s, h)
        sys.stderr.flush()


def raise_if_failed(outcome: RunOutcome, what: str) -> None:
    """A failed outcome as its GpuscopeError (exit code kept), else `<what> failed: ...`."""
    if outcome.status != "failed":
        return
    err = outcome.error
    if isinstance(err, GpuscopeError):
        raise err
    raise GpuscopeError(f"{what} failed: {type(err).__name__}: {err}")


def _render(run: WorkloadRun, outcome: RunOutcome, as_json: bool) -> None:
    if as_json:
        from gpuscope.reports.jsonout import run_document

        emit(run_document(outcome))  # (the one --json writer: NaN as null, strict JSON)
        return
    from gpuscope.reports.run_console import render_run

    render_run(run.cfg, run.backend.name if run.backend is not None else "?", outcome, stdout_console())
    if outcome.analysis is None and outcome.analysis_error:
        say(f"no analysis: {outcome.analysis_error}")


@app.command(
    "run",
    help=(
        "Run the reference Groth16-style proving pipeline (synthesis threads, GPU workers "
        "sharing a GPU mutex, NTT -> H, MSMs, batch_add) with a/b/c in pageable, pinned or "
        "registered host memory, sample NVML while it runs, write a run directory "
        "(meta.json, timing.log in the CuZK formats, samples.csv, spans.csv, summary.json) "
        "and print the analyze summary. Without a GPU it runs the CPU reference at log-n 10 "
        "(modes have no effect there). Ctrl-C, SIGTERM or SIGHUP stops at the next phase "
        "boundary, also during set-up (status interrupted, exit 130); a second exits at once.\n\n"
        "Example: gpuscope run --mode pageable --log-n 24 --partitions 16 --workers 2\n\n"
        "Example: gpuscope run --mode pinned --contention 8 --verify --out runs/pinned-c8"
    ),
)
@handle_errors
def run_cmd(
    mode: str = typer.Option("pinned", "--mode", metavar="MODE",
                             help="Host memory of a/b/c: pinned, pageable (alias unpinned), registered."),
    log_n: int | None = typer.Option(None, "--log-n", callback=bounds.LOG_N.callback, metavar="K",
                                     help="2^K elements per vector (default 24 on a GPU, 10 on the CPU)."),
    partitions: int = typer.Option(16, "--partitions", callback=bounds.PARTITIONS.callback, metavar="N", help="Partitions to prove."),
    workers: int = typer.Option(2, "--workers", callback=bounds.WORKERS.callback, metavar="N", help="GPU workers per GPU (share one mutex)."),
    synth_threads: int = typer.Option(4, "--synth-threads", callback=bounds.SYNTH_THREADS.callback, metavar="N", help="Synthesis threads."),
    gpus: str = typer.Option("0", "--gpus", metavar="0[,1]", help="GPUs to use: one mutex and worker set each."),
    contention: int = typer.Option(0, "--contention", callback=bounds.CONTENTION.callback, metavar="N",
                                   help="Extra host threads copying memory (host-memory pressure)."),
    verify: bool = typer.Option(False, "--verify", help="Check every partition's H and MSMs independently."),
    out: str | None = typer.Option(None, "--out", metavar="DIR",
                                   help="Run directory (default runs/<YYYYmmdd-HHMMSS>-<mode>)."),
    srs_resident: bool = typer.Option(False, "--srs-resident",
                                      help="Keep the SRS points on the GPU instead of streaming them from pinned host memory."),
    backend: str = typer.Option("auto", "--backend", metavar="B", help="auto, gpu or cpu."),
    host_budget_mib: int | None = typer.Option(None, "--host-budget-mib", callback=bounds.BUDGET_MIB["--host-budget-mib"].callback, metavar="MIB",
                                               help="Host bytes of synthesized partitions in flight (default: one partition per worker on each GPU plus one per synthesis thread)."),
    pinned_budget_mib: int | None = typer.Option(None, "--pinned-budget-mib", callback=bounds.BUDGET_MIB["--pinned-budget-mib"].callback, metavar="MIB",
                                                 help="Pinned pool budget in pinned mode (default: the host budget)."),
    srs_chunk_log: int = typer.Option(24, "--srs-chunk-log", callback=bounds.SRS_CHUNK_LOG.callback, metavar="K",
                                      help="Stream SRS points in chunks of 2^K points (smaller: copy of the next chunk overlaps the MSM of this one, but more MSM calls)."),
    prewarm: bool = typer.Option(True, "--prewarm/--no-prewarm",
                                 help="Pinned mode: pin the pool's buffers before the timed run (as a long-lived daemon's pool is)."),
    general_share: float = typer.Option(0.02, "--general-share", metavar="F", callback=bounds.GENERAL_SHARE.callback,
                                        help="Share of a*b=c rows that are general products (the rest have b = 0 or 1)."),
    bool_share: float = typer.Option(0.9, "--bool-share", metavar="F", callback=bounds.BOOL_SHARE.callback, help="Share of witness scalars that are 0 or 1."),
    seed: int = typer.Option(1, "--seed", callback=bounds.SEED.callback, metavar="S", help="Synthesis seed."),
    interval: float = typer.Option(20.0, "--interval", metavar="MS", callback=bounds.INTERVAL_MS.callback, help="NVML sampling interval in ms."),
    as_json: bool = typer.Option(False, "--json", help="Print the run summary and analysis as JSON."),
) -> None:
    from gpuscope.recorder import parse_gpus
    from gpuscope.workload.backends import get_backend
    from gpuscope.workload.hostmem import normalize_mode
    from gpuscope.workload.pipeline_types import PipelineConfig
    from gpuscope.workload.runner import WorkloadRun, default_log_n

    mode = normalize_mode(mode)
    gpu_list = parse_gpus(gpus)
    if not gpu_list:
        raise UsageError("--gpus: give at least one GPU index (e.g. 0 or 0,1)")
    if backend not in ("auto", "gpu", "cpu"):
        raise UsageError(f"--backend: unknown backend {backend!r} (auto, gpu or cpu)")
    be = get_backend(backend)
    if log_n is None:
        log_n = default_log_n(be.name)
    cfg = PipelineConfig(
        mode=mode, log_n=log_n, partitions=partitions, workers=workers, synth_threads=synth_threads,
        gpus=gpu_list, contention=contention, verify=verify, srs_resident=srs_resident,
        srs_chunk_log=srs_chunk_log, prewarm=prewarm,
        host_budget_bytes=host_budget_mib * MiB if host_budget_mib is not None else None,
        pinned_budget_bytes=pinned_budget_mib * MiB if pinned_budget_mib is not None else None,
        general_share=general_share, bool_share=bool_share, seed=seed,
    )
    run = WorkloadRun(cfg, backend=be.name, out=out, argv=sys.argv, sample_interval_s=interval / 1e3,
                      on_error=say, on_setup=say_setup)

    def cpu_notice() -> None:
        if be.name != "gpu":
            say(f"no GPU backend: running the CPU reference at log-n {cfg.log_n} "
                 "(host-memory modes have no effect)")

    outcome = run_workload(run, label="gpuscope run", on_prepared=cpu_notice)
    _render(run, outcome, as_json)
    raise_if_failed(outcome, "run")
    if outcome.status == "interrupted":
        say(f"interrupted: {outcome.result.done if outcome.result else 0} of {cfg.partitions} "
             f"partitions done; run directory {outcome.path} is complete (status interrupted)")
        raise typer.Exit(outcome.exit_code)
    if outcome.exit_code != 0:  # incomplete or unfinished: a full disk cut the run directory (said above)
        say(f"run directory {outcome.path}: status {outcome.status}, exit code {outcome.exit_code}")
        raise typer.Exit(outcome.exit_code)

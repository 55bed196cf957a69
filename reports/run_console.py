"""`gpuscope run`'s own table (backend, workload, partitions, upload, host memory), then the
analyze summary of what the run wrote. Inputs: the pipeline config and the run's outcome
(gpuscope.workload.runner.RunOutcome)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table

from gpuscope.reports.console import render_summary

if TYPE_CHECKING:
    from gpuscope.workload.pipeline_types import PipelineConfig
    from gpuscope.workload.runner import RunOutcome
from gpuscope.reports.safe_text import LiteralTable, text

MiB = 1 << 20
GiB = 1 << 30


def run_table(cfg: PipelineConfig, backend: str, outcome: RunOutcome) -> Table:
    t = LiteralTable(title=f"gpuscope run: {outcome.path}", title_justify="left", show_header=False)
    t.add_column("what")
    t.add_column("value")
    label = f"{cfg.mode} host memory" if backend == "gpu" else "CPU reference (modes have no effect: no GPU, no PCIe)"
    t.add_row("backend", f"{backend}: {label}")
    t.add_row("workload", f"log-n {cfg.log_n} ({1 << cfg.log_n} elements), {cfg.partitions} partitions, "
              f"{cfg.workers} workers x {len(cfg.gpus)} GPU(s), {cfg.synth_threads} synthesis threads"
              + (f", {cfg.contention} contention threads" if cfg.contention else ""))
    t.add_row("status", outcome.status)
    res = outcome.result
    if res is None:
        return t
    s = res.summary()
    t.add_row("partitions", f"{s['partitions_done']} done in {s['wall_s']:.2f} s"
              + (f" ({s['partitions_per_s']:.3f}/s)" if s["partitions_per_s"] else ""))
    if s["h2d_bytes"]:
        t.add_row("upload", f"{s['h2d_bytes'] / GiB:.2f} GiB in {s['h2d_s']:.3f} s"
                  + (f" = {s['h2d_gbs']:.1f} GB/s" if s["h2d_gbs"] else "")
                  + (f", {s['h2d_share_of_held'] * 100:.1f}% of mutex_held"
                     if s["h2d_share_of_held"] is not None else ""))
    if cfg.verify:
        t.add_row("verify", f"{s['verified']}/{s['partitions_done']} partitions verified")
    mem = s.get("host_memory") or {}
    pool = mem.get("pool")
    if pool:
        t.add_row("pinned pool", f"{pool['allocations']} cudaHostAlloc ({pool['alloc_s']:.2f} s), "
                  f"{pool['hits']} reuses, peak {pool['peak_bytes'] / MiB:.0f} MiB of {pool['budget'] / MiB:.0f} MiB")
    if "registrations" in mem:
        t.add_row("registered", f"{mem['registrations']} cudaHostRegister "
                  f"({mem['register_s']:.3f} s), unregister {mem['unregister_s']:.3f} s")
    return t


def render_run(cfg: PipelineConfig, backend: str, outcome: RunOutcome, console: Console) -> None:
    console.print(run_table(cfg, backend, outcome))
    for n in outcome.notes:
        console.print(text(f"note: {n}"))
    if outcome.analysis is not None:
        render_summary(outcome.analysis, console)

"""What crosses the pipeline's modules: its config, the stop signal, a worker's live state and
the results (per partition and per run).

`PipelineConfig` is what `gpuscope run` asks for (validated before anything is allocated);
`Stopped` is raised inside the pipeline's threads at the next phase boundary after a stop
request; `WorkerState` is what the live view reads; `PartitionResult` / `PipelineResult` are
what a run hands back (meta.json's `pipeline` is `PipelineResult.summary()`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gpuscope.errors import ResourceError, UsageError
from gpuscope.units import fmt_bytes
from gpuscope.workload.synth import SynthConfig, partition_bytes


class Stopped(Exception):
    """Raised inside pipeline threads when a stop was requested (phase boundary)."""


@dataclass
class PipelineConfig:
    mode: str = "pinned"
    log_n: int = 10
    partitions: int = 4
    workers: int = 2  # per GPU
    synth_threads: int = 2
    gpus: list[int] = field(default_factory=lambda: [0])
    contention: int = 0
    verify: bool = False
    srs_resident: bool = False
    srs_chunk_log: int = 24  # points per streamed SRS chunk = 2^srs_chunk_log
    prewarm: bool = True  # pinned mode: pin the pool's buffers before the clock starts
    host_budget_bytes: int | None = None  # default: one partition per worker and per synthesis thread
    pinned_budget_bytes: int | None = None  # default: the host budget
    general_share: float = 0.02
    bool_share: float = 0.9
    seed: int = 1

    def synth_config(self) -> SynthConfig:
        return SynthConfig(log_n=self.log_n, general_share=self.general_share,
                           bool_share=self.bool_share, seed=self.seed)

    def resolved_host_budget(self) -> int:
        if self.host_budget_bytes is not None:
            return int(self.host_budget_bytes)
        # Every worker holds a partition (in its tenure or waiting for the lock) and every
        # synthesis thread fills one: a smaller default starves the GPUs of synthesized work
        # (on 2 GPUs, workers*gpus + 2 held synthesis to 2 partitions in flight).
        return partition_bytes(self.synth_config()) * (self.workers * len(self.gpus) + self.synth_threads)

    def resolved_pinned_budget(self) -> int:
        if self.pinned_budget_bytes is not None:
            return int(self.pinned_budget_bytes)
        return self.resolved_host_budget()

    def validate(self) -> None:
        self.synth_config().validate()
        if self.partitions < 1:
            raise UsageError(f"--partitions must be >= 1, got {self.partitions}")
        if self.workers < 1:
            raise UsageError(f"--workers must be >= 1, got {self.workers}")
        if self.synth_threads < 1:
            raise UsageError(f"--synth-threads must be >= 1, got {self.synth_threads}")
        if self.contention < 0:
            raise UsageError(f"--contention must be >= 0, got {self.contention}")
        if not self.gpus:
            raise UsageError("--gpus needs at least one GPU index")
        if len(set(self.gpus)) != len(self.gpus) or min(self.gpus) < 0:
            raise UsageError(f"--gpus must list distinct GPU indices, got {self.gpus}")
        if not 10 <= self.srs_chunk_log <= 30:
            raise UsageError(f"--srs-chunk-log must be within 10..30, got {self.srs_chunk_log}")
        need = partition_bytes(self.synth_config())
        if self.resolved_host_budget() < need:
            raise ResourceError(
                f"one partition needs {fmt_bytes(need)} of host memory, more than the host "
                f"budget of {fmt_bytes(self.resolved_host_budget())}",
                hint="raise --host-budget-mib or lower --log-n")
        if self.mode == "pinned" and self.resolved_pinned_budget() < need:
            raise ResourceError(
                f"one partition needs {fmt_bytes(need)} of pinned memory, more than the pinned "
                f"budget of {fmt_bytes(self.resolved_pinned_budget())}",
                hint="raise --pinned-budget-mib or lower --log-n")


@dataclass
class WorkerState:
    """A GPU worker's live state, read by the live view (WorkloadRun.progress)."""

    gpu: int
    worker: int  # global worker id (gpu position * workers + local id)
    phase: str = "idle"
    partition: int = -1
    done: int = 0


@dataclass
class PartitionResult:
    index: int
    gpu: int
    worker: int
    held_s: float
    h2d_s: float
    h2d_bytes: int
    gpu_total_s: float
    barrier_s: float
    mutex_wait_s: float
    dma_wait_s: float = 0.0  # registered mode: upload waited for another worker's (un)registration
    verified: bool = False


@dataclass
class PipelineResult:
    results: list[PartitionResult]
    wall_s: float
    stopped: bool
    error: BaseException | None
    memory: dict[str, Any]  # HostMemory.stats()
    budget: dict[str, Any]  # the host budget: budget, peak, waits, wait_s
    synthesized: int
    srs: dict[str, Any]

    @property
    def done(self) -> int:
        return len(self.results)

    def summary(self) -> dict[str, Any]:
        held = sum(r.held_s for r in self.results)
        h2d = sum(r.h2d_s for r in self.results)
        nbytes = sum(r.h2d_bytes for r in self.results)
        return {
            "partitions_done": self.done,
            "wall_s": round(self.wall_s, 6),
            "partitions_per_s": (self.done / self.wall_s) if self.wall_s > 0 else None,
            "mutex_held_s": round(held, 6),
            "h2d_s": round(h2d, 6),
            "h2d_bytes": nbytes,
            "h2d_gbs": (nbytes / h2d / 1e9) if h2d > 0 else None,
            "h2d_share_of_held": (h2d / held) if held > 0 else None,
            "verified": sum(1 for r in self.results if r.verified),
            "upload_wait_for_registration_s": round(sum(r.dma_wait_s for r in self.results), 6),
            "stopped": self.stopped,
            "host_memory": self.memory,
            "host_budget": self.budget,
            "srs": self.srs,
        }


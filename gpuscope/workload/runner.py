"""One `gpuscope run`: run directory, sampler, SRS set-up, the pipeline, meta and summary.

    run = WorkloadRun(cfg, backend="auto", out=None, argv=sys.argv)
    run.prepare()          # checks, run dir (status running), sampler, set-up, SRS points
    run.check_stop()       # SetupInterrupted if a stop came during set-up
    run.start()            # the pipeline on a background thread
    while run.alive(): ... run.progress() ...   # the caller's live view; run.request_stop() on Ctrl-C
    outcome = run.finish() # status complete|interrupted|failed, summary.json, everything freed

No printing here: the CLI renders `progress()` and the final analysis.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpuscope import __version__, linerate
from gpuscope import nvml as nvml_mod
from gpuscope.clock import CLOCK
from gpuscope.errors import (
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_RESOURCE,
    GpuscopeError,
    UsageError,
)
from gpuscope.gpuinfo import first_line_rate, meta_gpus
from gpuscope.rundir import RunDir, host_info, iso_now
from gpuscope.sampler import Sampler
from gpuscope.summary import summarize_run
from gpuscope.workload import timinglog as tl
from gpuscope.workload.backends import get_backend
from gpuscope.workload.hostmem import normalize_mode
from gpuscope.workload.pipeline import Pipeline
from gpuscope.workload.pipeline_types import PipelineConfig, PipelineResult
from gpuscope.workload.setup import RunSetup
from gpuscope.workload.srs import SRS_SEED_H, SRS_SEED_W
from gpuscope.workload.synth import partition_bytes
from gpuscope.workload.verify import Verifier

if TYPE_CHECKING:
    from gpuscope.rundir import SamplesWriter
    from gpuscope.workload.backends import Backend

GPU_DEFAULT_LOG_N = 24
CPU_DEFAULT_LOG_N = 10
CPU_MAX_LOG_N = 14


def default_log_n(backend_name: str) -> int:
    """--log-n when the user gives none: 2^24 on a GPU, 2^10 on the CPU reference."""
    return GPU_DEFAULT_LOG_N if backend_name == "gpu" else CPU_DEFAULT_LOG_N


@dataclass
class RunOutcome:
    status: str  # complete | interrupted | failed
    exit_code: int
    path: Path
    result: PipelineResult | None
    analysis: Any = None  # gpuscope.analysis.Analysis, when the log could be analyzed
    analysis_error: str | None = None
    error: BaseException | None = None
    notes: list[str] = field(default_factory=list)


class SetupInterrupted(GpuscopeError):
    """A stop was requested (Ctrl-C, SIGTERM, SIGHUP) before the pipeline started: the run
    ends at the next set-up step, with no partition run (exit 130)."""

    exit_code = EXIT_INTERRUPTED


class WorkloadRun:
    def __init__(self, cfg: PipelineConfig, *, backend: str = "auto", out: str | None = None,
                 argv: list[str] | None = None, sample: bool = True,
                 sample_interval_s: float = 0.020, on_error: Callable[[str], None] | None = None,
                 on_setup: Callable[[str], None] | None = None):
        """`on_error(msg)`: errors the run goes on after (a full disk); `on_setup(msg)`: one line
        as each set-up step that can take seconds starts (pinning, SRS points, warm-up)."""
        self.cfg = cfg
        self.backend_kind = backend
        self.out = out
        self.argv = list(argv) if argv is not None else list(sys.argv)
        self.sample = sample
        self.sample_interval_s = sample_interval_s
        self.on_error = on_error or (lambda msg: None)
        self.on_setup = on_setup or (lambda msg: None)
        self.notes: list[str] = []
        self.rd: RunDir | None = None
        self.pipeline: Pipeline | None = None
        self.sampler: Sampler | None = None
        self.samples_sink: _LastRowTee | None = None
        self.log: tl.TimingLog | None = None
        self.backend: Backend | None = None
        self.setup: RunSetup | None = None
        self._thread: threading.Thread | None = None
        self._result: PipelineResult | None = None
        self._exc: BaseException | None = None
        self.interrupts = 0

    # -- set-up ----------------------------------------------------------------------------
    def prepare(self) -> None:
        """Checks, run directory (status running), NVML facts and the sampler, then what runs
        before the clock (devices, host memory, SRS points, kernel warm-up), the timing log,
        the verifier and the pipeline; meta.json says each step's outcome."""
        backend = self._choose_backend()
        on_gpu = backend.name == "gpu"
        rd = self.rd = RunDir.create(self.out, mode=self.cfg.mode, on_error=self._report)
        nv = self._write_start_meta(rd, backend)
        self._open_samples(rd, nv, on_gpu)
        self.check_stop()
        setup = self.setup = RunSetup(self.cfg, backend, self.on_setup, check_stop=self.check_stop)
        devices, backends, srs = setup.build(on_gpu)
        log = self.log = self._open_log(rd)
        verifier = self._verifier(rd, backends)
        assert setup.mem is not None  # (build() made the host memory)
        self.pipeline = Pipeline(self.cfg, backends, devices, setup.mem, log, srs=srs,
                                 verifier=verifier)
        rd.write_meta(setup=setup.seconds)
        self.check_stop()

    def check_stop(self) -> None:
        """SetupInterrupted when a stop was requested: called between the set-up steps (and by
        the caller just before start()), so a Ctrl-C during set-up is never lost."""
        if self.interrupts:
            where = f"; run directory {self.rd.path} (status interrupted)" if self.rd is not None else ""
            raise SetupInterrupted(f"interrupted during set-up: no partition ran{where}")

    def _choose_backend(self) -> Backend:
        """The backend (also kept in self.backend), the CPU backend's limits, the config checked."""

        cfg = self.cfg
        cfg.mode = normalize_mode(cfg.mode)
        if self.backend_kind not in ("auto", "gpu", "cpu"):
            raise UsageError(f"--backend: unknown backend {self.backend_kind!r} (auto, gpu or cpu)")
        backend = self.backend = get_backend(self.backend_kind)
        if backend.name != "gpu":
            if cfg.log_n > CPU_MAX_LOG_N:
                raise UsageError(
                    f"--log-n {cfg.log_n} is too large for the CPU reference backend "
                    f"(at most {CPU_MAX_LOG_N}; it computes with Python integers)",
                    hint=f"use --log-n {CPU_DEFAULT_LOG_N} or run on a GPU")
            self.notes.append(
                "CPU reference backend (no GPU): host-memory modes have no effect, no PCIe "
                "traffic and no NVML samples; the timings are those of Python-integer arithmetic")
            cfg.gpus = [0]
            cfg.srs_resident = True
        cfg.validate()
        return backend

    def _workload_meta(self, backend: Backend) -> dict[str, Any]:
        """meta.json's `workload`: what the run was asked to do."""
        cfg = self.cfg
        on_gpu = backend.name == "gpu"
        return {
            "backend": backend.name, "mode": cfg.mode,
            "mode_effective": cfg.mode if on_gpu else "none (CPU backend)",
            "log_n": cfg.log_n, "n": 1 << cfg.log_n, "partitions": cfg.partitions,
            "workers_per_gpu": cfg.workers, "synth_threads": cfg.synth_threads,
            "gpus": cfg.gpus, "contention_threads": cfg.contention, "verify": cfg.verify,
            "srs": "resident" if cfg.srs_resident else "pinned-host, streamed",
            "srs_chunk_points": 1 << cfg.srs_chunk_log,
            "abc_bytes_per_partition": 3 * (1 << cfg.log_n) * 32,
            "h2d_bytes_per_partition": 4 * (1 << cfg.log_n) * 32,
            "partition_host_bytes": partition_bytes(cfg.synth_config()),
            "host_budget_bytes": cfg.resolved_host_budget(),
            "pinned_budget_bytes": cfg.resolved_pinned_budget() if cfg.mode == "pinned" else None,
            "general_share": cfg.general_share, "bool_share": cfg.bool_share, "seed": cfg.seed,
        }

    def _write_start_meta(self, rd: RunDir, backend: Backend) -> nvml_mod.Nvml | None:
        """meta.json at the start (status running) with the GPU facts NVML gives (absence is not
        an error); returns the NVML session when the run samples."""
        cfg, on_gpu = self.cfg, backend.name == "gpu"
        meta: dict[str, Any] = {
            "gpuscope_version": __version__, "kind": "workload", "mode": cfg.mode,
            "argv": self.argv, "host": host_info(), "started": iso_now(), "status": "running",
            "workload": self._workload_meta(backend),
            "notes": self.notes,
        }
        nv = nvml_mod.get() if self.sample else None
        gpu_meta: list[dict] = []
        if nv is not None and on_gpu:
            n = nv.device_count()
            bad = [g for g in cfg.gpus if not 0 <= g < n]
            if bad:
                raise UsageError(f"--gpus: no GPU {bad[0]} (this machine has {n})")
            meta["driver"] = nv.system() or None
            gpu_meta = meta_gpus(nv, cfg.gpus)
        meta["gpus"] = gpu_meta
        meta["line_rate_gbs"] = first_line_rate(gpu_meta)
        if meta["line_rate_gbs"] is None and on_gpu:
            meta["line_rate_gbs"] = linerate.measured_line_rate()
        rd.write_meta(**meta)
        return nv

    def _open_samples(self, rd: RunDir, nv: nvml_mod.Nvml | None, on_gpu: bool) -> None:
        """samples.csv (the header at least) and, on a GPU with NVML, the sampler that fills it."""
        self.samples_sink = _LastRowTee(rd.samples_writer())
        if nv is not None and on_gpu:
            self.sampler = Sampler(nv, self.cfg.gpus, self.samples_sink,
                                   interval_s=self.sample_interval_s, on_error=self._report)
        else:
            why = ("CPU backend" if not on_gpu else
                   f"no samples: {nvml_mod.unavailable_reason() or 'sampling off'}")
            rd.write_meta(sampler=why)

    def _open_log(self, rd: RunDir) -> tl.TimingLog:
        """timing.log and spans.csv, through the TimingLog the pipeline writes."""
        spans = rd.spans_writer()
        return tl.TimingLog(rd.timing_log(), spans, job_id=f"gpuscope-{rd.path.name}",
                            t0_mono=CLOCK.mono())

    def _verifier(self, rd: RunDir, backends: dict[int, Backend]) -> Verifier | None:
        """--verify: the per-partition checks (meta.json `verify` says which)."""
        cfg = self.cfg
        if not cfg.verify:
            return None

        verifier = Verifier(backends, log_n=cfg.log_n, m=cfg.synth_config().m,
                            h_seed=SRS_SEED_H, w_seed=SRS_SEED_W, seed=cfg.seed)
        rd.write_meta(verify=verifier.describe())
        return verifier

    def _report(self, msg: str) -> None:
        self.notes.append(msg)
        self.on_error(msg)

    @property
    def _prepared_rd(self) -> RunDir:
        """The run directory, for the steps after prepare() returned (it made it first)."""
        assert self.rd is not None
        return self.rd

    # -- running -----------------------------------------------------------------------------
    def start(self) -> None:
        if self.sampler is not None:
            self.sampler.start()
        self._prepared_rd.write_meta(pipeline_started=iso_now())
        self._thread = threading.Thread(target=self._run, name="gpuscope-pipeline", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            assert self.pipeline is not None  # (start() follows a prepare() that returned)
            self._result = self.pipeline.run()
        except BaseException as e:  # noqa: BLE001 - reported by finish()
            self._exc = e

    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def wait(self, timeout: float | None = None) -> None:
        if self._thread is not None:
            self._thread.join(timeout)

    def request_stop(self, why: str | None = None) -> None:
        """Stop at the next phase boundary (before start(): at the next set-up step, see
        check_stop). Any thread, or a signal handler: it only sets flags. `why` (e.g. the
        signal's name) goes to meta.json `notes`."""
        self.interrupts += 1
        if why is not None:
            self.notes.append(f"stop requested: {why}")
        if self.pipeline is not None:
            self.pipeline.request_stop()

    def progress(self) -> dict[str, Any]:
        p = self.pipeline
        if p is None:
            return {}
        return {
            "done": p.done, "total": self.cfg.partitions, "synthesized": p.synthesized,
            "queued": p.queue.qsize(),
            "workers": [(s.gpu, s.worker, s.phase, s.partition, s.done) for s in p.workers],
            "samples": self.samples_sink.last() if self.samples_sink is not None else {},
            "elapsed_s": CLOCK.mono() - p.t_start if p.t_start else 0.0,
            "stopping": p.stop.is_set(),
        }

    # -- the end -----------------------------------------------------------------------------
    def finish(self) -> RunOutcome:
        """Wait for the pipeline, free everything, write meta/summary. Never raises for the run."""
        self.wait()
        res, err = self._result, self._exc
        if res is not None and res.error is not None:
            err = res.error
        stats = None
        if self.sampler is not None:
            stats = self.sampler.stop()
        self._release()
        rd = self._prepared_rd
        if err is not None:
            status, code = "failed", getattr(err, "exit_code", EXIT_FAILED)
        elif res is None or res.stopped or self.interrupts:
            status, code = "interrupted", EXIT_INTERRUPTED
        else:
            status, code = "complete", EXIT_OK
        if res is not None and status == "interrupted" and res.done == self.cfg.partitions:
            status, code = "complete", EXIT_OK  # Ctrl-C after the last partition: nothing lost
        if status == "complete" and rd.failed_writes:  # a full disk cut a run file (said as it happened)
            status, code = "incomplete", EXIT_RESOURCE
        out = RunOutcome(status=status, exit_code=code, path=rd.path, result=res, error=err,
                         notes=self.notes)
        fields: dict[str, Any] = {"status": status, "exit_code": code, "ended": iso_now(),
                                  "notes": self.notes}
        if stats is not None:
            fields["sampler"] = stats.to_dict()
        if res is not None:
            fields["pipeline"] = res.summary()
        if err is not None:
            fields["error"] = (err.one_line() if isinstance(err, GpuscopeError)
                               else f"{type(err).__name__}: {err}")
        if not rd.write_meta(**fields) and status in ("complete", "incomplete"):
            # a full disk: meta.json keeps an earlier state (running); never report 'complete' then
            out.status = "unfinished (meta.json could not be written: it still says 'running')"
            out.exit_code = EXIT_RESOURCE
        self._analyze(out)
        return out

    def finish_failed_setup(self, err: BaseException | None = None) -> None:
        """prepare() raised: free what it took and mark the run directory failed (if any)."""
        if err is None:
            err = sys.exc_info()[1]
        self._release()
        if self.rd is not None:
            code = getattr(err, "exit_code", EXIT_FAILED)
            if isinstance(err, KeyboardInterrupt | SetupInterrupted):
                status, code = "interrupted", EXIT_INTERRUPTED
            else:
                status = "failed"
            msg = err.one_line() if isinstance(err, GpuscopeError) else f"{type(err).__name__}: {err}"
            self.rd.write_meta(status=status, exit_code=code, ended=iso_now(), error=msg,
                               notes=self.notes)

    def _release(self) -> None:
        """Close samples.csv, timing.log and spans.csv, then free host memory and SRS copies."""
        if self.samples_sink is not None:
            self.samples_sink.close()
        if self.log is not None:
            self.log.close()
        if self.setup is not None:
            self.setup.release()

    def _analyze(self, out: RunOutcome) -> None:
        s = summarize_run(self._prepared_rd.path, abc_bytes=4 * (1 << self.cfg.log_n) * 32, on_error=self.on_error)
        out.analysis, out.analysis_error = s.analysis, s.error
        if s.interrupted:  # a stop signal while the summary was made: meta.json says so, and the exit code
            out.exit_code = 128 + s.interrupted


class _LastRowTee:
    """Sampler sink: write through to samples.csv, keep the latest row per GPU for the live view."""

    def __init__(self, writer: SamplesWriter):
        self.writer = writer
        self._last: dict[int, dict] = {}
        self._lock = threading.Lock()

    def write_row(self, row: dict) -> None:
        self.writer.write_row(row)
        with self._lock:
            self._last[int(row.get("gpu", -1))] = dict(row)

    def last(self) -> dict[int, dict]:
        with self._lock:
            return {k: dict(v) for k, v in self._last.items()}

    def close(self) -> None:
        self.writer.close()

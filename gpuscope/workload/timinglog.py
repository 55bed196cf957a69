"""The workload's timing output: CuZK-format lines into timing.log, exact phases into spans.csv.

The lines are those of ../shared/formats/CUZK_FORMATS.md (CUZK_TIMING, CUZK_NTT_H, TIMELINE),
integer milliseconds as the C++ prints them (%ld), plus one line of ours that the real
prover lacks, so that analyze measures the upload rather than inferring it:

    CUZK_TIMING: gpu_tid=0 h2d_ms=<ms> h2d_bytes=<bytes>

Every line is prefixed with its ISO-8601 UTC time on gpuscope's clock (rundir's
TimingLogWriter). The GPU-region lines of one lock tenure (mutex_wait .. mutex_held) are
collected in a `Tenure` and written as one block when the lock is released, so tenures of
different GPUs (each with its own mutex) never interleave; each line keeps the time of its
event. CPU-side lines (split_vectors, prep_msm, TIMELINE) are written when they happen.

`gpu_tid` is, as in the prover, the GPU's index inside one call: a call uses one GPU here,
so it is always 0; the physical GPU is in spans.csv and meta.json.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Protocol

from gpuscope.clock import CLOCK, Clock
from gpuscope.rundir import SpansWriter


def ms(seconds: float) -> int:
    """Seconds -> whole milliseconds, truncated like the prover's duration_cast<milliseconds>.

    Truncation keeps the printed parts of a tenure from adding up to more than its printed
    mutex_held (rounding each part up could)."""
    return int(max(0.0, seconds) * 1e3 + 1e-9)


# -- the exact line formats ----------------------------------------------------------------
def line_split_vectors(split_s: float, setup_to_split_s: float) -> str:
    return f"CUZK_TIMING: split_vectors_ms={ms(split_s)} setup_to_split_ms={ms(setup_to_split_s)}"


def line_lock_taken(pre_lock_cpu_s: float, mutex_wait_s: float) -> str:
    return f"CUZK_TIMING: pre_lock_cpu_ms={ms(pre_lock_cpu_s)} mutex_wait_ms={ms(mutex_wait_s)}"


def line_ntt_h(d_b_alloc_s: float, ntt_kernels_s: float, coset_intt_sync_s: float,
               msm_init_s: float, msm_invoke_s: float, msm_dtor_s: float, total_s: float) -> str:
    return (
        f"CUZK_NTT_H: d_b_alloc={ms(d_b_alloc_s)}ms ntt_kernels={ms(ntt_kernels_s)}ms "
        f"coset_intt_sync={ms(coset_intt_sync_s)}ms msm_init={ms(msm_init_s)}ms "
        f"msm_invoke={ms(msm_invoke_s)}ms msm_dtor={ms(msm_dtor_s)}ms total={ms(total_s)}ms"
    )


def line_h2d(gpu_tid: int, h2d_s: float, h2d_bytes: int) -> str:
    return f"CUZK_TIMING: gpu_tid={gpu_tid} h2d_ms={ms(h2d_s)} h2d_bytes={int(h2d_bytes)}"


def line_ntt_msm_h(gpu_tid: int, s: float) -> str:
    return f"CUZK_TIMING: gpu_tid={gpu_tid} ntt_msm_h_ms={ms(s)}"


def line_barrier(gpu_tid: int, s: float) -> str:
    return f"CUZK_TIMING: gpu_tid={gpu_tid} barrier_wait_ms={ms(s)}"


def line_batch_add(gpu_tid: int, s: float) -> str:
    return f"CUZK_TIMING: gpu_tid={gpu_tid} batch_add_ms={ms(s)}"


def line_tail_msm(gpu_tid: int, s: float, gpu_total_s: float) -> str:
    return f"CUZK_TIMING: gpu_tid={gpu_tid} tail_msm_ms={ms(s)} gpu_total_ms={ms(gpu_total_s)}"


def line_mutex_held(held_s: float, total_start_fn_s: float) -> str:
    return f"CUZK_TIMING: mutex_held_ms={ms(held_s)} total_start_fn_ms={ms(total_start_fn_s)}"


def line_prep_msm(s: float) -> str:
    return f"CUZK_TIMING: prep_msm_ms={ms(s)}"


def line_timeline(offset_s: float, event: str, job_id: str, detail: str) -> str:
    return f"TIMELINE,{ms(offset_s)},{event},{job_id},{detail}"


# -- writers -------------------------------------------------------------------------------
class LineSink(Protocol):
    def write_line(self, text: str, mono: float | None = None) -> None: ...

    def flush(self) -> None: ...

    def close(self) -> None: ...


class Tenure:
    """The GPU-region lines of one lock tenure, written together when the lock is released."""

    def __init__(self, log: TimingLog):
        self._log = log
        self._lines: list[tuple[str, float]] = []

    def line(self, text: str, mono: float) -> None:
        self._lines.append((text, mono))

    def commit(self) -> None:
        self._log._write_block(self._lines)
        self._lines = []


class TimingLog:
    """What the pipeline writes: CuZK lines (timing.log), TIMELINE events, spans.csv rows."""

    def __init__(self, lines: LineSink, spans: SpansWriter | None, *, job_id: str,
                 t0_mono: float, clock: Clock = CLOCK, echo: Callable[[str], None] | None = None):
        self._lines = lines
        self.spans = spans
        self.job_id = job_id
        self.t0 = t0_mono
        self.clock = clock
        self.echo = echo
        self._lock = threading.Lock()
        self.n_lines = 0

    def line(self, text: str, mono: float | None = None) -> None:
        mono = self.clock.mono() if mono is None else mono
        self._write_block([(text, mono)])

    def tenure(self) -> Tenure:
        return Tenure(self)

    def timeline(self, event: str, detail: str, mono: float | None = None) -> None:
        mono = self.clock.mono() if mono is None else mono
        self.line(line_timeline(mono - self.t0, event, self.job_id, detail), mono)

    def span(self, t0: float, t1: float, gpu: int, worker: int, partition: int, phase: str) -> None:
        if self.spans is not None:
            self.spans.span(t0, t1, gpu, worker, partition, phase)

    def _write_block(self, lines: list[tuple[str, float]]) -> None:
        with self._lock:
            for text, mono in lines:
                self._lines.write_line(text, mono)
                self.n_lines += 1
                if self.echo is not None:
                    self.echo(text)

    def flush(self) -> None:
        with self._lock:
            self._lines.flush()
        if self.spans is not None:
            self.spans.flush()

    def close(self) -> None:
        with self._lock:
            self._lines.close()
        if self.spans is not None:
            self.spans.close()

"""Kernel timings on the GPU: CUDA events around each call, data already on the device,
median of `repeats` runs after one warm-up, beside the floors and targets of issue 4.

Floors (H200, 2^24): one NTT ~3.4 ms (IMAD-bound: 132 SMs x 64 IMAD/clk x 1.98 GHz, ~280 IMAD
per Fr multiply, n/2 log n multiplies); MSM ~90 ms (XYZZ buckets). Other sizes scale them by
n log n (NTT) and n (MSM). Targets: NTT 6 ms, H 40 ms, MSM 400 ms at 2^24.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import asdict, dataclass
from functools import partial
from typing import TYPE_CHECKING, cast

import numpy as np

from gpuscope import cuda
from gpuscope.errors import UsageError
from gpuscope.workload import backends, kernels, layout

if TYPE_CHECKING:
    from gpuscope.workload.gpu import GpuBackend

NTT_FLOOR_MS_24 = 3.4
MSM_FLOOR_MS_24 = 90.0
TARGET_MS_24 = {"ntt": 6.0, "intt": 6.0, "compute_h": 40.0, "msm": 400.0}


@dataclass
class BenchRow:
    kernel: str
    log_n: int
    median_ms: float
    min_ms: float
    max_ms: float
    runs: int
    floor_ms: float | None
    target_ms: float | None

    def to_dict(self) -> dict:
        return asdict(self)


def floor_ms(kernel: str, log_n: int) -> float | None:
    n_ratio = 2.0 ** (log_n - 24)
    ntt = NTT_FLOOR_MS_24 * n_ratio * log_n / 24
    return {
        "ntt": ntt,
        "intt": ntt,
        "compute_h": 7 * ntt,
        "msm": MSM_FLOOR_MS_24 * n_ratio,
    }.get(kernel)


def target_ms(kernel: str, log_n: int) -> float | None:
    return TARGET_MS_24.get(kernel) if log_n == 24 else None


def time_call(fn: Callable[[], object], repeats: int, warmup: int = 1) -> list[float]:
    """Milliseconds of fn() per run, by CUDA events on the current stream."""
    cp = cuda.require("timing the kernels")
    for _ in range(warmup):
        fn()
    cp.cuda.Device().synchronize()
    out = []
    for _ in range(repeats):
        start, end = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        fn()
        end.record()
        end.synchronize()
        out.append(cp.cuda.get_elapsed_time(start, end))
    return out


def check_args(sizes: list[int], repeats: int) -> None:
    """UsageError unless every size is a log2 size in 10..26 and repeats >= 1."""
    if repeats < 1:
        raise UsageError("--repeats must be >= 1")
    for k in sizes:
        if not 10 <= k <= 26:
            raise UsageError(f"sizes are log2 sizes in 10..26, got {k}")


def describe_device(backend: GpuBackend) -> str:
    """'<GPU name>, NTT variant <v>' for a GPU backend's current device (table titles)."""

    props = backend.cp.cuda.runtime.getDeviceProperties(backend.cp.cuda.Device().id)
    name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
    return f"{name}, NTT variant {kernels.ntt_variant()}"


def bench_kernels(sizes: list[int], repeats: int = 5, *, seed: int = 1, backend: GpuBackend | None = None,
                  log: Callable[[BenchRow], None] | None = None) -> list[BenchRow]:
    """Time ntt, intt, compute_h, msm, batch_add, tail_msm and point generation at 2^k, k in sizes."""

    check_args(sizes, repeats)
    gpu = backend or cast("GpuBackend", backends.get_backend("gpu"))  # the GPU backend, or NoGpuError
    rows: list[BenchRow] = []
    rng = np.random.default_rng(seed)

    def add(kernel: str, k: int, times: list[float]) -> None:
        row = BenchRow(
            kernel, k, statistics.median(times), min(times), max(times), len(times), floor_ms(kernel, k), target_ms(kernel, k)
        )
        rows.append(row)
        if log:
            log(row)

    for k in sizes:
        n = 1 << k
        cp = gpu.cp
        a = cp.asarray(layout.random_fr(n, rng))
        b = cp.asarray(layout.random_fr(n, rng))
        c = gpu.fr_mul(a, b)
        add("ntt", k, time_call(partial(gpu.ntt, a), repeats))
        add("intt", k, time_call(partial(gpu.ntt, a, inverse=True), repeats))
        add("compute_h", k, time_call(partial(gpu.compute_h, a, b, c), repeats))
        del a, b, c
        add("generate_points", k, time_call(partial(gpu.generate_points, n, seed), 1, warmup=0))
        pts = gpu.generate_points(n, seed)
        sc = cp.asarray(layout.random_fr(n, rng))
        bitmap = cp.asarray(rng.random(n) < 0.25)
        add("msm", k, time_call(partial(gpu.msm, pts, sc), repeats))
        add("batch_add", k, time_call(partial(gpu.batch_add, pts, bitmap), repeats))
        add("tail_msm", k, time_call(partial(gpu.tail_msm, pts, sc, bitmap), repeats))
        del pts, sc, bitmap
        cp.get_default_memory_pool().free_all_blocks()
    return rows

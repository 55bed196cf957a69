"""An occupancy-bound CuPy loop: one kernel per iteration with a single warp per SM, each thread
running a long chain of dependent FMAs. Every SM is active (GPM SM activity high) but holds
1 of its 64 warps (occupancy ~1.5%), so the pipes wait on latency. Prints
`iter=3 kernel_ms=48.2`. No profiler trace (CuPy kernels): a recording and a dmon capture."""

from __future__ import annotations

import argparse
import time

import cupy as cp

SRC = r"""
extern "C" __global__ void chain(float* out, int steps) {
    float a = threadIdx.x * 1e-3f, b = 1.0001f;
    for (int i = 0; i < steps; ++i) { a = fmaf(a, b, 1e-7f); b = fmaf(b, 0.99999f, 1e-6f); }
    out[blockIdx.x * blockDim.x + threadIdx.x] = a + b;
}
"""


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=40)
    ap.add_argument("--steps", type=int, default=2_000_000)
    args = ap.parse_args()
    k = cp.RawKernel(SRC, "chain")
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    out = cp.empty(sms * 32, dtype=cp.float32)
    start, end = cp.cuda.Event(), cp.cuda.Event()
    for it in range(args.iters):
        t0 = time.perf_counter()
        start.record()
        k((sms,), (32,), (out, cp.int32(args.steps)))
        end.record()
        end.synchronize()
        print(f"iter={it} kernel_ms={cp.cuda.get_elapsed_time(start, end):.1f} "
              f"wall_ms={(time.perf_counter() - t0) * 1e3:.1f} blocks={sms} threads=32", flush=True)


if __name__ == "__main__":
    main()

"""A tensor-core-bound PyTorch loop: bf16 8192^3 matrix products, nothing from the host.
Prints `step=3 matmuls=40 step_ms=58.1`. --trace FILE writes a torch.profiler Chrome trace."""

from __future__ import annotations

import argparse
import time

import torch
from profiling import finish, maybe_profile


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--matmuls", type=int, default=40)
    ap.add_argument("--trace", default=None)
    args = ap.parse_args()
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    torch.cuda.synchronize()
    prof = maybe_profile(args.trace)
    for step in range(args.steps):
        t0 = time.perf_counter()
        with torch.profiler.record_function("matmuls"):
            for _ in range(args.matmuls):
                c = a @ b
        torch.cuda.synchronize()
        print(f"step={step} matmuls={args.matmuls} step_ms={(time.perf_counter() - t0) * 1e3:.1f}"
              f" checksum={float(c[0, 0]):.3f}", flush=True)
        if prof is not None:
            prof.step()
    finish(prof, args.trace)


if __name__ == "__main__":
    main()

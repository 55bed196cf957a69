"""A memory-bound PyTorch loop: element-wise passes over 8 GiB of HBM (a*x + b in place, then a
copy), nothing from the host. DRAM is busy, the tensor pipes are not. Prints
`iter=4 elapsed_ms=61.3 gbytes_moved=34.4`. --trace FILE writes a torch.profiler Chrome trace."""

from __future__ import annotations

import argparse
import time

import torch
from profiling import finish, maybe_profile


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=40)
    ap.add_argument("--gib", type=float, default=8.0)
    ap.add_argument("--trace", default=None)
    args = ap.parse_args()
    n = int(args.gib * (1 << 30)) // 4
    x = torch.rand(n, device="cuda")
    y = torch.empty_like(x)
    torch.cuda.synchronize()
    prof = maybe_profile(args.trace)
    for it in range(args.iters):
        t0 = time.perf_counter()
        with torch.profiler.record_function("elementwise"):
            for _ in range(4):
                x.mul_(0.999).add_(0.001)
                y.copy_(x)
        torch.cuda.synchronize()
        ms = (time.perf_counter() - t0) * 1e3
        print(f"iter={it} elapsed_ms={ms:.1f} gbytes_moved={4 * 4 * n * 4 / 1e9:.1f}", flush=True)
        if prof is not None:
            prof.step()
    finish(prof, args.trace)


if __name__ == "__main__":
    main()

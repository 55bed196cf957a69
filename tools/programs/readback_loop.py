"""A read-back-bound PyTorch loop: per step a short computation on the GPU, then the whole
result (1 GiB by default) copied back to the host with `.cpu()` (pageable memory, a fresh
tensor each step) or into one reused pinned buffer (--memory pinned). Prints, as people do:

    step 3 | fwd 12.1 ms | d2h 790.4 ms

fwd and d2h are timed with CUDA events. --trace FILE writes a torch.profiler Chrome trace.
A program for gpuscope to diagnose, not part of gpuscope."""

from __future__ import annotations

import argparse
import time

import torch
from profiling import finish, maybe_profile


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--memory", choices=("pageable", "pinned"), default="pageable")
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--mib", type=int, default=1024)
    ap.add_argument("--trace", default=None)
    args = ap.parse_args()
    n = args.mib * (1 << 20) // 4
    x = torch.rand(n, device="cuda")
    pinned = torch.empty(n, pin_memory=True) if args.memory == "pinned" else None
    torch.cuda.synchronize()
    prof = maybe_profile(args.trace)
    e0, e1, e2 = (torch.cuda.Event(enable_timing=True) for _ in range(3))
    for step in range(args.steps):
        t0 = time.perf_counter()
        e0.record()
        with torch.profiler.record_function("forward"):
            y = torch.sin(x) * 1.5 + 0.25
        e1.record()
        with torch.profiler.record_function("read_back"):
            if pinned is None:
                host = y.cpu()
            else:
                pinned.copy_(y, non_blocking=True)
                host = pinned
        e2.record()
        torch.cuda.synchronize()
        _ = float(host[0])
        print(f"step {step} | fwd {e0.elapsed_time(e1):.1f} ms | d2h {e1.elapsed_time(e2):.1f} ms"
              f" | wall {(time.perf_counter() - t0) * 1e3:.1f} ms", flush=True)
        if prof is not None:
            prof.step()
    finish(prof, args.trace)


if __name__ == "__main__":
    main()

"""A launch-bound PyTorch loop: thousands of tiny element-wise kernels on a 4096-element tensor
per iteration, each far shorter than its launch (with --sync-every K a value is read back every
K ops: a synchronisation-bound loop). Prints `iter=5 ops=2000 elapsed_ms=41.2`.
--trace FILE writes a torch.profiler Chrome trace of a few iterations."""

from __future__ import annotations

import argparse
import time

import torch


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=30)
    ap.add_argument("--ops", type=int, default=2000)
    ap.add_argument("--sync-every", type=int, default=0,
                    help="read a value back (.item(), a synchronisation) every K ops")
    ap.add_argument("--trace", default=None)
    args = ap.parse_args()
    x = torch.rand(4096, device="cuda")
    prof = None
    if args.trace:
        from torch.profiler import ProfilerActivity, profile, schedule

        prof = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
                       schedule=schedule(wait=1, warmup=1, active=2, repeat=1))
        prof.start()
    for it in range(args.iters):
        t0 = time.perf_counter()
        with torch.profiler.record_function("tiny_ops"):
            for k in range(args.ops // 2):
                x = x * 1.0001
                x = x + 0.0001
                if args.sync_every and k % args.sync_every == 0:
                    float(x[0].item())
        torch.cuda.synchronize()
        print(f"iter={it} ops={args.ops} elapsed_ms={(time.perf_counter() - t0) * 1e3:.1f}", flush=True)
        if prof is not None:
            prof.step()
    if prof is not None:
        prof.stop()
        prof.export_chrome_trace(args.trace)


if __name__ == "__main__":
    main()

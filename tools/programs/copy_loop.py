"""A copy-heavy PyTorch loop: per step, upload N tensors host->device, then compute on them.

The twin runs differ only in the host memory of the source tensors (--memory pageable |
pinned). It prints one line per step in the shape people print:

    step=3 h2d_ms=231.7 compute_ms=647.2 step_ms=878.9 h2d_bytes=1610612736

h2d_ms is timed with CUDA events around the copies, so h2d_bytes / h2d_ms is the program's
own upload rate. --trace FILE writes a torch.profiler Chrome trace of a few steps.
A program for gpuscope to diagnose (tools/programs/README.md), not part of gpuscope.
"""

from __future__ import annotations

import argparse
import time

import torch


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--memory", choices=("pageable", "pinned"), default="pageable")
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--mib", type=int, default=512, help="MiB per tensor")
    ap.add_argument("--tensors", type=int, default=3)
    ap.add_argument("--matmuls", type=int, default=60, help="bf16 8192^3 products per step")
    ap.add_argument("--trace", default=None)
    args = ap.parse_args()

    dev = torch.device("cuda")
    n = args.mib * (1 << 20) // 4
    host = [torch.rand(n, pin_memory=(args.memory == "pinned")) for _ in range(args.tensors)]
    dst = [torch.empty(n, device=dev) for _ in range(args.tensors)]
    a = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
    b = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
    nbytes = sum(t.numel() * t.element_size() for t in host)
    torch.cuda.synchronize()

    prof = None
    if args.trace:
        from torch.profiler import ProfilerActivity, profile, schedule

        prof = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
                       schedule=schedule(wait=1, warmup=1, active=4, repeat=1), record_shapes=False)
        prof.start()
    e0, e1, e2 = (torch.cuda.Event(enable_timing=True) for _ in range(3))
    for step in range(args.steps):
        t0 = time.perf_counter()
        e0.record()
        with torch.profiler.record_function("upload"):
            for s, d in zip(host, dst, strict=True):
                d.copy_(s, non_blocking=(args.memory == "pinned"))
        e1.record()
        with torch.profiler.record_function("compute"):
            acc = dst[0][:16].sum()
            for _ in range(args.matmuls):
                c = a @ b
            acc = acc + c[0, 0].float()
        e2.record()
        torch.cuda.synchronize()
        step_ms = (time.perf_counter() - t0) * 1e3
        print(f"step={step} h2d_ms={e0.elapsed_time(e1):.1f} compute_ms={e1.elapsed_time(e2):.1f} "
              f"step_ms={step_ms:.1f} h2d_bytes={nbytes}", flush=True)
        if prof is not None:
            prof.step()
    if prof is not None:
        prof.stop()
        prof.export_chrome_trace(args.trace)


if __name__ == "__main__":
    main()

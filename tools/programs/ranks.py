"""A data-parallel training step in N processes on one GPU (torch.distributed, gloo: NCCL will
not put two ranks on one device), each rank writing its own torch.profiler trace into a folder,
the way a distributed job's tensorboard_trace_handler does. Rank --slow-rank does twice the
compute (a straggler): the others wait in the all-reduce. Prints per rank
`[rank1] step 3 compute_ms=20.1 allreduce_ms=35.2`.
Usage: python ranks.py --world 2 --trace-dir DIR"""

from __future__ import annotations

import argparse
import os
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def worker(rank: int, args: argparse.Namespace) -> None:
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", str(args.port))
    dist.init_process_group("gloo", rank=rank, world_size=args.world)
    torch.manual_seed(rank)
    a = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    grad = torch.randn(8 << 20, device="cuda")
    from torch.profiler import ProfilerActivity, profile, schedule

    prof = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
                   schedule=schedule(wait=1, warmup=1, active=3, repeat=1))
    prof.start()
    reps = args.matmuls * (2 if rank == args.slow_rank else 1)
    for step in range(args.steps):
        t0 = time.perf_counter()
        with torch.profiler.record_function("forward_backward"):
            for _ in range(reps):
                c = a @ a
            grad.add_(c[0, :1].float().sum())
            torch.cuda.synchronize()
        t1 = time.perf_counter()
        with torch.profiler.record_function("allreduce"):
            dist.all_reduce(grad)
            torch.cuda.synchronize()
        t2 = time.perf_counter()
        print(f"[rank{rank}] step {step} compute_ms={(t1 - t0) * 1e3:.1f} allreduce_ms={(t2 - t1) * 1e3:.1f}",
              flush=True)
        prof.step()
    prof.stop()
    prof.export_chrome_trace(os.path.join(args.trace_dir, f"rank{rank}.pt.trace.json"))
    dist.barrier()
    dist.destroy_process_group()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--world", type=int, default=2)
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--matmuls", type=int, default=60)
    ap.add_argument("--slow-rank", type=int, default=1)
    ap.add_argument("--port", type=int, default=29533)
    ap.add_argument("--trace-dir", required=True)
    args = ap.parse_args()
    os.makedirs(args.trace_dir, exist_ok=True)
    mp.spawn(worker, args=(args,), nprocs=args.world, join=True)


if __name__ == "__main__":
    main()

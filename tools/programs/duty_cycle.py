"""A GPU busy for about half a second, then idle for about half a second, regularly: the host
'prepares' each batch in pure Python while the GPU waits. Prints nothing but a last line, so a
capture of nvidia-smi (utilization only) or a recording's samples are all there is to read."""

from __future__ import annotations

import argparse
import time

import torch


def host_work(seconds: float) -> int:
    end, acc = time.perf_counter() + seconds, 0
    while time.perf_counter() < end:
        acc = (acc * 1103515245 + 12345) & 0xFFFFFFFF
    return acc


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cycles", type=int, default=20)
    ap.add_argument("--busy", type=float, default=0.5)
    ap.add_argument("--idle", type=float, default=0.5)
    args = ap.parse_args()
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    for _ in range(args.cycles):
        end = time.perf_counter() + args.busy
        while time.perf_counter() < end:
            for _ in range(10):
                c = a @ a
            torch.cuda.synchronize()
        host_work(args.idle)
    print(f"done cycles={args.cycles} checksum={float(c[0, 0]):.2f}", flush=True)


if __name__ == "__main__":
    main()

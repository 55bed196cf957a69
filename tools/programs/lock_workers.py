"""Two workers sharing one GPU under a lock, the seed's shape in a program's own words.

Each worker prepares a partition on the host (`synth`: fills its a/b/c host buffers), waits for
the GPU lock, and while it holds it uploads the buffers and computes on them. It prints one line
per partition, in words nobody at gpuscope chose:

    --style kv:     worker=1 partition=3 synth_ms=460 wait_ms=12 held_ms=274 h2d_ms=167 gpu_ms=107
    --style prose:  worker 1 partition 3: mutex wait 12 ms, held 274 ms: h2d 167 ms, gpu 107 ms

The twin runs differ only in the host memory of the buffers (--memory pageable | pinned).
--fill once --workers 4 fills the buffers once: the workers then queue for the lock (the seed's
shape, the lock held nearly all the run), where --fill every (the default) leaves it mostly free. The
lock's held time is measured around the upload and the compute (synchronised), so h2d + gpu <=
held. A program for gpuscope to diagnose, not part of gpuscope.
"""

from __future__ import annotations

import argparse
import threading
import time

import torch


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--memory", choices=("pageable", "pinned"), default="pageable")
    ap.add_argument("--style", choices=("kv", "prose"), default="kv")
    ap.add_argument("--partitions", type=int, default=8, help="per worker")
    ap.add_argument("--mib", type=int, default=256, help="MiB per buffer (three per partition)")
    ap.add_argument("--matmuls", type=int, default=20, help="bf16 8192^3 products per partition")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--fill", choices=("every", "once"), default="every",
                    help="fill the host buffers before every partition (host-bound) or once (the workers "
                         "then queue for the lock, the seed's shape)")
    args = ap.parse_args()

    dev = torch.device("cuda")
    n = args.mib * (1 << 20) // 4
    lock = threading.Lock()
    a = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
    b = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
    out = threading.Lock()

    def worker(w: int) -> None:
        pinned = args.memory == "pinned"
        host = [torch.empty(n, pin_memory=pinned) for _ in range(3)]
        dst = [torch.empty(n, device=dev) for _ in range(3)]
        stream = torch.cuda.Stream()
        for h in host:
            h.uniform_()
        for p in range(args.partitions):
            t0 = time.perf_counter()
            if args.fill == "every":
                for h in host:
                    h.uniform_()  # the host's work before the GPU's
            t1 = time.perf_counter()
            with lock:
                t2 = time.perf_counter()
                with torch.cuda.stream(stream):
                    for s, d in zip(host, dst, strict=True):
                        d.copy_(s, non_blocking=pinned)
                    stream.synchronize()
                    t3 = time.perf_counter()
                    acc = dst[0][:16].sum()
                    for _ in range(args.matmuls):
                        c = a @ b
                    acc = acc + c[0, 0].float()
                    stream.synchronize()
                t4 = time.perf_counter()
            ms = [(y - x) * 1e3 for x, y in ((t0, t1), (t1, t2), (t2, t4), (t2, t3), (t3, t4))]
            with out:
                if args.style == "kv":
                    print(f"worker={w} partition={p} synth_ms={ms[0]:.0f} wait_ms={ms[1]:.0f} held_ms={ms[2]:.0f} "
                          f"h2d_ms={ms[3]:.0f} gpu_ms={ms[4]:.0f}", flush=True)
                else:
                    print(f"worker {w} partition {p}: mutex wait {ms[1]:.0f} ms, held {ms[2]:.0f} ms: "
                          f"h2d {ms[3]:.0f} ms, gpu {ms[4]:.0f} ms", flush=True)

    threads = [threading.Thread(target=worker, args=(w,)) for w in range(1, args.workers + 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


if __name__ == "__main__":
    main()

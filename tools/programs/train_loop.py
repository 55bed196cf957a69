"""A training-style PyTorch loop (ResNet-18 on 96x96 synthetic images) whose input pipeline is
either slow (CPU decoding/augmentation per sample in the main process: the GPU starves) or
fast (batches made on the GPU). Prints, per step, the shape many training scripts print:

    [epoch 0] step 12/40 loss: 6.9042 data: 131.2ms compute: 12.5ms step: 143.9ms

--trace FILE writes a torch.profiler Chrome trace; --trace-dir DIR uses
tensorboard_trace_handler (DIR/*.pt.trace.json). A program for gpuscope to diagnose.
"""

from __future__ import annotations

import argparse
import time

import torch
import torchvision
from cpu_images import CpuImages  # (tools/programs/: the script's own folder)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--loader", choices=("slow", "fast"), default="slow")
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--size", type=int, default=96)
    ap.add_argument("--work", type=int, default=6)
    ap.add_argument("--trace", default=None)
    ap.add_argument("--trace-dir", default=None)
    args = ap.parse_args()

    dev = torch.device("cuda")
    model = torchvision.models.resnet18(num_classes=1000).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()
    if args.loader == "slow":
        loader = torch.utils.data.DataLoader(CpuImages(args.steps * args.batch, args.size, args.work),
                                             batch_size=args.batch, num_workers=0)
        batches = iter(loader)
    else:
        x_gpu = torch.randn(args.batch, 3, args.size, args.size, device=dev)
        y_gpu = torch.randint(0, 1000, (args.batch,), device=dev)
        batches = iter([(x_gpu, y_gpu)] * args.steps)

    prof = None
    if args.trace or args.trace_dir:
        from torch.profiler import ProfilerActivity, profile, schedule, tensorboard_trace_handler

        handler = tensorboard_trace_handler(args.trace_dir) if args.trace_dir else None
        prof = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
                       schedule=schedule(wait=2, warmup=1, active=3, repeat=1), on_trace_ready=handler)
        prof.start()
    model.train()
    for step in range(args.steps):
        t0 = time.perf_counter()
        with torch.profiler.record_function("data"):
            x, y = next(batches)
            x = x.to(dev, non_blocking=True)
            y = y.to(dev, non_blocking=True)
        t1 = time.perf_counter()
        with torch.profiler.record_function("forward_backward"):
            opt.zero_grad(set_to_none=True)
            loss = loss_fn(model(x), y)
            loss.backward()
            opt.step()
            torch.cuda.synchronize()
        t2 = time.perf_counter()
        print(f"[epoch 0] step {step}/{args.steps} loss: {loss.item():.4f} data: {(t1 - t0) * 1e3:.1f}ms "
              f"compute: {(t2 - t1) * 1e3:.1f}ms step: {(t2 - t0) * 1e3:.1f}ms", flush=True)
        if prof is not None:
            prof.step()
    if prof is not None:
        prof.stop()
        if args.trace:
            prof.export_chrome_trace(args.trace)


if __name__ == "__main__":
    main()

"""A ResNet-50 training loop printed the way the PyTorch examples' ImageNet script prints it
(its AverageMeter / ProgressMeter shape, which countless training scripts copy):

    Epoch: [0][ 10/60]	Time  0.412 ( 0.398)	Data  0.301 ( 0.287)	Loss 6.9764e+00 (6.9580e+00)	Acc@1   0.00 (  0.12)	Acc@5   0.39 (  0.51)

Time is the step's wall time and Data the time the loop waited for its batch, both in seconds
without a unit, each beside its running average. Synthetic images go through a CPU transform
per sample in DataLoader workers (`--workers`, `--work`): few workers starve the GPU, many feed
it. `--print-freq 0` prints no step lines at all (a program gpuscope can judge from its NVML
samples only). Written for gpuscope to diagnose; not the examples' code.
"""

from __future__ import annotations

import argparse
import time

import torch
import torchvision
from cpu_images import CpuImages  # (tools/programs/: the script's own folder)


class Meter:
    """The latest value and the running average of one figure, printed as `Name  val ( avg)`."""

    def __init__(self, name: str, fmt: str) -> None:
        self.name, self.fmt = name, fmt
        self.val = self.sum = 0.0
        self.count = 0

    def update(self, val: float, n: int = 1) -> None:
        self.val = val
        self.sum += val * n
        self.count += n

    def __str__(self) -> str:
        avg = self.sum / max(self.count, 1)
        return f"{self.name} {self.val:{self.fmt}} ({avg:{self.fmt}})"


def accuracy(out: torch.Tensor, target: torch.Tensor, ks=(1, 5)) -> list[float]:
    top = out.topk(max(ks), dim=1).indices
    hit = top.eq(target[:, None])
    return [float(hit[:, :k].any(dim=1).float().mean()) * 100.0 for k in ks]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--size", type=int, default=160)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--work", type=int, default=4)
    ap.add_argument("--print-freq", type=int, default=1)
    args = ap.parse_args()

    print("=> creating model 'resnet50'", flush=True)
    dev = torch.device("cuda")
    model = torchvision.models.resnet50(num_classes=1000).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
    loss_fn = torch.nn.CrossEntropyLoss()
    print("=> Dummy data is used!", flush=True)
    loader = torch.utils.data.DataLoader(CpuImages(args.steps * args.batch, args.size, args.work),
                                         batch_size=args.batch, shuffle=False, num_workers=args.workers,
                                         pin_memory=True, persistent_workers=args.workers > 0)
    meters = [Meter("Time", "6.3f"), Meter("Data", "6.3f"), Meter("Loss", ".4e"), Meter("Acc@1", "6.2f"),
              Meter("Acc@5", "6.2f")]
    batch_time, data_time, losses, top1, top5 = meters
    width = len(str(args.steps))
    model.train()
    end = time.time()
    for i, (images, target) in enumerate(loader):
        data_time.update(time.time() - end)
        images = images.to(dev, non_blocking=True)
        target = target.to(dev, non_blocking=True)
        out = model(images)
        loss = loss_fn(out, target)
        opt.zero_grad()
        loss.backward()
        opt.step()
        a1, a5 = accuracy(out, target)  # (reads back to the host: the step's work is done)
        losses.update(loss.item(), images.size(0))
        top1.update(a1, images.size(0))
        top5.update(a5, images.size(0))
        batch_time.update(time.time() - end)
        end = time.time()
        if args.print_freq and i % args.print_freq == 0:
            print(f"Epoch: [0][{i + 1:{width}d}/{args.steps}]\t" + "\t".join(str(m) for m in meters), flush=True)


if __name__ == "__main__":
    main()

"""Synthetic images 'decoded and augmented' on the CPU (real numpy arithmetic per sample): the
input pipeline of the training-style programs here (train_loop.py, imagenet_style.py)."""

from __future__ import annotations

import numpy as np
import torch


class CpuImages(torch.utils.data.Dataset):
    """Sample i: a random image, blurred and normalised `work` times in numpy, and a label."""

    def __init__(self, n: int, size: int, work: int) -> None:
        self.n, self.size, self.work = n, size, work

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int):
        rng = np.random.default_rng(i)
        img = rng.random((3, self.size, self.size), dtype=np.float32)
        for _ in range(self.work):  # CPU work per sample (decode + augment stand-in)
            img = 0.5 * img + 0.25 * (np.roll(img, 1, axis=1) + np.roll(img, 1, axis=2))
            img = (img - img.mean()) / (img.std() + 1e-6)
        return torch.from_numpy(img), int(rng.integers(0, 1000))

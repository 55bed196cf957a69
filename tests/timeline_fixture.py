"""A small two-worker timeline (phases + samples) used by the plot, trace and html tests."""

from __future__ import annotations

import numpy as np
import pandas as pd

T0 = 1_764_500_000.0


def phases() -> pd.DataFrame:
    rows = [
        # worker, gpu, partition, phase, start, end (s from T0)
        (-1, -1, 0, "synth", 0.0, 1.0),
        (-1, -1, 1, "synth", 0.0, 1.2),
        (0, 0, 0, "prep", 1.0, 1.5),
        (0, 0, 0, "h2d", 1.0, 1.6),
        (0, 0, 0, "ntt", 1.6, 1.7),
        (0, 0, 0, "msm", 1.7, 2.0),
        (0, 0, 0, "barrier", 2.0, 2.1),
        (0, 0, 0, "batch_add", 2.1, 2.3),
        (0, 0, 0, "tail_msm", 2.3, 2.4),
        (1, 0, 1, "prep", 1.2, 1.9),
        (1, 0, 1, "lock_wait", 1.2, 2.4),
        (1, 0, 1, "h2d", 2.4, 3.0),
        (1, 0, 1, "ntt", 3.0, 3.1),
        (1, 0, 1, "msm", 3.1, 3.4),
        (1, 0, 1, "batch_add", 3.4, 3.6),
        (1, 0, 1, "tail_msm", 3.6, 3.7),
    ]
    df = pd.DataFrame(rows, columns=["worker", "gpu", "partition", "phase", "t_start", "t_end"])
    df["t_start"] += T0
    df["t_end"] += T0
    return df


def samples() -> pd.DataFrame:
    t = np.round(np.arange(0.0, 3.8, 0.1), 6)
    in_h2d = ((t >= 1.0) & (t < 1.6)) | ((t >= 2.4) & (t < 3.0))
    in_gpu = ((t >= 1.6) & (t < 2.0)) | ((t >= 2.1) & (t < 2.4)) | ((t >= 3.0) & (t < 3.7))
    return pd.DataFrame({
        "t_wall": T0 + t,
        "gpu": 0,
        "rx_gbs": np.where(in_h2d, 3.5, np.where(in_gpu, 48.0, 0.1)),
        "tx_gbs": np.where(in_gpu, 0.5, 0.0),
        "sm_active": np.where(in_gpu, 0.9, 0.0),
    })

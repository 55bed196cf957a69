"""The reference proving workload: BLS12-381 NTT (H computation) and G1 MSM kernels.

    from gpuscope.workload import compute_h, msm, batch_add, tail_msm, generate_points, get_backend

See gpuscope.workload.backends for layouts and backends; docs/ARCHITECTURE.md for the contract.
"""

from gpuscope.workload.backends import (
    Backend,
    batch_add,
    compute_h,
    generate_points,
    get_backend,
    msm,
    tail_msm,
)
from gpuscope.workload.cpu import CpuBackend
from gpuscope.workload.layout import random_fr

__all__ = [
    "Backend",
    "CpuBackend",
    "batch_add",
    "compute_h",
    "generate_points",
    "get_backend",
    "msm",
    "random_fr",
    "tail_msm",
]

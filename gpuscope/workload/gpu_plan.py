"""Launch geometry for the GPU kernels, pure Python (no CuPy) so it is testable anywhere.

- ntt_plan: how an NTT of 2^log_n splits into shared-memory passes (see cuda/ntt.cuh);
- msm_window / msm_window_bits: Pippenger window count and width.
"""

from __future__ import annotations

NTT_BLOCK_LOG = 10  # 2^10 Fr elements = 32 KiB of shared memory per block
NTT_LMAX = 3  # up to 8 consecutive low indices per block in the strided passes


NTT_LMIN = 2  # fewer low indices kept together when that saves a whole pass (4 x 32 B = 128 B runs)


def ntt_plan(log_n: int, *, block_log: int = NTT_BLOCK_LOG, lmax: int = NTT_LMAX,
             lmin: int = NTT_LMIN) -> list[tuple[int, int, int]]:
    """Passes (s0, S, L): stages [s0, s0+S), blocks of 2^(S+L) elements, L low bits kept together.

    Stages are spread evenly over the fewest passes, so no pass is a sliver. L is at most lmax,
    down to lmin where the smaller L saves a pass (each pass reads and writes the whole vector:
    at 2^26, (10, 8, 8) with L = 2 instead of (7, 7, 6, 6) with L = 3).
    """
    if log_n < 1:
        raise ValueError("log_n must be >= 1")
    best = _plan(log_n, block_log, lmax)
    for lv in range(lmax - 1, max(lmin, 0) - 1, -1):
        p = _plan(log_n, block_log, lv)
        if len(p) < len(best):
            best = p
    return best


def _plan(log_n: int, block_log: int, lmax: int) -> list[tuple[int, int, int]]:
    first = min(log_n, block_log)
    rest = log_n - first
    per = block_log - lmax
    npass_rest = -(-rest // per) if rest else 0
    # balance: the first pass takes up to block_log stages, the others share the rest evenly
    plan = []
    if npass_rest:
        total_passes = 1 + npass_rest
        base = -(-log_n // total_passes)
        first = min(block_log, max(base, log_n - npass_rest * per))
    plan.append((0, first, 0))
    s0 = first
    remaining = log_n - first
    for k in range(npass_rest):
        S = -(-remaining // (npass_rest - k))
        L = min(lmax, s0, block_log - S)
        plan.append((s0, S, L))
        s0 += S
        remaining -= S
    return plan


def msm_window_bits(log_n: int) -> int:
    """Window width c for an MSM of about 2^log_n points (c ~ log_n - 8, 6..16)."""
    return max(6, min(16, log_n - 8))


def msm_window(c: int) -> int:
    """Number of signed windows: W*c >= 256 covers scalars < r < 2^255 and the final carry."""
    return -(-256 // c)

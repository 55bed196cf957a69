"""The SRS: the G1 point sets the MSMs run over (H query: n points; witness query: m points).

Set up once before the clock starts (`build_srs`): on the CPU backend plain numpy arrays; on a
GPU either resident (a copy per GPU in device memory, --srs-resident) or streamed (generated
on the first GPU, kept once in pinned host memory for every GPU, and copied to the GPU chunk
by chunk in every MSM, the next chunk's copy overlapping the current chunk's MSM).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from gpuscope.workload import curve
from gpuscope.workload.devices import PinnedHostArray

if TYPE_CHECKING:
    from gpuscope.workload.backends import Backend
    from gpuscope.workload.devices import CudaDevice, Device, PinnedHostArray
    from gpuscope.workload.hostalloc import HostAllocator
    from gpuscope.workload.layout import Array
    from gpuscope.workload.pipeline_types import PipelineConfig

SRS_SEED_H = 0x5EED_0001
SRS_SEED_W = 0x5EED_0002


def _sum_points(parts: list[np.ndarray]) -> np.ndarray:
    if len(parts) == 1:
        return np.asarray(parts[0])
    pts = curve.limbs_to_points(np.stack([np.asarray(p) for p in parts]))
    return curve.point_to_limbs(curve.sum_points(pts))


class Srs:
    """The SRS point sets (H query: n points; witness query: m points) for one GPU.

    Streamed (default): the points live once in pinned host memory and every MSM copies them
    to the GPU chunk by chunk, the next chunk's copy overlapping the current chunk's MSM.
    Resident: a copy per GPU stays in device memory. CPU backend: plain numpy arrays.
    """

    def __init__(self, h_points: Array, w_points: Array, *, resident: bool, chunk: int):
        self.h = h_points
        self.w = w_points
        self.resident = resident
        self.chunk = chunk

    def run(self, device: Device, which: str, fn: Callable[..., np.ndarray], *args: Array) -> np.ndarray:
        """fn(points_slice, *[arg slices]) summed over chunks (a single call when resident)."""
        points = self.h if which == "h" else self.w
        if self.resident or device.kind != "gpu":
            return np.asarray(fn(points, *args))
        return _stream_points(device, points, self.chunk, fn, args)


def _stream_points(device: CudaDevice, host_points: np.ndarray, chunk: int,
                   fn: Callable[..., np.ndarray], args: tuple[Array, ...]) -> np.ndarray:
    cp = device.cp
    n = host_points.shape[0]
    if n <= chunk:
        d = cp.empty(host_points.shape, host_points.dtype)
        d.set(host_points)
        device.synchronize()
        return np.asarray(fn(d, *args))
    copy_stream = cp.cuda.Stream(non_blocking=True)
    bufs = [cp.empty((chunk,) + host_points.shape[1:], host_points.dtype) for _ in range(2)]
    events: list[Any] = [None, None]
    bounds = [(s, min(s + chunk, n)) for s in range(0, n, chunk)]

    def issue(k: int) -> None:
        s, e = bounds[k]
        with copy_stream:
            bufs[k % 2][: e - s].set(host_points[s:e])
            events[k % 2] = copy_stream.record()

    partial = []
    issue(0)
    for k, (s, e) in enumerate(bounds):
        cp.cuda.get_current_stream().wait_event(events[k % 2])
        if k + 1 < len(bounds):
            issue(k + 1)  # buffer (k+1)%2 was used by chunk k-1, whose fn already returned
        partial.append(np.asarray(fn(bufs[k % 2][: e - s], *[a[s:e] for a in args])))
    copy_stream.synchronize()
    return _sum_points(partial)


def build_srs(cfg: PipelineConfig, devices: dict[int, Device], backends: dict[int, Backend],
              allocator: HostAllocator | None, on_gpu: bool,
              pinned: list[PinnedHostArray]) -> dict[int, Srs]:
    """The SRS of every GPU of `cfg` (see the module docstring). The pinned host copies of a
    streamed SRS are appended to `pinned` as they are made, so that the caller frees them
    also when a later one fails."""
    n, m = 1 << cfg.log_n, cfg.synth_config().m
    chunk = 1 << cfg.srs_chunk_log
    be = backends[cfg.gpus[0]]
    if not on_gpu:
        h, w = be.generate_points(n, SRS_SEED_H), be.generate_points(m, SRS_SEED_W)
        return {0: Srs(h, w, resident=True, chunk=chunk)}
    out: dict[int, Srs] = {}
    if cfg.srs_resident:
        for g, dev in devices.items():
            dev.activate()
            bg = backends[g]
            h, w = bg.generate_points(n, SRS_SEED_H), bg.generate_points(m, SRS_SEED_W)
            dev.synchronize()
            out[g] = Srs(h, w, resident=True, chunk=chunk)
        return out
    # streamed: generate on the first GPU, keep one pinned host copy for every GPU

    first = devices[cfg.gpus[0]]
    assert first.kind == "gpu" and allocator is not None  # (on a GPU: RunSetup's CudaDevices, and
    # the host allocator it makes for a streamed SRS)
    first.activate()
    hosts = []
    for count, seed in ((n, SRS_SEED_H), (m, SRS_SEED_W)):
        d = be.generate_points(count, seed)
        hp = PinnedHostArray(allocator, (count, 2, 12), "uint32")
        pinned.append(hp)
        d.get(out=hp.array)
        del d
        hosts.append(hp.array)
    first.cp.get_default_memory_pool().free_all_blocks()
    return {g: Srs(hosts[0], hosts[1], resident=False, chunk=chunk) for g in devices}

"""What a workload run sets up before its clock starts, and gives back at its end.

`RunSetup.build(on_gpu)`: the devices, one backend per GPU (created with that GPU current:
its tables live there), the run's host memory (the pinned pool pre-warmed, as a long-lived
daemon's is), the SRS points (gpuscope.workload.srs) and the kernel warm-up; each step that
can take seconds announces itself through `on_setup(msg)`, and `seconds` (meta.json `setup`)
says what they cost. Between the steps `check_stop()` may end the build (a Ctrl-C during
set-up). `release()` frees the host memory and the SRS's pinned copies, also after a failed
or stopped build.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, cast

from gpuscope.units import fmt_bytes
from gpuscope.workload.devices import CudaDevice, HostDevice, device_oom_as_resource_error
from gpuscope.workload.gpu import GpuBackend
from gpuscope.workload.hostalloc import CudaHostAllocator
from gpuscope.workload.hostmem import HostMemory
from gpuscope.workload.srs import Srs, build_srs
from gpuscope.workload.synth import partition_bytes

if TYPE_CHECKING:
    from gpuscope.workload.backends import Backend
    from gpuscope.workload.devices import Device, PinnedHostArray
    from gpuscope.workload.hostalloc import CudaHostAllocator
    from gpuscope.workload.pipeline_types import PipelineConfig


class RunSetup:
    def __init__(self, cfg: PipelineConfig, backend: Backend, on_setup: Callable[[str], None],
                 check_stop: Callable[[], None] | None = None):
        """`check_stop()` is called between the steps and raises to end the set-up there (a
        Ctrl-C: WorkloadRun.check_stop); release() then frees what was taken."""
        self.cfg = cfg
        self.backend = backend
        self.on_setup = on_setup
        self.check_stop = check_stop or (lambda: None)
        self.seconds: dict[str, float] = {}
        self.mem: HostMemory | None = None
        self.pinned_srs: list[PinnedHostArray] = []

    def build(self, on_gpu: bool) -> tuple[dict[int, Device], dict[int, Backend], dict[int, Srs]]:
        """Devices, backends, host memory and the SRS points (seconds["srs_s"] counts all of
        these), then the kernel warm-up on a GPU."""
        cfg = self.cfg
        t0 = time.perf_counter()
        devices = self._devices(on_gpu)
        backends = self._backends(devices, on_gpu)
        self.check_stop()
        allocator = self._host_memory(on_gpu)
        self.check_stop()
        n, m = 1 << cfg.log_n, cfg.synth_config().m
        where = ("CPU reference" if not on_gpu else "kept on the GPU" if cfg.srs_resident
                 else "kept in pinned host memory")
        self.on_setup(f"generating the SRS points ({n + m:,} G1 points, {where})")
        with device_oom_as_resource_error(cfg.gpus[0], f"SRS point generation ({n + m} points)"):
            srs = build_srs(cfg, devices, backends, allocator, on_gpu, self.pinned_srs)
        self.seconds["srs_s"] = time.perf_counter() - t0
        self.check_stop()
        if on_gpu:  # every backend a GpuBackend (get_backend("gpu") or one made per GPU)
            self._warm_up(devices, cast("dict[int, GpuBackend]", backends))
        return devices, backends, srs

    def release(self) -> None:
        """Free the host memory, then the SRS's pinned copies."""
        if self.mem is not None:
            self.mem.close()
        for hp in self.pinned_srs:
            hp.free()
        self.pinned_srs = []

    def _devices(self, on_gpu: bool) -> dict[int, Device]:
        if not on_gpu:
            return {0: HostDevice(0)}
        return {g: CudaDevice(g) for g in self.cfg.gpus}

    def _backends(self, devices: dict[int, Device], on_gpu: bool) -> dict[int, Backend]:
        """One GPU backend per GPU, created with that GPU current (its tables live there)."""
        if not on_gpu or len(devices) == 1:
            return {g: self.backend for g in devices}

        out: dict[int, Backend] = {}
        for g, dev in devices.items():
            dev.activate()
            out[g] = GpuBackend()
        devices[self.cfg.gpus[0]].activate()
        return out

    def _host_memory(self, on_gpu: bool) -> CudaHostAllocator | None:
        """The run's HostMemory (pinned pool pre-warmed); returns the CUDA host allocator when
        the mode or a streamed SRS needs one."""
        cfg = self.cfg
        allocator = None
        if on_gpu and (cfg.mode != "pageable" or not cfg.srs_resident):
            allocator = CudaHostAllocator()
        self.mem = HostMemory(cfg.mode if on_gpu else "pageable", allocator=allocator,
                              pinned_budget_bytes=cfg.resolved_pinned_budget())
        if self.mem.pool is not None and cfg.prewarm:
            # a daemon's pool is long-lived: pin the buffers the pipeline will cycle through now,
            # outside the timed run (meta: setup.pinned_prewarm_s; --no-prewarm shows the cold cost)
            t1 = time.perf_counter()
            nbytes = partition_bytes(cfg.synth_config())
            want = min(cfg.partitions, cfg.resolved_pinned_budget() // nbytes)
            self.on_setup(f"pinning the pool's host buffers ({want} x {fmt_bytes(nbytes)}, cudaHostAlloc)")
            self.seconds["pinned_prewarm_buffers"] = self.mem.pool.prewarm(nbytes, want)
            self.seconds["pinned_prewarm_s"] = time.perf_counter() - t1
        return allocator

    def _warm_up(self, devices: dict[int, Device], backends: dict[int, GpuBackend]) -> None:
        """Every kernel once per GPU before the clock starts (GpuBackend.warm_up: CuPy's JIT
        kernels and the 2^log_n tables), so the first tenures time the work, not the setup;
        meta setup.kernel_warmup_s says what it cost."""
        t0 = time.perf_counter()
        self.on_setup(f"warming the kernels up at 2^{self.cfg.log_n} on GPU {', '.join(map(str, devices))}")
        for g, dev in devices.items():
            self.check_stop()
            dev.activate()
            with device_oom_as_resource_error(g, f"the kernel warm-up at 2^{self.cfg.log_n}"):
                backends[g].warm_up(self.cfg.log_n, seed=self.cfg.seed)
        devices[self.cfg.gpus[0]].activate()
        self.seconds["kernel_warmup_s"] = time.perf_counter() - t0

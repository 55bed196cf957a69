"""GPM (GPU Performance Monitoring) through the NVML boundary: the metric ids gpuscope reads
and `GpmReader`, the two sample buffers per GPU whose difference gives SM activity, SM
occupancy, DRAM bandwidth use and PCIe TX/RX over the window between two reads (NVML wants
> 100 ms between them; the sampler keeps that). Every call goes through `Nvml.query`; get a
reader with `gpuscope.nvml.get().gpm(index)`.
"""

from __future__ import annotations

from typing import Any, Protocol


class Nvml(Protocol):
    """What a GpmReader uses of gpuscope.nvml.Nvml: its NVML module and its guarded calls."""

    mod: Any

    def query(self, fn_name: str, *args: Any) -> Any: ...

# GPM metric ids (nvml.h; same values in pynvml).
GPM_SM_UTIL = 2
GPM_SM_OCCUPANCY = 3
GPM_ANY_TENSOR_UTIL = 5
GPM_DRAM_BW_UTIL = 10
GPM_FP64_UTIL = 11
GPM_FP32_UTIL = 12
GPM_FP16_UTIL = 13
GPM_PCIE_TX_PER_SEC = 20
GPM_PCIE_RX_PER_SEC = 21
GPM_METRICS = (GPM_SM_UTIL, GPM_SM_OCCUPANCY, GPM_DRAM_BW_UTIL, GPM_PCIE_TX_PER_SEC, GPM_PCIE_RX_PER_SEC,
               GPM_ANY_TENSOR_UTIL, GPM_FP64_UTIL, GPM_FP32_UTIL, GPM_FP16_UTIL)
#: samples.csv column <- GPM metric id, each a percentage NVML gives 0-100, stored as 0-1: what the
#: SMs and their pipes did (tensor: any tensor-core pipe; fp16/fp32/fp64: the non-tensor FMA pipes)
GPM_ACTIVITY_COLUMNS: tuple[tuple[str, int], ...] = (
    ("sm_active", GPM_SM_UTIL), ("sm_occupancy", GPM_SM_OCCUPANCY), ("dram_active", GPM_DRAM_BW_UTIL),
    ("tensor_active", GPM_ANY_TENSOR_UTIL), ("fp16_active", GPM_FP16_UTIL),
    ("fp32_active", GPM_FP32_UTIL), ("fp64_active", GPM_FP64_UTIL))


class GpmUnavailable(Exception):
    """GPM does not answer on this GPU (no sample buffers, or the first sample failed)."""


class GpmReader:
    """Two GPM sample buffers per GPU; `read()` gives the metrics between the last two samples."""

    def __init__(self, nv: Nvml, h: Any) -> None:
        self.nv, self.h = nv, h
        a = nv.query("nvmlGpmSampleAlloc")
        b = nv.query("nvmlGpmSampleAlloc")
        if a is None or b is None:
            raise GpmUnavailable()
        self.prev, self.cur = a, b
        if nv.query("nvmlGpmSampleGet", h, self.prev) is None:
            self.close()
            raise GpmUnavailable()
        # one request struct, reused every read (building the 98-entry ctypes array costs more
        # than the NVML call itself)
        mod = nv.mod
        self._mg = mod.c_nvmlGpmMetricsGet_t()
        self._mg.version = getattr(mod, "NVML_GPM_METRICS_GET_VERSION", 1)
        self._mg.numMetrics = len(GPM_METRICS)

    def read(self) -> dict[int, float | None] | None:
        """Take a sample and return {metric id: value or None} since the previous one."""
        if self.nv.query("nvmlGpmSampleGet", self.h, self.cur) is None:
            return None
        mg = self._mg
        mg.sample1 = self.prev
        mg.sample2 = self.cur
        for i, mid in enumerate(GPM_METRICS):
            mg.metrics[i].metricId = mid
        res = self.nv.query("nvmlGpmMetricsGet", mg)
        self.prev, self.cur = self.cur, self.prev
        if res is None:
            return None
        out: dict[int, float | None] = {}
        for i, mid in enumerate(GPM_METRICS):
            m = res.metrics[i]
            out[mid] = float(m.value) if getattr(m, "nvmlReturn", 0) == 0 else None
        return out

    def close(self) -> None:
        for s in (self.prev, self.cur):
            try:
                self.nv.mod.nvmlGpmSampleFree(s)
            except Exception:  # freeing on a lost GPU: nothing more to do
                pass

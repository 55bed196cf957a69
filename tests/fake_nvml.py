"""A fake `pynvml` module built from recorded sequences, injected with gpuscope.nvml.use_backend.

It answers the subset of nvidia-ml-py that gpuscope.nvml calls, with the same names, error
classes (NVMLError_NotSupported, ...) and value shapes (field values with .nvmlReturn,
.timestamp and .value.ullVal; GPM metrics structs with .metrics[i].value). A GPU is
described by a FakeGpu: counter readings replayed in order (32-bit, so they wrap), GPM
metric readings, functions that answer NotSupported / FunctionNotFound, and a call count
after which the GPU is lost (every call raises GpuIsLost).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

NVML_ERROR_NOT_SUPPORTED = 3
NVML_ERROR_NO_PERMISSION = 4
NVML_ERROR_DRIVER_NOT_LOADED = 9
NVML_ERROR_LIBRARY_NOT_FOUND = 12
NVML_ERROR_FUNCTION_NOT_FOUND = 13
NVML_ERROR_GPU_IS_LOST = 15
NVML_ERROR_INVALID_ARGUMENT = 2
NVML_ERROR_UNKNOWN = 999
NVML_GPM_METRICS_GET_VERSION = 1


class NVMLError(Exception):
    value = NVML_ERROR_UNKNOWN

    def __str__(self) -> str:
        return type(self).__name__.replace("NVMLError_", "")


def _err(name: str, value: int) -> type[NVMLError]:
    return type(f"NVMLError_{name}", (NVMLError,), {"value": value})


NVMLError_NotSupported = _err("NotSupported", NVML_ERROR_NOT_SUPPORTED)
NVMLError_NoPermission = _err("NoPermission", NVML_ERROR_NO_PERMISSION)
NVMLError_DriverNotLoaded = _err("DriverNotLoaded", NVML_ERROR_DRIVER_NOT_LOADED)
NVMLError_LibraryNotFound = _err("LibraryNotFound", NVML_ERROR_LIBRARY_NOT_FOUND)
NVMLError_FunctionNotFound = _err("FunctionNotFound", NVML_ERROR_FUNCTION_NOT_FOUND)
NVMLError_GpuIsLost = _err("GpuIsLost", NVML_ERROR_GPU_IS_LOST)
NVMLError_InvalidArgument = _err("InvalidArgument", NVML_ERROR_INVALID_ARGUMENT)

ERRORS = {c.__name__.replace("NVMLError_", ""): c for c in (
    NVMLError_NotSupported, NVMLError_NoPermission, NVMLError_DriverNotLoaded,
    NVMLError_LibraryNotFound, NVMLError_FunctionNotFound, NVMLError_GpuIsLost,
    NVMLError_InvalidArgument)}


@dataclass
class FakeGpu:
    name: str = "NVIDIA H200"
    uuid: str = "GPU-fake-0000"
    gpm: bool = True
    #: GPM readings replayed per nvmlGpmMetricsGet call: {metric id: value}; last one repeats.
    gpm_metrics: Sequence[dict[int, float]] = field(default_factory=lambda: [
        {2: 50.0, 3: 25.0, 10: 10.0, 20: 1000.0, 21: 50000.0}])
    #: PCIe counter readings replayed per nvmlDeviceGetFieldValues call: (rx, tx, timestamp µs)
    #: (values taken modulo 2**32, as the hardware counter does); last one repeats. None: NotSupported.
    counters: Sequence[tuple[int, int, int]] | None = None
    throughput_kbs: tuple[int, int] | None = None  # (rx, tx) KB/s for PcieThroughput
    link: tuple[int, int, int, int] = (5, 5, 16, 16)  # gen now, gen max, width now, width max
    errors: dict[str, str] = field(default_factory=dict)  # function name -> error name
    lost_after_calls: int | None = None  # after this many device calls, everything is GpuIsLost
    util: tuple[int, int] = (80, 20)
    mem_used_mib: float = 1024.0
    mem_total_mib: float = 143771.0
    power_mw: int = 300_000
    power_limit_mw: int = 700_000          # nvmlDeviceGetEnforcedPowerLimit
    default_power_limit_mw: int = 700_000  # nvmlDeviceGetPowerManagementDefaultLimit
    sm_clock: int = 1980
    mem_clock: int = 3201
    temperature_c: int = 45
    #: clock-event (throttle) reason bitmasks replayed per call; last one repeats (1 = GpuIdle)
    clock_event_reasons: Sequence[int] = (0,)
    supported_clock_event_reasons: int = 511


class FakeNvml:
    """Use as the module: `nvml.use_backend(FakeNvml([FakeGpu(...)]))`."""

    NVMLError = NVMLError
    NVML_ERROR_NOT_SUPPORTED = NVML_ERROR_NOT_SUPPORTED
    NVML_ERROR_NO_PERMISSION = NVML_ERROR_NO_PERMISSION
    NVML_ERROR_FUNCTION_NOT_FOUND = NVML_ERROR_FUNCTION_NOT_FOUND
    NVML_ERROR_GPU_IS_LOST = NVML_ERROR_GPU_IS_LOST
    NVML_GPM_METRICS_GET_VERSION = NVML_GPM_METRICS_GET_VERSION

    def __init__(self, gpus: Sequence[FakeGpu] = (), *, init_error: str | None = None,
                 driver: str = "580.95.05", cuda: int = 13000, missing: Sequence[str] = ()):
        for k, v in ERRORS.items():
            setattr(self, f"NVMLError_{k}", v)
        self.gpus = list(gpus)
        self.init_error = init_error
        self.driver = driver
        self.cuda = cuda
        self.calls: dict[str, int] = {}
        self.device_calls = [0] * len(self.gpus)
        self._counter_pos = [0] * len(self.gpus)
        self._gpm_pos = [0] * len(self.gpus)
        self._reason_pos = [0] * len(self.gpus)
        self.initialised = False
        self.shutdowns = 0
        for name in missing:  # functions this "pynvml build" lacks entirely
            setattr(self, name, None)

    # -- plumbing --------------------------------------------------------------------------
    def _count(self, fn: str) -> None:
        self.calls[fn] = self.calls.get(fn, 0) + 1

    def _dev(self, fn: str, h: Any) -> FakeGpu:
        self._count(fn)
        i = h.index
        g = self.gpus[i]
        self.device_calls[i] += 1
        if g.lost_after_calls is not None and self.device_calls[i] > g.lost_after_calls:
            raise NVMLError_GpuIsLost()
        if fn in g.errors:
            raise ERRORS[g.errors[fn]]()
        return g

    # -- system ----------------------------------------------------------------------------
    def nvmlInit(self) -> None:
        self._count("nvmlInit")
        if self.init_error:
            raise ERRORS[self.init_error]()
        self.initialised = True

    def nvmlShutdown(self) -> None:
        self.shutdowns += 1
        self.initialised = False

    def nvmlSystemGetDriverVersion(self) -> str:
        return self.driver

    def nvmlSystemGetNVMLVersion(self) -> bytes:
        return b"13.580.95.05"

    def nvmlSystemGetCudaDriverVersion(self) -> int:
        return self.cuda

    def nvmlDeviceGetCount(self) -> int:
        return len(self.gpus)

    def nvmlDeviceGetHandleByIndex(self, i: int) -> Any:
        if not 0 <= i < len(self.gpus):
            raise NVMLError_InvalidArgument()
        return SimpleNamespace(index=i)

    # -- device ----------------------------------------------------------------------------
    def nvmlDeviceGetName(self, h: Any) -> str:
        return self._dev("nvmlDeviceGetName", h).name

    def nvmlDeviceGetUUID(self, h: Any) -> str:
        return self._dev("nvmlDeviceGetUUID", h).uuid

    def nvmlDeviceGetPciInfo(self, h: Any) -> Any:
        self._dev("nvmlDeviceGetPciInfo", h)
        return SimpleNamespace(busId=f"00000000:{h.index + 0x18:02X}:00.0", domain=0, bus=h.index + 0x18, device=0)

    def nvmlDeviceGetMemoryInfo(self, h: Any) -> Any:
        g = self._dev("nvmlDeviceGetMemoryInfo", h)
        mib = 1024 * 1024
        return SimpleNamespace(total=int(g.mem_total_mib * mib), used=int(g.mem_used_mib * mib),
                               free=int((g.mem_total_mib - g.mem_used_mib) * mib))

    def nvmlDeviceGetUtilizationRates(self, h: Any) -> Any:
        g = self._dev("nvmlDeviceGetUtilizationRates", h)
        return SimpleNamespace(gpu=g.util[0], memory=g.util[1])

    def nvmlDeviceGetPowerUsage(self, h: Any) -> int:
        return self._dev("nvmlDeviceGetPowerUsage", h).power_mw

    def nvmlDeviceGetEnforcedPowerLimit(self, h: Any) -> int:
        return self._dev("nvmlDeviceGetEnforcedPowerLimit", h).power_limit_mw

    def nvmlDeviceGetPowerManagementDefaultLimit(self, h: Any) -> int:
        return self._dev("nvmlDeviceGetPowerManagementDefaultLimit", h).default_power_limit_mw

    def nvmlDeviceGetClockInfo(self, h: Any, kind: int) -> int:
        g = self._dev("nvmlDeviceGetClockInfo", h)
        return g.mem_clock if kind == 2 else g.sm_clock  # NVML_CLOCK_MEM = 2, NVML_CLOCK_SM = 1

    def nvmlDeviceGetTemperature(self, h: Any, sensor: int) -> int:
        return self._dev("nvmlDeviceGetTemperature", h).temperature_c

    def _reasons(self, fn: str, h: Any) -> int:
        g = self._dev(fn, h)
        i = h.index
        pos = min(self._reason_pos[i], len(g.clock_event_reasons) - 1)
        self._reason_pos[i] += 1
        return g.clock_event_reasons[pos]

    def nvmlDeviceGetCurrentClocksEventReasons(self, h: Any) -> int:
        return self._reasons("nvmlDeviceGetCurrentClocksEventReasons", h)

    def nvmlDeviceGetCurrentClocksThrottleReasons(self, h: Any) -> int:  # the pre-535 name
        return self._reasons("nvmlDeviceGetCurrentClocksThrottleReasons", h)

    def nvmlDeviceGetSupportedClocksEventReasons(self, h: Any) -> int:
        return self._dev("nvmlDeviceGetSupportedClocksEventReasons", h).supported_clock_event_reasons

    def nvmlDeviceGetCurrPcieLinkGeneration(self, h: Any) -> int:
        return self._dev("nvmlDeviceGetCurrPcieLinkGeneration", h).link[0]

    def nvmlDeviceGetMaxPcieLinkGeneration(self, h: Any) -> int:
        return self._dev("nvmlDeviceGetMaxPcieLinkGeneration", h).link[1]

    def nvmlDeviceGetGpuMaxPcieLinkGeneration(self, h: Any) -> int:
        return self._dev("nvmlDeviceGetGpuMaxPcieLinkGeneration", h).link[1]

    def nvmlDeviceGetCurrPcieLinkWidth(self, h: Any) -> int:
        return self._dev("nvmlDeviceGetCurrPcieLinkWidth", h).link[2]

    def nvmlDeviceGetMaxPcieLinkWidth(self, h: Any) -> int:
        return self._dev("nvmlDeviceGetMaxPcieLinkWidth", h).link[3]

    def nvmlDeviceGetPcieThroughput(self, h: Any, counter: int) -> int:
        g = self._dev("nvmlDeviceGetPcieThroughput", h)
        if g.throughput_kbs is None:
            raise NVMLError_NotSupported()
        return g.throughput_kbs[0] if counter == 1 else g.throughput_kbs[1]  # 1 = RX, 0 = TX

    def nvmlDeviceGetFieldValues(self, h: Any, field_ids: list[int]) -> list[Any]:
        g = self._dev("nvmlDeviceGetFieldValues", h)
        i = h.index
        out = []
        if g.counters is None:
            reading = None
        else:
            pos = min(self._counter_pos[i], len(g.counters) - 1)
            reading = g.counters[pos]
            self._counter_pos[i] += 1
        for fid in field_ids:
            if reading is None:
                out.append(SimpleNamespace(fieldId=fid, nvmlReturn=NVML_ERROR_NOT_SUPPORTED,
                                           timestamp=0, value=SimpleNamespace(ullVal=0)))
                continue
            rx, tx, ts = reading
            v = rx if fid == 198 else tx if fid == 197 else 0
            out.append(SimpleNamespace(fieldId=fid, nvmlReturn=0, timestamp=ts,
                                       value=SimpleNamespace(ullVal=v % 2**32)))
        return out

    # -- GPM -------------------------------------------------------------------------------
    def nvmlGpmQueryDeviceSupport(self, h: Any) -> Any:
        g = self._dev("nvmlGpmQueryDeviceSupport", h)
        return SimpleNamespace(version=1, isSupportedDevice=1 if g.gpm else 0)

    def nvmlGpmSampleAlloc(self) -> Any:
        self._count("nvmlGpmSampleAlloc")
        return SimpleNamespace(device=None, freed=False)

    def nvmlGpmSampleFree(self, s: Any) -> None:
        s.freed = True

    def nvmlGpmSampleGet(self, h: Any, s: Any) -> Any:
        self._dev("nvmlGpmSampleGet", h)
        s.device = h.index
        return s

    class c_nvmlGpmMetricsGet_t:  # noqa: N801 - mirrors the pynvml struct name
        def __init__(self) -> None:
            self.version = 0
            self.numMetrics = 0
            self.sample1 = None
            self.sample2 = None
            self.metrics = [SimpleNamespace(metricId=0, nvmlReturn=0, value=0.0) for _ in range(98)]

    def nvmlGpmMetricsGet(self, mg: Any) -> Any:
        self._count("nvmlGpmMetricsGet")
        i = mg.sample2.device
        g = self.gpus[i]
        pos = min(self._gpm_pos[i], len(g.gpm_metrics) - 1)
        reading = g.gpm_metrics[pos]
        self._gpm_pos[i] += 1
        for k in range(mg.numMetrics):
            m = mg.metrics[k]
            if m.metricId in reading:
                m.value, m.nvmlReturn = float(reading[m.metricId]), 0
            else:
                m.value, m.nvmlReturn = 0.0, NVML_ERROR_NOT_SUPPORTED
        return mg

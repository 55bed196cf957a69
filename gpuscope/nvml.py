"""The one NVML boundary: every NVML call in gpuscope goes through this module.

- Lazy init: nothing touches the driver until `get()` is first called; shutdown at exit.
- One query helper, `Nvml.query(fn_name, *args)`: NotSupported / FunctionNotFound /
  NoPermission (and a function this pynvml build lacks) become `None` (a missing value),
  logged once per function name. A lost GPU (GpuIsLost, Unknown, Uninitialized after init)
  raises `GpuLost`, so the sampler can stop that GPU and go on with the others.
- A capability probe per GPU (`Nvml.probe(index)`).
- GPM metrics (SM activity and occupancy, DRAM and PCIe) through `Nvml.gpm(index)`, a
  `GpmReader` (gpuscope.nvml_gpm) whose calls go through `Nvml.query` too.
- An actionable reason when NVML is absent (`get()` returns None; `unavailable_reason()`).

Tests inject a fake module with `use_backend(fake)` (tests/fake_nvml.py); production uses
the `pynvml` module of the official nvidia-ml-py distribution.
"""

from __future__ import annotations

import atexit
import logging
import threading
import time
from dataclasses import asdict, dataclass, field
from typing import Any

from gpuscope.nvml_gpm import (  # noqa: F401 - the GPM metric ids stay importable from here
    GPM_ACTIVITY_COLUMNS,
    GPM_DRAM_BW_UTIL,
    GPM_METRICS,
    GPM_PCIE_RX_PER_SEC,
    GPM_PCIE_TX_PER_SEC,
    GPM_SM_OCCUPANCY,
    GPM_SM_UTIL,
    GpmReader,
    GpmUnavailable,
)
from gpuscope.units import pcie_link_rate_gbs

log = logging.getLogger("gpuscope.nvml")

#: NVML error names that mean "this value is not available here" -> a missing value.
MISSING_ERRORS = ("NotSupported", "FunctionNotFound", "NoPermission", "NotFound")
#: NVML error names that mean "this GPU stopped answering".
LOST_ERRORS = ("GpuIsLost", "Unknown", "Uninitialized", "ResetRequired", "DriverNotLoaded")

FI_PCIE_COUNT_TX_BYTES = 197
FI_PCIE_COUNT_RX_BYTES = 198
PCIE_UTIL_TX_BYTES = 0
PCIE_UTIL_RX_BYTES = 1
CLOCK_SM = 1
CLOCK_MEM = 2
TEMPERATURE_GPU = 0
# nvmlDeviceGetCurrentClocksEventReasons (driver >= 535; older pynvml: ...ThrottleReasons)
CLOCK_EVENT_REASONS_FNS = ("nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons")

MIB = 1024 * 1024


class GpuLost(Exception):
    """The GPU stopped answering NVML calls."""


class _Backend:
    module: Any = None  # the pynvml-like module in use


_backend = _Backend()
_lock = threading.Lock()
_session: Nvml | None = None
_unavailable: str | None = None
_atexit_registered = False


def use_backend(module: Any | None) -> None:
    """Inject a pynvml-like module (tests) or None to go back to the real pynvml. Resets state."""
    reset()
    _backend.module = module


def reset() -> None:
    """Shut down any open session and forget it (next `get()` initialises again)."""
    global _session, _unavailable
    with _lock:
        if _session is not None:
            _session.shutdown()
        _session = None
        _unavailable = None


def _import_module() -> Any:
    if _backend.module is not None:
        return _backend.module
    import pynvml  # nvidia-ml-py

    return pynvml


def get() -> Nvml | None:
    """The NVML session, initialised on first use; None when NVML cannot be used (see reason)."""
    global _session, _unavailable, _atexit_registered
    with _lock:
        if _session is not None:
            return _session
        if _unavailable is not None:
            return None
        try:
            mod = _import_module()
        except Exception as e:  # ImportError or a broken install
            _unavailable = (f"NVML Python bindings not importable ({type(e).__name__}): "
                            "install nvidia-ml-py")
            return None
        try:
            mod.nvmlInit()
        except Exception as e:
            name = _error_name(mod, e)
            if name in ("LibraryNotFound",):
                _unavailable = "no NVIDIA driver found (libnvidia-ml.so not loadable)"
            elif name in ("DriverNotLoaded",):
                _unavailable = "the NVIDIA driver is not loaded"
            elif name in ("NoPermission",):
                _unavailable = "no permission to open the NVIDIA driver"
            else:
                _unavailable = f"NVML init failed: {name or type(e).__name__}: {e}"
            return None
        _session = Nvml(mod)
        if not _atexit_registered:
            atexit.register(reset)
            _atexit_registered = True
        return _session


def unavailable_reason() -> str | None:
    return _unavailable


def _error_name(mod: Any, e: BaseException) -> str | None:
    """`NotSupported` for pynvml.NVMLError_NotSupported, etc.; None if not an NVML error."""
    base = getattr(mod, "NVMLError", None)
    if base is None or not isinstance(e, base):
        return None
    name = type(e).__name__
    if name.startswith("NVMLError_"):
        return name[len("NVMLError_"):]
    value = getattr(e, "value", None)
    for cand, const in (("NotSupported", "NVML_ERROR_NOT_SUPPORTED"),
                        ("NoPermission", "NVML_ERROR_NO_PERMISSION"),
                        ("FunctionNotFound", "NVML_ERROR_FUNCTION_NOT_FOUND"),
                        ("GpuIsLost", "NVML_ERROR_GPU_IS_LOST")):
        if value is not None and value == getattr(mod, const, object()):
            return cand
    return "Unknown"


def _s(v: Any) -> Any:
    return v.decode(errors="replace") if isinstance(v, bytes) else v


@dataclass
class Capabilities:
    """What one GPU answers. Link fields are None when unknown."""

    gpm: bool = False
    pcie_counters: bool = False
    pcie_throughput: bool = False
    utilization: bool = False
    memory: bool = False
    power: bool = False
    clocks: bool = False
    link_gen_now: int | None = None
    link_gen_max: int | None = None
    link_gen_gpu_max: int | None = None
    link_width_now: int | None = None
    link_width_max: int | None = None
    missing: dict[str, str] = field(default_factory=dict)

    @property
    def link_downgraded(self) -> bool:
        return bool(
            (self.link_gen_now and self.link_gen_max and self.link_gen_now < self.link_gen_max)
            or (self.link_width_now and self.link_width_max and self.link_width_now < self.link_width_max)
        )

    @property
    def link_max_gbs(self) -> float | None:
        return pcie_link_rate_gbs(self.link_gen_max, self.link_width_max)

    @property
    def link_now_gbs(self) -> float | None:
        return pcie_link_rate_gbs(self.link_gen_now, self.link_width_now)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["link_downgraded"] = self.link_downgraded
        d["link_max_gbs"] = self.link_max_gbs
        d["link_now_gbs"] = self.link_now_gbs
        return d


class Nvml:
    """An initialised NVML session. Use `nvml.get()` to obtain it."""

    def __init__(self, mod: Any) -> None:
        self.mod = mod
        self._logged: set[str] = set()
        self._handles: dict[int, Any] = {}
        self._closed = False
        #: set to {} to account CPU time per NVML function: name -> [calls, thread CPU seconds]
        self.profile: dict[str, list[float]] | None = None

    # -- the one query helper -------------------------------------------------------------
    def query(self, fn_name: str, *args: Any) -> Any:
        """Call `pynvml.<fn_name>(*args)`; a missing value is None; a lost GPU raises GpuLost."""
        fn = getattr(self.mod, fn_name, None)
        if fn is None:
            self._note_missing(fn_name, "FunctionNotFound (not in this pynvml)")
            return None
        prof = self.profile
        t0 = time.thread_time() if prof is not None else 0.0
        try:
            return fn(*args)
        except Exception as e:
            name = _error_name(self.mod, e)
            if name is None:
                raise
            if name in MISSING_ERRORS:
                self._note_missing(fn_name, name)
                return None
            if name in LOST_ERRORS:
                raise GpuLost(f"{fn_name}: {name}") from None
            self._note_missing(fn_name, name)
            return None
        finally:
            if prof is not None:
                acc = prof.setdefault(fn_name, [0, 0.0])
                acc[0] += 1
                acc[1] += time.thread_time() - t0

    def _note_missing(self, fn_name: str, why: str) -> None:
        if fn_name not in self._logged:
            self._logged.add(fn_name)
            log.info("NVML %s: %s; reported as missing", fn_name, why)

    @property
    def missing_functions(self) -> list[str]:
        return sorted(self._logged)

    def shutdown(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            self.mod.nvmlShutdown()
        except Exception:  # already shut down or driver gone: nothing left to release
            pass

    # -- system and devices ---------------------------------------------------------------
    def system(self) -> dict[str, Any]:
        cuda = self.query("nvmlSystemGetCudaDriverVersion")
        return {
            "driver": _s(self.query("nvmlSystemGetDriverVersion")),
            "nvml": _s(self.query("nvmlSystemGetNVMLVersion")),
            "cuda_driver": f"{cuda // 1000}.{(cuda % 1000) // 10}" if isinstance(cuda, int) else None,
        }

    def device_count(self) -> int:
        n = self.query("nvmlDeviceGetCount")
        return int(n or 0)

    def handle(self, index: int) -> Any:
        h = self._handles.get(index)
        if h is None:
            h = self.query("nvmlDeviceGetHandleByIndex", index)
            if h is None:
                raise GpuLost(f"GPU {index}: no handle")
            self._handles[index] = h
        return h

    def device(self, index: int) -> dict[str, Any]:
        h = self.handle(index)
        mem = self.query("nvmlDeviceGetMemoryInfo", h)
        pci = self.query("nvmlDeviceGetPciInfo", h)
        return {
            "index": index,
            "name": _s(self.query("nvmlDeviceGetName", h)),
            "uuid": _s(self.query("nvmlDeviceGetUUID", h)),
            "pci_bus_id": _s(getattr(pci, "busId", None)) if pci is not None else None,
            "memory_total_mib": (mem.total / MIB) if mem is not None else None,
        }

    def power_limits(self, index: int) -> dict[str, float | None]:
        """The board power limit in force and the GPU's default one (W); None where NVML does not
        say. A limit below the default is an administrator's choice that costs clocks."""
        h = self.handle(index)
        got = {k: self.query(fn, h) for k, fn in (("enforced_w", "nvmlDeviceGetEnforcedPowerLimit"),
                                                   ("default_w", "nvmlDeviceGetPowerManagementDefaultLimit"))}
        return {k: (v / 1000.0 if isinstance(v, int | float) and not isinstance(v, bool) and v > 0 else None)
                for k, v in got.items()}

    def uuid_for_pci(self, domain: int, bus: int, device: int) -> str | None:
        """NVML's UUID of the GPU at a PCI address (to match a CUDA device index to NVML's)."""
        for i in range(self.device_count()):
            try:
                pci = self.query("nvmlDeviceGetPciInfo", self.handle(i))
            except GpuLost:
                continue
            if pci is None:
                continue
            if (getattr(pci, "domain", None), getattr(pci, "bus", None), getattr(pci, "device", None)) == (
                    domain, bus, device):
                return _s(self.query("nvmlDeviceGetUUID", self.handle(i)))
        return None

    def probe(self, index: int) -> Capabilities:
        """Which sources answer on this GPU (each tried once, no side effects)."""
        h = self.handle(index)
        c = Capabilities()

        def ok(key: str, value: Any) -> bool:
            if value is None:
                c.missing[key] = "not supported"
                return False
            return True

        sup = self.query("nvmlGpmQueryDeviceSupport", h)
        c.gpm = bool(sup is not None and getattr(sup, "isSupportedDevice", 0))
        if not c.gpm:
            c.missing.setdefault("gpm", "not supported")
        vals = self.read_fields(h, (FI_PCIE_COUNT_RX_BYTES, FI_PCIE_COUNT_TX_BYTES))
        c.pcie_counters = vals is not None and all(v is not None for v, _ in vals)
        if not c.pcie_counters:
            c.missing["pcie_counters"] = "not supported"
        c.utilization = ok("utilization", self.query("nvmlDeviceGetUtilizationRates", h))
        c.memory = ok("memory", self.query("nvmlDeviceGetMemoryInfo", h))
        c.power = ok("power", self.query("nvmlDeviceGetPowerUsage", h))
        c.clocks = ok("clocks", self.query("nvmlDeviceGetClockInfo", h, CLOCK_SM))
        c.link_gen_now = self.query("nvmlDeviceGetCurrPcieLinkGeneration", h)
        c.link_gen_max = self.query("nvmlDeviceGetMaxPcieLinkGeneration", h)
        c.link_gen_gpu_max = self.query("nvmlDeviceGetGpuMaxPcieLinkGeneration", h)
        c.link_width_now = self.query("nvmlDeviceGetCurrPcieLinkWidth", h)
        c.link_width_max = self.query("nvmlDeviceGetMaxPcieLinkWidth", h)
        # PcieThroughput blocks ~20 ms: probe it only when it is the last PCIe source left.
        if not c.gpm and not c.pcie_counters:
            c.pcie_throughput = ok(
                "pcie_throughput", self.query("nvmlDeviceGetPcieThroughput", h, PCIE_UTIL_RX_BYTES)
            )
        return c

    # -- sampling primitives --------------------------------------------------------------
    def read_fields(self, h: Any, field_ids: tuple[int, ...]) -> list[tuple[int | None, int]] | None:
        """Field values as (value or None, NVML timestamp in µs); None if the call is missing."""
        vals = self.query("nvmlDeviceGetFieldValues", h, list(field_ids))
        if vals is None:
            return None
        out: list[tuple[int | None, int]] = []
        for v in vals:
            if getattr(v, "nvmlReturn", 0) != 0:
                out.append((None, 0))
            else:
                out.append((int(v.value.ullVal), int(getattr(v, "timestamp", 0) or 0)))
        return out

    def slow_fields(self, h: Any) -> dict[str, float | None]:
        util = self.query("nvmlDeviceGetUtilizationRates", h)
        mem = self.query("nvmlDeviceGetMemoryInfo", h)
        power_mw = self.query("nvmlDeviceGetPowerUsage", h)
        clock = self.query("nvmlDeviceGetClockInfo", h, CLOCK_SM)
        mem_clock = self.query("nvmlDeviceGetClockInfo", h, CLOCK_MEM)
        temp = self.query("nvmlDeviceGetTemperature", h, TEMPERATURE_GPU)
        reasons = self.query(self._clock_event_fn(), h)
        return {
            "gpu_util_pct": float(util.gpu) if util is not None else None,
            "mem_util_pct": float(util.memory) if util is not None else None,
            "mem_used_mib": (mem.used / MIB) if mem is not None else None,
            "power_w": (power_mw / 1000.0) if power_mw is not None else None,
            "sm_clock_mhz": float(clock) if clock is not None else None,
            "mem_clock_mhz": float(mem_clock) if mem_clock is not None else None,
            "temperature_c": float(temp) if temp is not None else None,
            "clock_event_reasons": float(int(reasons)) if reasons is not None else None,
        }

    def _clock_event_fn(self) -> str:
        """The clock-event reasons function this pynvml has (the new name, else the old one)."""
        for name in CLOCK_EVENT_REASONS_FNS:
            if getattr(self.mod, name, None) is not None:
                return name
        return CLOCK_EVENT_REASONS_FNS[0]  # query() reports it missing once

    def pcie_throughput_gbs(self, h: Any) -> tuple[float | None, float | None]:
        """(rx, tx) GB/s from nvmlDeviceGetPcieThroughput (KB/s over a 20 ms window; blocks)."""
        rx = self.query("nvmlDeviceGetPcieThroughput", h, PCIE_UTIL_RX_BYTES)
        tx = self.query("nvmlDeviceGetPcieThroughput", h, PCIE_UTIL_TX_BYTES)
        return (rx * 1e3 / 1e9 if rx is not None else None,
                tx * 1e3 / 1e9 if tx is not None else None)

    def gpm(self, index: int) -> GpmReader | None:
        h = self.handle(index)
        try:
            return GpmReader(self, h)
        except GpmUnavailable:
            return None

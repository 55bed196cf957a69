"""Host<->device bandwidth: pinned vs pageable vs registered host memory (`gpuscope bandwidth`).

Every copy is one cudaMemcpyAsync on a non-default stream, timed with CUDA events around
it; each (memory kind, direction, size) is repeated and the median kept. The cost of pinning
is measured too: cudaHostAlloc of a fresh buffer and cudaHostRegister of an existing
(already touched) numpy buffer, in seconds per GiB. Optional contention: N host threads
copying memory (numpy copies release the GIL) during every measurement, as synthesis
threads do in a proving daemon.

Needs CuPy and a CUDA device (gpuscope.cuda); the caller maps CUDA errors to exit codes.
"""

from __future__ import annotations

import ctypes
import statistics
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gpuscope import cuda, nvml
from gpuscope.clock import iso_from_epoch
from gpuscope.errors import UsageError
from gpuscope.units import parse_size

if TYPE_CHECKING:
    import numpy as np

GIB = 1024**3
KINDS = ("pinned", "pageable", "registered")
DIRECTIONS = ("h2d", "d2h")
_MEMCPY_H2D = 1
_MEMCPY_D2H = 2
_WHAT = "bandwidth"


def parse_sizes(text: str) -> list[int]:
    """'64M,512M,1.5G' -> bytes (gpuscope.units.parse_size: one rule for every size option)."""

    parts = [p for p in text.split(",") if p.strip()]
    if not parts:
        raise UsageError("--sizes: no sizes given")
    return [parse_size(p, "--sizes") for p in parts]


def fmt_size(n: int) -> str:
    """Bytes in the form --sizes takes: 1536M, 2G, 4K, 1000."""
    for unit, f in (("G", GIB), ("M", 1024**2), ("K", 1024)):
        if n % f == 0:
            return f"{n // f}{unit}"
    return str(n)


class Contention:
    """N threads copying `chunk` bytes of host memory in a loop until stopped."""

    def __init__(self, threads: int, chunk: int = 64 * 1024**2) -> None:
        import numpy as np

        self.n = threads
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self.bytes_copied = 0
        self._lock = threading.Lock()
        self._bufs = [(np.ones(chunk, dtype=np.uint8), np.empty(chunk, dtype=np.uint8)) for _ in range(threads)]

    def _run(self, i: int) -> None:
        import numpy as np

        src, dst = self._bufs[i]
        n = 0
        while not self._stop.is_set():
            np.copyto(dst, src)
            n += src.nbytes
        with self._lock:
            self.bytes_copied += n

    def __enter__(self) -> Contention:
        self._t0 = time.perf_counter()
        for i in range(self.n):
            t = threading.Thread(target=self._run, args=(i,), daemon=True, name=f"gpuscope-contention-{i}")
            t.start()
            self._threads.append(t)
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        for t in self._threads:
            t.join()
        self.seconds = time.perf_counter() - self._t0

    @property
    def gbs(self) -> float:
        return self.bytes_copied / self.seconds / 1e9 if getattr(self, "seconds", 0) else 0.0


@dataclass
class _HostBuf:
    kind: str
    array: np.ndarray  # viewing the host memory
    alloc_s: float
    release: Callable[[], None]


def _alloc_host(kind: str, nbytes: int) -> _HostBuf:
    import numpy as np

    cupy = cuda.require(_WHAT)

    rt = cupy.cuda.runtime
    if kind == "pinned":
        t0 = time.perf_counter()
        ptr = rt.hostAlloc(nbytes, 0)  # cudaHostAlloc, cudaHostAllocDefault
        dt = time.perf_counter() - t0
        arr = np.ctypeslib.as_array((ctypes.c_uint8 * nbytes).from_address(ptr))
        arr.fill(1)
        return _HostBuf(kind, arr, dt, lambda: rt.freeHost(ptr))
    arr = np.empty(nbytes, dtype=np.uint8)
    arr.fill(1)  # touch every page: the copy measures the copy, not first-touch page faults
    if kind == "pageable":
        return _HostBuf(kind, arr, 0.0, lambda: None)
    ptr = arr.ctypes.data
    t0 = time.perf_counter()
    rt.hostRegister(ptr, nbytes, 0)  # cudaHostRegisterDefault
    dt = time.perf_counter() - t0
    return _HostBuf(kind, arr, dt, lambda: rt.hostUnregister(ptr))


def _time_copy(host: np.ndarray, dev: Any, nbytes: int, direction: str, stream: Any) -> float:
    """Seconds for one copy, measured with CUDA events on `stream`."""
    cupy = cuda.require(_WHAT)
    rt = cupy.cuda.runtime
    start, end = cupy.cuda.Event(), cupy.cuda.Event()
    hptr, dptr = host.ctypes.data, dev.data.ptr
    start.record(stream)
    if direction == "h2d":
        rt.memcpyAsync(dptr, hptr, nbytes, _MEMCPY_H2D, stream.ptr)
    else:
        rt.memcpyAsync(hptr, dptr, nbytes, _MEMCPY_D2H, stream.ptr)
    end.record(stream)
    end.synchronize()
    return cupy.cuda.get_elapsed_time(start, end) / 1e3


def measure(sizes: Sequence[int], *, repeats: int = 5, contention: int = 0, device: int = 0,
            kinds: Sequence[str] = KINDS, warmup: int = 1) -> dict[str, Any]:
    """Run the whole measurement; returns the `bandwidth --json` object (see docs/BENCHMARKS.md)."""
    cupy = cuda.require(_WHAT)
    cupy.cuda.Device(device).use()
    props = cupy.cuda.runtime.getDeviceProperties(device)
    name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
    uuid = _uuid(props, device)
    stream = cupy.cuda.Stream(non_blocking=True)
    biggest = max(sizes)
    dev = cupy.empty(biggest, dtype=cupy.uint8)
    dev.fill(2)
    results: list[dict[str, Any]] = []
    pinning: dict[str, list[float]] = {"host_alloc": [], "host_register": []}
    cont_gbs: list[float] = []
    for size in sizes:
        for kind in kinds:
            buf = _alloc_host(kind, size)
            if kind == "pinned":
                pinning["host_alloc"].append(buf.alloc_s / (size / GIB))
            elif kind == "registered":
                pinning["host_register"].append(buf.alloc_s / (size / GIB))
            try:
                for direction in DIRECTIONS:
                    for _ in range(warmup):
                        _time_copy(buf.array, dev, size, direction, stream)
                    times = []
                    with Contention(contention) as c:
                        for _ in range(repeats):
                            times.append(_time_copy(buf.array, dev, size, direction, stream))
                    if contention:
                        cont_gbs.append(c.gbs)
                    gbs = [size / t / 1e9 for t in times]
                    results.append({
                        "kind": kind, "direction": direction, "size_bytes": size,
                        "size": fmt_size(size), "repeats": repeats,
                        "median_gbs": statistics.median(gbs), "min_gbs": min(gbs), "max_gbs": max(gbs),
                        "median_ms": statistics.median(times) * 1e3,
                    })
            finally:
                buf.release()
                del buf
    line_rate = max((r["median_gbs"] for r in results if r["kind"] == "pinned" and r["direction"] == "h2d"),
                    default=None)
    return {
        "schema_version": 1,
        "measured_at": iso_from_epoch(time.time()),
        "gpu": {"index": device, "name": name, "uuid": uuid},
        "sizes_bytes": list(sizes),
        "repeats": repeats,
        "contention_threads": contention,
        "contention_host_copy_gbs": statistics.median(cont_gbs) if cont_gbs else None,
        "results": results,
        "pinning": {
            "host_alloc_s_per_gib": statistics.median(pinning["host_alloc"]) if pinning["host_alloc"] else None,
            "host_register_s_per_gib": (statistics.median(pinning["host_register"])
                                        if pinning["host_register"] else None),
        },
        "line_rate_gbs": line_rate,
    }


def _uuid(props: dict[str, Any], device: int) -> str:
    """The GPU's UUID as NVML spells it (the line-rate cache key that info/record look up).

    NVML matched by PCI address first; else the CUDA properties' 16 uuid bytes."""

    nv = nvml.get()
    if nv is not None and "pciBusID" in props:
        u = nv.uuid_for_pci(int(props.get("pciDomainID", 0)), int(props["pciBusID"]),
                            int(props.get("pciDeviceID", 0)))
        if u:
            return u
    raw = props.get("uuid")
    if isinstance(raw, bytes | bytearray) and len(raw) >= 16:
        h = raw[:16].hex()
        return f"GPU-{h[0:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"
    return f"cuda-device-{device}"


def summary_rows(result: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per (size, kind): h2d and d2h medians side by side (for the table)."""
    rows: dict[tuple[int, str], dict[str, Any]] = {}
    for r in result["results"]:
        key = (r["size_bytes"], r["kind"])
        row = rows.setdefault(key, {"size": r["size"], "kind": r["kind"]})
        row[f"{r['direction']}_gbs"] = r["median_gbs"]
    return list(rows.values())

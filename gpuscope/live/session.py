"""`gpuscope watch`: the sampler into a LiveState, shown (and served) until Ctrl-C or --seconds.

No command and no files: the sampler `record` uses (same interval, same quiet-PCIe slow-down),
its rows kept in memory for the window only. SIGINT and SIGTERM end the loop; the sampler, the
display and the metrics endpoint are stopped in that order either way.
"""

from __future__ import annotations

import math
import signal
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import IO, Any

from gpuscope import nvml as nvml_mod
from gpuscope.errors import NoGpuError, UsageError
from gpuscope.exporter import MetricsServer
from gpuscope.gpuinfo import first_line_rate, meta_gpus
from gpuscope.linerate import resolve_line_rate
from gpuscope.live.display import LiveDisplay
from gpuscope.live.state import WINDOW_S, LiveState
from gpuscope.sampler import MIN_INTERVAL_S, PCIE_CHOICES, Sampler

TICK_S = 0.2  # the main loop's wait: how soon --seconds and a signal are seen


@dataclass
class WatchResult:
    duration_s: float = 0.0
    renders: int = 0
    refresh_hz: float = 0.0
    cpu_s: float = 0.0              # the whole gpuscope process (sampler, view, endpoint)
    sampler: dict[str, Any] = field(default_factory=dict)
    metrics_url: str | None = None
    stopped_by: str = "time"        # time | SIGINT | SIGTERM | gpus lost


def live_state(gpus: Sequence[int] | None, *, window_s: float = WINDOW_S, line_rate: float | None = None,
               need_nvml: bool = True) -> tuple[LiveState, nvml_mod.Nvml | None, list[int]]:
    """The LiveState of the GPUs to sample, with names, UUIDs and the line rate analyze would use
    for a recording of them (gpuscope.linerate: --line-rate, the measured rate, the cache, 50).
    Without NVML: NoGpuError (exit 5) when `need_nvml`, else an empty state."""

    if not (window_s > 0 and math.isfinite(window_s)):
        raise UsageError(f"--window must be a positive number of seconds, got {window_s}")
    nv = nvml_mod.get()
    if nv is None:
        if need_nvml:
            raise NoGpuError(f"cannot watch: {nvml_mod.unavailable_reason()}")
        rate, _ = resolve_line_rate(line_rate, None)
        return LiveState([], rate, window_s=window_s), None, []
    try:
        n = nv.device_count()
    except nvml_mod.GpuLost as e:
        raise NoGpuError(f"cannot watch: NVML stopped answering ({e})") from None
    chosen = list(range(n)) if gpus is None else list(gpus)
    bad = [g for g in chosen if not 0 <= g < n]
    if bad:
        raise UsageError(f"--gpus: no GPU {bad[0]} (this machine has {n}: 0..{n - 1})" if n
                         else "--gpus: this machine has no GPU")
    if not chosen and need_nvml:
        raise NoGpuError("cannot watch: no GPU found by NVML")
    meta = meta_gpus(nv, chosen)
    rate, source = resolve_line_rate(line_rate, {"line_rate_gbs": first_line_rate(meta)})
    state = LiveState([m for m in meta if "error" not in m] or [{"index": i} for i in chosen], rate,
                      window_s=window_s)
    state.line_rate_source = source
    return state, nv, chosen


class _Stop:
    """SIGINT/SIGTERM set an event (restored on exit): the loop ends at its next tick."""

    def __init__(self) -> None:
        self.event = threading.Event()
        self.by = "time"
        self._old: dict[int, Any] = {}

    def _handler(self, signum: int, _frame: Any) -> None:
        self.by = signal.Signals(signum).name
        self.event.set()

    def __enter__(self) -> _Stop:
        if threading.current_thread() is threading.main_thread():
            for s in (signal.SIGINT, signal.SIGTERM):
                self._old[s] = signal.signal(s, self._handler)
        return self

    def __exit__(self, *exc: object) -> None:
        for s, h in self._old.items():
            signal.signal(s, h)


def watch(gpus: Sequence[int] | None = None, *, interval_s: float = 0.020, refresh_s: float = 0.5,
          window_s: float = WINDOW_S, seconds: float | None = None, metrics: str | None = None,
          plain: bool | None = None, line_rate: float | None = None, pcie: str = "auto",
          on_note: Callable[[str], None] | None = None, out: IO[str] | None = None) -> WatchResult:

    if not math.isfinite(interval_s) or interval_s < MIN_INTERVAL_S:
        raise UsageError(f"--interval must be at least {MIN_INTERVAL_S * 1e3:g} ms, got {interval_s * 1e3:g}")
    if not (refresh_s >= 0.05 and math.isfinite(refresh_s)):
        raise UsageError(f"--refresh must be at least 0.05 s, got {refresh_s}")
    if seconds is not None and not (seconds > 0 and math.isfinite(seconds)):
        raise UsageError(f"--seconds must be a positive number, got {seconds}")
    if pcie not in PCIE_CHOICES:
        raise UsageError(f"--pcie must be one of {', '.join(PCIE_CHOICES)}")
    state, nv, chosen = live_state(gpus, window_s=window_s, line_rate=line_rate)
    assert nv is not None
    server = MetricsServer(state, metrics).start() if metrics else None
    res = WatchResult(metrics_url=server.url if server else None)
    if server is not None and on_note is not None:
        on_note(f"serving metrics on {server.url}")
    cpu0, t0 = time.process_time(), time.monotonic()
    sampler = Sampler(nv, chosen, state, interval_s=interval_s, pcie=pcie, on_error=on_note)
    title = f"gpuscope watch: {len(chosen)} GPU{'s' if len(chosen) != 1 else ''}, Ctrl-C to quit"
    display = LiveDisplay(state, title, refresh_s=refresh_s, plain=plain, plain_to=out)
    try:
        with _Stop() as stop, display:
            sampler.start()
            deadline = t0 + seconds if seconds is not None else math.inf
            while not stop.event.wait(TICK_S):
                if time.monotonic() >= deadline:
                    break
                if sampler._thread is not None and not sampler._thread.is_alive():
                    stop.by = "gpus lost"
                    break
            res.stopped_by = stop.by
    finally:
        stats = sampler.stop()
        if server is not None:
            server.stop()
    res.duration_s = time.monotonic() - t0
    res.cpu_s = time.process_time() - cpu0
    res.renders, res.refresh_hz = display.renders, display.refresh_hz
    res.sampler = stats.to_dict()
    return res

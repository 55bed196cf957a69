"""The NVML sampler: one thread per run, one row per sample per GPU into samples.csv.

PCIe RX/TX source per GPU, in order of preference (`pcie="auto"`):
1. the 32-bit PCIe byte counters (field values), read every tick — deltas modulo 2**32;
   an interval long enough to hide a whole wrap at the link's maximum rate is flagged
   `wrap_suspect=1`;
2. GPM PCIe RX/TX (MiB/s), when the counters do not answer;
3. nvmlDeviceGetPcieThroughput, last resort: it blocks ~20 ms, so it is read with the
   slow fields (~5 Hz), never in the fast loop.
GPM (Hopper+) also gives SM activity, SM occupancy and DRAM bandwidth utilisation. NVML
documents that two nvmlGpmSampleGet() calls must be more than 100 ms apart ("due to the
internal sample refresh rate"; closer samples give zeros), so GPM is read on the first tick
at least GPM_WINDOW_S after the previous GPM sample, and its figures cover that window.
This is why the counters, not GPM, carry PCIe in the fast loop.
Slow fields (utilisation, memory, power, SM and memory clocks, temperature, clock-event
(throttle) reasons) are read every `slow_interval_s`.

A counter read costs 0.4-0.8 ms of CPU on an H200 (the driver busy-waits; docs/BENCHMARKS.md),
so at 100 Hz the reads alone would take 5-7% of a core. The loop therefore runs at the
requested interval only while PCIe is busy: when no GPU moved at least BUSY_GBS in its last
reading (and none did for HOLD_TICKS ticks), it ticks every `quiet_interval_s` (default 50 ms)
instead, reading GPM and the slow fields on those ticks, and goes back to the full rate at the
first busy reading. A quiet row's RX/TX is then the average over its longer interval (nothing
is lost: the counters count every byte); a transfer that starts while quiet is seen at the next
quiet tick. `quiet_interval_s=None` (record --steady) keeps every tick.
GPM and slow fields are written only on the rows where they were read (empty = NaN in
between; consumers forward-fill). Times come from gpuscope.clock (monotonic + wall anchor).
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from gpuscope import nvml as nvml_mod
from gpuscope.clock import CLOCK, Clock

WRAP = 2**32
MIN_INTERVAL_S = 0.005
DEFAULT_INTERVAL_S = 0.020
SLOW_INTERVAL_S = 0.200
GPM_WINDOW_S = 0.100  # NVML: GPM samples must be > 100 ms apart
QUIET_INTERVAL_S = 0.050  # the tick while PCIe is quiet (a counter read costs ~0.7 ms of CPU)
BUSY_GBS = 0.25  # RX or TX at or above this (GB/s) is a transfer: tick at the full rate
HOLD_TICKS = 5   # quiet readings in a row before the loop slows down
PCIE_CHOICES = ("auto", "counter", "gpm", "throughput")
MIB = 1024 * 1024


class RowSink(Protocol):
    """Where the sampler's rows go: rundir.SamplesWriter, a TeeSink, the live view's LiveState,
    a list collector in tests; closed when the sampling ends."""

    def write_row(self, row: dict[str, Any]) -> None: ...

    def close(self) -> None: ...


class ListSink(RowSink):
    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []

    def write_row(self, row: dict[str, Any]) -> None:
        self.rows.append(row)

    def close(self) -> None:
        pass


class TeeSink(RowSink):
    """The run directory's writer first, then each tap (the live view, the metrics exporter):
    one sampler feeds them all. A tap that fails is dropped and named once; the writer's
    errors are the writer's (its own on_error)."""

    def __init__(self, main: Any, taps: Sequence[Any], on_error: Callable[[str], None] | None = None) -> None:
        self.main, self.taps, self.on_error = main, list(taps), on_error

    def write_row(self, row: dict[str, Any]) -> None:
        self.main.write_row(row)
        for tap in list(self.taps):
            try:
                tap.write_row(row)
            except Exception as e:  # a tap must never stop the recording
                self.taps.remove(tap)
                if self.on_error is not None:
                    self.on_error(f"{type(tap).__name__} stopped: {type(e).__name__}: {e}")

    def flush(self) -> None:
        flush = getattr(self.main, "flush", None)
        if flush is not None:
            flush()

    def close(self) -> None:
        self.main.close()


def counter_delta(prev: int, cur: int) -> int:
    """Bytes between two readings of a 32-bit counter that may have wrapped (once)."""
    return (cur - prev) % WRAP


def wrap_suspect(dt_s: float, link_max_gbs: float | None) -> bool:
    """True when the link could have moved >= 2**32 bytes in dt (a whole wrap is invisible)."""
    if link_max_gbs is None or link_max_gbs <= 0:
        return dt_s > 0.068  # no link info: assume Gen5 x16 (~63 GB/s -> a wrap every ~68 ms)
    return dt_s * link_max_gbs * 1e9 >= WRAP


@dataclass
class _Gpu:
    index: int
    handle: Any
    source: str  # gpm | counter | throughput | none
    link_max_gbs: float | None
    gpm: Any = None
    gpm_t: float | None = None  # when the GPM reader's previous sample was taken
    prev_counts: tuple[int, int] | None = None
    prev_count_t: float | None = None
    prev_count_ts_us: int = 0
    alive: bool = True
    rows: int = 0
    wrap_suspects: int = 0
    busy: bool = True  # the last counter reading showed a transfer (start fast)
    quiet_ticks: int = 0
    last_throughput: tuple[float | None, float | None] = (None, None)


@dataclass
class SamplerStats:
    interval_s: float
    gpus: list[int] = field(default_factory=list)
    sources: dict[int, str] = field(default_factory=dict)
    gpm: dict[int, bool] = field(default_factory=dict)
    ticks: int = 0
    rows: int = 0
    duration_s: float = 0.0
    achieved_hz: float = 0.0
    interval_p50_ms: float = math.nan
    interval_p99_ms: float = math.nan
    interval_max_ms: float = math.nan
    cpu_s: float = 0.0
    cpu_fraction: float = 0.0
    quiet_interval_s: float | None = None
    fast_ticks: int = 0  # ticks at the full rate (the others at the quiet interval)
    wrap_suspect_rows: int = 0
    lost_gpus: dict[int, str] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        def r(x: float, n: int = 3) -> float | None:
            return None if x is None or (isinstance(x, float) and math.isnan(x)) else round(x, n)

        return {
            "interval_ms": r(self.interval_s * 1e3),
            "gpus": list(self.gpus),
            "pcie_source": {str(k): v for k, v in self.sources.items()},
            "gpm": {str(k): v for k, v in self.gpm.items()},
            "ticks": self.ticks,
            "rows": self.rows,
            "duration_s": r(self.duration_s),
            "achieved_hz": r(self.achieved_hz, 2),
            "interval_p50_ms": r(self.interval_p50_ms),
            "interval_p99_ms": r(self.interval_p99_ms),
            "interval_max_ms": r(self.interval_max_ms),
            "cpu_s": r(self.cpu_s, 4),
            "cpu_fraction_of_core": r(self.cpu_fraction, 4),
            "quiet_interval_ms": r(self.quiet_interval_s * 1e3) if self.quiet_interval_s else None,
            "fast_ticks": self.fast_ticks,
            "wrap_suspect_rows": self.wrap_suspect_rows,
            "lost_gpus": {str(k): v for k, v in self.lost_gpus.items()},
            "errors": list(self.errors),
        }


def _pct(sorted_vals: Sequence[float], q: float) -> float:
    if not sorted_vals:
        return math.nan
    k = min(len(sorted_vals) - 1, max(0, int(round(q * (len(sorted_vals) - 1)))))
    return sorted_vals[k]


class Sampler:
    """Sample `gpus` every `interval_s` into `sink` on a background thread.

    `on_error(msg)` is called once per problem (a GPU that stops answering, ...).
    Use as a context manager or call start()/stop(); stop() returns SamplerStats.
    """

    def __init__(self, nv: nvml_mod.Nvml, gpus: Sequence[int], sink: RowSink, *,
                 interval_s: float = DEFAULT_INTERVAL_S, slow_interval_s: float = SLOW_INTERVAL_S,
                 clock: Clock = CLOCK, on_error: Callable[[str], None] | None = None,
                 pcie: str = "auto", use_gpm: bool = True,
                 quiet_interval_s: float | None = QUIET_INTERVAL_S) -> None:
        if interval_s < MIN_INTERVAL_S:
            raise ValueError(f"interval {interval_s * 1e3:g} ms is below the {MIN_INTERVAL_S * 1e3:g} ms minimum")
        if pcie not in PCIE_CHOICES:
            raise ValueError(f"pcie source must be one of {', '.join(PCIE_CHOICES)}")
        self.nv = nv
        self.sink = sink
        self.interval_s = float(interval_s)
        self.slow_interval_s = float(max(slow_interval_s, interval_s))
        # slowing down only pays for the counters, and only when it is slower than the tick
        self.quiet_interval_s = (float(quiet_interval_s) if quiet_interval_s and quiet_interval_s > interval_s
                                 else None)
        self.clock = clock
        self.on_error = on_error
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.stats = SamplerStats(interval_s=self.interval_s, gpus=list(gpus))
        self._gpus: list[_Gpu] = []
        self._intervals: list[float] = []
        self._cpu_s = 0.0
        self._pcie = pcie
        self._use_gpm = use_gpm or pcie == "gpm"
        for i in gpus:
            self._gpus.append(self._setup(i))
        if not any(g.source == "counter" for g in self._gpus):
            self.quiet_interval_s = None
        self.stats.quiet_interval_s = self.quiet_interval_s

    # -- setup ----------------------------------------------------------------------------
    def _setup(self, index: int) -> _Gpu:
        try:
            h = self.nv.handle(index)
            caps = self.nv.probe(index)
        except nvml_mod.GpuLost as e:
            g = _Gpu(index, None, "none", None, alive=False)
            self._lost(g, str(e))
            return g
        gpm = self.nv.gpm(index) if caps.gpm and self._use_gpm else None
        gpm_t = self.clock.mono() if gpm is not None else None
        avail = {"counter": caps.pcie_counters, "gpm": gpm is not None, "throughput": caps.pcie_throughput}
        order = ("counter", "gpm", "throughput") if self._pcie == "auto" else (self._pcie,)
        source = next((s for s in order if avail[s]), "none")
        self.stats.sources[index] = source
        self.stats.gpm[index] = gpm is not None
        return _Gpu(index, h, source, caps.link_max_gbs or caps.link_now_gbs, gpm=gpm, gpm_t=gpm_t)

    def _lost(self, g: _Gpu, why: str) -> None:
        if g.index in self.stats.lost_gpus:
            return
        g.alive = False
        self.stats.lost_gpus[g.index] = why
        msg = f"GPU {g.index} stopped answering NVML ({why}); sampling of it stopped, the rest goes on"
        self.stats.errors.append(msg)
        if self.on_error is not None:
            self.on_error(msg)

    # -- one sample -----------------------------------------------------------------------
    def sample_once(self, g: _Gpu, mono: float, slow: bool) -> dict[str, Any] | None:
        """Read one row for GPU g at time `mono` (public for tests and tools)."""
        if not g.alive:
            return None
        row: dict[str, Any] = {"t_wall": self.clock.wall(mono), "t_mono": mono, "gpu": g.index,
                               "pcie_source": g.source if g.source != "none" else "",
                               "wrap_suspect": 0}
        try:
            if g.source == "counter":
                self._counter_sample(g, mono, row)
            if g.gpm is not None and g.gpm_t is not None and mono - g.gpm_t >= GPM_WINDOW_S:
                m = g.gpm.read()
                g.gpm_t = mono
                if m is not None:
                    for key, mid in nvml_mod.GPM_ACTIVITY_COLUMNS:
                        v = m.get(mid)
                        row[key] = v / 100.0 if v is not None else None
                    if g.source == "gpm":
                        rx = m.get(nvml_mod.GPM_PCIE_RX_PER_SEC)
                        tx = m.get(nvml_mod.GPM_PCIE_TX_PER_SEC)
                        row["rx_gbs"] = rx * MIB / 1e9 if rx is not None else None
                        row["tx_gbs"] = tx * MIB / 1e9 if tx is not None else None
            if slow:
                row.update(self.nv.slow_fields(g.handle))
                if g.source == "throughput":
                    g.last_throughput = self.nv.pcie_throughput_gbs(g.handle)
                    row["rx_gbs"], row["tx_gbs"] = g.last_throughput
        except nvml_mod.GpuLost as e:
            self._lost(g, str(e))
            return None
        data = ("rx_gbs", "tx_gbs", "sm_active", "gpu_util_pct", "mem_used_mib", "power_w")
        if not any(row.get(k) is not None for k in data):
            return None  # nothing measured this tick (first counter reading, throughput between reads)
        return row

    def _counter_sample(self, g: _Gpu, mono: float, row: dict[str, Any]) -> None:
        vals = self.nv.read_fields(g.handle, (nvml_mod.FI_PCIE_COUNT_RX_BYTES, nvml_mod.FI_PCIE_COUNT_TX_BYTES))
        if vals is None:
            g.prev_counts = None
            return
        (rx, ts_rx), (tx, _) = vals
        if rx is None or tx is None:
            g.prev_counts = None
            return
        if ts_rx and ts_rx == g.prev_count_ts_us:
            return  # the driver returned the same cached reading: no new interval yet
        if g.prev_counts is not None and g.prev_count_t is not None:
            dt = mono - g.prev_count_t
            if ts_rx and g.prev_count_ts_us and ts_rx > g.prev_count_ts_us:
                dt = (ts_rx - g.prev_count_ts_us) / 1e6  # NVML's own read time: less jitter
            if dt > 0:
                row["rx_gbs"] = counter_delta(g.prev_counts[0], rx) / dt / 1e9
                row["tx_gbs"] = counter_delta(g.prev_counts[1], tx) / dt / 1e9
                busy = max(row["rx_gbs"], row["tx_gbs"]) >= BUSY_GBS
                g.quiet_ticks = 0 if busy else g.quiet_ticks + 1
                g.busy = busy or g.quiet_ticks < HOLD_TICKS
                if wrap_suspect(dt, g.link_max_gbs):
                    row["wrap_suspect"] = 1
                    g.wrap_suspects += 1
                    self.stats.wrap_suspect_rows += 1
        g.prev_counts = (rx, tx)
        g.prev_count_t = mono
        g.prev_count_ts_us = ts_rx

    # -- the loop -------------------------------------------------------------------------
    def _run(self) -> None:
        cpu0 = time.thread_time()
        t0 = self.clock.mono()
        next_t = t0
        next_slow = t0
        last = None
        try:
            while not self._stop.is_set():
                now = self.clock.mono()
                if last is not None:
                    self._intervals.append(now - last)
                last = now
                slow = now >= next_slow
                if slow:
                    next_slow = now + self.slow_interval_s
                for g in self._gpus:
                    row = self.sample_once(g, now, slow)
                    if row is not None:
                        self.sink.write_row(row)
                        g.rows += 1
                        self.stats.rows += 1
                self.stats.ticks += 1
                if not any(g.alive for g in self._gpus):
                    break
                step = self.interval_s
                if self.quiet_interval_s is not None and not any(g.busy for g in self._gpus if g.alive):
                    step = self.quiet_interval_s
                else:
                    self.stats.fast_ticks += 1
                next_t += step
                now2 = self.clock.mono()
                if next_t < now2:  # overran: keep the period, drop the missed ticks
                    next_t = now2 + step - ((now2 - next_t) % step)
                self._stop.wait(max(0.0, next_t - now2))
        except Exception as e:  # a bug or an unexpected NVML error: report, never kill the run
            msg = f"sampler stopped: {type(e).__name__}: {e}"
            self.stats.errors.append(msg)
            if self.on_error is not None:
                self.on_error(msg)
        finally:
            flush = getattr(self.sink, "flush", None)
            if flush is not None:
                flush()  # rows of a loop that ended early (all GPUs lost) reach the disk now
            self._cpu_s = time.thread_time() - cpu0
            self.stats.duration_s = self.clock.mono() - t0

    def start(self) -> Sampler:
        self._thread = threading.Thread(target=self._run, name="gpuscope-sampler", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> SamplerStats:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5.0)
        for g in self._gpus:
            if g.gpm is not None:
                g.gpm.close()
                g.gpm = None
        s = self.stats
        s.cpu_s = self._cpu_s
        iv = sorted(self._intervals)
        s.interval_p50_ms = _pct(iv, 0.50) * 1e3
        s.interval_p99_ms = _pct(iv, 0.99) * 1e3
        s.interval_max_ms = (iv[-1] * 1e3) if iv else math.nan
        if s.duration_s > 0:
            s.achieved_hz = s.ticks / s.duration_s
            s.cpu_fraction = s.cpu_s / s.duration_s
        return s

    def __enter__(self) -> Sampler:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

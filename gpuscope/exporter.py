"""`--metrics ADDR:PORT`: the live samples and gpuscope's states as OpenMetrics, for Prometheus.

Served by prometheus-client from a LiveState (the same tap the live view reads: one sampler),
read at scrape time, so nothing runs between scrapes. Names follow Prometheus' conventions
(base units, `_total` counters, `_ratio` for 0-1); labels are dcgm-exporter's where they mean
the same (`gpu` = the NVML index, `UUID`, `device` = nvidiaN, `modelName`, `Hostname`), so one
dashboard (and parsers.prometheus, which tells hosts apart by `Hostname`) can hold both.

    gpuscope_pcie_bytes_total{direction="rx"|"tx"}   counter  bytes the PCIe counters counted
    gpuscope_pcie_throughput_bytes_per_second{direction}  gauge  the last PCIe reading
    gpuscope_sm_active_ratio, _sm_occupancy_ratio, _dram_active_ratio, _tensor_active_ratio,
    _fp16_active_ratio, _fp32_active_ratio, _fp64_active_ratio     gauges  GPM (0-1)
    gpuscope_gpu_utilization_ratio, gpuscope_memory_copy_utilization_ratio  gauges (0-1)
    gpuscope_memory_used_bytes, gpuscope_power_watts, gpuscope_sm_clock_hertz,
    gpuscope_memory_clock_hertz, gpuscope_temperature_celsius, gpuscope_clock_event_reasons
    gpuscope_state_seconds_total{state}   counter  seconds in each of analyze's classes (final intervals)
    gpuscope_state{state}                 gauge    1 for the class of the latest classed interval, else 0
    gpuscope_line_rate_bytes_per_second   gauge    the line rate the states were classed against
    gpuscope_samples_total                counter  rows the sampler wrote
"""

from __future__ import annotations

import math
import socket
from collections.abc import Iterator
from typing import Any

from gpuscope.analysis.evidence.samples.samplegrid import CLASSES
from gpuscope.errors import UsageError
from gpuscope.live.state import GpuView, LiveState

#: (metric, help, samples column, scale to base units)
GAUGES = (
    ("gpuscope_sm_active_ratio", "SM activity (GPM), 0-1", "sm_active", 1.0),
    ("gpuscope_sm_occupancy_ratio", "SM occupancy (GPM), 0-1", "sm_occupancy", 1.0),
    ("gpuscope_dram_active_ratio", "DRAM bandwidth utilisation (GPM), 0-1", "dram_active", 1.0),
    ("gpuscope_tensor_active_ratio", "tensor pipe activity (GPM), 0-1", "tensor_active", 1.0),
    ("gpuscope_fp16_active_ratio", "FP16 pipe activity (GPM), 0-1", "fp16_active", 1.0),
    ("gpuscope_fp32_active_ratio", "FP32 pipe activity (GPM), 0-1", "fp32_active", 1.0),
    ("gpuscope_fp64_active_ratio", "FP64 pipe activity (GPM), 0-1", "fp64_active", 1.0),
    ("gpuscope_gpu_utilization_ratio", "utilization.gpu (a kernel ran in the window), 0-1", "gpu_util_pct", 0.01),
    ("gpuscope_memory_copy_utilization_ratio", "utilization.memory, 0-1", "mem_util_pct", 0.01),
    ("gpuscope_memory_used_bytes", "device memory used", "mem_used_mib", 1024.0 * 1024.0),
    ("gpuscope_power_watts", "power draw", "power_w", 1.0),
    ("gpuscope_sm_clock_hertz", "SM clock", "sm_clock_mhz", 1e6),
    ("gpuscope_memory_clock_hertz", "memory clock", "mem_clock_mhz", 1e6),
    ("gpuscope_temperature_celsius", "GPU temperature", "temperature_c", 1.0),
    ("gpuscope_clock_event_reasons", "NVML clock-event (throttle) reasons bitmask", "clock_event_reasons", 1.0),
)
LABELS = ("gpu", "UUID", "device", "modelName", "Hostname")


def parse_listen(text: str) -> tuple[str, int]:
    """'127.0.0.1:9400' -> ('127.0.0.1', 9400); ':9400' -> all interfaces; '9400' -> loopback;
    '[::1]:9400' -> IPv6. UsageError (exit 2) for anything else."""
    t = (text or "").strip()
    host, sep, port = t.rpartition(":")
    if not sep:
        host, port = "127.0.0.1", t
    elif host == "":
        host = "0.0.0.0"
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if not port.isdigit() or not 0 <= int(port) <= 65535 or not host:
        raise UsageError(f"--metrics: expected ADDR:PORT (e.g. 127.0.0.1:9400), got {text!r}")
    return host, int(port)


class _Collector:
    """Reads the LiveState at each scrape (prometheus-client's custom collector protocol)."""

    def __init__(self, state: LiveState) -> None:
        self.state = state

    def describe(self) -> list[Any]:
        return []  # no describe-time scrape: the registry asks collect() only when scraped

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

        views = self.state.snapshot()
        pcie = CounterMetricFamily("gpuscope_pcie_bytes", "bytes moved over PCIe (the counters' count)",
                                   labels=(*LABELS, "direction"))
        rate = GaugeMetricFamily("gpuscope_pcie_throughput_bytes_per_second", "the last PCIe reading",
                                 labels=(*LABELS, "direction"))
        gauges = {name: GaugeMetricFamily(name, text, labels=LABELS) for name, text, _, _ in GAUGES}
        secs = CounterMetricFamily("gpuscope_state_seconds", "seconds in each state (analyze's classes)",
                                   labels=(*LABELS, "state"))
        now = GaugeMetricFamily("gpuscope_state", "1 for the state of the latest classed interval",
                                labels=(*LABELS, "state"))
        line = GaugeMetricFamily("gpuscope_line_rate_bytes_per_second", "the line rate states are classed against",
                                 labels=LABELS)
        rows = CounterMetricFamily("gpuscope_samples", "sample rows written", labels=LABELS)

        for v in views:
            lab = _labels(v)
            for d in ("rx", "tx"):
                pcie.add_metric([*lab, d], v.pcie_bytes.get(d, 0.0))
                x = v.latest.get(f"{d}_gbs")
                if x is not None:
                    rate.add_metric([*lab, d], x * 1e9)
            for name, _, col, scale in GAUGES:
                x = v.latest.get(col)
                if x is not None and math.isfinite(x):
                    gauges[name].add_metric(lab, x * scale)
            for c in CLASSES:
                secs.add_metric([*lab, c], v.state_seconds.get(c, 0.0))
                now.add_metric([*lab, c], 1.0 if v.state == c else 0.0)
            line.add_metric(lab, v.line_rate_gbs * 1e9)
            rows.add_metric(lab, float(v.rows))
        yield pcie
        yield rate
        yield from gauges.values()
        yield secs
        yield now
        yield line
        yield rows


def _labels(v: GpuView) -> list[str]:
    return [str(v.gpu), v.uuid, f"nvidia{v.gpu}", v.name, _HOST]


_HOST = socket.gethostname()


class MetricsServer:
    """The endpoint: `start()` listens (UsageError when the address cannot be had), `url`,
    `stop()`. Its own registry: nothing of the process' default metrics."""

    def __init__(self, state: LiveState, listen: str) -> None:
        self.state = state
        self.host, self.port = parse_listen(listen)
        self._server: Any = None

    def start(self) -> MetricsServer:
        try:
            from prometheus_client import CollectorRegistry, start_http_server
        except ImportError:
            raise UsageError("--metrics needs prometheus-client (pip install prometheus-client)") from None
        reg = CollectorRegistry(auto_describe=False)
        reg.register(_Collector(self.state))
        try:
            self._server, _ = start_http_server(self.port, addr=self.host, registry=reg)
        except OSError as e:
            raise UsageError(f"--metrics: cannot listen on {self.host}:{self.port}: {e.strerror or e}") from None
        self.port = int(self._server.server_port)
        return self

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/metrics"

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> MetricsServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

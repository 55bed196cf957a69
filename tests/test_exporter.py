"""The OpenMetrics endpoint: names and labels as Prometheus wants them, read from the LiveState."""

from __future__ import annotations

import socket
import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

from gpuscope.errors import UsageError
from gpuscope.exporter import MetricsServer, parse_listen
from gpuscope.live.state import LiveState


class _Clock:
    t = 10.0

    def mono(self) -> float:
        return self.t


def _state() -> LiveState:
    st = LiveState([{"index": 0, "name": "NVIDIA H200", "uuid": "GPU-abc"}], 50.0, clock=_Clock())
    for i in range(200):
        row = {"t_mono": i * 0.02, "gpu": 0, "pcie_source": "counter", "rx_gbs": 10.0, "tx_gbs": 1.0,
               "power_w": 300.0, "sm_clock_mhz": 1980.0, "mem_used_mib": 1024.0}
        if i % 5 == 0:
            row.update(sm_active=0.5, tensor_active=0.25, gpu_util_pct=80.0)
        st.write_row(row)
    return st


def test_scrape_names_units_and_labels():
    with MetricsServer(_state(), "127.0.0.1:0") as srv:
        body = urllib.request.urlopen(srv.url, timeout=5).read().decode()  # noqa: S310 - loopback
    fams = {f.name: f for f in text_string_to_metric_families(body)}
    pcie = fams["gpuscope_pcie_bytes"]
    assert pcie.type == "counter"
    by_dir = {s.labels["direction"]: s.value for s in pcie.samples if s.name == "gpuscope_pcie_bytes_total"}
    assert by_dir["rx"] == pytest.approx(10e9 * 199 * 0.02) and by_dir["tx"] == pytest.approx(1e9 * 199 * 0.02)
    sm = fams["gpuscope_sm_active_ratio"].samples[0]
    assert sm.value == 0.5 and sm.labels == {"gpu": "0", "UUID": "GPU-abc", "device": "nvidia0",
                                             "modelName": "NVIDIA H200", "Hostname": socket.gethostname()}
    assert fams["gpuscope_gpu_utilization_ratio"].samples[0].value == pytest.approx(0.8)
    assert fams["gpuscope_sm_clock_hertz"].samples[0].value == 1.98e9
    assert fams["gpuscope_memory_used_bytes"].samples[0].value == 1024 ** 3
    secs = {s.labels["state"]: s.value for s in fams["gpuscope_state_seconds"].samples
            if s.name.endswith("_total")}
    assert set(secs) == {"computing", "both", "transferring", "idle_quiet", "idle", "unknown"}
    assert secs["both"] == pytest.approx(0.02 * 195, rel=0.01)  # SM 50% and RX 10 GB/s (>= 5% of 50)
    now = {s.labels["state"]: s.value for s in fams["gpuscope_state"].samples}
    assert now["both"] == 1.0 and sum(now.values()) == 1.0


@pytest.mark.parametrize("text,want", [("127.0.0.1:9400", ("127.0.0.1", 9400)), (":9400", ("0.0.0.0", 9400)),
                                       ("9400", ("127.0.0.1", 9400)), ("[::1]:9400", ("::1", 9400))])
def test_parse_listen(text, want):
    assert parse_listen(text) == want


@pytest.mark.parametrize("text", ["", "host:", "host:port", "1.2.3.4:70000", "a:b:c"])
def test_parse_listen_refuses(text):
    with pytest.raises(UsageError, match="--metrics"):
        parse_listen(text)


def test_a_busy_port_is_a_usage_error():
    with MetricsServer(_state(), "127.0.0.1:0") as srv, pytest.raises(UsageError, match="cannot listen"):
        MetricsServer(_state(), f"127.0.0.1:{srv.port}").start()

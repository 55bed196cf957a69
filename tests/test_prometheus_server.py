"""A real Prometheus server scrapes gpuscope's endpoint; its range query is analyzed back.

The Debian `prometheus` binary (.ci/run installs it) is started by the test on 127.0.0.1 with a
1 s scrape of a MetricsServer fed by the sampler over the fake NVML (one GPU whose SMs are idle
while PCIe RX moves 20 GB/s: `transferring` in analyze's classes). The test waits (bounded)
for scraped points, asks /api/v1/query_range for every gpuscope_* series, writes the JSON and
runs `gpuscope analyze` on it: the history must read as the same story the fake GPU told.
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import time
import urllib.parse
import urllib.request

import pytest
from typer.testing import CliRunner

from gpuscope import nvml
from gpuscope.cli import app
from gpuscope.exporter import MetricsServer
from gpuscope.live.state import LiveState
from gpuscope.sampler import Sampler
from tests.fake_nvml import FakeGpu, FakeNvml

PROMETHEUS = shutil.which("prometheus")
pytestmark = pytest.mark.skipif(PROMETHEUS is None, reason="the prometheus binary is missing "
                                "(apt-get install prometheus; .ci/run installs it)")
RX_GBS = 20.0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _get(url: str, timeout: float = 2.0) -> bytes:
    with urllib.request.urlopen(url, timeout=timeout) as r:  # noqa: S310 - loopback only
        return r.read()


def _until(what: str, fn, limit_s: float = 30.0, every_s: float = 0.25):
    end = time.monotonic() + limit_s
    while time.monotonic() < end:
        try:
            v = fn()
        except OSError:
            v = None
        if v:
            return v
        time.sleep(every_s)
    raise AssertionError(f"gave up after {limit_s:g} s waiting for {what}")


@pytest.fixture
def transferring_gpu():
    step = int(RX_GBS * 1e9 * 0.020)  # bytes per 20 ms counter reading (NVML's own timestamps)
    gpu = FakeGpu(counters=[((i * step) % 2**32, 0, i * 20_000) for i in range(1, 200_000)],
                  gpm_metrics=[{2: 1.0, 3: 0.5, 10: 0.5, 20: 0.0, 21: 0.0}], util=(0, 0))
    nvml.use_backend(FakeNvml([gpu]))
    yield nvml.get()
    nvml.use_backend(None)


def test_prometheus_scrapes_the_endpoint_and_its_history_is_analyzed_back(tmp_path, transferring_gpu):
    state = LiveState([{"index": 0, "name": "NVIDIA H200", "uuid": "GPU-fake-0000"}], 50.0)
    server = MetricsServer(state, "127.0.0.1:0").start()
    sampler = Sampler(transferring_gpu, [0], state, interval_s=0.02).start()
    port = _free_port()
    cfg = tmp_path / "prometheus.yml"
    cfg.write_text("global:\n  scrape_interval: 1s\n  scrape_timeout: 900ms\nscrape_configs:\n"
                   f"  - job_name: gpuscope\n    static_configs:\n      - targets: ['127.0.0.1:{server.port}']\n")
    log = open(tmp_path / "prometheus.log", "wb")  # noqa: SIM115 - closed in finally
    prom = subprocess.Popen([PROMETHEUS, f"--config.file={cfg}", f"--storage.tsdb.path={tmp_path / 'tsdb'}",
                             f"--web.listen-address=127.0.0.1:{port}"], stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        t_start = time.time()
        _until("Prometheus ready", lambda: _get(f"{base}/-/ready").startswith(b"Prometheus"))

        def points() -> int:
            q = urllib.parse.urlencode({"query": "count_over_time(gpuscope_samples_total[5m])"})
            res = json.loads(_get(f"{base}/api/v1/query?{q}"))["data"]["result"]
            return int(float(res[0]["value"][1])) if res else 0

        _until("8 scrapes", lambda: points() >= 8, limit_s=40.0)
        q = urllib.parse.urlencode({"query": '{__name__=~"gpuscope_.*"}', "start": f"{t_start - 5:.3f}",
                                    "end": f"{time.time():.3f}", "step": "1s"})
        body = _get(f"{base}/api/v1/query_range?{q}", timeout=5.0)
    finally:
        prom.terminate()
        try:
            prom.wait(10)
        except subprocess.TimeoutExpired:
            prom.kill()
            prom.wait(5)
        log.close()
        sampler.stop()
        server.stop()
    doc = json.loads(body)
    assert doc["status"] == "success" and doc["data"]["resultType"] == "matrix"
    names = {s["metric"]["__name__"] for s in doc["data"]["result"]}
    assert {"gpuscope_pcie_bytes_total", "gpuscope_sm_active_ratio", "gpuscope_state_seconds_total"} <= names
    hist = tmp_path / "history.json"
    hist.write_bytes(body)
    r = CliRunner().invoke(app, ["analyze", str(hist), "--json", "--line-rate", "50"])
    assert r.exit_code == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["samples"]["read"]["format"] == "prometheus"
    act = out["samples"]["activity"]
    assert act["classes"]["transferring"] > 0.8, act["classes"]
    assert act["busy_fraction"] < 0.05
    rx = act["pcie"]["rx"]
    assert 0.9 * RX_GBS < rx["p50_gbs"] < 1.1 * RX_GBS, rx
    # the exporter's own tally of the states says the same as analyze of the history
    secs = {s["metric"]["state"]: float(s["values"][-1][1]) for s in doc["data"]["result"]
            if s["metric"]["__name__"] == "gpuscope_state_seconds_total"}
    assert secs["transferring"] > 0.8 * sum(secs.values())

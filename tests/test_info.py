"""`gpuscope info` against the fake NVML and with no driver."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from gpuscope import nvml
from gpuscope.cli import app
from tests.fake_nvml import FakeGpu, FakeNvml


@pytest.fixture(autouse=True)
def _restore(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    yield
    nvml.use_backend(None)


def test_info_no_driver_exit0_and_valid_json():
    nvml.use_backend(FakeNvml([], init_error="LibraryNotFound"))
    r = CliRunner().invoke(app, ["info", "--json"])
    assert r.exit_code == 0 and r.stderr == ""
    d = json.loads(r.stdout)
    assert d["nvml"] == {"available": False, "reason": "no NVIDIA driver found (libnvidia-ml.so not loadable)"}
    assert d["gpus"] == [] and "soft_bytes" in d["memlock"] and "present" in d["cupy"]
    r = CliRunner().invoke(app, ["info"])
    assert r.exit_code == 0 and "No NVIDIA GPU usable: no NVIDIA driver found" in r.stdout and r.stderr == ""


def test_info_gpus_caps_and_downgraded_link():
    nvml.use_backend(FakeNvml([
        FakeGpu(),
        FakeGpu(uuid="GPU-fake-0001", gpm=False, counters=[(0, 0, 0)], link=(3, 5, 8, 16),
                errors={"nvmlDeviceGetPowerUsage": "NotSupported"}),
    ]))
    r = CliRunner().invoke(app, ["info", "--json"])
    assert r.exit_code == 0 and r.stderr == ""
    d = json.loads(r.stdout)
    assert d["nvml"]["driver"] == "580.95.05" and d["nvml"]["cuda_driver"] == "13.0"
    g0, g1 = d["gpus"]
    assert g0["capabilities"]["gpm"] is True and g0["capabilities"]["link_downgraded"] is False
    assert g1["capabilities"]["gpm"] is False and g1["capabilities"]["pcie_counters"] is True
    assert g1["capabilities"]["power"] is False and g1["capabilities"]["link_downgraded"] is True
    assert "nvmlDeviceGetPowerUsage" in d["nvml"]["missing_functions"]
    r = CliRunner().invoke(app, ["info"])
    assert r.exit_code == 0 and r.stderr == ""
    text = " ".join(r.stdout.split())
    assert "Driver 580.95.05" in text and "DOWNGRADED" in text
    assert "warning: GPU 1: PCIe link at Gen3 x8 (max Gen5 x16)" in text
    assert "warning: GPU 0" not in text


def test_info_gpu_lost_during_probe():
    fake = FakeNvml([FakeGpu(lost_after_calls=2)])
    nvml.use_backend(fake)
    r = CliRunner().invoke(app, ["info", "--json"])
    assert r.exit_code == 0
    assert "error" in json.loads(r.stdout)["gpus"][0]


def test_info_help_has_example():
    r = CliRunner().invoke(app, ["info", "--help"])
    assert r.exit_code == 0 and "Example: gpuscope info --json" in r.stdout and r.stderr == ""

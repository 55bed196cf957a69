"""The NVML boundary against tests/fake_nvml.py: lazy init, missing values, lost GPUs, probe."""

from __future__ import annotations

import logging

import pytest

from gpuscope import nvml
from tests.fake_nvml import FakeGpu, FakeNvml


@pytest.fixture
def fake():
    f = FakeNvml([FakeGpu(), FakeGpu(uuid="GPU-fake-0001", gpm=False, counters=[(0, 0, 0)],
                                     link=(3, 5, 8, 16))])
    nvml.use_backend(f)
    yield f
    nvml.use_backend(None)


def test_lazy_init_and_single_session(fake):
    assert fake.calls.get("nvmlInit", 0) == 0  # nothing touched until asked
    a = nvml.get()
    b = nvml.get()
    assert a is b and fake.calls["nvmlInit"] == 1
    nvml.reset()
    assert fake.shutdowns == 1


def test_system_and_device(fake):
    nv = nvml.get()
    s = nv.system()
    assert s == {"driver": "580.95.05", "nvml": "13.580.95.05", "cuda_driver": "13.0"}
    assert nv.device_count() == 2
    d = nv.device(1)
    assert d["uuid"] == "GPU-fake-0001" and d["pci_bus_id"].endswith(":19:00.0")
    assert d["memory_total_mib"] == pytest.approx(143771.0)


def test_not_supported_is_missing_and_logged_once(fake, caplog):
    fake.gpus[0].errors["nvmlDeviceGetPowerUsage"] = "NotSupported"
    nv = nvml.get()
    h = nv.handle(0)
    with caplog.at_level(logging.INFO, logger="gpuscope.nvml"):
        for _ in range(5):
            assert nv.slow_fields(h)["power_w"] is None
    msgs = [r.getMessage() for r in caplog.records if "nvmlDeviceGetPowerUsage" in r.getMessage()]
    assert len(msgs) == 1 and "NotSupported" in msgs[0]
    assert nv.slow_fields(h)["sm_clock_mhz"] == 1980.0


def test_function_not_found_and_absent_function(fake):
    fake.gpus[0].errors["nvmlDeviceGetClockInfo"] = "FunctionNotFound"
    fake.nvmlDeviceGetGpuMaxPcieLinkGeneration = None  # an older pynvml without it
    nv = nvml.get()
    caps = nv.probe(0)
    assert caps.clocks is False and caps.link_gen_gpu_max is None
    assert "nvmlDeviceGetGpuMaxPcieLinkGeneration" in nv.missing_functions


def test_probe_and_downgraded_link(fake):
    nv = nvml.get()
    c0, c1 = nv.probe(0), nv.probe(1)
    assert c0.gpm and not c0.pcie_counters and not c0.link_downgraded
    assert c0.link_max_gbs == pytest.approx(63.0, rel=0.01)  # Gen5 x16
    assert not c1.gpm and c1.pcie_counters and c1.link_downgraded
    assert c1.link_now_gbs == pytest.approx(7.88, rel=0.01)  # Gen3 x8
    assert c1.to_dict()["link_downgraded"] is True


def test_lost_gpu_raises(fake):
    fake.gpus[0].lost_after_calls = 0
    nv = nvml.get()
    with pytest.raises(nvml.GpuLost):
        nv.slow_fields(nv.handle(0))


@pytest.mark.parametrize("err,needle", [("LibraryNotFound", "no NVIDIA driver"),
                                        ("DriverNotLoaded", "not loaded"),
                                        ("NoPermission", "permission")])
def test_no_driver_reason(err, needle):
    nvml.use_backend(FakeNvml([], init_error=err))
    try:
        assert nvml.get() is None
        assert needle in nvml.unavailable_reason()
        assert nvml.get() is None  # not retried on every call
    finally:
        nvml.use_backend(None)


def test_gpm_reader_reads_metrics(fake):
    nv = nvml.get()
    r = nv.gpm(0)
    m = r.read()
    assert m[nvml.GPM_PCIE_RX_PER_SEC] == 50000.0 and m[nvml.GPM_SM_UTIL] == 50.0
    r.close()


def test_link_rate_table():
    assert nvml.pcie_link_rate_gbs(4, 16) == pytest.approx(31.5, rel=0.01)
    assert nvml.pcie_link_rate_gbs(1, 16) == pytest.approx(4.0)
    assert nvml.pcie_link_rate_gbs(None, 16) is None


def test_uuid_for_pci(fake):
    nv = nvml.get()
    assert nv.uuid_for_pci(0, 0x19, 0) == "GPU-fake-0001"
    assert nv.uuid_for_pci(0, 0x40, 0) is None


def test_slow_fields_read_clock_event_reasons_memory_clock_and_temperature(fake):
    fake.gpus[0].clock_event_reasons = (1, 4 | 32)  # GpuIdle, then SwPowerCap + SwThermalSlowdown
    nv = nvml.get()
    h = nv.handle(0)
    first, second = nv.slow_fields(h), nv.slow_fields(h)
    assert first["clock_event_reasons"] == 1.0 and second["clock_event_reasons"] == 36.0
    assert first["mem_clock_mhz"] == 3201.0 and first["sm_clock_mhz"] == 1980.0
    assert first["temperature_c"] == 45.0
    assert fake.calls["nvmlDeviceGetCurrentClocksEventReasons"] == 2


def test_clock_event_reasons_not_supported_is_missing(fake):
    fake.gpus[0].errors["nvmlDeviceGetCurrentClocksEventReasons"] = "NotSupported"
    fake.gpus[0].errors["nvmlDeviceGetTemperature"] = "NoPermission"
    nv = nvml.get()
    row = nv.slow_fields(nv.handle(0))
    assert row["clock_event_reasons"] is None and row["temperature_c"] is None
    assert row["mem_clock_mhz"] == 3201.0 and row["power_w"] == 300.0


def test_older_pynvml_without_the_event_reasons_name_uses_the_throttle_name():
    f = FakeNvml([FakeGpu(clock_event_reasons=(8,))], missing=["nvmlDeviceGetCurrentClocksEventReasons"])
    nvml.use_backend(f)
    try:
        nv = nvml.get()
        assert nv.slow_fields(nv.handle(0))["clock_event_reasons"] == 8.0
        assert f.calls.get("nvmlDeviceGetCurrentClocksEventReasons", 0) == 0
    finally:
        nvml.use_backend(None)

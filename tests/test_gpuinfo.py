"""gpuscope.gpuinfo: one description of a GPU, in `info --json`'s shape and in meta.json's."""

from __future__ import annotations

import pytest

from gpuscope import linerate, nvml
from gpuscope.gpuinfo import describe_gpus, first_line_rate, meta_gpus
from tests.fake_nvml import FakeGpu, FakeNvml

DEVICE = {"index": 0, "name": "NVIDIA H200", "uuid": "GPU-fake-0000", "pci_bus_id": "00000000:18:00.0",
          "memory_total_mib": 143771.0}


@pytest.fixture
def nv():
    nvml.use_backend(FakeNvml([FakeGpu(), FakeGpu(uuid="GPU-fake-0001", gpm=False, link=(3, 5, 8, 16)),
                               FakeGpu(uuid="GPU-fake-0002", lost_after_calls=2)]))
    yield nvml.get()
    nvml.use_backend(None)


def test_meta_shape_link_flags_and_line_rate(nv):
    linerate.save("GPU-fake-0000", {"line_rate_gbs": 55.3, "gpu": {"name": "NVIDIA H200"}})
    g0, g1, lost = meta_gpus(nv, [0, 1, 2])
    assert {k: g0[k] for k in DEVICE} == DEVICE
    assert g0["pcie_link"] == {"gen_now": 5, "gen_max": 5, "width_now": 16, "width_max": 16,
                               "max_gbs": pytest.approx(63.015, abs=1e-3), "downgraded": False}
    assert g0["capabilities"] == {"gpm": True, "pcie_counters": False, "pcie_throughput": False,
                                  "utilization": True, "memory": True, "power": True, "clocks": True}
    assert g0["line_rate_gbs"] == 55.3 and g1["line_rate_gbs"] is None
    assert set(g0) == set(DEVICE) | {"pcie_link", "capabilities", "line_rate_gbs", "power_limit"}
    assert g0["power_limit"] == {"enforced_w": 700.0, "default_w": 700.0}
    assert g1["pcie_link"]["downgraded"] is True and g1["capabilities"]["gpm"] is False
    assert set(lost) == {"index", "error"} and lost["index"] == 2
    assert first_line_rate([g1, g0]) == 55.3 and first_line_rate([g1, lost]) is None


def test_info_shape_is_the_same_probe_with_every_capability(nv):
    info = [g.for_info() for g in describe_gpus(nv, [0, 1])]
    meta = meta_gpus(nv, [0, 1])
    for i, m in zip(info, meta, strict=True):
        assert set(i) == set(DEVICE) | {"capabilities", "line_rate_gbs"}
        assert {k: i[k] for k in DEVICE} == {k: m[k] for k in DEVICE}
        assert i["capabilities"] == nv.probe(i["index"]).to_dict()
        for flag, v in m["capabilities"].items():
            assert i["capabilities"][flag] == v
        assert i["capabilities"]["link_downgraded"] == m["pcie_link"]["downgraded"]

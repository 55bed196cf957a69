"""Device findings from samples and meta: throttled clocks (and why), a downgraded PCIe link,
memory nearly full; each with the input that would make it fire falsely."""

from __future__ import annotations

import numpy as np
import pytest

from gpuscope.analysis.evidence import collect
from gpuscope.analysis.evidence.samples.activity import activity_from_samples
from gpuscope.analysis.rules.registry import run_rules
from tests.activity_builders import T0, meta, periodic, synth


def sample_diagnoses(a, **kw):
    """The sample rules' findings of `a` (through the one engine)."""
    return run_rules(collect(activity=a, **kw))

LINE = 55.5


def _diag(s, m=None, **kw):
    a = activity_from_samples(s, meta=m, line_rate_gbs=LINE, line_rate_source="test")
    return {d.id: d for d in sample_diagnoses(a, **kw)}, a


def _half(v_first: float, v_second: float, at_s: float):
    return lambda t: np.where(np.asarray(t) - T0 < at_s, v_first, v_second)


def test_power_capped_clocks_with_their_reason():
    # busy for 10 s; SwPowerCap (4) set for the last 7 s, the SM clock at 1500 of 1980 then; the
    # power limit lowered to 500 of the default 700 W
    s = synth(10.0, sm=0.9, reasons=_half(0, 4, 3.0), sm_clock=_half(1980.0, 1500.0, 3.0))
    d, a = _diag(s, meta(power_limit=(500.0, 700.0)))
    t = d["clocks_throttled"]
    assert t.severity == "high"  # >= 40% of the busy time, the clock under 80% of its max
    assert "lowered from the default 700 W" in t.summary and "restoring the default" in t.recommendation
    assert t.evidence["reasons"]["sw_power_cap"]["busy_fraction"] == pytest.approx(0.7, abs=0.03)
    assert t.evidence["clock_share_of_max"] == pytest.approx(1500 / 1980, abs=0.01)
    assert "sw power cap" in t.summary and "power limit" in t.recommendation
    assert t.evidence["power_limit"] == {"enforced_w": 500.0, "default_w": 700.0}
    th = a.to_json()["throttle"]
    assert th["recorded"] and th["reasons"]["sw_power_cap"]["s"] == pytest.approx(7.0, abs=0.25)


def test_a_power_cap_at_the_rated_limit_is_the_gpu_at_its_power_budget_not_a_fault():
    # the same clocks under the default limit: the GPU draws what it is rated for (low), and with a
    # pipe full (tensor cores) what bounds the kernels is the story (info, after compute_bound)
    s = synth(10.0, sm=0.9, reasons=_half(0, 4, 3.0), sm_clock=_half(1980.0, 1500.0, 3.0), power_w=690.0)
    t = _diag(s, meta(power_limit=(700.0, 700.0)))[0]["clocks_throttled"]
    assert t.severity == "low" and "draws its rated power" in t.summary and "rated power" in t.recommendation
    # readings far under the limit do not say the GPU draws it (an H100's 171 W of 700 W once did):
    # the driver's flag says the cap bound, the ~5-a-second readings missed its peaks
    s300 = synth(10.0, sm=0.9, reasons=_half(0, 4, 3.0), sm_clock=_half(1980.0, 1500.0, 3.0), power_w=300.0)
    t = _diag(s300, meta(power_limit=(700.0, 700.0)))[0]["clocks_throttled"]
    assert "draws its rated power" not in t.summary
    assert "power read up to 300 W of its 700 W limit" in t.summary and "miss the peaks" in t.summary
    unknown = _diag(s, meta())[0]["clocks_throttled"]
    assert unknown.severity == "low" and "whether the power limit was lowered is not recorded" in unknown.summary
    assert "whether the limit was lowered" in unknown.evidence["could_not_see"]
    full = synth(10.0, sm=0.9, reasons=_half(0, 4, 3.0), sm_clock=_half(1980.0, 1500.0, 3.0),
                 pipes={"tensor_active": 0.85, "dram_active": 0.1, "sm_occupancy": 0.2})
    d = _diag(full, meta(power_limit=(700.0, 700.0)))[0]
    assert d["clocks_throttled"].severity == "info" and d["compute_bound"].severity == "info"
    # a hardware reason is never softened by the limit being the default
    hw = synth(10.0, sm=0.9, reasons=_half(0, 8, 7.5))
    assert _diag(hw, meta(power_limit=(700.0, 700.0)))[0]["clocks_throttled"].severity == "high"


def test_a_software_cap_flagged_while_the_clock_stays_at_its_max_is_no_throttling():
    # an H100 recording: sw_power_cap set 62% of the busy time, the busy SM clock 1980 of 1980 MHz:
    # it held nothing down, so nothing says it did
    s = synth(10.0, sm=0.9, reasons=_half(0, 4, 3.0), sm_clock=1980.0)
    d = _diag(s, meta(power_limit=(700.0, 700.0)))[0]
    assert "clocks_throttled" not in d
    # a hardware reason at the max clock still speaks (the clock is not the only thing it slows)
    hw = synth(10.0, sm=0.9, reasons=_half(0, 64, 3.0), sm_clock=1980.0)
    assert "clocks_throttled" in _diag(hw, meta(power_limit=(700.0, 700.0)))[0]


def test_a_power_cap_that_leaves_the_clock_near_its_max_is_low():
    # at the board's power limit all the time, yet the SM clock stays at 1950 of 1980 MHz
    s = synth(10.0, sm=0.9, reasons=4.0, sm_clock=_half(1980.0, 1950.0, 0.5))
    t = _diag(s)[0]["clocks_throttled"]
    assert t.severity == "low" and t.evidence["reasons"]["sw_power_cap"]["busy_fraction"] == pytest.approx(1.0)


def test_hardware_slowdown_is_high_even_when_brief():
    s = synth(10.0, sm=0.9, reasons=_half(0, 8, 7.5))
    t = _diag(s)[0]["clocks_throttled"]
    assert t.severity == "high" and list(t.evidence["reasons"]) == ["hw_slowdown"]


def test_idle_clock_reasons_never_count_as_throttling():
    # GpuIdle (1) all the time the GPU idles, and a power cap (4) read only while it idles:
    # nothing slowed the work
    sm = periodic(2.0, 1.0, 0.9)
    reasons = lambda t: np.where(sm(t) > 0, 0, 1 | 4)  # noqa: E731
    d, a = _diag(synth(10.0, sm=sm, reasons=reasons))
    assert "clocks_throttled" not in d and "clocks_below_max" not in d
    assert a.to_json()["throttle"]["reasons"]["gpu_idle"]["busy_s"] == pytest.approx(0.0, abs=0.25)
    # a brief cap under 5% of the busy time is noise, not a finding
    brief = lambda t: np.where((np.asarray(t) - T0 > 3.0) & (np.asarray(t) - T0 < 3.2), 4, 0)  # noqa: E731
    assert "clocks_throttled" not in _diag(synth(10.0, sm=0.9, reasons=brief))[0]


def test_low_clock_without_reasons_is_only_info():
    d = _diag(synth(10.0, sm=0.9, sm_clock=_half(1980.0, 1500.0, 0.5)))[0]
    assert "clocks_throttled" not in d
    c = d["clocks_below_max"]
    assert c.severity == "info" and c.evidence["sm_busy_median_mhz"] == 1500.0
    assert "no clock-event reasons" in c.evidence["could_not_see"]


def test_downgraded_link_width():
    s = synth(10.0, sm=0.5, rx=periodic(1.0, 0.5, 12.0))
    d = _diag(s, meta(link=(5, 5, 8, 16)))[0]["pcie_link_downgraded"]
    assert d.severity == "high" and d.evidence["now_gbs"] == pytest.approx(31.5, abs=0.1)
    assert "Gen5 x8 of Gen5 x16" in d.summary


def test_link_probed_at_idle_but_running_faster_under_load_is_not_downgraded():
    # the link read Gen1 when the recording started (power saving on an idle GPU), then
    # carried 50 GB/s: it trained up under load
    s = synth(10.0, sm=0.5, rx=periodic(1.0, 0.5, 50.0))
    d = _diag(s, meta(link=(1, 5, 16, 16)))[0]
    assert "pcie_link_downgraded" not in d
    # the same Gen1 reading with no transfers at all: only a low-severity note, saying why
    d = _diag(synth(10.0, sm=0.5), meta(link=(1, 5, 16, 16)))[0]["pcie_link_downgraded"]
    assert d.severity == "low" and "idle GPU may lower its link generation" in d.evidence["could_not_see"]


def test_memory_nearly_full():
    d = _diag(synth(5.0, sm=0.5, mem_used_mib=9_700.0), meta(total_mib=10_000.0))[0]["memory_nearly_full"]
    assert d.severity == "medium" and d.evidence["fraction"] == pytest.approx(0.97)
    assert "caching allocator" in d.evidence["could_not_see"]
    assert _diag(synth(5.0, sm=0.5, mem_used_mib=9_950.0), meta(total_mib=10_000.0))[0][
        "memory_nearly_full"].severity == "high"


def test_memory_at_90_percent_or_of_unknown_size_is_not_full():
    assert "memory_nearly_full" not in _diag(synth(5.0, sm=0.5, mem_used_mib=9_000.0), meta(total_mib=10_000.0))[0]
    d, a = _diag(synth(5.0, sm=0.5, mem_used_mib=9_990.0), None)  # no meta: total unknown
    assert "memory_nearly_full" not in d and a.to_json()["memory"]["fraction"] is None


def test_sampler_rows_with_reasons_read_back_into_activity(tmp_path):
    # the real path: the sampler (fake NVML) writes samples.csv with clock-event reasons,
    # the reader reads them back, activity counts them
    from gpuscope import nvml
    from gpuscope.rundir import SamplesWriter, read_samples
    from gpuscope.sampler import Sampler
    from tests.fake_nvml import FakeGpu, FakeNvml

    nvml.use_backend(FakeNvml([FakeGpu(counters=[(i * 10**8, 0, 0) for i in range(200)],
                                       clock_event_reasons=(4,))]))
    try:
        nv = nvml.get()
        w = SamplesWriter(tmp_path / "samples.csv")
        s = Sampler(nv, [0], w)
        g = s._gpus[0]
        for k in range(100):
            row = s.sample_once(g, 10.0 + 0.02 * k, slow=k % 10 == 0)
            if row is not None:
                w.write_row(row)
        s.stop()
        w.close()
    finally:
        nvml.use_backend(None)
    df = read_samples(tmp_path)
    assert df["clock_event_reasons"].notna().sum() == 10
    j = activity_from_samples(df, meta=None, line_rate_gbs=LINE, line_rate_source="test").to_json()
    assert j["throttle"]["recorded"] and j["throttle"]["reasons"]["sw_power_cap"]["busy_s"] > 1.5

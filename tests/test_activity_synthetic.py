"""sample_diagnoses on synthetic sample frames (tests/activity_builders.py): edge cases
(empty, one sample, no GPM, several GPUs) and the inputs that would make a steady-state
rule fire falsely."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from gpuscope.analysis.evidence import collect
from gpuscope.analysis.evidence.samples.activity import activity_from_samples
from gpuscope.analysis.rules.registry import run_rules
from gpuscope.schemas import empty_samples
from tests.activity_builders import T0, meta, periodic, segments, synth


def sample_diagnoses(a, **kw):
    """The sample rules' findings of `a` (through the one engine)."""
    return run_rules(collect(activity=a, **kw))

LINE = 55.5


def _act(s, m=None, **kw):
    return activity_from_samples(s, meta=m, line_rate_gbs=LINE, line_rate_source="test", **kw)


def _ids(a, **kw):
    return [d.id for d in sample_diagnoses(a, **kw)]


def test_empty_and_one_sample_recordings():
    assert sample_diagnoses(_act(empty_samples())) == []
    ds = sample_diagnoses(_act(synth(0.0, sm=0.5), meta(total_mib=1000.0)))
    assert [d.id for d in ds] == ["too_few_samples"] and ds[0].severity == "info"
    # a short recording with a full device: the static finding still comes
    a = _act(synth(0.3, sm=0.5, mem_used_mib=990.0), meta(total_mib=1000.0))
    assert _ids(a) == ["memory_nearly_full", "too_few_samples"]


def test_no_gpm_falls_back_to_utilization_and_says_what_it_cannot_tell():
    ds = sample_diagnoses(_act(synth(10.0, util=98.0, gpm=False)))
    d = ds[0]
    # utilization.gpu says a kernel ran: busy, never "compute-bound"
    assert d.id == "gpu_busy" and "which pipe bounds it" in d.summary and "compute_bound" not in _ids_of(ds)
    assert "not how busy the SMs were" in d.evidence["could_not_see"]


def test_no_gpu_activity():
    d = sample_diagnoses(_act(synth(10.0)))[0]
    assert d.id == "no_gpu_activity" and d.severity == "high"


def _ids_of(ds):
    return [d.id for d in ds]


def test_busy_without_pipe_readings_is_busy_not_compute_bound():
    # would fire compute_bound falsely: SM activity 92% alone (memory-bound kernels read that high too)
    ids = _ids(_act(synth(10.0, sm=0.92)))
    assert ids[0] == "gpu_busy" and "compute_bound" not in ids and "gpu_starved" not in ids and "gpu_underused" not in ids


@pytest.mark.parametrize("pipes, want", [
    ({"dram_active": 0.85, "tensor_active": 0.0, "sm_occupancy": 0.8}, "memory_bound"),
    ({"dram_active": 0.15, "tensor_active": 0.9, "sm_occupancy": 0.13}, "compute_bound"),
    ({"dram_active": 0.05, "tensor_active": 0.0, "fp32_active": 0.8, "sm_occupancy": 0.4}, "compute_bound"),
    ({"dram_active": 0.0, "tensor_active": 0.0, "fp32_active": 0.09, "sm_occupancy": 0.016}, "occupancy_bound"),
    # half full everywhere: no pipe is full, the bound is not named
    ({"dram_active": 0.5, "tensor_active": 0.35, "sm_occupancy": 0.5}, "gpu_busy"),
])
def test_the_bound_comes_from_the_pipe_that_is_full(pipes, want):
    ds = sample_diagnoses(_act(synth(10.0, sm=0.95, pipes=pipes)))
    bound = [d for d in ds if d.id in ("memory_bound", "compute_bound", "occupancy_bound", "gpu_busy")]
    assert [d.id for d in bound] == [want]
    assert bound[0].severity == "info" and "while_computing" in bound[0].evidence


def test_low_occupancy_without_tensor_readings_names_no_occupancy_bound():
    # would fire occupancy_bound falsely: a sampler without the tensor/FP columns (a matmul's tensor work unseen)
    ds = sample_diagnoses(_act(synth(10.0, sm=0.9, pipes={"dram_active": 0.1, "sm_occupancy": 0.03})))
    assert "occupancy_bound" not in _ids_of(ds) and "gpu_busy" in _ids_of(ds)


def test_starved_steady_state_after_a_long_start_up():
    # 6 s of start-up, then a loop: 10 ms of kernels every 100 ms, PCIe quiet
    s = synth(12.0, sm=periodic(0.1, 0.01, 0.9, start_s=6.0))
    a = _act(s)
    ds = sample_diagnoses(a)
    assert ds[0].id == "gpu_starved" and ds[0].severity == "high"
    assert ds[0].evidence["busy_fraction"] == pytest.approx(0.09, abs=0.01)
    assert "startup_idle" in [d.id for d in ds]
    assert a.to_json()["idle_gaps"]["leading_s"] == pytest.approx(6.0, abs=0.1)


def test_a_pageable_copy_loop_is_upload_bound_not_starved():
    # 180 ms uploads at 9 GB/s (SMs idle), then 90 ms of compute: PCIe busy 2/3 of the time
    up = periodic(0.27, 0.18, 9.0, start_s=1.0)
    comp = lambda t: np.where((up(t) == 0) & (np.asarray(t) - T0 > 1.0), 0.9, 0.0)  # noqa: E731
    ds = sample_diagnoses(_act(synth(8.0, sm=comp, rx=up)))
    ids = [d.id for d in ds]
    assert ids[0] == "upload_bound_pageable" and "gpu_starved" not in ids
    assert ds[0].evidence["rate_gbs"] == pytest.approx(9.0, abs=0.1)


def test_short_pinned_copies_get_no_rate_verdict_and_no_pinning_advice():
    # 30 ms uploads at the line rate every 120 ms between 90 ms of compute: 1-2 readings each
    up = periodic(0.12, 0.03, 55.0, start_s=1.0)
    comp = lambda t: np.where((up(t) == 0) & (np.asarray(t) - T0 > 1.0), 0.9, 0.0)  # noqa: E731
    s = synth(8.0, sm=comp, rx=up, tick_s=0.02)
    ds = sample_diagnoses(_act(s))
    assert "upload_bound_pageable" not in [d.id for d in ds]
    assert not any("pin" in d.recommendation.lower() for d in ds)
    # the program's own rate says slow: then the verdict comes, from its figure
    ds = sample_diagnoses(_act(s), upload_gbs=5.0)
    hit = [d for d in ds if d.id == "upload_bound_pageable"]
    assert hit and hit[0].evidence["rate_basis"] == "the program's own bytes/time"


def test_long_pinned_copies_are_link_bound_not_pageable():
    up = periodic(1.0, 0.5, 54.0, start_s=0.5)
    ds = sample_diagnoses(_act(synth(8.0, sm=lambda t: 0.5 - up(t) / 108.0, rx=up)))
    ids = [d.id for d in ds]
    assert "upload_bound_pageable" not in ids and ids[0] == "link_bound"
    assert ds[0].severity == "medium" and ds[0].evidence["share_of_working_time"] == pytest.approx(0.5, abs=0.05)


def test_download_bound_from_pageable_memory():
    down = periodic(0.5, 0.3, 7.0, start_s=0.5)
    comp = lambda t: np.where((down(t) == 0) & (np.asarray(t) - T0 > 0.5), 0.9, 0.0)  # noqa: E731
    d = sample_diagnoses(_act(synth(8.0, sm=comp, tx=down)))[0]
    assert d.id == "download_bound_pageable" and "Read back into a reused pinned buffer" in d.recommendation
    assert d.summary.startswith("Read-back-bound into pageable memory (likely)")


def test_one_long_pause_is_info_recurring_pauses_low():
    one = synth(10.0, sm=segments((0, 2, 0.9), (5, 10, 0.9)))
    d = next(d for d in sample_diagnoses(_act(one)) if d.id == "long_pauses")
    assert d.severity == "info" and d.evidence["count"] == 1 and d.evidence["longest_s"] == pytest.approx(3.0, abs=0.3)
    two = synth(12.0, sm=segments((0, 2, 0.9), (4, 6, 0.9), (8, 12, 0.9)))
    d = next(d for d in sample_diagnoses(_act(two)) if d.id == "long_pauses")
    assert d.severity == "low" and d.evidence["count"] == 2


def test_several_gpus_one_finding_naming_the_gpu():
    busy = synth(10.0, sm=0.9, gpu=0)
    starved = synth(10.0, sm=periodic(0.1, 0.005, 0.9), gpu=1)
    ds = sample_diagnoses(_act(pd.concat([busy, starved], ignore_index=True)))
    st = next(d for d in ds if d.id == "gpu_starved")
    assert st.summary.startswith("GPU 1:") and st.evidence["gpus"] == [1]
    assert "gpu_busy" in [d.id for d in ds]  # GPU 0's (no pipe readings: the bound is not named)
    imb = next(d for d in ds if d.id == "gpu_imbalance")
    assert imb.evidence["busiest_gpu"] == 0 and imb.evidence["least_busy_gpu"] == 1
    assert "GPU 0 90%" in imb.summary and "GPU 1 " in imb.summary


def test_idle_time_lines_up_with_the_cpu_phase_not_the_kernel():
    from gpuscope.analysis.evidence.samples.idle_overlap import idle_by_component
    from gpuscope.schemas import PHASE_SCHEMA, frame

    # per 1 s step: 0.7 s of CPU prep (GPU idle, PCIe quiet), then a 0.3 s kernel on every SM
    s = synth(10.0, sm=periodic(1.0, 0.3, 1.0, start_s=0.7))
    starts = np.arange(10.0)
    rows = {"worker": [-1] * 20, "gpu": [-1] * 20, "partition": list(range(10)) * 2,
            "phase": ["prep"] * 10 + ["kernel"] * 10,
            "t_start": list(T0 + starts) + list(T0 + starts + 0.7), "t_end": list(T0 + starts + 0.7) + list(T0 + starts + 1.0)}
    phases = frame(rows, PHASE_SCHEMA)
    a = _act(s)
    for arg in (a, a.intervals):
        over = idle_by_component(phases, arg).set_index("phase")
        assert over.index[0] == "prep"
        assert over.at["prep", "share_of_idle"] > 0.9 and over.at["kernel", "share_of_idle"] < 0.1
        assert over.at["prep", "phase_s"] == pytest.approx(7.0, abs=0.05)
    ds = sample_diagnoses(a, phases=phases)
    d = next(d for d in ds if d.id in ("gpu_starved", "gpu_underused", "host_stall_cycle"))
    # 30% busy in a regular 1 s cycle: the host stalls it every step (not "kernels too small")
    assert d.id == "host_stall_cycle" and "gpu_underused" not in _ids_of(ds) and "`prep`" in d.summary
    starved = sample_diagnoses(_act(synth(10.0, sm=periodic(1.0, 0.05, 1.0, start_s=0.7))), phases=phases)[0]
    assert starved.id == "gpu_starved" and "lines up with `prep`" in starved.summary
    assert idle_by_component(None, a).empty and list(idle_by_component(phases, _act(empty_samples())).columns)[0] == "phase"


def test_two_equally_busy_gpus_are_no_imbalance():
    # would fire falsely if summed or compared over their own spans: two GPUs each 90% busy
    s = pd.concat([synth(10.0, sm=0.9, gpu=0), synth(10.0, sm=0.9, gpu=1)], ignore_index=True)
    assert "gpu_imbalance" not in _ids(_act(s))


def test_irregular_pauses_are_no_host_stall_cycle():
    # would fire falsely on any idle time: three idle stretches of 0.3, 1.2 and 0.4 s (cv > 0.5)
    s = synth(12.0, sm=segments((0, 2, 0.9), (2.3, 5, 0.9), (6.2, 8, 0.9), (8.4, 12, 0.9)))
    assert "host_stall_cycle" not in _ids(_act(s))


def test_a_regular_host_stall_cycle_fires_at_the_severity_of_its_share():
    half = synth(12.0, sm=periodic(1.0, 0.5, 0.9, start_s=0.5))
    d = next(d for d in sample_diagnoses(_act(half)) if d.id == "host_stall_cycle")
    assert d.severity == "high" and d.evidence["share_of_working_time"] == pytest.approx(0.5, abs=0.08)
    short = synth(24.0, sm=periodic(2.0, 1.7, 0.9, start_s=0.5))  # 0.3 s idle every 2 s: 15%
    d = next(d for d in sample_diagnoses(_act(short)) if d.id == "host_stall_cycle")
    assert d.severity == "low" and d.evidence["share_of_working_time"] == pytest.approx(0.15, abs=0.05)
    # gaps shorter than two readings (0.15 s at 0.1 s GPM readings) are not resolved: no finding
    assert "host_stall_cycle" not in _ids(_act(synth(12.0, sm=periodic(1.0, 0.85, 0.9, start_s=0.5))))


def test_one_gpus_slower_uploads_are_an_imbalance_equal_ones_are_not():
    def loop(rate, gpu):
        up = periodic(1.0, 0.5, rate, start_s=0.5)
        comp = lambda t: np.where((up(t) == 0) & (np.asarray(t) - T0 > 0.5), 0.9, 0.0)  # noqa: E731
        return synth(8.0, sm=comp, rx=up, gpu=gpu)

    ds = sample_diagnoses(_act(pd.concat([loop(40.0, 0), loop(9.0, 1)], ignore_index=True)))
    d = next(d for d in ds if d.id == "upload_imbalance")
    assert d.evidence["slowest_gpu"] == 1 and d.evidence["fastest_gpu"] == 0 and d.severity == "medium"
    # would fire falsely on two GPUs uploading alike
    same = sample_diagnoses(_act(pd.concat([loop(9.0, 0), loop(9.0, 1)], ignore_index=True)))
    assert "upload_imbalance" not in _ids_of(same)

"""Issue 33's capture cases: the bytes each printed phase moved (evidence.samples.pcie), the
advice they decide (rules.upload, rules.copy_phase), on inputs of their shape written here and
on the H200 copy loop (tests/data/h200_foreign/runs/copy_pinned)."""

from __future__ import annotations

import datetime as dt
import shutil
from pathlib import Path

import numpy as np
import pytest

from gpuscope.analysis import analyze
from gpuscope.sources import open_source

FOREIGN = Path(__file__).parent / "data" / "h200_foreign" / "runs"
T0 = 1796115600.0


def _by_id(a):
    return {d.id: d for d in a.findings}


def _stamp(t: float) -> str:
    return dt.datetime.fromtimestamp(t, dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _loop(tmp: Path, *, first: str, first_ms: float, then_ms: float, burst: tuple[float, float, float],
          n: int = 40, interval: float = 0.01, compute: str = "compute") -> tuple[Path, Path]:
    """A stamped loop `step i: FIRST=..ms COMPUTE=..ms` and samples every `interval` s: RX
    burst[2] GB/s from burst[0] to burst[1] s into each step (else a trickle), SMs busy only in
    the second part."""
    step = (first_ms + then_ms) / 1e3
    log = tmp / "train.log"
    log.write_text("".join(f"{_stamp(T0 + (i + 1) * step)} step {i}: {first}={first_ms}ms {compute}={then_ms}ms\n"
                           for i in range(n)))
    rows = ["t_wall,gpu,rx_gbs,tx_gbs,sm_active,pcie_source,wrap_suspect"]
    for t in np.arange(T0 - 1, T0 + n * step + 1, interval):
        ph = (t - T0) % step if T0 <= t < T0 + n * step else -1.0
        rx = burst[2] if burst[0] < ph <= burst[1] else 0.01
        sm = 0.9 if ph > first_ms / 1e3 else 0.0
        rows.append(f"{t:.4f},0,{rx},0.01,{sm},counter,0")
    s = tmp / "samples.csv"
    s.write_text("\n".join(rows) + "\n")
    return log, s


def test_a_jax_put_that_moves_its_bytes_in_one_burst_is_a_slow_copy_not_a_starved_gpu(tmp_path):
    # issue 33: device_put of 512 MiB pageable, 66 ms per step, one ~28 GB/s burst of ~20 ms in it
    log, s = _loop(tmp_path, first="put", first_ms=66.0, then_ms=8.0, burst=(0.040, 0.060, 28.0))
    a = analyze(open_source(log, samples=s, line_rate=50.0))
    row = a.log.pcie.set_index("phase").loc["put"]
    assert row["rx_gbs_median"] < 0.1  # the median hides the burst ...
    assert row["gb_per_phase_median"] == pytest.approx(0.56, abs=0.03)  # ... the bytes do not
    assert row["rx_gbs_mean"] == pytest.approx(8.5, abs=0.5)
    d = _by_id(a)
    assert "gpu_starved" not in d and "copies_unresolved" not in d
    c = d["copy_phase"]
    assert c.severity == "high" and "Slow copy in `put`" in c.summary and "8.5 GB/s" in c.summary
    assert "pinned" in c.recommendation and "DataLoader" not in c.recommendation


def test_a_host_phase_with_a_trickle_on_pcie_stays_host_starved(tmp_path):
    # what would make copy_phase fire falsely: a host-side phase (a slow collator) the GPU idles
    # through; its link shows only the trickle of an idle bus (0.01 GB/s)
    log, s = _loop(tmp_path, first="collate", first_ms=66.0, then_ms=8.0, burst=(0.0, 0.0, 0.0))
    d = _by_id(analyze(open_source(log, samples=s, line_rate=50.0)))
    assert "copy_phase" not in d
    assert "gpu_starved" in d and "DataLoader" in d["gpu_starved"].recommendation


def _pinned_without_bytes(tmp: Path) -> Path:
    run = tmp / "copy_pinned"
    shutil.copytree(FOREIGN / "copy_pinned", run)
    log = run / "timing.log"
    log.write_text("".join(ln.split(" h2d_bytes=")[0] + ("\n" if " h2d_bytes=" in ln else "")
                           for ln in log.read_text().splitlines(keepends=True)))
    return run


def test_pinned_copies_at_the_line_rate_get_no_pinning_advice_without_byte_counts(tmp_path):
    # issue 33 (a): pinned 1.5 GiB uploads of 29 ms read every 20 ms, the log printing no bytes:
    # h2d_bound advised pinning while link_bound in the same report said "at the line rate"
    a = analyze(open_source(_pinned_without_bytes(tmp_path)))
    h = _by_id(a)["h2d_bound"]
    assert "at least" in h.summary and "GB per upload" in h.summary
    assert "already run at least" in h.recommendation and "pinning has little left to gain (at most" in h.recommendation
    for x in a.findings:
        assert "pinned (page-locked)" not in x.recommendation and "Pin the" not in x.recommendation, x.id


def test_short_slow_uploads_without_byte_counts_get_no_rate_verdict(tmp_path):
    # what would make the lower bound misread: short pageable uploads (29 ms at 9 GB/s, read every
    # 20 ms) integrate well below half the line; a lower bound that low says nothing either way
    log, s = _loop(tmp_path, first="h2d", first_ms=29.0, then_ms=33.0, burst=(0.0, 0.029, 9.0), interval=0.02)
    a = analyze(open_source(log, samples=s, line_rate=55.5))
    d = _by_id(a)
    assert "pcie_underused" not in d
    h = d["h2d_bound"]
    assert "line rate" not in h.summary and "already run" not in h.recommendation


def _gpm_capture(tmp: Path, *, sm: float, util: float, rx: float = 0.02, seconds: float = 60.0) -> Path:
    """GPM SM activity and utilization.gpu every 0.1 s (readings too coarse to show the gaps of
    steps ~145 ms long), PCIe at `rx` GB/s."""
    rng = np.random.default_rng(1)
    rows = ["t_wall,gpu,rx_gbs,tx_gbs,sm_active,gpu_util_pct,pcie_source,wrap_suspect"]
    for t in np.arange(T0, T0 + seconds, 0.1):
        rows.append(f"{t:.3f},0,{rx},0.01,{max(sm + rng.normal(0, 0.02), 0.06):.3f},"
                    f"{util * 100 + rng.normal(0, 2):.1f},counter,0")
    p = tmp / "samples.csv"
    p.write_text("\n".join(rows) + "\n")
    return p


def test_an_hf_trainer_fed_by_a_slow_collator_is_host_starved_not_small_kernels(tmp_path):
    # issue 33 (c): SM activity 20% of the working time, kernels resident 23%, PCIe quiet: the GPU
    # idles between steps (77%), its kernels fill it while they run; it read LOW "kernels too small"
    a = analyze(open_source(_gpm_capture(tmp_path, sm=0.20, util=0.23), line_rate=50.0))
    d = _by_id(a)
    assert "gpu_underused" not in d
    s = d["gpu_starved"]
    assert s.severity == "high" and "idles between steps" in s.summary and "do not under-fill" in s.summary
    assert "larger batch" not in s.recommendation and "time the loader" in s.recommendation
    assert "profiler trace" in s.recommendation


def test_kernels_that_under_fill_the_gpu_still_read_as_small_kernels(tmp_path):
    # what would make the host-starved reading fire falsely: kernels resident 90% of the time that
    # keep only a third of the SMs busy (SM 30%): under-filled, not idle between steps
    d = _by_id(analyze(open_source(_gpm_capture(tmp_path, sm=0.30, util=0.90), line_rate=50.0)))
    assert "gpu_starved" not in d and "kernels too small" in d["gpu_underused"].summary


def test_a_gpu_idle_between_steps_while_pcie_is_busy_is_not_called_host_starved(tmp_path):
    # the same activity with PCIe busy all along (copies, not host work): no host verdict
    d = _by_id(analyze(open_source(_gpm_capture(tmp_path, sm=0.20, util=0.23, rx=5.0), line_rate=50.0)))
    assert "gpu_starved" not in d


def _second_capture(tmp: Path, pattern: list[tuple[float, float]], repeat: int = 6) -> Path:
    """A 1 s capture (nvidia-smi / DCGM-like: utilization.gpu and PCIe throughput) of a repeated
    pattern of (utilization %, RX GB/s) readings."""
    rows = ["t_wall,gpu,rx_gbs,tx_gbs,gpu_util_pct,pcie_source,wrap_suspect"]
    seq = [(0.0, 0.003)] * 3 + pattern * repeat + [(0.0, 0.003)] * 3
    for i, (u, rx) in enumerate(seq):
        rows.append(f"{T0 + i:.1f},0,{rx},{rx * 0.1:.4f},{u},throughput,0")
    p = tmp / "samples.csv"
    p.write_text("\n".join(rows) + "\n")
    return p


def test_coarse_history_of_a_trickle_is_not_one_slow_pageable_copy(tmp_path):
    # issue 33 class 10: a fleet's history, 1 reading/s, averaging 0.8 GB/s H2D for 39 s (a
    # loader-starved run): it read HIGH "upload-bound from pageable memory: 1 copy took 39 s"
    p = _second_capture(tmp_path, [(12.0, 0.8)], repeat=39)
    d = _by_id(analyze(open_source(p, line_rate=50.0)))
    assert "upload_bound_pageable" not in d
    c = d["copies_averaged"]
    assert c.severity == "low" and "31.2 GB" in c.summary and "0.6 s" in c.summary


def test_a_held_coarse_copy_rate_is_still_pageable(tmp_path):
    # what would make that refusal misfire: a real pageable crawl, 9.9 GB/s held over 3+ readings
    # with the GPU busy 24% (the H200 dmon of the pageable upload loop reads like this)
    p = _second_capture(tmp_path, [(24.0, 9.9)], repeat=5)
    d = _by_id(analyze(open_source(p, line_rate=50.0)))
    assert "copies_averaged" not in d and d["upload_bound_pageable"].severity == "high"


def test_dmon_idle_bursts_of_two_readings_are_uploads_not_overlapped(tmp_path):
    # issue 33 class 10: idle ~half the time, each idle burst two 1 s readings of 6-9 GB/s RX
    p = _second_capture(tmp_path, [(0.0, 6.0), (0.0, 9.0), (60.0, 0.003), (60.0, 0.003)], repeat=6)
    d = _by_id(analyze(open_source(p, line_rate=50.0)))
    c = d["copies_not_overlapped"]
    assert c.severity == "high" and "not overlapped" in c.summary and "pageable is not known" in c.summary
    assert "copies_unresolved" not in d and "upload_bound_pageable" not in d


def test_copies_beside_compute_in_each_reading_are_not_called_serialised(tmp_path):
    # what would make it fire falsely: the same bursts with kernels in the same readings (class
    # `both`): whether they overlapped is unknown, so only the INFO note stays
    p = _second_capture(tmp_path, [(40.0, 6.0), (40.0, 9.0), (60.0, 0.003), (60.0, 0.003)], repeat=6)
    d = _by_id(analyze(open_source(p, line_rate=50.0)))
    assert "copies_not_overlapped" not in d


def test_a_traces_line_rate_follows_the_gpu_it_names():
    # issue 33 class 14: an A100 trace was judged against 50 GB/s (an A100 is PCIe Gen4, ~28 GB/s
    # of pinned copies), so a copy at 30% read "15% of the line rate"
    from gpuscope.linerate import named_line_rate

    rate, what = named_line_rate(["NVIDIA A100-SXM4-80GB"])
    assert rate == pytest.approx(27.7) and "Gen4" in what and "assumed" in what
    assert named_line_rate(["NVIDIA H100 80GB HBM3"])[0] == pytest.approx(55.4)
    assert named_line_rate(["Tesla V100-SXM2-16GB"])[0] == pytest.approx(13.9)
    # what would make it misread: a model not on PCIe, an unknown one, or a mixed set with one unknown
    assert named_line_rate(["NVIDIA GH200 480GB"]) is None
    assert named_line_rate(["Some Future GPU"]) is None
    assert named_line_rate(["NVIDIA A100-PCIE-40GB", "Mystery"]) is None
    assert named_line_rate(["NVIDIA A100-PCIE-40GB", "NVIDIA H100 PCIe"])[0] == pytest.approx(27.7)


def test_an_a100_trace_is_judged_against_its_gen4_link():
    import json

    from gpuscope.analysis.trace_analysis import analyze_trace
    from gpuscope.parsers.trace.kineto import read_trace
    from tools.gen_trace import TraceBuilder

    b = TraceBuilder()
    b.kernel(0.0, 500.0)
    doc = b.document()
    doc["deviceProperties"][0]["name"] = "NVIDIA A100-SXM4-80GB"
    a = analyze_trace(read_trace(json.dumps(doc)), line_rate_gbs=50.0, line_rate_source="default")
    assert (a.options["line_rate_gbs"], a.options["line_rate_source"]) == (27.7, "gpu_name")
    # a measured or given rate is never replaced by the guess
    a = analyze_trace(read_trace(json.dumps(doc)), line_rate_gbs=50.0, line_rate_source="option")
    assert (a.options["line_rate_gbs"], a.options["line_rate_source"]) == (50.0, "option")


def test_samples_without_a_clock_are_refused_beside_a_stamped_log(tmp_path):
    # issue 33 class 14: a dmon capture without -o DT was joined to a stamped run without a word
    from gpuscope.errors import UsageError

    dmon = tmp_path / "dmon.txt"
    dmon.write_text("# gpu    pwr     sm    mem  rxpci  txpci\n# Idx      W      %      %   MB/s   MB/s\n"
                    + "".join(f"    0    130     {u}      0   {rx}      1\n" for u, rx in [(0, 2), (30, 9000)] * 5))
    log = tmp_path / "train.log"
    log.write_text("".join(f"{_stamp(T0 + i)} step={i} h2d_ms=200 compute_ms=100\n" for i in range(5)))
    with pytest.raises(UsageError, match="no wall-clock time"):
        open_source(log, samples=dmon)
    # what would make the refusal wrong: a log without time stamps has no clock to line up either;
    # the capture is then read beside it as before
    plain = tmp_path / "plain.log"
    plain.write_text("".join(f"step={i} h2d_ms=200 compute_ms=100\n" for i in range(5)))
    assert open_source(plain, samples=dmon).samples is not None


def _stamped_steps(tmp: Path, times: list[float], name: str = "train.log", extra: dict | None = None) -> Path:
    """`step=i h2d_ms=20 compute_ms=80 step_ms=100` stamped at each time (the step's end); extra:
    {index: a line printed after that step}."""
    lines = []
    for i, t in enumerate(times):
        lines.append(f"{_stamp(t)} step={i} h2d_ms=20 compute_ms=80 step_ms=100\n")
        if extra and i in extra:
            lines.append(f"{_stamp(t + 0.001)} {extra[i]}\n")
    p = tmp / name
    p.write_text("".join(lines))
    return p


def test_a_pause_after_a_checkpoint_in_a_stamped_log_is_a_long_pause(tmp_path):
    # issue 33 class 13: 5 s with no step, right after `saved checkpoint`, a third of the wall time
    times = [T0 + 0.1 * (i + 1) for i in range(50)] + [T0 + 5.0 + 0.1 * (i + 51) for i in range(50)]
    log = _stamped_steps(tmp_path, times, extra={49: "saved checkpoint to ckpt/step_49.pt"})
    d = _by_id(analyze(open_source(log)))
    p = d["long_pauses"]
    assert p.severity == "info"  # one stretch: one-off work
    assert p.evidence["longest_after_record"] == 49 and p.evidence["total_s"] == pytest.approx(5.0, abs=0.05)
    assert "No step was timed for 5.0 s" in p.summary and "checkpoint" in p.recommendation


def test_a_log_printing_every_tenth_step_has_no_pauses(tmp_path):
    # what would make it fire falsely: every printed step 1 s after the last (nine unprinted steps
    # between): regular gaps, none stands out from the median
    log = _stamped_steps(tmp_path, [T0 + 1.0 * (i + 1) for i in range(60)])
    assert "long_pauses" not in _by_id(analyze(open_source(log)))


def test_a_query_gpu_capture_without_index_keeps_its_gpus_apart_by_bus_id(tmp_path):
    # issue 33 class 11: NVIDIA's documented query (timestamp,name,pci.bus_id,...) of two A100s,
    # one busy and one idle, was merged into one GPU "97% busy", the idle GPU gone
    from gpuscope.parsers import read_samples

    rows = ["timestamp, name, pci.bus_id, utilization.gpu [%], memory.used [MiB]"]
    for i in range(30):
        ts = f"2026/12/01 10:00:{i:02d}.000"
        rows += [f"{ts}, NVIDIA A100-SXM4-40GB, 00000000:07:00.0, 97 %, 39960 MiB",
                 f"{ts}, NVIDIA A100-SXM4-40GB, 00000000:0B:00.0, 0 %, 960 MiB"]
    p = tmp_path / "query.csv"
    p.write_text("\n".join(rows) + "\n")
    df = read_samples(p)
    assert sorted(set(df["gpu"])) == [0, 1]
    assert df.attrs["gpu_identity"]["gpus"] == {"0": "00000000:07:00.0", "1": "00000000:0B:00.0"}
    a = analyze(open_source(p, line_rate=50.0))
    assert len(a.samples.gpus) == 2
    # what would make it split one GPU falsely: a capture with `index` keeps its own numbering
    rows = ["timestamp, index, pci.bus_id, utilization.gpu [%]"] + [
        f"2026/12/01 10:00:{i:02d}.000, 3, 00000000:07:00.0, 50 %" for i in range(10)]
    p.write_text("\n".join(rows) + "\n")
    assert set(read_samples(p)["gpu"]) == {3} and "gpu_identity" not in read_samples(p).attrs


def _two_gpu_dmon(tmp: Path, idle_rx_mbs: int) -> Path:
    """Two GPUs read every second by `nvidia-smi dmon -o DT`: a second of compute (sm 95%, PCIe
    quiet), then a second with the SMs idle and RX at `idle_rx_mbs` MB/s, on both."""
    head = ("#Date       Time        gpu    pwr     sm    mem   rxpci  txpci\n"
            "#YYYYMMDD   HH:MM:SS    Idx      W      %      %    MB/s   MB/s\n")
    rows = []
    for i in range(40):
        for g in (0, 1):
            idle = i % 2 == 1
            rows.append(f" 20261201   10:00:{i:02d}     {g}    200     {0 if idle else 95}     10    "
                        f"{idle_rx_mbs if idle else 5}    {(idle_rx_mbs if idle else 5) // 10}\n")
    p = tmp / "dmon.txt"
    p.write_text(head + "".join(rows))
    return p


def test_a_gpu_whose_idle_half_moves_bytes_is_not_called_pcie_quiet(tmp_path):
    # issue 33 class 11: GPU 1's table showed 49% "moving bytes, SMs idle" at 6.5 GB/s while its
    # finding said "PCIe quiet, so host-side work" (the compute half counted as quiet)
    d = _by_id(analyze(open_source(_two_gpu_dmon(tmp_path, 6500), line_rate=50.0)))
    assert "gpu_underused" not in d and "gpu_starved" not in d
    c = d["copies_not_overlapped"]
    assert c.evidence["gpus"] == [0, 1]  # one story for both GPUs, not one each
    for x in d.values():
        assert "PCIe quiet" not in x.summary, x.id


def test_a_gpu_whose_idle_half_is_quiet_is_still_host_side(tmp_path):
    # what would make the stricter reading miss a host stall: the same GPUs idle with PCIe quiet
    d = _by_id(analyze(open_source(_two_gpu_dmon(tmp_path, 5), line_rate=50.0)))
    assert "copies_not_overlapped" not in d
    assert "gpu_underused" in d and "host-side work" in d["gpu_underused"].summary


def test_the_plots_idle_shading_is_per_gpu_and_says_so(tmp_path):
    # issue 33 class 11: the idle shading was the union over GPUs and named none
    from tests.test_plot_sources import _figure, _legend_texts

    q = tmp_path / "query.csv"
    rows = ["timestamp, index, utilization.gpu [%], memory.used [MiB]"]
    for i in range(30):
        ts = f"2026/12/01 10:00:{i:02d}.000"
        rows += [f"{ts}, 0, {97 if i > 2 else 0} %, 39960 MiB", f"{ts}, 1, {97 if i % 4 else 0} %, 960 MiB"]
    q.write_text("\n".join(rows) + "\n")
    _, fig = _figure(q)
    texts = [t for ax in fig.axes for t in _legend_texts(ax)]
    assert any("a band per GPU, bottom to top: GPU 0, 1" in t for t in texts), texts
    # each bar spans its GPU's half of the panel, never the whole height
    spans = {tuple(round(v, 3) for v in c.get_paths()[0].get_extents().intervaly) for ax in fig.axes
             for c in ax.collections if c.get_zorder() == 0}
    assert spans == {(0.0, 0.5), (0.5, 1.0)}, spans

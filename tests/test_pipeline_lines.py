"""The workload's timing lines: exactly the CuZK formats, read back by the cuzk parser."""

from __future__ import annotations

from gpuscope.clock import Clock
from gpuscope.parsers import parse_log
from gpuscope.rundir import TimingLogWriter
from gpuscope.workload import timinglog as tl


def test_ms_truncates_like_duration_cast():
    assert tl.ms(0.0019) == 1
    assert tl.ms(0.999999) == 999
    assert tl.ms(1.0) == 1000
    assert tl.ms(-0.5) == 0


def test_line_formats_are_the_prover_s():
    assert tl.line_lock_taken(0.0021, 1.149) == "CUZK_TIMING: pre_lock_cpu_ms=2 mutex_wait_ms=1149"
    assert tl.line_ntt_h(0.7, 0.287, 0.113, 0.001, 0.634, 0.002, 1.737) == (
        "CUZK_NTT_H: d_b_alloc=700ms ntt_kernels=287ms coset_intt_sync=113ms msm_init=1ms "
        "msm_invoke=634ms msm_dtor=2ms total=1737ms")
    assert tl.line_tail_msm(0, 0.198, 2.5) == "CUZK_TIMING: gpu_tid=0 tail_msm_ms=198 gpu_total_ms=2500"
    assert tl.line_mutex_held(1.634, 4.215) == "CUZK_TIMING: mutex_held_ms=1634 total_start_fn_ms=4215"
    assert tl.line_h2d(0, 0.25, 1 << 31) == "CUZK_TIMING: gpu_tid=0 h2d_ms=250 h2d_bytes=2147483648"
    assert tl.line_timeline(1.5, "GPU_END", "job", "worker=1,partition=3,gpu_ms=12") == \
        "TIMELINE,1500,GPU_END,job,worker=1,partition=3,gpu_ms=12"


class _Lines:
    def __init__(self):
        self.out = []

    def write_line(self, text, mono=None):
        self.out.append((text, mono))

    def flush(self):
        pass

    def close(self):
        pass


def _one_tenure(log: tl.TimingLog, t: float, worker: int, p: int) -> None:
    ten = log.tenure()
    ten.line(tl.line_lock_taken(0.001, 0.5), t)
    ten.line(tl.line_ntt_h(0.0, 0.3, 0.01, 0.0, 0.6, 0.0, 0.91), t + 0.91)
    ten.line(tl.line_h2d(0, 0.25, 3 << 20), t + 0.91)
    ten.line(tl.line_ntt_msm_h(0, 0.91), t + 0.91)
    ten.line(tl.line_barrier(0, 0.05), t + 0.96)
    ten.line(tl.line_batch_add(0, 0.4), t + 1.36)
    ten.line(tl.line_tail_msm(0, 0.2, 1.56), t + 1.56)
    log.line(tl.line_prep_msm(0.7), t + 1.0)  # a CPU line from another thread, mid-tenure
    ten.line(tl.line_mutex_held(1.57, 2.1), t + 1.57)
    ten.commit()


def test_tenure_blocks_parse_as_one_record_each(tmp_path):
    clock = Clock()
    w = TimingLogWriter(tmp_path / "timing.log", None, clock)
    log = tl.TimingLog(w, None, job_id="j", t0_mono=clock.mono(), clock=clock)
    t = clock.mono()
    _one_tenure(log, t, 0, 0)
    _one_tenure(log, t + 0.2, 1, 1)  # overlapping in time (another GPU): still separate blocks
    log.close()
    parsed = parse_log(str(tmp_path / "timing.log"))
    assert parsed.format == "cuzk"
    assert len(parsed.skipped) == 0
    recs = parsed.records
    assert len(recs) == 2 and recs["complete"].all()
    assert list(recs["held_ms"]) == [1570.0, 1570.0]
    comps = parsed.components
    h2d = comps[comps["component"] == "h2d"]
    assert list(h2d["value_ms"]) == [250.0, 250.0]
    assert "h2d_bytes" not in set(comps["component"])
    assert not parsed.records["ts_start"].isna().any()  # ISO prefixes were read


def test_spans_writer_rejects_unknown_phase_and_writes_epoch(tmp_path):
    import pytest

    clock = Clock()
    sw = tl.SpansWriter(tmp_path / "spans.csv", clock)
    t = clock.mono()
    sw.span(t, t + 0.5, 0, 1, 2, "h2d")
    with pytest.raises(ValueError):
        sw.span(t, t, 0, 0, 0, "upload")
    sw.close()
    rows = (tmp_path / "spans.csv").read_text().splitlines()
    assert rows[0] == "t_start,t_end,gpu,worker,partition,phase"
    t0, t1, g, wk, p, ph = rows[1].split(",")
    assert abs(float(t1) - float(t0) - 0.5) < 1e-6 and float(t0) > 1.7e9
    assert (g, wk, p, ph) == ("0", "1", "2", "h2d")

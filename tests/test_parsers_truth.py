"""Values the parsers used to read wrong, silently (issue 13, "Values read wrong"): a cut last
line read as a value, negative durations accepted as records, a key printed twice in one
line summed in the components but not in the split. Each rule holds in every format."""

from __future__ import annotations

import pytest

from gpuscope import parsers
from gpuscope.analysis import analyze
from gpuscope.parsers.log.scanners import CUT_REASON
from gpuscope.sources import Source

OPEN = "CUZK_TIMING: pre_lock_cpu_ms=2 mutex_wait_ms=100\n"
TENURE = OPEN + "CUZK_NTT_H: d_b_alloc=1ms ntt_kernels=300ms total=301ms\nCUZK_TIMING: mutex_held_ms=3481\n"


# -- a last line without its newline ------------------------------------------------------------

CUT = {
    "cuzk": (TENURE + OPEN, "CUZK_TIMING: mutex_held_ms=348"),
    "condensed": ("mutex_wait_ms=10 | barrier_wait_ms=0\nntt_kernels=287ms | msm=634ms\nmutex_held_ms=1634\n"
                  "mutex_wait_ms=10\nntt_kernels=287ms\n", "mutex_held_ms=163"),
    "kv": ("INFO upload_ms=3 compute_ms=5\nINFO upload_ms=3 compute_ms=5\n", "INFO upload_ms=3 compute_ms=5"),
    "lines": ("step=1 h2d_ms=2.0 compute_ms=3.0\nstep=2 h2d_ms=2.0 compute_ms=3.0\n", "step=3 h2d_ms=2.0 compute_ms=3."),
}


@pytest.mark.parametrize("fmt", sorted(CUT))
def test_a_cut_last_line_is_skipped_and_counted(tmp_path, fmt):
    body, last = CUT[fmt]
    f = tmp_path / "cut.log"
    f.write_text(body + last)
    whole = parsers.parse_log(body + last + "\n", fmt)  # the same line with its newline: read
    for src in (f, f.read_bytes()):
        p = parsers.parse_log(src, fmt)
        n = body.count("\n") + 1
        assert p.skipped["line"].tolist() == [n]
        assert p.skipped["reason"].tolist() == [CUT_REASON]
        assert p.timing_lines == whole.timing_lines and p.total_lines == n
        assert n not in set(p.components["line"])
    assert n in set(whole.components["line"])


def test_the_cut_held_line_leaves_its_tenure_incomplete(tmp_path):
    f = tmp_path / "cut.log"
    f.write_text(TENURE + OPEN + "CUZK_TIMING: mutex_held_ms=348")
    p = parsers.parse_log(f)
    assert p.records["complete"].tolist() == [True, False]
    assert p.records["held_ms"].iloc[0] == 3481.0


@pytest.mark.parametrize("last", [
    "CUZK_NTT_H: d_b_alloc=1ms ntt_kernels=300ms total=301ms",  # ends in its unit: whole
    "CUZK_TIMING: mutex_held_ms=3481\r",                          # only the \n is missing
    "TIMELINE,2230,GPU_START,job-1,monolithic",                   # a word
])
def test_a_last_line_that_ends_whole_is_read(tmp_path, last):
    f = tmp_path / "ok.log"
    f.write_text(TENURE + OPEN + last)
    p = parsers.parse_log(f)
    assert len(p.skipped) == 0
    assert p.timing_lines == parsers.parse_log(TENURE + OPEN + last.rstrip("\r") + "\n").timing_lines


def test_a_last_line_that_is_no_timing_line_is_not_counted(tmp_path):
    f = tmp_path / "info.log"
    f.write_text(TENURE + "CUZK_TIMING: d_a_cache allocated 512 MiB on gpu 0")
    p = parsers.parse_log(f)
    assert len(p.skipped) == 0 and p.timing_lines == 3


def test_a_str_is_whole_text():
    p = parsers.parse_log(TENURE + OPEN + "CUZK_TIMING: mutex_held_ms=348")
    assert len(p.skipped) == 0 and p.records["held_ms"].tolist() == [3481.0, 348.0]


# -- negative durations --------------------------------------------------------------------------

GOOD = {"cuzk": TENURE, "condensed": "mutex_wait_ms=10\nntt_kernels=287ms\nmutex_held_ms=1634\n",
        "kv": "INFO upload_ms=3 compute_ms=5\n" * 2, "lines": "step=1 h2d_ms=2.0 compute_ms=3.0\n" * 2}


def _around(fmt: str, bad: str):
    """The log of `fmt` with `bad` between good lines: (parsed, bad's line number), bad skipped alone."""
    good = GOOD[fmt]
    p = parsers.parse_log(good + bad + "\n" + good, fmt)
    n = good.count("\n") + 1
    assert p.skipped["line"].tolist() == [n]
    return p, n


NEGATIVE = [
    ("cuzk", "CUZK_TIMING: gpu_tid=0 barrier_wait_ms=-5"),
    ("cuzk", "CUZK_NTT_H: d_b_alloc=1ms ntt_kernels=-300ms"),
    ("cuzk", "2026-03-01T12:00:02.5Z  INFO e: FIN_TIMING finalizer partition worker_id=0 partition=Some(3) finish_ms=-4"),
    ("cuzk", "TIMELINE,5000,GPU_END,job-1,worker=1,partition=0,gpu_ms=-2770"),
    ("cuzk", "TIMELINE,5000,SYNTH_END,job-1,partition=0,synth_ms=-1"),
    ("condensed", "ntt_kernels=-287ms | msm=634ms"),
    ("kv", "INFO upload_ms=-3 compute_ms=5"),
    ("lines", "step=3 h2d_ms=2.0 compute_ms=-3.0"),
]


@pytest.mark.parametrize("fmt, bad", NEGATIVE)
def test_a_negative_time_is_damage(fmt, bad):
    p, n = _around(fmt, bad)
    assert "negative" in p.skipped["reason"].iloc[0]
    assert (p.components["value_ms"] >= 0).all()
    assert not (p.timeline["gpu_ms"] < 0).any() and not (p.timeline["synth_ms"] < 0).any()


# -- a key printed twice in one line --------------------------------------------------------------

REPEATED = [
    ("cuzk", "CUZK_TIMING: mutex_held_ms=3481 mutex_held_ms=100"),
    ("cuzk", "CUZK_TIMING: gpu_tid=0 h2d_ms=5 h2d_ms=7"),
    ("cuzk", "CUZK_TIMING: gpu_tid=0 gpu_tid=1 h2d_ms=5"),
    ("cuzk", "CUZK_TIMING: gpu_tid=0 h2d_ms=5 h2d_bytes=10 h2d_bytes=20"),
    ("cuzk", "CUZK_NTT_H: d_b_alloc=1ms ntt_kernels=300ms ntt_kernels=2ms"),
    ("cuzk", "2026-03-01T12:00:02.5Z  INFO e: GPU_TIMING hot_path worker_id=0 status_ms=1 status_ms=2"),
    ("cuzk", "2026-03-01T12:00:02.5Z  INFO e: GPU_TIMING hot_path worker_id=0 worker_id=1 status_ms=1"),
    ("cuzk", "TIMELINE,5000,GPU_END,job-1,worker=1,worker=2,gpu_ms=2770"),
    ("condensed", "ntt_kernels=287ms | msm=634ms | msm=1ms"),
    ("kv", "INFO upload_ms=3 upload=5ms"),
    ("lines", "step=3 h2d_ms=2.0 compute_ms=3.0 compute_ms=4.0"),
]


@pytest.mark.parametrize("fmt, bad", REPEATED)
def test_a_key_printed_twice_is_damage(fmt, bad):
    """One rule in every format: which of the two values is meant cannot be known, so the
    line is skipped (neither summed in the components nor half-used in the split)."""
    p, n = _around(fmt, bad)
    assert "printed twice in one line" in p.skipped["reason"].iloc[0]
    assert n not in set(p.components["line"]) and n not in set(p.timeline["line"])


def test_the_repeated_held_key_no_longer_splits_two_ways():
    """Before: components summed 3481 + 100 while the split took 3481 as held."""
    text = TENURE + OPEN + "CUZK_TIMING: mutex_held_ms=3481 mutex_held_ms=100\n" + TENURE
    a = analyze(Source.from_parsed(parsers.parse_log(text)))
    held = a.log.components.loc["mutex_held"]
    assert held["count"] == 2 and held["sum_ms"] == a.log.split["held_ms"] == 2 * 3481.0

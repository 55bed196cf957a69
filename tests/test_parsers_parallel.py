"""A big log is scanned in two processes; the result must equal the one-process scan."""

from __future__ import annotations

import pandas as pd
import pytest

from gpuscope import parsers
from gpuscope.parsers import logparse
from tests.conftest import EXAMPLES


def _frames(p):
    return p.components, p.records, p.timeline, p.skipped


@pytest.mark.parametrize("split", [0.5, 0.13, 0.97])
def test_two_process_scan_equals_one_process_scan(monkeypatch, tmp_path, split):
    text = (EXAMPLES / "cuzk_daemon.log").read_text()
    lines = text.splitlines()
    lines[700] = "CUZK_TIMING: mutex_held_ms=abc"  # damage on either side of the split
    lines[1200] = "CUZK_NTT_H: d_b_alloc=1ms ntt_kernels=12"
    f = tmp_path / "d.log"
    f.write_text("\n".join(lines) + "\n")
    one = parsers.parse_log(f)
    monkeypatch.setattr(logparse, "PARALLEL_MIN_CHARS", 0)
    monkeypatch.setattr(logparse, "PARALLEL_SPLIT", split)
    calls = []
    real = logparse._fork_scan
    monkeypatch.setattr(logparse, "_fork_scan", lambda *a: calls.append(a) or real(*a))
    two = parsers.parse_log(f)
    assert calls, "the two-process path did not run"
    for a, b in zip(_frames(one), _frames(two), strict=True):
        pd.testing.assert_frame_equal(a, b)
    assert (one.total_lines, one.timing_lines) == (two.total_lines, two.timing_lines)
    assert two.skipped["line"].tolist() == [701, 1201]


def test_kv_two_process_scan_without_held_key(monkeypatch):
    text = "".join(f"INFO step={i} upload_ms={i} compute_ms={2 * i}\n" for i in range(400))
    one = parsers.parse_log(text)
    monkeypatch.setattr(logparse, "PARALLEL_MIN_CHARS", 0)
    two = parsers.parse_log(text)
    assert len(two.records) == 400 and two.records["complete"].all()
    for a, b in zip(_frames(one), _frames(two), strict=True):
        pd.testing.assert_frame_equal(a, b)


def test_failed_child_falls_back_to_one_process(monkeypatch):
    text = (EXAMPLES / "cuzk_daemon.log").read_text()
    one = parsers.parse_log(text)
    monkeypatch.setattr(logparse, "PARALLEL_MIN_CHARS", 0)

    def fail_collect(child):  # the child is killed (or already done): its half is lost
        logparse._reap(child, kill=True)
        return None

    monkeypatch.setattr(logparse, "_collect", fail_collect)
    two = parsers.parse_log(text)
    for a, b in zip(_frames(one), _frames(two), strict=True):
        pd.testing.assert_frame_equal(a, b)

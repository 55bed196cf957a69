"""Copies at the line rate that run in turn with the compute: one cause from the log and the trace.

A PyTorch copy loop with pinned buffers, recorded on an H200 (tests/data/h200_foreign): its trace
says `copies_serialised` (copies_not_overlapped: copies at the line rate that could hide under the
kernels); its log had said `link` (h2d_bound at 99% of the line), although the log shows the same:
each step prints its whole, and the upload plus the compute fit within it. The log now names what
the trace names. What would make it fire falsely, each a test below: parts that overlap (upload
plus compute beyond the printed whole) and a log that prints no whole (the whole is then the sum
of its parts, which proves nothing of overlap) stay `link`, and so do copies in turn that outlast
the compute (overlap would leave the link the limit: the H200 read-back loop, whose trace,
recording and dmon all say `link`: tests/test_one_story_h200.py).
"""

from __future__ import annotations

import pytest

from gpuscope.analysis import analyze
from gpuscope.sources import open_source
from tests.conftest import DATA

RUN = DATA / "h200_foreign" / "runs" / "copy_pinned"
TRACE = DATA / "h200_foreign" / "traces" / "copy_pinned.json.gz"
GB = 1_610_612_736  # bytes per upload (the loop's 1.5 GiB)


def _h2d(a):
    (d,) = [d for d in a.findings if d.id == "h2d_bound"]
    return d


def test_the_recording_and_the_trace_of_pinned_copies_name_one_cause():
    rec = analyze(open_source(RUN))
    trace = analyze(open_source(TRACE))
    assert _h2d(rec).evidence["copies_could_hide_under_compute"] is True
    assert _h2d(rec).cause == "copies_serialised" == trace.document()["first_cause"]
    assert rec.document()["first_cause"] == "copies_serialised"
    assert not any("pin" in d.recommendation.lower() for d in rec.findings if d.id == "h2d_bound")


def _log(tmp_path, lines):
    p = tmp_path / "timing.log"
    p.write_text("".join(lines))
    return analyze(open_source(p, line_rate=55.0))


def _at_line(i: int, h2d_ms: float, compute_ms: float, step_ms: float | None) -> str:
    whole = f" step_ms={step_ms}" if step_ms is not None else ""
    return f"2026-12-01T09:00:{10 + i:02d}.000000Z step={i} h2d_ms={h2d_ms} compute_ms={compute_ms}{whole} h2d_bytes={GB}\n"


@pytest.mark.parametrize("why, step_ms", [("parts overlap: upload + compute beyond the whole", 100.0),
                                          ("no whole printed: cannot tell", None)])
def test_copies_at_the_line_rate_stay_link_bound_unless_shown_in_turn(tmp_path, why, step_ms):
    # 29.5 ms per 1.5 GiB: 54.6 GB/s, 99% of the given 55 GB/s line
    a = _log(tmp_path, [_at_line(i, 29.5, 90.0, step_ms) for i in range(8)])
    d = _h2d(a)
    assert d.evidence["copies_could_hide_under_compute"] is (False if step_ms else None), why
    assert d.cause == "link", why


def test_the_same_copies_in_turn_with_a_printed_whole_are_serialised(tmp_path):
    a = _log(tmp_path, [_at_line(i, 29.5, 90.0, 120.0) for i in range(8)])
    assert _h2d(a).evidence["copies_could_hide_under_compute"] is True and _h2d(a).cause == "copies_serialised"


def test_slow_copies_in_turn_are_still_an_upload(tmp_path):
    # 290 ms per 1.5 GiB: 5.6 GB/s, pageable-slow: the cause is the upload, whatever the order
    a = _log(tmp_path, [_at_line(i, 290.0, 90.0, 381.0) for i in range(8)])
    assert _h2d(a).cause == "upload"


def test_copies_in_turn_that_outlast_the_compute_stay_link_bound(tmp_path):
    # 29.5 ms of copies beside 20 ms of compute: hidden under it, the copies would still bound the step
    a = _log(tmp_path, [_at_line(i, 29.5, 20.0, 50.0) for i in range(8)])
    assert _h2d(a).evidence["copies_could_hide_under_compute"] is False and _h2d(a).cause == "link"

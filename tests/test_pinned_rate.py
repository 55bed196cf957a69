"""rules/pinned_rate.py (pinned_copies_slow): pinned host copies well below the line rate get a
finding about their rate; pinned copies at the line rate and small (latency-bound) copies get none."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from gpuscope.analysis.evidence import collect
from gpuscope.analysis.rules.pinned_rate import LARGE_COPY_BYTES
from gpuscope.analysis.rules.registry import run_rules
from gpuscope.analysis.trace_analysis import analyze_trace
from gpuscope.parsers.trace.kineto import read_trace
from tools.gen_trace import TraceBuilder

LINE = 55.5
MIB = 1 << 20
NSIGHT = Path(__file__).parents[2] / "shared" / "data" / "nsight"


def _copies(*, gbs: float, nbytes: int, n: int = 20, src: str = "Pinned", kind: str = "HtoD",
            kernel_us: float = 500.0) -> TraceBuilder:
    """A loop of `n` steps: one copy of `nbytes` at `gbs`, then a kernel of `kernel_us`."""
    b = TraceBuilder()
    t = 0.0
    for _ in range(n):
        dur = nbytes / (gbs * 1e3)
        if kind == "HtoD":
            b.memcpy(t, dur, nbytes, kind, src, "Device")
        else:
            b.memcpy(t, dur, nbytes, kind, "Device", src)
        b.kernel(t + dur + 2.0, kernel_us)
        t += dur + kernel_us + 10.0
    return b


def _findings(b: TraceBuilder, *, line: float = LINE, source: str = "option"):
    a = analyze_trace(read_trace(json.dumps(b.document())), line_rate_gbs=line, line_rate_source=source)
    return run_rules(collect(trace=a))


def _slow(ds):
    return [d for d in ds if d.id == "pinned_copies_slow"]


def test_pinned_uploads_at_half_the_line_get_a_finding_about_their_rate():
    ds = _findings(_copies(gbs=27.7, nbytes=64 * MIB))
    (d,) = _slow(ds)
    assert d.severity == "medium" and d.cause == "upload" and d.part == "trace"
    ev = d.evidence
    assert ev["gbs"] == pytest.approx(27.7, abs=0.05) and ev["share_of_line_rate"] == pytest.approx(0.499, abs=0.002)
    assert ev["count"] == 20 and ev["directions"]["HtoD"]["count"] == 20
    assert ev["concurrent_with_other_gpus_share"] is None  # one GPU
    assert "Pinning will not help" in d.recommendation and "pin_memory" not in d.recommendation
    assert not [x for x in ds if x.id == "pageable_memcpy"]


def test_pinned_readbacks_name_readback():
    (d,) = _slow(_findings(_copies(gbs=20.0, nbytes=64 * MIB, kind="DtoH")))
    assert d.cause == "readback" and list(d.evidence["directions"]) == ["DtoH"]


def test_pinned_copies_at_the_line_rate_get_no_rate_finding():
    # false fire guarded: pinned copies at 94% of the line run as fast as the link allows
    assert _slow(_findings(_copies(gbs=52.0, nbytes=64 * MIB))) == []


def test_a_few_tiny_pinned_copies_get_no_rate_finding():
    # false fire guarded: 64 KiB copies are latency-bound (their start-up is as long as their bytes),
    # even when slow and taking most of the span
    ds = _findings(_copies(gbs=3.0, nbytes=64 * 1024, n=5, kernel_us=5.0))
    assert _slow(ds) == []
    assert 64 * 1024 < LARGE_COPY_BYTES


def test_pageable_copies_are_left_to_pageable_memcpy():
    ds = _findings(_copies(gbs=10.0, nbytes=64 * MIB, src="Pageable"))
    assert _slow(ds) == [] and [d.id for d in ds][0] == "pageable_memcpy"


def test_an_assumed_line_rate_caps_it_at_low_and_says_so():
    # false fire guarded: a line rate assumed from the GPU's model (the trace names an H200) says
    # nothing of a link trained to a lower generation, which alone makes pinned copies this slow
    (d,) = _slow(_findings(_copies(gbs=27.7, nbytes=64 * MIB), source="default"))
    assert d.evidence["line_rate_source"] == "gpu_name"
    assert d.severity == "low" and any("assumed" in u for u in d.evidence["unseen"])


@pytest.mark.skipif(not NSIGHT.is_dir(), reason=f"the real Nsight exports are not at {NSIGHT}")
def test_the_h100_export_pinned_uploads_are_named_slow():
    """The real H100 export (shared/data/nsight/SOURCES.md): its pinned HtoD copies ran at 27.7 GB/s of
    a 50 GB/s line, and had only a LOW copies_not_overlapped. The rate from the test's own SQL query."""
    path = NSIGHT / "h100_2gpu_1s.sqlite"
    con = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)
    try:
        nbytes, ns = con.execute(
            "SELECT SUM(m.bytes), SUM(m.end - m.start) FROM CUPTI_ACTIVITY_KIND_MEMCPY m "
            "JOIN ENUM_CUDA_MEMCPY_OPER o ON o.id = m.copyKind JOIN ENUM_CUDA_MEM_KIND k ON k.id = m.srcKind "
            "WHERE o.name = 'CUDA_MEMCPY_KIND_HTOD' AND k.name = 'CUDA_MEMOPR_MEMORY_KIND_PINNED' AND m.bytes >= ?",
            (LARGE_COPY_BYTES,)).fetchone()
    finally:
        con.close()
    from gpuscope.parsers.trace.nsys_sqlite import read_nsys_sqlite

    a = analyze_trace(read_nsys_sqlite(path), line_rate_gbs=50.0, line_rate_source="option")
    ds = run_rules(collect(trace=a))
    (d,) = _slow(ds)
    assert d.severity == "medium" and ds[0] is d
    assert d.evidence["bytes"] == nbytes and d.evidence["gbs"] == pytest.approx(nbytes / ns, abs=0.01)
    assert d.evidence["share_of_line_rate"] == pytest.approx(nbytes / ns / 50.0, abs=0.001)

"""Findings whose evidence could also show the opposite (issue 33's "Done when", rule by rule):
each test below is an input that looks like a rule's case on its surface and is not, and shows
the rule stays silent (or LOW). The sample rules' and the log rules' other guards are named in
docs/ANALYZE.md's rule tables, the trace rules' in docs/TRACES.md."""

from __future__ import annotations

import json

from gpuscope import parsers
from gpuscope.analysis import analyze
from gpuscope.analysis.evidence import collect
from gpuscope.analysis.rules.registry import run_rules
from gpuscope.analysis.trace_analysis import analyze_trace
from gpuscope.parsers.trace.kineto import read_trace
from gpuscope.rolemodel import model_for
from gpuscope.sources.open import open_source
from tools.gen_trace import TraceBuilder


def _trace_findings(b: TraceBuilder):
    a = analyze_trace(read_trace(json.dumps(b.document())), line_rate_gbs=55.5, line_rate_source="option")
    a.findings = run_rules(collect(trace=a))
    return a, {d.id: d for d in a.findings}


def test_tiny_kernels_queued_back_to_back_are_not_launch_bound():
    """launch_bound's surface: 2,000 kernels of 2 us. But the host launched them faster than they
    ran (every 1 us), so they queued back to back and the GPU never waited on a launch."""
    b = TraceBuilder()
    end = 50.0
    for i in range(2000):
        start = max(end, 10.0 + i * 1.0 + 6.0)
        b.launch(10.0 + i * 1.0, start, 2.0, launch_dur=0.8, op="aten::mul")
        end = start + 2.0
    a, found = _trace_findings(b)
    assert a.activity["busy_fraction"] > 0.95
    assert "launch_bound" not in found and "host_starved" not in found


def test_a_busy_gpu_that_syncs_every_step_is_not_sync_bound():
    """sync_bound's surface: a cudaStreamSynchronize after every kernel (100 of them, 1 per
    kernel). But each kernel runs 5 ms and the next launch follows the sync within 10 us: the
    syncs cost the GPU almost nothing."""
    b = TraceBuilder()
    t = 10.0
    for _ in range(100):
        k = b.launch(t, t + 6.0, 5000.0, op="aten::mm")
        b.runtime("cudaStreamSynchronize", t + 7.0, k["dur"] + 5.0)
        t = k["ts"] - b.t0 + k["dur"] + 10.0
    a, found = _trace_findings(b)
    assert a.activity["busy_fraction"] > 0.95
    assert "sync_bound" not in found


def test_a_wait_without_a_lock_makes_no_lock_convoy(tmp_path):
    """lock_convoy's surface: a `wait` as long as the step's other work. But no lock is printed:
    the wait may be for data as well as for a lock (opposite cures), so no convoy is named."""
    log = tmp_path / "loop.log"
    log.write_text("".join(f"step={i} wait_ms={80 + i % 3} compute_ms=20 step_ms={101 + i % 3}\n" for i in range(12)))
    assert model_for(parsers.parse_log(log)).role_of("wait") is None
    assert not [d for d in analyze(open_source(str(log))).findings if d.id in ("lock_convoy", "host_stall")]


def test_pinned_copies_on_their_own_stream_under_the_kernels_are_overlapped():
    """copies_not_overlapped's surface: 50 pinned uploads of 16 MiB, a third of the span. But each
    runs on a copy stream while a kernel runs on the compute stream: they are hidden already."""
    b = TraceBuilder()
    t = 10.0
    for _ in range(50):
        b.launch(t, t + 6.0, 2000.0, op="aten::mm")
        b.memcpy(t + 100.0, 1500.0, 16 << 20, src="Pinned", corr=b.runtime("cudaMemcpyAsync", t + 8.0, 4.0),
                 stream=9)
        t += 2010.0
    a, found = _trace_findings(b)
    assert "copies_not_overlapped" not in found and "pageable_memcpy" not in found

"""Property tests for traces: any subset, order or damage of events reads and analyzes without
an undocumented exception, and the figures stay consistent with the events read."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpuscope.analysis.document import trace_doc
from gpuscope.analysis.evidence import collect
from gpuscope.analysis.evidence import intervals as iv
from gpuscope.analysis.rules.registry import run_rules
from gpuscope.analysis.trace_analysis import analyze_trace
from gpuscope.errors import GpuscopeError, NoDataError
from gpuscope.parsers.trace.kineto import read_trace
from tools.gen_trace import TraceBuilder


def _events() -> tuple[dict, list[dict]]:
    b = TraceBuilder()
    t = 0.0
    for step in range(3):
        b.annotation("data", t, 2000.0)
        t += 2010.0
        c = b.runtime("cudaMemcpyAsync", t, 800.0)
        b.memcpy(t + 5, 780.0, 1 << 22, "HtoD", "Pageable" if step % 2 else "Pinned", corr=c)
        t += 820.0
        for k in range(20):
            b.launch(t, t + 6.0, 3.0 if k % 3 else 40.0, op="aten::add")
            t += 9.0
        c = b.runtime("cudaMemcpyAsync", t, 3.0)
        b.memcpy(t + 4.0, 1.5, 4, "DtoH", "Device", "Pinned", corr=c)
        b.runtime("cudaStreamSynchronize", t + 3.5, 5.0)
        c = b.runtime("cudaMemsetAsync", t + 10, 2.0)
        b.memset(t + 12, 1.0, 4096, corr=c)
        t += 30.0
    doc = b.document()
    return doc, doc.pop("traceEvents")


DOC, EVENTS = _events()
DAMAGE = [("ts", "x"), ("dur", None), ("dur", -5), ("args", [1]), ("args", {"bytes": "many"}), ("pid", 1.5),
          ("name", 7), ("ph", None), ("cat", "gpu_memcpy")]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), keep=st.floats(0.05, 1.0), damaged=st.integers(0, 6))
def test_any_subset_shuffle_or_damage_reads_and_adds_up(seed, keep, damaged):
    rng = random.Random(seed)
    events = [dict(e, args=dict(e["args"])) if isinstance(e.get("args"), dict) else dict(e)
              for e in EVENTS if rng.random() < keep]
    rng.shuffle(events)
    for _ in range(damaged):
        if events:
            key, val = rng.choice(DAMAGE)
            rng.choice(events)[key] = val
    text = json.dumps({**DOC, "traceEvents": events})
    try:
        fr = read_trace(text)
        a = analyze_trace(fr, line_rate_gbs=55.0, line_rate_source="option")
        a.findings = run_rules(collect(trace=a))
    except NoDataError:
        return
    except GpuscopeError as e:  # only the documented errors, with one line
        assert "\n" not in e.one_line()
        return
    j = trace_doc(a)
    json.dumps(j, allow_nan=False)
    act = j["activity"]
    assert 0.0 <= act["busy_fraction"] <= 1.0 + 1e-9
    m = fr.gpu[fr.gpu["kind"] == "memcpy"]
    assert sum(r["count"] for r in j["memcpy"]) == len(m)
    assert sum(r["bytes"] for r in j["memcpy"]) == int(m["bytes"].sum())
    gaps = act["idle_gaps"]
    assert gaps["total_s"] <= act["device_span_s"] * (1 - act["busy_fraction"]) + 1e-9
    assert sum(gaps["by_cause_s"].values()) == pytest.approx(gaps["total_s"], abs=1e-9)
    stakes = [d.evidence["time_at_stake_ms"] for d in a.findings]
    assert stakes == sorted(stakes, reverse=True)
    assert fr.skipped_events + len(fr.gpu) + len(fr.host) + len(fr.gpu_annotations) <= len(events)


intervals = st.lists(st.tuples(st.floats(0, 1000), st.floats(0, 50)), max_size=30)


@settings(max_examples=200, deadline=None)
@given(a=intervals, q=intervals)
def test_covered_lengths_match_brute_force(a, q):
    s = np.array([x for x, _ in a], dtype=float)
    e = s + np.array([d for _, d in a], dtype=float)
    ms, me = iv.merge(s, e)
    qs = np.array([x for x, _ in q], dtype=float)
    qe = qs + np.array([d for _, d in q], dtype=float)
    got = iv.covered_lengths(qs, qe, ms, me)
    want = [sum(max(0.0, min(y, b) - max(x, a_)) for a_, b in zip(ms, me, strict=True))
            for x, y in zip(qs, qe, strict=True)]
    assert got == pytest.approx(want, abs=1e-6)
    # overlapping intervals with rates: bytes moved by t
    r = np.arange(1, s.size + 1, dtype=float)
    t = np.linspace(-10, 1100, 7)
    moved = iv.cumulative(s, e, r, t)
    brute = [sum(ri * max(0.0, min(tt, ei) - si) for si, ei, ri in zip(s, e, r, strict=True)) for tt in t]
    assert moved == pytest.approx(brute, abs=1e-6)

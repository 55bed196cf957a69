"""Mutated real lines through parse_log -> analyze -> JSON and tables: no exception escapes
except the documented GpuscopeError, and the JSON is always strict (no NaN)."""

from __future__ import annotations

import io
import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rich.console import Console

from gpuscope.analysis import analyze
from gpuscope.errors import GpuscopeError
from gpuscope.parsers import parse_log
from gpuscope.reports.console import render_summary
from gpuscope.reports.jsonout import to_json_text
from tests.analysis_builders import src
from tests.conftest import EXAMPLES

LINES = (EXAMPLES / "article_excerpt.log").read_text().splitlines() + [
    "CUZK_TIMING: pre_lock_cpu_ms=1 mutex_wait_ms=1149",
    "CUZK_NTT_H: d_b_alloc=700ms ntt_kernels=287ms coset_intt_sync=113ms msm_init=4ms msm_invoke=631ms msm_dtor=2ms total=1737ms",
    "CUZK_TIMING: gpu_tid=0 ntt_msm_h_ms=1737",
    "CUZK_TIMING: gpu_tid=1 barrier_wait_ms=1105",
    "CUZK_TIMING: gpu_tid=0 tail_msm_ms=198 gpu_total_ms=2336",
    "CUZK_TIMING: mutex_held_ms=2400 total_start_fn_ms=4215",
    "CUZK_TIMING: prep_msm_ms=1800",
    "TIMELINE,2226,GPU_START,job-1,worker=1,partition=1",
    "TIMELINE,4000,GPU_END,job-1,worker=1,partition=1,gpu_ms=1774",
    "2026-03-01T12:00:02.500000Z  INFO cuzk_core::engine: FIN_TIMING finalizer partition worker_id=0 partition=Some(3) finish_ms=410 total_ms=413",
]

mutation = st.sampled_from(["drop", "dup", "cut", "digit", "junk", "swap"])


@st.composite
def mutated_log(draw):
    lines = draw(st.lists(st.sampled_from(LINES), min_size=1, max_size=30))
    for _ in range(draw(st.integers(0, 6))):
        if not lines:
            break
        i = draw(st.integers(0, len(lines) - 1))
        m = draw(mutation)
        s = lines[i]
        if m == "drop":
            lines.pop(i)
        elif m == "dup":
            lines.insert(i, s)
        elif m == "cut":
            lines[i] = s[: draw(st.integers(0, len(s)))]
        elif m == "digit" and s:
            j = draw(st.integers(0, len(s) - 1))
            lines[i] = s[:j] + draw(st.sampled_from(["9", "-", "x", "99999999999", "0", " ", "|", "="])) + s[j + 1:]
        elif m == "junk":
            lines[i] = s + draw(st.text(max_size=20))
        elif m == "swap" and len(lines) > 1:
            j = draw(st.integers(0, len(lines) - 1))
            lines[i], lines[j] = lines[j], lines[i]
    return "\n".join(lines) + "\n"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_log())
def test_mutated_logs_never_crash_analysis(text):
    try:
        parsed = parse_log(text)
    except GpuscopeError:
        return
    a = analyze(src(parsed))
    j = json.loads(to_json_text(a))
    assert j["log"]["records"] == a.log.records >= 0
    assert j["log"]["split"]["inconsistent_records"] <= j["log"]["records"]
    for part in ("h2d_ms", "gpu_compute_ms", "cpu_stall_ms", "other_ms"):
        assert j["log"]["split"][part] is None or j["log"]["split"][part] >= 0 or "-" in text
    con = Console(width=100, color_system=None, file=io.StringIO())
    render_summary(a, con, records=True, verbose=True)

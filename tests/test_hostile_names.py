"""A log of many distinct component names (issue 22): memory must grow with what is kept,
not with names x records. A 700 KB log of 20,000 names took 3.2 GB and 24 s: the analysis
builds a dense records x components table (gpuscope/analysis/split.py, wide_table), which
belongs to the analysis helper. This test holds the scaling; it fails (xfail, strict) until
that table is sparse, and then passes and must lose its marker."""

from __future__ import annotations

import tracemalloc

import pytest

from gpuscope.analysis import AnalyzeOptions, analyze
from gpuscope.parsers import parse_log
from gpuscope.sources.source import Source


def _peak_mib(n: int) -> float:
    log = parse_log("".join(f"step={i} comp_{i}_ms=1.5 total_ms=3.0\n" for i in range(n)))
    src = Source.from_parsed(log)
    tracemalloc.start()
    try:
        analyze(src, AnalyzeOptions())
        return tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()


@pytest.mark.xfail(strict=True, reason="dense records x components table in gpuscope/analysis/split.py "
                                       "(wide_table): quadratic in distinct names; the analysis helper's fix")
def test_memory_grows_linearly_with_distinct_names():
    small, large = _peak_mib(1000), _peak_mib(2000)
    assert large < 2.5 * small, f"{small:.1f} MiB for 1,000 names, {large:.1f} MiB for 2,000: not linear"

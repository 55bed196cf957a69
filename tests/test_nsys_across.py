"""NsysSummary.across reads only the chunks of each host table whose rows reach a window (their
rowid ranges, recorded while the table was streamed), not every row (issue 32: at 10M kernels
the ten longest gaps' look-up scanned 65M rows): what it finds is what the scan of every row
finds, window by window, with many small chunks and windows anywhere in the trace."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from gpuscope.parsers.trace import nsys_columns
from gpuscope.parsers.trace.nsys_host import NsysSummary
from gpuscope.parsers.trace.nsys_sqlite import read_nsys_sqlite
from tests.test_nsys_sqlite import EXPORTS, _path, needs_exports


def _windows(fr, rng: np.random.Generator) -> dict[int, list[tuple[float, float]]]:
    """Per rank: windows around its kernels' gaps and at random places, a few very wide."""
    out = {}
    for rank, (lo, _, hi) in fr.summary().spans().items():
        w = [(lo - 5.0, lo + 1.0), (hi - 1.0, hi + 5.0), (lo, hi)]
        for _ in range(12):
            a = rng.uniform(lo, hi)
            w.append((a, a + rng.choice([0.5, 20.0, 3000.0])))
        out[rank] = w
    return out


@needs_exports
@pytest.mark.parametrize("name", EXPORTS)
def test_across_by_chunks_finds_what_a_scan_of_every_row_finds(name, monkeypatch):
    monkeypatch.setattr(nsys_columns, "CHUNK_ROWS", 512)  # (many chunks: ranges joined and left out)
    fr = read_nsys_sqlite(_path(name))
    s = fr.summary()
    assert isinstance(s, NsysSummary) and s.chunks and all(c.spans for c in s.chunks.values())
    scan = NsysSummary(s.path, {k: r for r, k in s.pkey.items()}, s.spans(), s._cover, s._calls, s.sql, s.names,
                       s.tables)  # (no chunks: every row)
    found = 0
    for rank, windows in _windows(fr, np.random.default_rng(7)).items():
        for got, want in zip(s.across(rank, windows), scan.across(rank, windows), strict=True):
            pd.testing.assert_frame_equal(got.reset_index(drop=True), want.reset_index(drop=True))
            found += len(got)
        calls = s.chunks[next(iter(s.chunks))]
        if len(calls.spans) > 8:  # (fewer rows read than all)
            narrow = [w for w in windows if w[1] - w[0] < 100]
            assert sum(b - a + 1 for a, b in calls.ranges(narrow, 2.0)) < sum(b - a + 1 for a, b in calls.spans)
    assert found > 0

"""host_summary.Cover, the cover of a process's host work merged chunk after chunk (issue 32): a
flush merges only the tail of the blocks the buffered rows reach, and the blocks are, bit for
bit, the one merge of every interval it was given, whatever order the chunks come in (in time
order, as a table's rows; from the start again, as the next table's; shuffled); and released once
the analysis has asked it of every gap."""

from __future__ import annotations

import json

import numpy as np
import pytest

from gpuscope.analysis.document import trace_doc
from gpuscope.analysis.trace_analysis import analyze_trace
from gpuscope.coverage import merge
from gpuscope.parsers.trace import host_summary
from gpuscope.parsers.trace.host_summary import Cover
from gpuscope.parsers.trace.nsys_sqlite import read_nsys_sqlite
from tests.test_nsys_sqlite import _path, needs_exports


def _intervals(rng: np.random.Generator, n: int, t0: float) -> tuple[np.ndarray, np.ndarray]:
    s = t0 + np.round(np.cumsum(rng.exponential(4.0, n)), 3)
    return s, s + np.round(rng.exponential(3.0, n) * rng.integers(0, 2, n), 3)  # (zero-length ones too)


@pytest.mark.parametrize("seed", range(4))
def test_cover_is_the_one_merge_of_everything(seed, monkeypatch):
    monkeypatch.setattr(host_summary, "MERGE_ROWS", 300)
    rng = np.random.default_rng(seed)
    tables = [_intervals(rng, 5000, 1e9), _intervals(rng, 4000, 1e9 + 50.0)]  # (the second from the start again)
    chunks = [(k, s[i:i + 256], e[i:i + 256]) for s, e in tables for i in range(0, s.size, 256)
              for k in (7,)]
    chunks += [(9, *c[1:]) for c in rng.permutation(np.array(chunks, dtype=object))[:12]]  # another process, shuffled
    cover = Cover()
    for key, s, e in chunks:
        cover.add(np.full(s.size, key), s, e)
    got = cover.done()
    for key in (7, 9):
        mine = [c for c in chunks if c[0] == key]
        want = merge(np.concatenate([c[1] for c in mine]), np.concatenate([c[2] for c in mine]))
        assert all(np.array_equal(x, y) for x, y in zip(got[key], want, strict=True))
    assert got[7][0].size > 100


@needs_exports
def test_the_cover_released_after_the_gaps_answers_them_again():
    """An export's cover goes once the gaps have asked it (analyze_trace: release_work): a second
    analysis of the same frames asks the same windows and gets the same answers (so the same
    document); other windows are refused, not answered from nothing."""
    fr = read_nsys_sqlite(_path("mfu_2gpu_before"))
    one, two = (analyze_trace(fr, line_rate_gbs=50.0, line_rate_source="test") for _ in range(2))
    assert fr.summary()._cover is None and len(one.gaps) and one.gaps["cover_host"].gt(0).any()
    assert one.gaps.equals(two.gaps) and json.dumps(trace_doc(one)) == json.dumps(trace_doc(two))
    with pytest.raises(RuntimeError, match="released"):
        fr.summary().work_cover(0, np.array([0.0]), np.array([1.0]))

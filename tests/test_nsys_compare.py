"""compare of two Nsight Systems reports: the change with intervals (issue 32), from the trace's own
samples (gpuscope/analysis/compare/trace_samples.py): each kernel's launches, each recurring
NVTX range's instances. Every count and median asserted is an independent SQL query's."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from gpuscope.analysis.compare.trace_samples import MIN_RANGES, trace_samples
from gpuscope.cli import app
from gpuscope.parsers.trace.nsys_sqlite import read_nsys_sqlite

NSIGHT = Path(__file__).parents[2] / "shared" / "data" / "nsight"
needs_exports = pytest.mark.skipif(not NSIGHT.is_dir(), reason=f"the real Nsight exports are not at {NSIGHT} "
                                   "(the CI lays shared/ beside the checkout)")
PAIR = ("mfu_2gpu_before", "mfu_2gpu_after")


def _sql(name: str, q: str, *args) -> list[tuple]:
    con = sqlite3.connect(f"{(NSIGHT / f'{name}.sqlite').as_uri()}?mode=ro", uri=True)
    try:
        return con.execute(q, args).fetchall()
    finally:
        con.close()


def _ms(rows) -> np.ndarray:
    return np.array([e - s for s, e in rows], dtype=float) / 1e6


@pytest.fixture(scope="module")
def pair() -> dict:
    r = CliRunner().invoke(app, ["compare", *(str(NSIGHT / f"{n}.sqlite") for n in PAIR), "--json"])
    assert r.exit_code == 0, r.stderr
    return json.loads(r.stdout)


@needs_exports
def test_the_pair_compares_a_recurring_nvtx_range_with_its_interval(pair):
    """ncclGroupEnd (the range around each batch of NCCL sends and receives) recurs in both reports."""
    q = ('SELECT n.start, n."end" FROM NVTX_EVENTS n LEFT JOIN StringIds s ON s.id = n.textId '
         "WHERE n.eventType = 59 AND coalesce(n.text, s.value) = 'ncclGroupEnd' AND n.\"end\" IS NOT NULL")
    a, b = (_ms(_sql(n, q)) for n in PAIR)
    row = pair["components"]["range ncclGroupEnd"]
    assert (row["a_count"], row["b_count"]) == (len(a), len(b)) and len(a) >= MIN_RANGES
    assert row["a_median_ms"] == pytest.approx(float(np.median(a)), rel=1e-9)
    assert row["b_median_ms"] == pytest.approx(float(np.median(b)), rel=1e-9)
    assert row["ratio"] == pytest.approx(np.median(b) / np.median(a), rel=1e-9)
    assert row["ci_low"] <= row["ratio"] <= row["ci_high"]


@needs_exports
def test_the_pair_compares_its_top_kernel_launch_by_launch(pair):
    """The kernel of most GPU time in the "before" report (SQL), its launches on each side."""
    top = ("SELECT s.value FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = k.demangledName "
           'GROUP BY s.value ORDER BY sum(k."end" - k.start) DESC LIMIT 1')
    (name,), = _sql(PAIR[0], top)
    q = ('SELECT k.start, k."end" FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = k.demangledName '
         "WHERE s.value = ?")
    a, b = (_ms(_sql(n, q, name)) for n in PAIR)
    rows = [r for k, r in pair["components"].items() if k.startswith("kernel ")
            and (r["a_count"], r["b_count"]) == (len(a), len(b))
            and r["a_median_ms"] == pytest.approx(float(np.median(a)), rel=1e-9)
            and r["b_median_ms"] == pytest.approx(float(np.median(b)), rel=1e-9)]
    assert len(rows) == 1 and rows[0]["ci_low"] <= rows[0]["ratio"] <= rows[0]["ci_high"]
    # the verdict still reads the GPU activity (no steps: no records to call faster or slower)
    assert pair["a"]["format"] == "trace" and pair["a"]["partitions"] == 0


def test_a_range_that_opens_once_gives_no_samples(tmp_path):
    """What would make a range row fire falsely: one instance (a ProfilerStep#12, the small export's
    "upload") set against another side's one instance is no interval. It gives no row."""
    from tests.test_nsys_sqlite import _small_export

    got = trace_samples(read_nsys_sqlite(_small_export(tmp_path / "small.sqlite")))
    assert not any(k.startswith("range ") for k in got)
    assert list(got) == []  # the one kernel launched once: no kernel row either

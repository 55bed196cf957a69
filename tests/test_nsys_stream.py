"""The host tables streamed together (issue 32): _Reader.streams takes the tables' chunks in time
order across them, so the host cover grows at its end (read one table after another, the NVTX
ranges started from the capture's beginning again and every merge reached back over the calls'
blocks), and the median launch interval comes from the launch starts the pass reads anyway, the
figure `lag()` over each thread's launches in SQL gave (that query cost ~50 s of CPU at 10M)."""

from __future__ import annotations

import sqlite3

import numpy as np
import pytest

from gpuscope.arrays import median
from gpuscope.parsers.trace import nsys_columns
from gpuscope.parsers.trace.nsys_host import CALL_TABLES, LAUNCH
from gpuscope.parsers.trace.nsys_sqlite import _Reader, read_nsys_sqlite
from tests.test_nsys_sqlite import EXPORTS, _path, needs_exports


def _lag_interval(path, summary) -> float | None:
    """The SQL form the reader used before: lag() over each thread's launches, their median."""
    sel = []
    for t, _ in CALL_TABLES:
        q = summary.sql.get(t)
        ids = [i for i, n in summary.names.get(t, {}).items() if LAUNCH in n]
        if q and ids:
            sel.append(f"SELECT {q['gtid']} AS g, {q['start']} / 1e3 AS s FROM {t} "
                       f"WHERE ({q['valid']}) AND {q['name']} IN ({', '.join(map(str, ids))})")
    if not sel:
        return None
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    d = np.array([x for (x,) in con.execute(
        f"SELECT d FROM (SELECT s - lag(s) OVER (PARTITION BY g ORDER BY s) AS d FROM "
        f"({' UNION ALL '.join(sel)})) WHERE d IS NOT NULL")], dtype=np.float64)
    con.close()
    return float(median(d)) if d.size else None


@needs_exports
@pytest.mark.parametrize("name", EXPORTS)
def test_launch_interval_is_the_lag_query_s(name, monkeypatch):
    monkeypatch.setattr(nsys_columns, "CHUNK_ROWS", 512)  # (many chunks, threads split across them)
    s = read_nsys_sqlite(_path(name)).summary()
    want = _lag_interval(_path(name), s)
    assert s.launch_interval_us() == want
    if name == "h100_2gpu_1s":
        assert want is not None and want > 0


@needs_exports
def test_chunks_come_in_time_order_across_the_host_tables(monkeypatch):
    monkeypatch.setattr(nsys_columns, "CHUNK_ROWS", 256)
    seen: list[tuple[str, int]] = []
    real = _Reader.streams

    def spy(self, specs):
        for sp in specs:
            fn, table = sp.fn, sp.table
            sp.fn = lambda block, texts, fn=fn, table=table: (seen.append((table, int(block[:, 1].min()))),
                                                               fn(block, texts))
        return real(self, specs)

    monkeypatch.setattr(_Reader, "streams", spy)
    fr = read_nsys_sqlite(_path("h100_2gpu_1s"))
    tables = [t for t, _ in seen]
    assert len(set(tables)) >= 2
    # interleaved, not one table after another: the tables alternate more than once each
    assert sum(a != b for a, b in zip(tables, tables[1:], strict=False)) > len(set(tables))
    # each table's chunks in its own (rowid) order; across tables by their earliest start
    for t in set(tables):
        assert len(fr.summary().chunks[t].spans) == tables.count(t)
    firsts = [s for _, s in seen]
    assert sum(b < a for a, b in zip(firsts, firsts[1:], strict=False)) <= len(firsts) // 4


def test_rowid_column_is_the_rows_own_with_gaps_and_filtered_rows(monkeypatch):
    """iter_chunks prints a rowid column only for a chunk with rows missing (deleted rowids, rows its
    `where` leaves out); a full chunk's rowids are lo..hi. Either way they are the rows' own."""
    monkeypatch.setattr(nsys_columns, "CHUNK_ROWS", 64)
    con = sqlite3.connect(":memory:")
    con.execute("CREATE TABLE t (v INTEGER)")
    con.executemany("INSERT INTO t (rowid, v) VALUES (?, ?)", [(i, i % 7) for i in range(1, 1001)])
    con.execute("DELETE FROM t WHERE rowid BETWEEN 300 AND 340 OR rowid = 777")  # gaps in the rowids
    for where in ("1", "v != 3"):  # every row, then a seventh of them left out
        got = np.concatenate([b for b, _ in nsys_columns.iter_chunks(con, "t", {"v": "v", "r": " rowid "}, where)])
        want = np.array(con.execute(f"SELECT v, rowid FROM t WHERE {where} ORDER BY rowid").fetchall())
        assert np.array_equal(got, want)

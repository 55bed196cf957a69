"""The GPU frame built in place (parsers/trace/nsys_gpu.py; issue 32): the kernels, copies and
memsets tables read together into per-(process, device) buckets, each row written once no unread
row can come before it. The frame must be what a stable sort by (rank, device, start) of the
tables stacked in table order gives, rowid order among a table's ties, whether the tables come in
start order or not, in chunks of any size, and with ids that outgrow a narrow dtype mid-read."""

from __future__ import annotations

import sqlite3

import numpy as np
import pandas as pd
import pytest

from gpuscope.parsers.trace import nsys_columns
from gpuscope.parsers.trace.nsys_sqlite import (
    COPY_KINDS_DOC,
    MEM_KINDS_DOC,
    _copy_names,
    _kind,
    read_nsys_sqlite,
)
from tests.test_nsys_sqlite import SCHEMA

MEMSET = """CREATE TABLE CUPTI_ACTIVITY_KIND_MEMSET (start INTEGER NOT NULL, "end" INTEGER NOT NULL,
    deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER,
    globalPid INTEGER, bytes INTEGER NOT NULL, memKind INTEGER);"""
PIDS = (7, 9)
NAMES = {10: "gemm", 11: "softmax", 12: "zeta_kernel", 13: "alpha_kernel"}


def _rows(rng, n, shuffled):
    """n events: a process, a device, a start on a coarse grid (ties within and across tables), a
    correlation id that passes 2**15 late in the table."""
    start = np.sort(rng.integers(0, n // 2, n)) * 1000
    if shuffled:
        start = rng.permutation(start)
    pid = rng.choice(PIDS, n)
    dev = rng.integers(0, 3, n)
    corr = np.where(np.arange(n) > n * 3 // 4, 40_000 + np.arange(n), np.arange(n))
    return start, pid, dev, corr


def _export(path, n, shuffled, seed=0):
    rng = np.random.default_rng(seed)
    con = sqlite3.connect(path)
    con.executescript(SCHEMA + MEMSET)
    con.executemany("INSERT INTO StringIds VALUES (?, ?)", NAMES.items())
    for table, k in (("KERNEL", n), ("MEMCPY", n // 3), ("MEMSET", n // 5)):
        start, pid, dev, corr = _rows(rng, k, shuffled)
        for i in range(k):
            g = (1 << 48) | (int(pid[i]) << 24)
            common = (int(start[i]), int(start[i]) + 500 + i % 7, int(dev[i]), 1, 3 + i % 4, int(corr[i]), g)
            if table == "KERNEL":
                con.execute("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                            (*common, 10 + i % 5, 10))  # (id 14: no StringIds text)
            elif table == "MEMCPY":
                con.execute("INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                            (*common, 1000 + i, 1 + i % 3, i % 2, 2))
            else:
                con.execute("INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                            (*common, 64 * i, i % 3))
    con.commit()
    con.close()
    return path


def _expected(path) -> pd.DataFrame:
    """The rows as a stable sort of the three tables stacked (kernels, copies, memsets; rowid order) gives."""
    con = sqlite3.connect(path)
    parts = []
    for kind, table, extra in (("kernel", "KERNEL", "demangledName, NULL, NULL, NULL"),
                               ("memcpy", "MEMCPY", "bytes, copyKind, srcKind, dstKind"),
                               ("memset", "MEMSET", "bytes, memKind, NULL, NULL")):
        q = f'SELECT globalPid >> 24, deviceId, streamId, start, "end", correlationId, {extra} ' \
            f"FROM CUPTI_ACTIVITY_KIND_{table} ORDER BY rowid"
        for pid, dev, stream, s, e, corr, a, b, c, d in con.execute(q):
            if kind == "kernel":
                name, direction, memory, nbytes = NAMES.get(a, "<unnamed kernel>"), "", "", np.nan
            elif kind == "memcpy":
                direction, memory, name = _copy_names(b, c, d, COPY_KINDS_DOC, MEM_KINDS_DOC)
                nbytes = float(a)
            else:
                name, direction, memory = f"Memset ({MEM_KINDS_DOC[b]})", "", _kind(MEM_KINDS_DOC[b])
                nbytes = float(a)
            parts.append((PIDS.index(pid & 0xFFFFFF), dev, stream, kind, name, s / 1e3, (e - s) / 1e3, corr, nbytes,
                          direction, memory))
    con.close()
    cols = ["rank", "device", "stream", "kind", "name", "ts_us", "dur_us", "correlation", "bytes", "direction",
            "host_memory"]
    df = pd.DataFrame(parts, columns=cols)
    return df.sort_values(["rank", "device", "ts_us"], kind="stable").reset_index(drop=True)


@pytest.mark.parametrize(("shuffled", "chunk"), [(False, 64), (True, 64), (False, 1 << 16), (True, 1000)])
def test_the_frame_is_the_stable_sort_of_the_tables_stacked(tmp_path, monkeypatch, shuffled, chunk):
    path = _export(tmp_path / "g.sqlite", 3000, shuffled)
    monkeypatch.setattr(nsys_columns, "CHUNK_ROWS", chunk)
    gpu = read_nsys_sqlite(path).gpu
    want = _expected(path)
    got = gpu[list(want.columns)].astype({c: object for c in ("kind", "name", "direction", "host_memory")})
    pd.testing.assert_frame_equal(got.astype({c: "int64" for c in ("rank", "device", "stream", "correlation")}),
                                  want.astype({c: object for c in ("kind", "name", "direction", "host_memory")}),
                                  check_exact=True)
    assert gpu["correlation"].dtype == np.int32 and gpu["rank"].dtype == np.int8 and gpu["stream"].dtype == np.int8
    for c in ("kind", "name", "direction", "host_memory"):  # (the used names only, sorted)
        cats = list(gpu[c].cat.categories)
        assert cats == sorted(set(want[c])) and gpu[c].cat.codes.dtype == np.int8


def test_an_out_of_order_table_is_sorted_not_refused(tmp_path, monkeypatch):
    """One kernel written before an earlier one, past the chunk it came in: its bucket is sorted at the end."""
    path = _export(tmp_path / "g.sqlite", 600, shuffled=False)
    con = sqlite3.connect(path)
    con.execute("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (5, 900, 1, 1, 3, 77, ?, 11, 11)", ((1 << 48) | (7 << 24),))
    con.commit()
    con.close()
    monkeypatch.setattr(nsys_columns, "CHUNK_ROWS", 50)
    gpu = read_nsys_sqlite(path).gpu
    pd.testing.assert_series_equal(gpu["ts_us"], _expected(path)["ts_us"], check_exact=True)
    first = gpu[(gpu["rank"] == 0) & (gpu["device"] == 1)].iloc[0]
    assert (first["ts_us"], first["correlation"], first["name"]) == (0.005, 77, "softmax")

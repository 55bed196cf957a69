"""An NVTX range's key (parsers/trace/nvtx_text.py, issue 32): range_key's few distinct texts,
decoded in Python, give every row the class nvtx_class gives it in SQL and the name its text to
the first comma gives, on texts of every form (emit_nvtx's two, near misses, odd characters) and
on the real exports' ranges."""

from __future__ import annotations

import random
import shutil
import sqlite3

import pytest

from gpuscope.parsers.trace.nsys_sqlite import read_nsys_sqlite
from gpuscope.parsers.trace.nvtx_text import EMIT_NVTX, decode_key, name_sql, nvtx_class, range_key
from tests.test_nsys_sqlite import EXPORTS, _path, needs_exports

FORMS = ["aten::mm, op_id = 3", "aten::mm, seq = 12, op_id = 345", "aten::mm, seq = 12, op_id = 345, sizes = [[1]]",
         "a, seq = 1x, op_id = 3", "x, seq = 1, foo, op_id = 3", ", op_id = 3", "op_id", "aten::mm,op_id=3",
         "a, op_id = ", "a, op_id = x", "plain", "a,b, op_id = 3", "a, seq = , op_id = 3", "a, seq = 5, op_id = ", "",
         "a, op_id = 3, op_id = 4", "a, seq = 5, op_id = 7x", "name with op_id", ", seq = 1, op_id = 2", "a, op_id = 9",
         "a, op_id = 0junk", "a, op_id = 12345678901234567890", "é, op_id = 1", "a\x1d1, op_id = 2", "b1x, op_id = 3",
         "a, seq = 3, op_id = 4, seq = 5", "a, op_id = 3 , seq = 4", "data_loader, op_id = 7", "a, seq = 12", "12345",
         "a, op_id =  3", "a, op_id = 3, sizes = [[2, 3]], input_op_ids = [1]", "a, , op_id = 3", "x, seq = 0, op_id = 0"]


def _random_text(rng: random.Random) -> str:
    parts = ["aten::mm", "a", ",", ", ", "seq", " = ", "op_id", "1", "23", "x", ", op_id = ", ", seq = ", "é", " "]
    return "".join(rng.choice(parts) for _ in range(rng.randint(0, 8)))


def _mismatches(con: sqlite3.Connection, table: str) -> list[tuple]:
    rows = con.execute(f"SELECT text, {nvtx_class('text')}, {name_sql('text')}, {range_key('text')} FROM {table}")
    return [(t, c, n, k) for t, c, n, k in rows if decode_key(k) != ((2, None) if t is None else (c, n))]


def test_the_key_decodes_to_the_class_and_name_sql_gives():
    con = sqlite3.connect(":memory:")
    con.execute("CREATE TABLE t (text TEXT)")
    rng = random.Random(7)
    texts = FORMS + [_random_text(rng) for _ in range(20000)] + [None]
    con.executemany("INSERT INTO t VALUES (?)", [(x,) for x in texts])
    assert _mismatches(con, "t") == []
    # (the forms cover every class, and the class-1 texts are EMIT_NVTX's)
    classes = dict(con.execute(f"SELECT text, {nvtx_class('text')} FROM t WHERE text IS NOT NULL"))
    assert {classes[x] for x in FORMS} == {0, 1, 2}
    assert all(EMIT_NVTX.match(x) for x, c in classes.items() if c == 1)


def test_keys_are_few_where_the_texts_are_not():
    con = sqlite3.connect(":memory:")
    con.execute("CREATE TABLE t (text TEXT)")
    con.executemany("INSERT INTO t VALUES (?)", [(f"aten::{op}, op_id = {i}",) for i, op in
                                                 enumerate(["mm", "add", "view"] * 1000)] +
                    [(f"aten::mm, seq = {i}, op_id = {i + 1}",) for i in range(3000)])
    assert con.execute(f"SELECT count(DISTINCT {range_key('text')}) FROM t").fetchone()[0] <= 3 * 10 + 1


@needs_exports
@pytest.mark.parametrize("name", EXPORTS)
def test_the_key_on_the_real_exports(name):
    con = sqlite3.connect(f"file:{_path(name)}?mode=ro", uri=True)
    if not con.execute("SELECT count(*) FROM sqlite_master WHERE name = 'NVTX_EVENTS'").fetchone()[0]:
        pytest.skip(f"{name} has no NVTX_EVENTS table")
    assert _mismatches(con, "NVTX_EVENTS") == []


@needs_exports
def test_texts_with_the_readers_own_separators_read_as_the_regular_expression_says(tmp_path):
    """A real export's ranges given the characters the pass joins and marks with (char 31 between
    a chunk's texts, char 30 for NULL, char 29), a leading 'b1' (the key's own form), NULL and empty
    texts: each range is an operator exactly where EMIT_NVTX matches its text."""
    path = tmp_path / "odd.sqlite"
    shutil.copy(_path("mfu_2gpu_before"), path)
    con = sqlite3.connect(path)
    for sql in ("text = text || char(31) || 'x' WHERE rowid % 7 = 0", "text = char(30) || text WHERE rowid % 11 = 0",
                "text = char(29) || '1' || text WHERE rowid % 13 = 0", "text = NULL WHERE rowid % 17 = 0",
                "text = 'aten::item, op_id = 5' || char(31) WHERE rowid % 19 = 0", "text = 'b1' || text WHERE rowid % 23 = 0",
                "text = '' WHERE rowid % 29 = 0"):
        con.execute(f"UPDATE NVTX_EVENTS SET {sql}")
    con.commit()
    texts = [t for (t,) in con.execute('SELECT coalesce(text, (SELECT value FROM StringIds WHERE id = textId)) '
                                       'FROM NVTX_EVENTS WHERE eventType IN (59, 60) AND "end" IS NOT NULL')]
    con.close()
    ops = sum(1 for t in texts if t and EMIT_NVTX.match(t))
    fr = read_nsys_sqlite(path)
    assert 0 < ops < len(texts)
    assert (fr.counts["cpu_op"], fr.counts["user_annotation"]) == (ops, len(texts) - ops)

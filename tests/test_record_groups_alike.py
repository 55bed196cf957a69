"""parsers/log/lines/records.py _record_groups' shortcut (codeops.every_row_alike: every row
prints the same names and counter keys in the same order, so every group has one shape) gives
what the hashing of every group's names gives, on logs where it applies and where it almost
does (a line of another shape, a counter missing, names in another order)."""

from __future__ import annotations

import numpy as np
import pytest

from gpuscope.parsers.log import codeops, logparse, reader
from gpuscope.parsers.log.lines import records as linerecords


def kv_lines(n: int, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    return [f"2026-11-30T14:00:{i % 60:02d}.000Z INFO step={i} upload={rng.uniform(1, 9):.2f}ms "
            f"kernel={rng.uniform(20, 50):.2f}ms total={rng.uniform(60, 90):.2f}ms" for i in range(n)]


def variants():
    base = kv_lines(40, 0)
    yield "alike", base
    yield "one other line", base[:20] + ["2026-11-30T14:01:00.000Z INFO eval loss=0.3 took=2.5s"] + base[20:]
    yield "names reordered", base[:10] + [base[10].replace("upload=", "x=").replace("kernel=", "upload=")
                                          .replace("x=", "kernel=")] + base[11:]
    yield "counter missing", base[:5] + [base[5].replace(" step=5", "")] + base[6:]
    yield "epoch lines", [f"[epoch {i // 10}] step {i} data: {1 + i % 3}.5ms compute: 30.{i % 7}ms" for i in range(50)]


def scan(text: str):
    return logparse.scan_input(reader.LogInput.from_text(text, "t"), "lines", "")[0]


@pytest.mark.parametrize("name,lines", list(variants()), ids=[v[0] for v in variants()])
def test_the_shortcut_groups_as_the_hashing_does(name, lines, monkeypatch):
    text = "\n".join(lines) + "\n"
    fast = scan(text)
    monkeypatch.setattr(linerecords, "every_row_alike", lambda *a: False)
    slow = scan(text)
    np.testing.assert_array_equal(fast.meta, slow.meta)
    np.testing.assert_array_equal(fast.held[0], slow.held[0])
    np.testing.assert_array_equal(fast.held[1], slow.held[1])


def test_every_row_alike_reads_the_layout():
    gid = np.arange(3)
    counts = np.array([2, 2, 2])
    codes = np.array([0, 1, 0, 1, 0, 1])
    assert codeops.every_row_alike(gid, codes, counts, np.zeros(0, int), np.zeros(0, int))
    assert not codeops.every_row_alike(gid, np.array([0, 1, 1, 0, 0, 1]), counts, np.zeros(0, int), np.zeros(0, int))
    assert not codeops.every_row_alike(np.array([0, -1, 1]), codes, counts, np.zeros(0, int), np.zeros(0, int))
    assert not codeops.every_row_alike(gid, codes[:5], np.array([2, 2, 1]), np.zeros(0, int), np.zeros(0, int))
    crow, ccode = np.array([0, 1, 2]), np.array([5, 5, 5])
    assert codeops.every_row_alike(gid, codes, counts, crow, ccode)
    assert not codeops.every_row_alike(gid, codes, counts, np.array([0, 1, 1]), ccode)
    assert not codeops.every_row_alike(gid, codes, counts, crow, np.array([5, 5, 6]))

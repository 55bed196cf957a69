"""A log is read in line-aligned chunks (parsers/log/reader.py); the result must not depend on
where the chunks end, for files, bytes and text alike."""

from __future__ import annotations

import pandas as pd
import pytest

from gpuscope import parsers
from gpuscope.parsers.log import reader
from tests.conftest import EXAMPLES


def _frames(p):
    return p.components, p.records, p.timeline, p.skipped, p.quantities


def _same(one, two):
    for a, b in zip(_frames(one), _frames(two), strict=True):
        pd.testing.assert_frame_equal(a, b)
    assert (one.total_lines, one.timing_lines, one.format) == (two.total_lines, two.timing_lines, two.format)


@pytest.mark.parametrize("size", [1, 333, 4096, 65536])
def test_chunked_scan_equals_one_chunk(monkeypatch, tmp_path, size):
    text = (EXAMPLES / "cuzk_daemon.log").read_text()
    lines = text.splitlines()
    lines[700] = "CUZK_TIMING: mutex_held_ms=abc"  # damage in some chunk
    lines[1200] = "CUZK_NTT_H: d_b_alloc=1ms ntt_kernels=12"
    f = tmp_path / "d.log"
    f.write_text("\n".join(lines) + "\n")
    one = parsers.parse_log(f)
    monkeypatch.setattr(reader, "CHUNK", size)
    for src in (f, f.read_bytes(), f.read_text()):
        two = parsers.parse_log(src)
        _same(one, two)
        assert two.skipped["line"].tolist() == [701, 1201]


@pytest.mark.parametrize("size", [7, 100, 10_000])
def test_kv_chunked_scan_without_held_key(monkeypatch, size):
    text = "".join(f"INFO step={i} upload_ms={i} compute_ms={2 * i}\n" for i in range(400))
    one = parsers.parse_log(text)
    monkeypatch.setattr(reader, "CHUNK", size)
    two = parsers.parse_log(text)
    assert len(two.records) == 400 and two.records["complete"].all()
    _same(one, two)


def test_a_line_longer_than_a_chunk(monkeypatch, tmp_path):
    long = "CUZK_TIMING: gpu_tid=0 " + " ".join(f"x{i}_ms={i}" for i in range(2000))
    text = "CUZK_TIMING: pre_lock_cpu_ms=1 mutex_wait_ms=5\n" + long + "\nCUZK_TIMING: mutex_held_ms=9\n"
    f = tmp_path / "l.log"
    f.write_text(text)
    one = parsers.parse_log(text)
    monkeypatch.setattr(reader, "CHUNK", 64)
    _same(one, parsers.parse_log(f))
    assert len(one.components) == 2003

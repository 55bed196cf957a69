"""The `lines` format's two paths give the same result: the compiled shape splitter with the
plans replayed in numpy (parsers/log/lines/replay.py) and the Python reader alone, line by line
(GPUSCOPE_PURE_SCANNER=1): the same Scan, the same ParsedLog and the same `analyze --json`,
over every log in tests/ and examples/ read as `lines`, the bench's generated logs and the
fuzzers' mutated ones. Every shape is replayed here however few its lines (MIN_LINES 1)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from gpuscope import parsers
from gpuscope.errors import InputError, NoDataError
from gpuscope.parsers.log import logparse, reader, scan
from gpuscope.parsers.log.lines import replay as linereplay
from tests.conftest import EXAMPLES, REPO
from tests.test_fuzz_lines import mutated, repeated
from tests.test_scanner_paths import parse, same

NATIVE = scan.compiled_scanner()
pytestmark = pytest.mark.skipif(NATIVE is None or not hasattr(NATIVE, "Shapes"),
                                reason="the compiled scanner is not built here")
SUFFIXES = (".log", ".txt", ".stdout", ".stderr")
LOGS = sorted(p for root in (REPO / "tests", EXAMPLES) for p in root.rglob("*")
              if p.is_file() and p.name.endswith(SUFFIXES) and ".venv" not in p.parts)


@pytest.fixture(autouse=True)
def _every_shape(monkeypatch):
    monkeypatch.setattr(linereplay, "MIN_LINES", 1)


def scan(path_or_text, pure: bool):
    old = os.environ.get(logparse.PURE_ENV)
    os.environ[logparse.PURE_ENV] = "1" if pure else "0"
    try:
        inp = (reader.LogInput.from_text(path_or_text, "t") if isinstance(path_or_text, str)
               else reader.LogInput("f", path=path_or_text))
        return logparse.scan_input(inp, "lines", "")[0]
    finally:
        if old is None:
            os.environ.pop(logparse.PURE_ENV, None)
        else:
            os.environ[logparse.PURE_ENV] = old


def same_scan(a, b):
    keep = [0, 2, 3, 4, 5, 6, 7]  # (the slots are numbered otherwise: their times are compared below)
    np.testing.assert_array_equal(a.meta[:, keep], b.meta[:, keep], err_msg="meta")
    for attr in ("codes", "values", "qrow", "qcodes", "qvalues", "aux", "tol"):
        np.testing.assert_array_equal(getattr(a, attr), getattr(b, attr), err_msg=attr)
    np.testing.assert_array_equal(a.ts[a.meta[:, 1]] if len(a.meta) else a.ts[:0],
                                  b.ts[b.meta[:, 1]] if len(b.meta) else b.ts[:0], err_msg="ts")
    assert a.tables.names.list == b.tables.names.list
    assert a.tables.qnames.list == b.tables.qnames.list
    assert (a.skip_line, a.skip_reason, a.skip_text, a.timing_lines, a.notes) == (
        b.skip_line, b.skip_reason, b.skip_text, b.timing_lines, b.notes)
    for k in a.timeline:
        if k != "slot":
            np.testing.assert_array_equal(a.timeline[k], b.timeline[k], err_msg=k)


def both(src) -> None:
    a, b = parse(src, "lines", pure=True), parse(src, "lines", pure=False)
    same(a, b)
    if not isinstance(a, str):
        same_scan(scan(src, True), scan(src, False))


@pytest.mark.parametrize("path", LOGS, ids=lambda p: str(p.relative_to(REPO)))
def test_every_log_of_the_repository(path):
    both(path)


def _generated(shape: str, n: int, tmp_path) -> str:
    sys.path.insert(0, str(REPO / "tools"))
    try:
        from bench_scale import write_lines
    finally:
        sys.path.pop(0)
    p = tmp_path / f"{shape}.log"
    write_lines(p, n, shape)
    return p.read_text()


@pytest.mark.parametrize("shape", ["progressmeter", "datacompute", "kvunits", "jsonl"])
def test_the_bench_logs(shape, tmp_path):
    both(_generated(shape, 3000, tmp_path))


def test_chunks_and_a_cut_line(tmp_path, monkeypatch):
    """Many chunks (the plans and the keys printed with a unit carry over), a line whose last
    bare number follows a unit earlier (a cut line), damage, carriage returns, quotes."""
    monkeypatch.setattr(reader, "CHUNK", 4096)
    rows = []
    for i in range(3000):
        rows.append(f"step {i} data: {i % 97}.5ms compute: {i % 13}ms step: {i % 7 + 3}")
        rows.append(f"iter {i}: prep {i % 5}.0 ms, h2d 2.0 ms, kernel {2 + i % 5}.{i % 4} ms")  # (a sum, or not)
        if i == 1500:
            rows.append(f"step {i} data: 1.5ms compute: 2ms step: 9ms")
        if i % 400 == 7:
            rows += [f"step {i} data: x ms", f"it {i}\r step_ms={i}\r", f"{{'loss': 0.{i}, 'step_ms': {i}}}",
                     f"step {i} data: -{i}.5ms compute: 1e400ms step: 1_0ms"]
    text = "\n".join(rows) + "\n"
    both(text)
    p = tmp_path / "cut.log"
    p.write_text(text)
    both(p)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(repeated())
def test_repeated_shapes(text):
    both(text)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(mutated())
def test_mutated_lines(text):
    both(text * 3)


def _analyze(path, pure: bool) -> dict:
    env = dict(os.environ, GPUSCOPE_PURE_SCANNER="1" if pure else "0")
    r = subprocess.run([sys.executable, "-m", "gpuscope", "analyze", str(path), "--json"], env=env,
                       capture_output=True, text=True, timeout=300)
    return {"rc": r.returncode, "out": json.loads(r.stdout) if r.stdout.strip() else None, "err": r.stderr}


def test_analyze_json_of_the_examples_and_a_bench_log(tmp_path):
    paths = [p for p in LOGS if p.parent == EXAMPLES or "h200_foreign" in p.parts][:6]
    big = tmp_path / "kv.log"
    big.write_text(_generated("kvunits", 20000, tmp_path))
    for path in [*paths, big]:
        try:
            parsers.parse_log(path, "lines")
        except (InputError, NoDataError):
            continue
        a, b = _analyze(path, True), _analyze(path, False)
        assert a == b, path


def _lines_with(piece: str) -> str:
    """Stamped and unstamped lines of every length from 1 to 60 bytes of message, `piece` at
    each place in them: the splitter reads a prefix and a message 16 bytes at a time, and the
    last 1-15 as the lanes of an overlapping 16 (parsers/_scan.c shape_line)."""
    out = []
    for n in range(1, 61):
        for at in range(0, n, 3):
            body = (f"step={n} kernel=1.{at}5ms " * 4)[:n]
            body = body[:at] + piece + body[at:]
            out.append(f"2026-11-30T14:00:{n % 60:02d}.{at:06d}Z INFO {body}")
            out.append(f"[{at}] {body} took {n}.5 ms")
    return "\n".join(out) + "\n"


@pytest.mark.parametrize("piece", ["0", "_TIMING ", "TIMELINE,", ":::MLLOG ", "'", "\x1b[0m", "é", "\t", "mutex_held_ms=",
                                   "T", "_", ":"])
def test_markers_and_special_bytes_at_every_place(piece):
    both(_lines_with(piece))


def test_a_logger_line_after_a_bar_redraw_replays_as_read():
    """A bar redraw with a logger's line right after its `]` is read as two pieces
    (parsers/log/lines/read.py pieces): the logger piece's shape is one that other lines hold, and
    the replay of those lines is the per-line scan's."""
    log = "".join(f"[2023-06-21 07:39:{i:02d},625] [INFO] rank=0 time (ms) | forward: 2{i % 10}.41 | step: 7{i % 10}.8\n"
                  + (f" {i}%|#  | {i}/345 [00:07<06:50,  1.2{i % 10}s/it][2023-06-21 07:39:{i:02d},700] [INFO] rank=0 "
                     f"time (ms) | forward: 3{i % 10}.1 | step: 6{i % 10}.2\n" if i % 7 == 3 else "")
                  for i in range(40))
    both(log)

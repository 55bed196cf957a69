"""Format detection by the log's head (detect.detect_head) with the scan watching for a later
CuZK or condensed marker gives what detection over every byte gave: the same format and the
same ParsedLog, compiled and Python, for a marker in every place a chunk can hold it (its first
line, its last, the tail without a newline, a line the splitter leaves to Python, a line longer
than the splitter reads); and the splitter's per-line flag is the plain byte search's, on
fresh random lines."""

from __future__ import annotations

import random

import numpy as np
import pytest

from gpuscope.parsers.log import detect, reader, scan
from tests.test_scanner_paths import parse, same

NATIVE = scan.compiled_scanner()
LINE = "2024-05-01T10:00:{s:02d}.{ms:03d} step {i} data: {d:.2f}ms compute: {c:.1f} ms loss={l:.3f}\n"
MARKERS = [m.decode() for m in detect._MARKERS]


@pytest.fixture(autouse=True)
def _small(monkeypatch):
    monkeypatch.setattr(reader, "CHUNK", 32 << 10)
    monkeypatch.setattr(detect, "HEAD_BYTES", 8 << 10)


def _lines(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [LINE.format(s=i % 60, ms=i % 1000, i=i, d=rng.uniform(1, 99), c=rng.uniform(1, 9),
                        l=rng.uniform(0, 5)) for i in range(n)]


def _chunk_ends(path) -> list[int]:
    """The 0-based index of each chunk's last line."""
    return [c.first + c.newlines - 2 for c in reader.LogInput("f", path=path).chunks() if not c.tail]


def _check(path, want_fmt: str | None = None):
    full = detect.detect_input(reader.LogInput("f", path=path))
    if want_fmt is not None:
        assert full == want_fmt
    for pure in (False, True):
        got = parse(str(path), pure=pure)
        plain = parse(str(path), full, pure=pure)
        same(got, plain)
        if not isinstance(got, str):
            assert got.format == full


WHERE = ["head", "after_head", "chunk_first", "chunk_last", "middle", "tail", "quoted", "long", "cr"]


@pytest.mark.parametrize("marker", ["CUZK_TIMING:", "TIMELINE,", "GPU_TIMING ", "mutex_wait_ms=", "ntt_kernels="])
@pytest.mark.parametrize("where", WHERE)
def test_a_later_marker_gives_the_whole_logs_format(tmp_path, marker, where):
    lines = _lines(3000, 1)
    p = tmp_path / "t.log"
    p.write_text("".join(lines))
    ends = _chunk_ends(p)
    assert len(ends) >= 4
    extra = f" {marker}x=1\n"
    at = {"head": 3, "after_head": 200, "chunk_first": ends[1] + 1, "chunk_last": ends[2], "middle": 1777,
          "quoted": 2100, "long": 2200, "cr": 2300}.get(where)
    if where == "tail":
        lines[-1] = lines[-1].rstrip("\n") + extra.rstrip("\n")
    elif where == "quoted":
        lines[at] = lines[at].rstrip("\n") + " 'q'" + extra
    elif where == "long":
        lines[at] = lines[at].rstrip("\n") + " pad" * 20000 + extra
    elif where == "cr":
        lines[at] = lines[at].rstrip("\n") + "\r" + lines[at + 1].rstrip("\n") + extra
    else:
        lines[at] = lines[at].rstrip("\n") + extra
    p.write_text("".join(lines))
    want = "cuzk" if marker.encode() in detect.CUZK_BYTES else "condensed"
    _check(p, want)
    inp = reader.LogInput("f", path=p)
    assert detect.detect_head(inp, "mutex_held") == (None if where == "head" else "lines")


def test_no_marker_is_lines_read_once(tmp_path):
    p = tmp_path / "t.log"
    p.write_text("".join(_lines(3000, 2)))
    assert detect.detect_head(reader.LogInput("f", path=p), "mutex_held") == "lines"
    _check(p, "lines")


def test_a_condensed_head_and_a_later_cuzk_marker(tmp_path):
    lines = _lines(3000, 3)
    lines[5] = lines[5].rstrip("\n") + " mutex_held_ms=3.5\n"
    lines[2500] = lines[2500].rstrip("\n") + " CUZK_NTT_H: x\n"
    p = tmp_path / "t.log"
    p.write_text("".join(lines))
    assert detect.detect_head(reader.LogInput("f", path=p), "mutex_held") is None
    _check(p, "cuzk")


PIECES = ["CUZK_", "TIMING", "_TIMING", "TIMING:", "NTT_H:", "_NTT", "TIMELINE", ",", "GPU", "FIN", "_", ":",
          "mutex_", "held_ms=", "wait_ms=", "_ms", "ntt_", "kernels=", "T", "'", "\t", "\x01", "\xe9", "\r",
          ":::MLLOG ", "12", "3.5", " ", "  ", "=", "step", "loss", "x" * 40]


@pytest.mark.skipif(NATIVE is None or not hasattr(NATIVE, "Shapes"), reason="the compiled scanner is not built here")
@pytest.mark.parametrize("seed", range(6))
def test_the_splitters_flag_is_the_byte_search(seed):
    rng = random.Random(seed * 7919 + random.randrange(1 << 30))
    for _ in range(300):
        parts = [rng.choice(PIECES) for _ in range(rng.randrange(1, 30))]
        if rng.random() < 0.3:
            parts.insert(rng.randrange(len(parts) + 1), rng.choice(MARKERS))
        if rng.random() < 0.05:
            parts.insert(0, "y" * 70000)
        prefix = rng.choice(["", "2024-05-01T10:00:00.5 ", "2024-05-01 10:00:00 INFO ", "[12] "])
        line = (prefix + "".join(parts)).replace("\n", "").encode("utf-8", "surrogatepass")
        for buf in (line + b"\n", b"a 1\n" + line + b"\nb 2\n"):
            assert NATIVE.Shapes().feed(buf, 1)["marker"] == detect.has_marker(buf), buf[:200]


@pytest.mark.skipif(NATIVE is None or not hasattr(NATIVE, "Shapes"), reason="the compiled scanner is not built here")
def test_the_splitters_bar_prefix_rule():
    """A line's time is Python's (tsk 1) when its first 80 bytes hold ' | ' or '\\t| ' (the
    splitter finds each '|' by memchr): against the rule written out, on random lines."""
    rng = random.Random(random.randrange(1 << 30))
    lines = []
    for _ in range(3000):
        body = "".join(rng.choice(["|", " ", "\t", "a", "1", "| ", " |", "x" * 30]) for _ in range(rng.randrange(1, 40)))
        lines.append("x" + body + " 5")
    buf = "".join(line + "\n" for line in lines).encode()
    got = np.frombuffer(NATIVE.Shapes().feed(buf, 1)["tsk"], dtype=np.int32)
    want = [int(any(t[i] in " \t" and t[i + 1] == "|" and t[i + 2] == " " for i in range(min(len(t), 80) - 2)))
            for t in lines]
    assert got.tolist() == want

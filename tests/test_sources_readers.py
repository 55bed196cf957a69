"""Source detection as one table (gpuscope/sources/readers.py): which reader each input's head
picks, the head read once, --format skipping every reader told by content, and the inputs that
look like another kind without being one (the sniffs' false alarms)."""

from __future__ import annotations

import builtins
import gzip
import io
import json
import shutil
import sys
from pathlib import Path

import pytest

from gpuscope.sources import open_source, readers
from gpuscope.sources.common import Want
from gpuscope.sources.head import read_head
from tests.conftest import DATA, EXAMPLES

DMON = DATA / "h200_foreign" / "train_slow_dmon.txt"
RUN = DATA / "h200_contention" / "pageable-c8"
SAMPLES_CSV = DATA / "h200_bounds" / "runs" / "hbm_bound" / "samples.csv"
TRACE_GZ = DATA / "h200_foreign" / "traces" / "copy_pageable.json.gz"
QUERY = ("timestamp, index, utilization.gpu [%], memory.used [MiB]\n"
         + "".join(f"2026/12/01 10:00:{i:02d}.000, 0, {50 + i} %, 1000 MiB\n" for i in range(20)))
PROMETHEUS = json.dumps({"status": "success", "data": {"resultType": "matrix", "result": [
    {"metric": {"__name__": "DCGM_FI_DEV_GPU_UTIL", "gpu": "0"},
     "values": [[1_796_000_000 + i, "90"] for i in range(20)]}]}})


def _reader(path, fmt=None) -> str:
    with read_head(path) as head:
        return readers.reader_for(head, Want(fmt=fmt)).name


def _inputs(tmp: Path) -> dict[str, tuple[Path, str]]:
    """name -> (input, the reader that must take it)"""
    log = EXAMPLES / "article_excerpt.log"
    text = log.read_bytes()
    (tmp / "log.gz").write_bytes(gzip.compress(text))
    (tmp / "log16.txt").write_bytes(b"\xff\xfe" + text.decode().encode("utf-16-le"))
    (tmp / "query.csv").write_text(QUERY)
    (tmp / "query.csv.gz").write_bytes(gzip.compress(QUERY.encode()))
    (tmp / "prom.json").write_text(PROMETHEUS)
    (tmp / "export.sqlite").write_bytes(b"SQLite format 3\x00" + bytes(100))
    (tmp / "trace.json").write_bytes(gzip.decompress(TRACE_GZ.read_bytes()))
    (tmp / "ranks").mkdir(exist_ok=True)
    shutil.copy(TRACE_GZ, tmp / "ranks" / "rank0.pt.trace.json.gz")
    # what looks like another kind and is a log: JSON dict lines (a trace's and a Prometheus
    # answer's first byte), a prose line naming a --query-gpu header's words, a `#` line naming gpu
    (tmp / "train.jsonl").write_text("".join(f'{{"step": {i}, "data_ms": 1.5, "compute_ms": 30.25}}\n' for i in range(20)))
    (tmp / "prose.log").write_text("starting\ncolumns: timestamp, index, utilization.gpu were logged\n"
                                   + "".join(f"step {i} data_ms=1.5 compute_ms=30.25\n" for i in range(20)))
    (tmp / "hash.log").write_text("# gpu warm-up done\n" + "".join(f"step {i} data_ms=1.5 compute_ms=30.25\n" for i in range(20)))
    return {
        "plain log": (log, "log"), "gzip log": (tmp / "log.gz", "log"), "UTF-16 log": (tmp / "log16.txt", "log"),
        "JSON lines log": (tmp / "train.jsonl", "log"), "prose naming query columns": (tmp / "prose.log", "log"),
        "# line naming gpu": (tmp / "hash.log", "log"),
        "dmon": (DMON, "samples"), "query-gpu": (tmp / "query.csv", "samples"),
        "gzip query-gpu": (tmp / "query.csv.gz", "samples"), "samples.csv": (SAMPLES_CSV, "samples.csv"),
        "prometheus": (tmp / "prom.json", "prometheus"), "sqlite export": (tmp / "export.sqlite", "nsys"),
        "trace": (tmp / "trace.json", "trace"), "gzip trace": (TRACE_GZ, "trace"),
        "trace folder": (tmp / "ranks", "trace folder"), "run directory": (RUN, "run directory"),
    }


def test_each_input_goes_to_its_reader(tmp_path):
    inputs = _inputs(tmp_path)
    assert {name: _reader(p) for name, (p, _) in inputs.items()} == {name: want for name, (_, want) in inputs.items()}


def test_a_format_skips_every_reader_told_by_content(tmp_path):
    """--format says the file is a log: a samples file, a trace, an SQLite file go to the log
    reader; a folder is still a folder."""
    for name, (p, want) in _inputs(tmp_path).items():
        assert _reader(p, fmt="lines") == (want if p.is_dir() else "log"), name


def test_the_table_ends_with_the_log_reader_and_names_each_reader_once():
    names = [r.name for r in readers.READERS]
    assert names[-1] == "log" and len(set(names)) == len(names)
    assert not readers.READERS[-1].by_content  # (the reader --format names)
    assert [r.name for r in readers.READERS if not r.by_content] == ["trace folder", "run directory", "log"]


def test_a_plain_log_is_handed_to_the_parser_by_its_path(monkeypatch):
    """Never read whole: the parser reads it in chunks (a 1M-line log)."""
    seen = []
    real = readers.parse_log
    monkeypatch.setattr(readers, "parse_log", lambda inp, *a, **kw: seen.append(inp) or real(inp, *a, **kw))
    open_source(EXAMPLES / "cuzk_daemon.log")
    assert seen and isinstance(seen[0], Path)


@pytest.mark.parametrize("name", ["gzip log", "gzip query-gpu", "UTF-16 log", "trace", "prometheus"])
def test_a_file_read_whole_is_opened_once(name, tmp_path, monkeypatch):
    """The head and the rest come from one open (gzip, UTF-16 and JSON inputs are read whole)."""
    path, _ = _inputs(tmp_path)[name]
    opens = []
    real_open = builtins.open

    def counting(file, *a, **kw):
        if isinstance(file, str | Path) and Path(file) == path:
            opens.append(file)
        return real_open(file, *a, **kw)

    monkeypatch.setattr(builtins, "open", counting)
    src = open_source(path)
    assert len(opens) == 1 and src.kind in ("log", "samples", "trace")


def test_standard_input_is_told_apart_as_a_file_is(tmp_path, monkeypatch):
    for name, (p, want) in _inputs(tmp_path).items():
        if p.is_dir() or want in ("nsys", "samples.csv"):  # (SQLite reads a file; samples.csv: by its path)
            continue
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(p.read_bytes())))
        assert _reader("-") == want, name


def test_a_damaged_gzip_log_is_refused_in_one_line(tmp_path):
    from gpuscope.errors import InputError

    bad = tmp_path / "cut.log.gz"
    bad.write_bytes(gzip.compress((EXAMPLES / "article_excerpt.log").read_bytes())[:-9])
    with pytest.raises(InputError, match="damaged gzip"):
        open_source(bad)


def test_a_utf16_log_on_standard_input_is_read_as_the_file_is(tmp_path, monkeypatch):
    """Its NUL bytes are its encoding's (the BOM says so): it was refused as binary from stdin
    while the same file named by its path was read. NUL bytes without a BOM are still refused."""
    from gpuscope.errors import NoDataError

    path, _ = _inputs(tmp_path)["UTF-16 log"]
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(path.read_bytes())))
    piped = open_source("-")
    assert piped.kind == "log" and piped.log is not None
    assert piped.log.timing_lines == open_source(path).require_log().timing_lines > 0
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(bytes(10_000))))
    with pytest.raises(NoDataError, match="binary"):
        open_source("-")


@pytest.mark.parametrize("name", ["dmon", "query-gpu", "samples.csv"])
def test_a_samples_file_with_a_utf8_bom_is_samples_by_its_path_too(name, tmp_path, monkeypatch):
    """A UTF-8 BOM (what Windows tools write) before a samples header: read as samples from
    standard input, and now by its path too (it was read as a log: 'no timing lines')."""
    path, want = _inputs(tmp_path)[name]
    bom = tmp_path / f"bom_{path.name}"
    bom.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    assert _reader(bom) == want
    src, plain = open_source(bom), open_source(path)
    assert src.kind == "samples" and src.samples is not None and plain.samples is not None
    assert len(src.samples) == len(plain.samples)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(bom.read_bytes())))
    piped = open_source("-").samples
    assert piped is not None and len(piped) == len(plain.samples)

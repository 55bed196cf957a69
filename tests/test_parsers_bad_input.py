"""Bad input: every case gets InputError / NoDataError (documented exit codes) or is read
as far as it goes; nothing hangs on a long line."""

from __future__ import annotations

import time

import pytest

from gpuscope import parsers
from gpuscope.errors import EXIT_INPUT, EXIT_NO_DATA, InputError, NoDataError, UsageError
from gpuscope.schemas import COMPONENT_COLUMNS, SKIPPED_COLUMNS

GOOD = "CUZK_TIMING: pre_lock_cpu_ms=1 mutex_wait_ms=5\nCUZK_TIMING: mutex_held_ms=100 total_start_fn_ms=120\n"


def test_missing_file(tmp_path):
    with pytest.raises(InputError, match="no such file") as e:
        parsers.parse_log(tmp_path / "nope.log")
    assert e.value.exit_code == EXIT_INPUT


def test_missing_file_given_as_str(tmp_path):
    with pytest.raises(InputError):
        parsers.parse_log(str(tmp_path / "nope.log"))


def test_one_line_str_with_equals_is_text_unless_it_looks_like_a_path(tmp_path):
    assert parsers.parse_log("upload_ms=5").components["value_ms"].tolist() == [5.0]
    with pytest.raises(InputError, match="no such file"):
        parsers.parse_log(str(tmp_path / "run=3" / "timing.log"))
    f = tmp_path / "a=b"
    f.write_text(GOOD)
    assert len(parsers.parse_log(str(f)).records) == 1


def test_directory_without_log(tmp_path):
    (tmp_path / "samples.csv").write_text("t_wall\n")
    with pytest.raises(InputError, match="without a timing log"):
        parsers.parse_log(tmp_path)


def test_directory_with_timing_log_or_single_log(tmp_path):
    (tmp_path / "timing.log").write_text(GOOD)
    (tmp_path / "other.log").write_text("nothing\n")
    p = parsers.parse_log(tmp_path)
    assert p.source.endswith("timing.log") and len(p.records) == 1
    d = tmp_path / "sub"
    d.mkdir()
    (d / "daemon.log").write_text(GOOD)
    assert parsers.parse_log(d).source.endswith("daemon.log")
    (d / "second.log").write_text(GOOD)
    with pytest.raises(InputError, match="several logs"):
        parsers.parse_log(d)


@pytest.mark.parametrize("content", [b"", b"\n\n  \n"])
def test_empty_file(tmp_path, content):
    f = tmp_path / "e.log"
    f.write_bytes(content)
    with pytest.raises(NoDataError, match="empty") as e:
        parsers.parse_log(f)
    assert e.value.exit_code == EXIT_NO_DATA


def test_binary_file(tmp_path):
    f = tmp_path / "b.log"
    f.write_bytes(b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)) * 10 + GOOD.encode())
    with pytest.raises(NoDataError, match="binary"):
        parsers.parse_log(f)


def test_no_timing_lines(tmp_path):
    f = tmp_path / "n.log"
    f.write_text("INFO starting\nWARN nothing to see\nCUZK_TIMING: d_a_cache allocated 512 MiB on gpu 0\n")
    with pytest.raises(NoDataError, match="no timing lines"):
        parsers.parse_log(f)


def test_a_refusal_names_no_format_that_no_line_matched(tmp_path):
    """Detection falls back to kv for text without a marker: 'format kv' said a format matched."""
    f = tmp_path / "n.log"
    f.write_text("hello world\nstep 1 done\nstep 2 done\n")
    with pytest.raises(NoDataError, match=r"no timing lines found \(no known format matched;"):
        parsers.parse_log(f)
    with pytest.raises(NoDataError, match=r"no timing lines found \(format kv;"):
        parsers.parse_log(f, "kv")  # (the caller's own choice is named)


def test_non_utf8_bytes_are_read(tmp_path):
    f = tmp_path / "latin1.log"
    f.write_bytes("INFO caf\xe9 \xff\xfe\n".encode("latin-1") + GOOD.encode() + b"\xc3(\n")
    p = parsers.parse_log(f)
    assert len(p.records) == 1 and p.total_lines == 4


def test_truncated_last_line(tmp_path):
    f = tmp_path / "t.log"
    f.write_text(GOOD + "CUZK_TIMING: pre_lock_cpu_ms=1 mutex_wait_ms=5\nCUZK_NTT_H: d_b_alloc=1ms ntt_kernels=12")
    p = parsers.parse_log(f)
    assert p.skipped["line"].tolist() == [4]
    assert p.records["complete"].tolist() == [True, False]


def test_crlf_line_endings():
    p = parsers.parse_log(GOOD.replace("\n", "\r\n"))
    assert p.records["held_ms"].tolist() == [100.0]


def test_unknown_format_is_usage_error():
    with pytest.raises(UsageError):
        parsers.parse_log(GOOD, "xml")


def test_all_lines_damaged_is_no_data():
    with pytest.raises(NoDataError, match="damaged"):
        parsers.parse_log("CUZK_TIMING: mutex_held_ms=abc\n")


def test_ten_megabyte_single_line_does_not_hang(tmp_path):
    f = tmp_path / "long.log"
    f.write_bytes(b"CUZK_TIMING: mutex_held_ms=1 " + b"x=1 " * (10 * 2**20 // 4) + b"\n" + GOOD.encode())
    t = time.perf_counter()
    p = parsers.parse_log(f)
    assert time.perf_counter() - t < 5.0
    assert p.skipped["line"].tolist() == [1] and "too long" in p.skipped["reason"].iloc[0]
    assert len(p.records) == 1


def test_ten_megabyte_line_without_newlines_or_markers(tmp_path):
    f = tmp_path / "blob.log"
    f.write_bytes(b"a" * (10 * 2**20))
    t = time.perf_counter()
    with pytest.raises(NoDataError):
        parsers.parse_log(f)
    assert time.perf_counter() - t < 5.0


def test_megabyte_line_of_equals_digits_and_bars_is_fast():
    text = "=1|2=|==3|" * (2**20 // 10)
    t = time.perf_counter()
    with pytest.raises(NoDataError):
        parsers.parse_log(text)
    assert time.perf_counter() - t < 1.0


@pytest.mark.parametrize("unit", ["=1|2=|==3|", "a=1|", "CUZK_TIMING: a_ms=1 ", "2026-11-30T14:00:00Z |=| "])
def test_longest_parsed_line_is_linear(unit):
    # just under the 64 KiB cap: the real per-line code runs on it, and stays linear
    text = "2026-11-30T14:00:00Z " + unit * (60_000 // len(unit)) + "\n" + GOOD
    t = time.perf_counter()
    try:
        p = parsers.parse_log(text)
    except NoDataError:
        p = None
    assert time.perf_counter() - t < 1.0
    if p is not None:
        assert {c: str(t) for c, t in p.components.dtypes.items()} == COMPONENT_COLUMNS
        assert {c: str(t) for c, t in p.skipped.dtypes.items()} == SKIPPED_COLUMNS

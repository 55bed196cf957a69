"""The one number reader (parsers/numbers.py): ASCII numerals in the formats' one form, and
bounds per kind of value. A digit that is not a digit, a form Python's float() reads but no
format prints, or an absurd finite value is damage in every log format (a skipped line,
counted), never a number, on the compiled and the Python scanner alike (issue 22)."""

from __future__ import annotations

import pytest

from gpuscope.parsers import numbers as nb
from tests.test_scanner_paths import NATIVE, parse, same

NOT_NUMBERS = ("\u0669\u0668\u0667", "\uff19\uff18", "9876543\U0001d7cf", "98_765", "12..", "9876'5432",
               " 12", "12 ", "inf", "-inf", "nan", "Infinity", "1e999", "", ".", "+", "1e", "0x10", "--1",
               "\u00b2", "1.2.3")
NUMBERS = {"12": 12.0, "-3.5": -3.5, "+4": 4.0, ".5": 0.5, "12.": 12.0, "1e3": 1000.0, "2.5E-3": 0.0025}


@pytest.mark.parametrize("text", NOT_NUMBERS)
def test_number_refuses_what_no_format_prints(text):
    assert nb.number(text) is None


def test_number_reads_the_printed_forms():
    assert {t: nb.number(t) for t in NUMBERS} == NUMBERS


def test_digits_are_ascii_digits():
    assert nb.digits("0123") and not nb.digits("\u0663") and not nb.digits("\u00b2") and not nb.digits("")


def test_bounds_per_kind():
    assert nb.within(1e10, "duration") and not nb.within(1e308, "duration") and not nb.within(-1, "duration")
    assert nb.within(2.0**64, "size") and not nb.within(2.0**65, "size")
    assert nb.within(100, "percent") and not nb.within(100.5, "percent")
    assert nb.value("1e308", "duration") is None and nb.value("12", "count") == 12.0
    assert nb.split_unit("12.5ms", nb.TIME_UNITS) == ("12.5", 1.0)
    assert nb.split_unit("512MiB", nb.SIZE_UNITS) == ("512", 2.0**20)
    assert "beyond any duration" in nb.beyond("h2d_ms", "1e308", "duration")


BAD_VALUES = ("\u0669\u0668\u0667\u0666\u0665", "\uff19\uff18\uff17\uff16\uff15", "9876543\U0001d7cf", "98_765",
              "12..", "9876'5432", "1e308")


def _logs(bad: str) -> dict[str, tuple[str, str | None]]:
    good = "h2d_ms=12 compute_ms=30 step_ms=42\n"
    return {
        "kv": (good * 3 + f"h2d_ms={bad} compute_ms=30 step_ms=42\n" + good, "kv"),
        "condensed": ("mutex_wait_ms=1 | ntt_kernels=287ms | mutex_held_ms=300\n" * 2
                      + f"mutex_wait_ms=1 | ntt_kernels={bad}ms | mutex_held_ms=300\n", "condensed"),
        "cuzk": ("CUZK_TIMING: mutex_wait_ms=1\nCUZK_TIMING: gpu_tid=0 ntt_ms=40 mutex_held_ms=50\n" * 2
                 + f"CUZK_TIMING: gpu_tid=0 ntt_ms={bad} mutex_held_ms=50\n", "cuzk"),
        "lines": ("step 1: data 12.0 ms, compute 30.0 ms, total 42.0 ms\n" * 3
                  + f"step 4: data {bad} ms, compute 30.0 ms, total 42.0 ms\n", "lines"),
        "lines_eq": ("step=1 data_ms=12 compute_ms=30 step_ms=42\n" * 3
                     + f"step=4 data_ms={bad} compute_ms=30 step_ms=42\n", "lines"),
    }


@pytest.mark.parametrize("bad", BAD_VALUES)
@pytest.mark.parametrize("case", ("kv", "condensed", "cuzk", "lines", "lines_eq"))
def test_a_digit_that_is_not_a_digit_is_damage_in_every_format(case, bad):
    text, fmt = _logs(bad)[case]
    p = parse(text, fmt, pure=True)
    assert not isinstance(p, str), p
    assert len(p.skipped) == 1, (case, bad, p.skipped)
    comps = p.components
    assert comps["value_ms"].max() < 1e6
    assert not (comps["value_ms"] == 98765).any() and not (comps["value_ms"] == 98765432).any()
    if NATIVE is not None:
        same(p, parse(text, fmt, pure=False))


def test_an_absurd_size_is_damage():
    p = parse("step=1 h2d_ms=3 h2d_bytes=1e300\nstep=2 h2d_ms=3 h2d_bytes=1024\n", "kv", pure=True)
    assert len(p.skipped) == 1 and "beyond any size" in p.skipped["reason"].iloc[0]
    if NATIVE is not None:
        same(p, parse("step=1 h2d_ms=3 h2d_bytes=1e300\nstep=2 h2d_ms=3 h2d_bytes=1024\n", "kv", pure=False))


def test_a_timeline_value_out_of_bounds_is_damage():
    text = ("TIMELINE,10,synth_start,j1,partition=0\nTIMELINE,12,synth_end,j1,partition=0,synth_ms=1e308\n"
            "TIMELINE,\u0661\u0662,synth_end,j1,partition=\u0661\n")
    p = parse(text, "cuzk", pure=True)
    assert len(p.skipped) == 2

"""A line two logging handlers printed (issue 33 class 4; parsers/log/lines/duplicates.py): the same text
with the same stamp, one after the other, is one event; with other stamps, without a stamp or
with other words around the same numbers, two."""

from __future__ import annotations

from gpuscope import parsers

# (issue 33's case was a NCCL watchdog's timeout line, which is no timing line any more: a failed
# collective's time, parsers/log/oneoffs.py; a logger's checkpoint line printed by two handlers here)
WATCHDOG = "{t} WARNING [Rank 0] checkpoint written: save_ms=4213.5 bytes=1073741824\n"


def _log(first: str, second: str) -> str:
    steps = "".join(f"2024-05-14 08:12:{10 + i:02d},123 INFO step={i} data_ms=12.0 compute_ms=30.0 step_ms=43.0\n"
                    for i in range(6))
    return steps + first + second


def _count(p, name: str) -> int:
    return int((p.components["component"] == name).sum())


def test_a_line_printed_by_two_handlers_is_one_event(tmp_path):
    line = WATCHDOG.format(t="2024-05-14 08:22:30,001")
    p = parsers.parse_log(_log(line, line), "lines")
    assert _count(p, "save") == 1 and int(p.records["complete"].sum()) == 6
    assert any("same time stamp and text" in n and "one event" in n for n in p.notes)
    path = tmp_path / "train.log"  # (a file: the repeat's text read again from it)
    path.write_text(_log(line, line))
    assert _count(parsers.parse_log(path), "save") == 1


def test_a_repeat_with_another_stamp_or_none_is_two_events():
    a, b = WATCHDOG.format(t="2024-05-14 08:22:30,001"), WATCHDOG.format(t="2024-05-14 08:32:30,004")
    p = parsers.parse_log(_log(a, b), "lines")
    assert _count(p, "save") == 2 and not any("same time stamp" in n for n in p.notes)
    bare = WATCHDOG.format(t="").lstrip()
    assert _count(parsers.parse_log(_log(bare, bare), "lines"), "save") == 2


def test_the_same_numbers_under_other_words_are_two_lines():
    """False-positive guard: two ranks printing the same numbers at the same stamp differ in
    their text (`[rank0]`, `[rank1]`): both are read."""
    t = "".join(f"2024-05-14 08:12:{10 + i:02d},123 [rank{r}] step={i} fwd_ms=30.0 data_ms=12.0\n"
                for i in range(6) for r in (0, 1))
    p = parsers.parse_log(t, "lines")
    assert _count(p, "fwd") == 12 and not any("same time stamp" in n for n in p.notes)

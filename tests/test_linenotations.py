"""Common duration notations (issue 33, class 2): Python's timedelta `0:00:10.736`, a unit
word `0.89 sec`, a spaced time per step `2.84 s / it`, Go's `9m26.21s`, `3s913ms699.706us`, and
a time with no key after the record's counter (`step 1: 125.8 ms`, `step 1/30: 13.0 ms`,
`step 1 | loss 1.990 | 12.6 ms`), all refused before with a false reason. And what must stay
no time: a clock or a forecast in H:MM:SS (`eta: 1 day, 3:36:30`, `[12:01:05]`), a bare number
after a counter (`step 1: 125.8`), a rate in parentheses (`(84.1 MiB/s)`)."""

from __future__ import annotations

import pytest

from gpuscope import parsers
from gpuscope.errors import NoDataError
from gpuscope.parsers.log.lines.vocabulary import compound
from tests.conftest import DATA


def _read(fmt: str, n: int = 10):
    p = parsers.parse_log("".join(fmt.format(i=i) for i in range(1, n + 1)), "lines")
    c = p.components
    return p, list(zip(c["component"].tolist(), c["value_ms"].round(6).tolist(), strict=True))


@pytest.mark.parametrize(("fmt", "name", "first_ms"), [
    ("epoch {i} time 0:00:{i:02d}.736000 loss 0.5\n", "time", 1736.0),
    ("Epoch {i}: 0.8{i} sec\n", "epoch_time", 810.0),
    ("iter {i}: 2.8{i} s / it\n", "time_per_it", 2810.0),
    ("iter {i}: 2.8{i} s /it\n", "time_per_it", 2810.0),
    ("step {i} took 9m2{i}.21s\n", "took", 561210.0),
    ("proving time: 3s91{i}ms699.706us\n", "proving_time", 3911.699706),
    ("step {i}: 125.{i} ms\n", "step_time", 125.1),
    ("step {i}/30: 13.{i} ms\n", "step_time", 13.1),
    ("step {i} | loss 1.99{i} | 12.{i} ms\n", "step_time", 12.1),
])
def test_a_notation_reads_as_its_duration(fmt, name, first_ms):
    p, got = _read(fmt)
    assert got[0] == (name, first_ms) and len(got) == 10 and int(p.records["complete"].sum()) == 10


def test_every_line_of_a_shape_is_read_not_replayed_wrongly():
    """A duration in several units is read line by line (no plan replays part of it as the number)."""
    _, got = _read("step {i} took 1h{i}m3s\n", 12)
    assert [v for _, v in got] == [(3600 + 60 * i + 3) * 1e3 for i in range(1, 13)]


def test_what_is_no_duration_stays_none():
    assert compound("12:01:05") is None and compound("10s5m") is None and compound("1.5m2s") is None
    with pytest.raises(NoDataError):
        _read("[12:0{i}:05] step {i} done\n")
    with pytest.raises(NoDataError):
        _read("step {i}: 125.{i}\n")  # (a bare number after a counter: no unit, no time)
    _, got = _read("step {i} | eta: 1 day, 3:3{i}:30 | time: 0.4{i}s\n")
    assert {n for n, _ in got} == {"time"}  # the forecast is no component
    with pytest.raises(NoDataError):
        _read("step {i}: 25.{i} ms per token\n")  # (a rate, no time spent)


def test_lotus_bench_results_from_a_public_thread():
    """lotus-bench's sealing results (filecoin-project/lotus#1475): Go durations, a label with
    its number (`preCommit phase 1:`), rates in parentheses, labels kept whole (compute and
    verify of the same proof are two names)."""
    p = parsers.parse_log(DATA / "corpus/lotus_bench/results_v24.txt")
    v = dict(zip(p.components["component"], p.components["value_ms"], strict=True))
    assert v["addPiece"] == pytest.approx(389658.286168)
    assert v["preCommit_phase_1"] == pytest.approx((3 * 3600 + 51 * 60 + 36.3388762) * 1e3)
    assert v["commit_phase_2"] == pytest.approx((3600 + 35 * 60 + 36.694015932) * 1e3)
    assert v["compute_epost_proof_cold"] == pytest.approx(10123.346465)
    assert v["verify_epost_proof_cold"] == pytest.approx(41.600541)
    assert len(v) == 12


def test_a_name_in_brackets_after_its_time_names_that_time():
    """`2.1s [train], 0.3s [test]` (issue 33, class 4): the test time was named "train" (the
    label read before its value). Read alike on every path (the shape is read line by line)."""
    p, got = _read("epoch {i}: 2.{i}s [train], 0.3{i}s [test]\n", 20)
    assert got[:2] == [("train", 2100.0), ("test", 310.0)] and len(got) == 40
    _, got = _read("[epoch {i}] 2.{i}s\n")  # (a bracketed counter before the time is no name)
    assert {n for n, _ in got} == {"epoch_time"}

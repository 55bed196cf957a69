"""Issue 33 class 3: a number becomes a duration only when its text says so. A bare number
under a time word (`Duration: 500`, `time=607.278`, `Total Latency: 236.9`) is no duration
unless its program's format documents the unit (lines.vocabulary.seconds_by_format), and the `read:`
note says which format gave it; a text left with nothing is refused for that reason."""

from __future__ import annotations

import pytest

from gpuscope import parsers
from gpuscope.errors import NoDataError


def _names(text: str, fmt: str | None = "lines") -> set[str]:
    return set(parsers.parse_log(text, fmt).components["component"])


def test_a_bare_time_word_is_no_duration_and_the_rest_is_read():
    """perf_analyzer-style report: `Duration: 500` (no unit) had been read as 500 s and the
    record's whole; the µs statistics beside it are still read."""
    text = "Duration:   500\nAverage Latency:  1947427\u03bcs\nP50:   1931263\u03bcs\nQPS:  100\n"
    p = parsers.parse_log(text, "lines")
    assert "Duration" not in set(p.components["component"]) and not p.whole
    assert int(p.records["complete"].sum()) == 0


@pytest.mark.parametrize("text", [
    "Time To First Token : 210.38\nTotal Latency : 236.94\nP50 Total Latency : 230.0\n",
    "run qps=217.36, mean=290.3721, time=607.278, queries=132000\n",
    "---- execute time: 0.0057 for token_len: 16\n---- execute time: 0.0062 for token_len: 32\n",
    "Epoch 1, Time Taken : 31.63\nEpoch 2, Time Taken : 32.09\n",
])
def test_a_text_of_bare_time_words_only_is_refused_for_its_missing_unit(text):
    with pytest.raises(NoDataError) as e:
        parsers.parse_log(text)  # (detected: kv reads a bare time word as no ms either)
    msg = str(e.value)
    assert "names a time but prints no unit" in msg and "no unit or time word" not in msg


def test_kv_gives_a_bare_time_word_no_milliseconds():
    """kv's own default (ms) had made `epoch_time=150.973` 150 ms (a Python clock's seconds,
    1000x off); a unit in the value or key still reads, and the held key the caller names."""
    assert _names("step=1 epoch_time=150.973 upload_ms=2\n", "kv") == {"upload"}
    assert _names("elapsed=12s wait_us=3\n", "kv") == {"elapsed", "wait"}
    assert parsers.parse_log("x_ms=1 total=5\n", "kv", held_key="total").records["held_ms"].tolist() == [5.0]


@pytest.mark.parametrize(("text", "name", "why"), [
    ("{'train_runtime': 245.78, 'train_loss': 0.45, 'epoch': 3.0}\n", "train_runtime", "Hugging Face"),
    ("epoch 001: 100 / 1000 loss=9.1, train_wall=31, wall=33\n", "wall", "fairseq"),
    ("iter: 19  total_loss: 2.1  time: 0.4512  data_time: 0.0123  lr: 0.0004\n", "time", "detectron2"),
    ("Epoch: [0][ 10/500]\tTime  0.250 ( 0.412)\tData  0.002 ( 0.138)\tLoss 6.89 (6.90)\n", "Time", "ProgressMeter"),
])
def test_a_format_that_documents_seconds_gives_the_unit_and_the_note_names_it(text, name, why):
    p = parsers.parse_log(text, "lines")
    assert name in set(p.components["component"])
    note = next(n for n in p.notes if "read as seconds" in n)
    assert why in note and name in note


@pytest.mark.parametrize("text", [
    "step 3 time: 0.45 lr: 0.1\n",  # `time:` without detectron2's `data_time:` beside it
    "Time 0.25 Loss 0.5\n",  # `Time` without the meter's running mean
    "{'runtime': 245.78}\n",  # a bare `runtime`, not Hugging Face's `*_runtime`
    "wall: 33\n",  # fairseq prints `wall=`
])
def test_a_shape_near_a_documented_format_gives_no_unit(text):
    """The inputs that would make seconds_by_format fire falsely: each is one sign short."""
    with pytest.raises(NoDataError):
        parsers.parse_log(text, "lines")


def test_zerolog_s_milliseconds_still_need_its_line():
    """`took=` is milliseconds on a zerolog console line (stamp, level); without its stamp
    (ingonyama-zk/icicle#143 pasted `DBG ... took=477.58`) a `DBG` is many loggers' level: no unit."""
    assert parsers.parse_log("14:39:14 DBG prover done backend=groth16 took=2187.03\n", "lines").components[
        "value_ms"].tolist() == [2187.03]
    for text in ("prover done backend=groth16 took=2187.03\n", "DBG prover done backend=groth16 took=2187.03\n"):
        with pytest.raises(NoDataError, match="names a time but prints no unit"):
            parsers.parse_log(text)

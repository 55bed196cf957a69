"""The generic key=value timing format."""

from __future__ import annotations

import math

import pytest

from gpuscope import parsers
from gpuscope.errors import NoDataError


def _values(p):
    return p.components.groupby("component")["value_ms"].apply(list).to_dict()


def test_units_and_separators():
    p = parsers.parse_log("upload=1.5s, compute=250us, wait_ms=3 other=4 elapsed=7\n", "kv")
    v = _values(p)
    assert v["upload"] == [1500.0] and v["compute"] == [pytest.approx(0.25)]
    # a bare number is no time, under a time-named key too (issue 33: `elapsed=7` gives no
    # unit, kv's default ms would be a guess); `other=4` says nothing of time either
    assert v["wait"] == [3.0] and "elapsed" not in v and "other" not in v
    assert set(p.components["source"]) == {"kv"}


def test_records_end_at_held_key_and_labels_are_ignored():
    text = (
        "INFO job=abc phase=load upload_ms=120\n"
        "INFO job=abc compute_ms=300, wait_ms=5\n"
        "INFO job=abc step_total_ms=430\n"
        "INFO job=def upload_ms=100\n"
        "INFO job=def step_total_ms=410 | compute_ms=305\n"
        "INFO job=ghi upload_ms=99\n"
    )
    p = parsers.parse_log(text, held_key="step_total")
    r = p.records
    assert list(r["held_ms"].fillna(-1)) == [430.0, 410.0, -1.0]
    assert list(r["complete"]) == [True, True, False]
    assert list(r["first_line"]) == [1, 4, 6] and list(r["last_line"]) == [3, 5, 6]
    assert "job" not in set(p.components["component"])
    assert list(p.components.loc[p.components["record"] == 1, "line"]) == [4, 5, 5]


def test_without_held_key_each_line_is_a_record():
    p = parsers.parse_log("a_ms=1 b_ms=2\nnoise line\na_ms=3\n")
    r = p.records
    assert len(r) == 2 and r["complete"].all() and r["held_ms"].isna().all()
    assert list(r["first_line"]) == [1, 3]
    assert p.total_lines == 3 and p.timing_lines == 2


def test_bad_time_value_is_damage_but_label_is_not():
    p = parsers.parse_log("a_ms=1 host=alpha\nwait_ms=12q\nb=xyz\nc=2\n", "kv")
    assert list(p.skipped["line"]) == [2]
    assert sorted(p.components["component"]) == ["a"]  # (`c=2`: no unit, no time in its name)


def test_held_key_with_ms_suffix_is_accepted():
    p = parsers.parse_log("x_ms=1\ntotal_ms=5\n", held_key="total_ms")
    assert p.records["held_ms"].tolist() == [5.0]
    assert not math.isnan(p.records["held_ms"].iloc[0])


def test_a_bare_number_under_a_metric_counter_rate_or_stamp_key_is_no_time():
    """kv reads a bare number as milliseconds, but never under a key that names something
    else: a tqdm bar's `loss=0.5, v_num=0` is not two timings, `epoch=3` no 3 ms phase."""
    p = parsers.parse_log("INFO epoch=3 loss=0.52 lr=1e-4 upload_ms=12 compute=30 tokens_per_sec=900 ts=1764590000\n"
                          "INFO epoch=3 loss=0.50 lr=1e-4 upload_ms=11 compute=31 tokens_per_sec=910 ts=1764590001\n",
                          "kv")
    assert sorted(set(p.components["component"])) == ["upload"]  # (`compute=30`: nothing says time)
    assert p.components["value_ms"].tolist() == [12.0, 11.0]
    # kv classes a key as the `lines` reader does (parsers.words.key_class): a rate stays a rate
    assert parsers.parse_log("time_per_step=3 t_wall=1764590000 upload_ms=2\n", "kv").components["component"].tolist() == [
        "upload"]
    # a unit says it is a time, whatever the name; a time name without one does not (issue 33)
    assert parsers.parse_log("loss_ms=5 data_time=0.2\n", "kv").components["component"].tolist() == ["loss"]


def test_progress_bars_alone_are_read_as_tqdm_bars_not_as_kv():
    """A bar's `loss=0.5, v_num=0` are no times; its rate is tqdm's time per iteration
    (parsers/log/lines/frameworks.py), each redraw standing for the counter's advance (70 here)."""
    bars = "".join(f"Epoch 0:  {p}%|####      | {p * 10}/1000 [00:0{p // 20}<00:15, 36.1it/s, loss=0.5, v_num=0]\n"
                   for p in range(1, 100, 7))
    p = parsers.parse_log(bars)
    assert p.format == "lines" and set(p.components["component"]) == {"time_per_it"}
    assert p.steps_per_record == 70


def test_an_epoch_stamp_under_a_unit_key_is_no_duration_and_no_damage():
    """`ts_ms=1764590000123` is when the line was printed: skipped, and the line's other times
    read (a duration that large would be damage: parsers.numbers bounds a duration)."""
    text = "".join(f"job=a upload_ms={10 + i} ts_ms={1764590000123 + i * 50}\n" for i in range(4))
    p = parsers.parse_log(text, "kv")
    assert p.components["component"].tolist() == ["upload"] * 4 and len(p.skipped) == 0
    bad = parsers.parse_log("upload_ms=1e12 step_ms=3\nupload_ms=4 step_ms=3\n", "kv")
    assert len(bad.skipped) == 1 and "beyond any duration" in bad.skipped["reason"].iloc[0]


def test_a_word_ending_like_a_unit_is_a_label_not_a_damaged_time():
    """DeepSpeed's `optimizer=DeepSpeedCPUAdam type=<class '...'>` (deepspeedai/DeepSpeed#852):
    `<class` ends in `s` but starts as no number does: a label, so a start-up log of such lines
    is refused for having no timing line, not as 'all timing lines damaged'; its timings beside
    such a line are read with nothing skipped. A key with a unit (`wait_ms=pass`) and a NaN
    with a unit stay damage: those say they are times."""
    line = "Checking ZeRO support for optimizer=DeepSpeedCPUAdam type=<class 'deepspeed.ops.adam.cpu_adam.DeepSpeedCPUAdam'>\n"
    with pytest.raises(NoDataError, match="no timing lines found"):
        parsers.parse_log(line * 2, "kv")
    p = parsers.parse_log("".join(f"status=pass upload={i + 10}ms\n" for i in range(3)), "kv")
    assert p.components["component"].tolist() == ["upload"] * 3 and len(p.skipped) == 0
    bad = parsers.parse_log("wait_ms=pass step=3ms\nwait=nans step=3ms\nwait=4ms step=3ms\n", "kv")
    assert len(bad.skipped) == 2

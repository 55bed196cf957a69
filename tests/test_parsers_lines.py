"""Format `lines`: timing lines as people print them (parsers/log/lines/read.py), on the real
captures of tests/data/h200_foreign and on synthetic shapes."""

from __future__ import annotations

import pandas as pd
import pytest

from gpuscope import parsers
from gpuscope.errors import NoDataError
from gpuscope.parsers.log import reader
from gpuscope.parsers.log.lines import read as L
from tests.conftest import DATA

RUNS = DATA / "h200_foreign" / "runs"


def _read(text: str):
    """read_line of one line, with a fresh state: (names, values) or None / a reason."""
    r = L.read_line(text, L.State())
    if r is None or isinstance(r, str):
        return r
    return dict(zip(r[0], r[1], strict=True))


def _quantities(text: str) -> dict:
    r = L.read_line(text, L.State())
    return dict(zip(r[2], r[3], strict=True))


def _by_name(p):
    return p.components.groupby("component", sort=False)["value_ms"].apply(list).to_dict()


# -- the real captures -------------------------------------------------------------------------


def test_copy_pageable_capture():
    p = parsers.parse_log(RUNS / "copy_pageable")
    assert p.format == "lines"
    assert (p.total_lines, p.timing_lines, len(p.skipped)) == (14, 12, 0)  # the warning is noise
    assert p.whole == "step" and "named like a whole" in p.whole_basis
    v = _by_name(p)
    assert list(v) == ["h2d", "compute", "step"]
    assert v["h2d"][0] == 182.3 and v["compute"][0] == 227.5 and v["step"][0] == 409.9
    r = p.records
    assert len(r) == 12 and r["complete"].all()
    assert r["held_ms"].iloc[0] == 409.9 and list(r["first_line"][:3]) == [1, 4, 5]
    q = p.quantities
    assert set(q["name"]) == {"step", "h2d_bytes"}
    assert q.loc[q["name"] == "step", "value"].tolist() == list(range(12))
    assert (q.loc[q["name"] == "h2d_bytes", "value"] == 1610612736).all()
    assert (q["record"] >= 0).all()
    # every record carries its upload: 1,610,612,736 bytes over h2d_ms is the upload rate
    b = q[q["name"] == "h2d_bytes"].set_index("record")["value"]
    h2d = p.components[p.components["component"] == "h2d"].set_index("record")["value_ms"]
    gbs = (b / (h2d / 1e3) / 1e9).median()
    assert 8.5 < gbs < 9.6


def test_train_captures():
    slow = parsers.parse_log(RUNS / "train_slow")
    fast = parsers.parse_log(RUNS / "train_fast")
    for p, n in ((slow, 40), (fast, 300)):
        assert p.format == "lines" and p.whole == "step" and len(p.skipped) == 0
        assert len(p.records) == n and p.timing_lines == n
        assert list(_by_name(p)) == ["data", "compute", "step"]
        assert set(p.quantities["name"]) == {"epoch", "step"}  # `step 12/40` keeps 12
        assert "loss" not in set(p.components["component"])
    v = _by_name(slow)
    assert (v["data"][0], v["compute"][0], v["step"][0]) == (86.0, 829.0, 914.9)
    assert slow.quantities.loc[slow.quantities["name"] == "step", "value"].tolist() == list(range(40))


def test_launch_and_sync_bound_captures():
    for run, n, ops in (("launch_bound", 30, 2000), ("sync_bound", 20, 400)):
        p = parsers.parse_log(RUNS / run)
        assert p.format == "lines" and p.whole == "elapsed"
        assert set(p.components["component"]) == {"elapsed"}
        assert len(p.records) == n and (p.records["held_ms"] == p.components["value_ms"].to_numpy()).all()
        q = p.quantities
        assert set(q["name"]) == {"iter", "ops"} and (q.loc[q["name"] == "ops", "value"] == ops).all()


def test_printf_capture_units_as_words_and_own_time():
    p = parsers.parse_log(RUNS / "printf_pipe")
    assert p.format == "lines" and p.whole == "total" and len(p.skipped) == 0
    v = _by_name(p)
    assert list(v) == ["prep", "h2d", "kernel", "total"]
    assert (v["prep"][0], v["h2d"][0], v["kernel"][0], v["total"][0]) == (188.412, 28.974, 20.021, 237.437)
    assert len(p.records) == 30 and p.records["held_ms"].iloc[0] == 237.437
    # the lines arrived together at exit; printed_at= is when each was printed
    ts = p.components.groupby("line")["ts"].first()
    assert ts.iloc[0] == pytest.approx(1796115683.672897) and ts.iloc[1] == pytest.approx(1796115683.813535)
    assert ts.is_monotonic_increasing and ts.iloc[-1] - ts.iloc[0] > 4.0
    assert "printed_at" not in set(p.quantities["name"])


# -- shapes ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("line", "times", "counts"), [
    ("step=3 h2d_ms=231.7 compute_ms=647.2 step_ms=878.9 h2d_bytes=1610612736",
     {"h2d": 231.7, "compute": 647.2, "step": 878.9}, {"step": 3, "h2d_bytes": 1610612736}),
    ("[epoch 0] step 12/40 loss: 6.9042 data: 131.2ms compute: 12.5ms step: 143.9ms",
     {"data": 131.2, "compute": 12.5, "step": 143.9}, {"epoch": 0, "step": 12}),
    ("iter 3: prep 48.211 ms, h2d 9.870 ms, kernel 20.004 ms, total 78.100 ms (printed_at=1764590000.123456)",
     {"prep": 48.211, "h2d": 9.870, "kernel": 20.004, "total": 78.100}, {"iter": 3}),
    ("Epoch 1 | batch 20 | loss 0.53 | fwd 12.1 ms | bwd 20.3 ms", {"fwd": 12.1, "bwd": 20.3},
     {"Epoch": 1, "batch": 20}),
    ("INFO step 7: data_time=0.120s compute_time=0.031s", {"data_time": 120.0, "compute_time": 31.0}, {"step": 7}),
    ("epoch 3 took 1.2s", {"took": 1200.0}, {"epoch": 3}),
    ("latency_us: 150", {"latency": 0.15}, {}),
    ('{"step": 3, "h2d_ms": 12.5}', {"h2d": 12.5}, {"step": 3}),
    ("{'loss': 2.1, 'train_runtime': 12.5, 'train_samples_per_second': 45.6}", {"train_runtime": 12500.0}, {}),
    ("forward took 12ms, backward took 20ms", {"forward": 12.0, "backward": 20.0}, {}),
    ("data time: 0.1s  forward time: 12 ms", {"data_time": 100.0, "forward_time": 12.0}, {}),
    ("time (ms): 12", {"time": 12.0}, {}),
    ("iter=5 ops=2000 elapsed_ms=41.2", {"elapsed": 41.2}, {"iter": 5, "ops": 2000}),
    ("2026-12-01 09:00:19,123 - train - INFO - step 4 step_time = 0.25 s", {"step_time": 250.0}, {"step": 4}),
    ("req done elapsedMs=12 queueUs=150", {"elapsed": 12.0, "queue": 0.15}, {}),
    ("copy 512 MiB: 57.2 ms (9.4 GB/s)", {"copy": 57.2}, {"copy_bytes": 2**29}),
    ("h2d 1.5 GiB in 170 ms", {"h2d": 170.0}, {"h2d_bytes": 1.5 * 2**30}),
])
def test_shapes(line, times, counts):
    got = _read(line)
    assert got == pytest.approx(times)
    assert _quantities(line) == counts


@pytest.mark.parametrize(("value", "ms"), [
    ("12ms", 12.0), ("0.3s", 300.0), ("150us", 0.15), ("150\u00b5s", 0.15), ("2ns", 2e-6),
    ("1.5sec", 1500.0), ("2min", 120000.0), ("12 ms", 12.0), ("0.3 s", 300.0), ("150 us", 0.15),
    ("3 seconds", 3000.0), ("5 msec", 5.0),
])
def test_units_in_the_value(value, ms):
    assert _read(f"prep: {value}") == pytest.approx({"prep": ms})
    assert _read(f"prep {value}") == pytest.approx({"prep": ms})


@pytest.mark.parametrize(("key", "name", "ms"), [
    ("h2d_ms", "h2d", 7.0), ("h2d_us", "h2d", 0.007), ("h2d_s", "h2d", 7000.0), ("h2d_ns", "h2d", 7e-6),
    ("h2d_sec", "h2d", 7000.0), ("h2d_msec", "h2d", 7.0), ("H2D_MS", "H2D", 7.0), ("h2dMs", "h2d", 7.0),
])
def test_units_in_the_key(key, name, ms):
    assert _read(f"{key}=7") == pytest.approx({name: ms})
    assert _read(f"{key}: 7") == pytest.approx({name: ms})


def test_value_unit_wins_over_key_unit():
    assert _read("h2d_ms=2s") == {"h2d": 2000.0}


def test_bare_number_is_a_time_only_where_its_format_gives_the_unit():
    """Issue 33: a time word gives no unit (`elapsed=1.5`, `took 2`); a format that documents
    one does (detectron2's `time:` beside `data_time:`), said in the notes."""
    assert _read("elapsed=1.5 ops=3 other=4") is None
    assert _read("took 2") is None
    assert _read("compute=4 upload=5 wait=6") is None  # no unit, no time name: not times
    p = parsers.parse_log("iter: 1 time: 0.25 data_time: 0.01\niter: 2 time: 0.30 data_time: 0.02\n")
    assert p.format == "lines" and _by_name(p)["time"] == [250.0, 300.0]
    assert any("read as seconds: data_time, time (detectron2's" in n for n in p.notes)


@pytest.mark.parametrize("line", [
    "loaded 3 files in 12 dirs",
    "gpuscope 0.1.0, torch 2.11.0+cu130, CUDA 13.0, driver 580.159.04",
    "listening on 10.0.0.1:8080 (0x7ffd1234abcd)",
    "2026-12-01 12:30:01 started at 12:30:01 on Mon Dec 1 2026",
    "GPU 0: 97% util, 12.3 GiB used, 350W",
    "loss: 0.53 acc: 0.91 lr: 3e-4 grad_norm: 1.2",
    "step=3 loss=0.53 epoch=1",
    "Took 3 attempts",
    "Epoch 1/10",
    "100%|██████████| 10/10 [00:01<00:00,  ?it/s]",  # (a bar without a rate yet: parsers/log/lines/frameworks.py)
    "throughput: 1234.5 samples/s, 12.5 tokens_per_s=99 fps=30",
    '  File "train.py", line 12, in <module>',
    "/opt/torch/lib/python3.12/site-packages/torch/profiler/profiler.py:224: UserWarning: Warning: set acc_events=True.",
])
def test_prose_and_metrics_are_not_timing_lines(line):
    assert _read(line) is None


def test_noise_is_neither_timing_nor_damage():
    text = ("Loading data...\n/x/y.py:3: UserWarning: deprecated since 2.1\n"
            "  _warn_once(\nstep=1 h2d_ms=2 compute_ms=3\nloaded 3 files in 12 dirs\n")
    p = parsers.parse_log(text)
    assert p.format == "lines" and p.timing_lines == 1 and len(p.skipped) == 0


def test_damage_is_skipped_and_counted():
    text = ("step=1 h2d_ms=2.0 compute_ms=3.0\n"
            "step=2 h2d_ms=2q compute_ms=3.0\n"       # not a number under a unit key
            "step=3 h2d_ms=2.0 compute_ms=-3.0\n"     # a negative time
            "step=4 h2d_ms=2.0 compute_ms=\n"         # cut after the '='
            "step=5 h2d_ms=2.0 h2d_bytes=lots\n"      # a byte count that is not one
            "step=6 h2d_ms=2.0 compute_ms=3.0\n")
    p = parsers.parse_log(text, "lines")
    assert p.skipped["line"].tolist() == [2, 3, 4, 5]
    assert p.timing_lines == 6 and len(p.records) == 2
    reasons = " | ".join(p.skipped["reason"])
    assert "not a number" in reasons and "negative" in reasons and "cut line" in reasons and "count" in reasons


def test_a_cut_line_loses_its_last_unit():
    good = "[epoch 0] step {i}/40 loss: 6.9 data: 90.0ms compute: 10.0ms step: 100.1ms\n"
    text = "".join(good.format(i=i) for i in range(5)) + "[epoch 0] step 5/40 loss: 6.9 data: 90.0ms compute: 10.0ms step: 10\n"
    p = parsers.parse_log(text)
    assert p.skipped["line"].tolist() == [6] and "cut line" in p.skipped["reason"].iloc[0]
    assert len(p.records) == 5


# -- the whole ------------------------------------------------------------------------------------


def test_a_field_that_is_the_sum_of_the_others_is_the_whole():
    # no name says whole; c = a + b within rounding (one decimal: +-0.05 each, plus 1%)
    text = "a_ms=10.1 b_ms=20.2 c_ms=30.4\na_ms=11.0 b_ms=19.0 c_ms=30.0\na_ms=5.5 b_ms=4.4 c_ms=9.9\n"
    p = parsers.parse_log(text, "lines")
    assert p.whole == "c" and "sum of the other times on 3 of 3" in p.whole_basis
    assert p.records["held_ms"].tolist() == [30.4, 30.0, 9.9]


def test_a_field_that_is_not_the_sum_is_a_part():
    text = "a_ms=10 b_ms=20 c_ms=50\na_ms=11 b_ms=19 c_ms=45\n"
    p = parsers.parse_log(text, "lines")
    assert p.whole is None and "sum of its parts" in " ".join(p.notes)
    assert p.records["held_ms"].tolist() == [80.0, 75.0]  # all three are parts
    # the sum on one line of three is not enough
    text = "a_ms=10 b_ms=20 c_ms=30\na_ms=11 b_ms=19 c_ms=45\na_ms=1 b_ms=2 c_ms=9\n"
    assert parsers.parse_log(text, "lines").whole is None


def test_the_sum_rule_respects_printed_rounding():
    assert L.whole_code(["a", "b", "c"], [1.0, 2.0, 3.4], [0.05] * 3, L.State()) == -1  # 0.4 > 0.15 + 1%
    assert L.whole_code(["a", "b", "c"], [1.0, 2.0, 3.1], [0.05] * 3, L.State()) == 2 * 4 + L.SUMMED
    assert L.whole_code(["a", "b", "c"], [1.0, 2.0, 3.1], [0.005] * 3, L.State()) == -1  # 3 decimals printed


def test_a_whole_below_its_parts_by_rounding_is_their_sum():
    text = "data: 86.0ms compute: 829.0ms step: 914.9ms\ndata: 86.0ms compute: 29.0ms step: 114.0ms\n"
    p = parsers.parse_log(text)
    assert p.records["held_ms"].tolist()[0] == 915.0  # 0.1 ms below: rounding
    assert p.records["held_ms"].tolist()[1] == 114.0  # 1 ms below: more than rounding, kept
    assert any("1 record printed a whole below" in n for n in p.notes)
    assert p.components.loc[p.components["component"] == "step", "value_ms"].tolist() == [914.9, 114.0]


def test_a_whole_on_a_line_of_its_own_ends_a_record():
    text = ("INFO job=a upload_ms=120 h2d_bytes=10\nINFO job=a compute_ms=300, wait_ms=5\nINFO job=a total_ms=430\n"
            "INFO job=b upload_ms=100\nINFO job=b compute_ms=305\nINFO job=b total_ms=410\nINFO job=c upload_ms=99\n")
    p = parsers.parse_log(text)
    assert p.format == "lines" and p.whole == "total"
    r = p.records
    assert r["first_line"].tolist() == [1, 4, 7] and r["last_line"].tolist() == [3, 6, 7]
    assert r["complete"].tolist() == [True, True, False]
    assert r["held_ms"].tolist()[:2] == [430.0, 410.0]
    assert "a record ends at that line" in " ".join(p.notes)


def test_the_callers_held_key_is_the_whole():
    text = "step=1 a_ms=1 b_ms=2 step_ms=3.5 wall_ms=9\nstep=2 a_ms=1 b_ms=2 step_ms=3.1 wall_ms=9\n"
    assert parsers.parse_log(text, "lines").whole == "wall"  # the larger of two whole names
    p = parsers.parse_log(text, "lines", held_key="step_ms")
    assert p.whole == "step" and p.records["held_ms"].tolist() == [3.5, 3.1]


# -- records ------------------------------------------------------------------------------------


def test_lines_of_one_step_are_one_record_and_a_stray_line_is_none():
    text = ("Loaded model in 3.2s\n"
            "step=1 data_ms=5.0 h2d_bytes=100\nstep=1 compute_ms=10.0 step_ms=15.2\n"
            "step=2 data_ms=6.0 h2d_bytes=100\nstep=2 compute_ms=11.0 step_ms=17.1\n"
            "step=3 data_ms=6.0\nstep=3 compute_ms=11.0 checkpoint_ms=100 step_ms=117.1\n"
            "epoch 0 done in 150s\n")
    p = parsers.parse_log(text)
    r = p.records
    assert r["first_line"].tolist() == [2, 4, 6] and r["last_line"].tolist() == [3, 5, 7]
    assert r["held_ms"].tolist() == [15.2, 17.1, 117.1]
    c = p.components.set_index("line")
    assert c.loc[1, "record"] == -1 and c.loc[8, "record"] == -1  # prose with a time: no record
    q = p.quantities
    assert q.loc[q["name"] == "h2d_bytes", "record"].tolist() == [0, 1]


PROGRESS_METER = ("=> creating model 'resnet50'\n"
                  "Epoch: [0][  1/100]\tTime  0.257 ( 0.257)\tData  0.175 ( 0.175)\tLoss 6.9764e+00 (6.9764e+00)"
                  "\tAcc@1   0.00 (  0.00)\tAcc@5   0.39 (  0.39)\n"
                  "Epoch: [0][  2/100]\tTime  0.263 ( 0.260)\tData  0.165 ( 0.170)\tLoss 6.9449e+00 (6.9606e+00)"
                  "\tAcc@1   0.00 (  0.00)\tAcc@5   0.00 (  0.20)\n"
                  "Epoch: [0][  3/100]\tTime  0.283 ( 0.268)\tData  0.168 ( 0.169)\tLoss 6.9512e+00 (6.9575e+00)"
                  "\tAcc@1   0.00 (  0.00)\tAcc@5   0.00 (  0.13)\n")


def test_the_pytorch_examples_progress_meter():
    """The training loop of the PyTorch examples (and the scripts copied from it): one line per
    step, the epoch repeated on each, Time and Data in seconds without a unit, running averages
    in parentheses. Each line is a step (the whole, Time, printed once per step), Data is its
    host-side part, the averages and metrics are not components."""
    p = parsers.parse_log(PROGRESS_METER)
    assert p.format == "lines"
    r = p.records
    assert r["first_line"].tolist() == [2, 3, 4] and r["held_ms"].tolist() == [257.0, 263.0, 283.0]
    c = p.components
    assert sorted(set(c["component"])) == ["Data", "Time"]
    assert c.loc[c["component"] == "Data", "value_ms"].tolist() == [175.0, 165.0, 168.0]


def test_a_group_printing_its_whole_twice_is_two_records():
    """Lines with the same counters are one record only while the whole is printed once among
    them: a second whole ends the first record (the epoch on every step's line)."""
    text = "".join(f"epoch=0 data_ms={d} step_ms={t}\n" for d, t in ((5, 20), (6, 21), (7, 22)))
    assert parsers.parse_log(text).records["held_ms"].tolist() == [20.0, 21.0, 22.0]
    one = "step=1 data_ms=5\nstep=1 step_ms=20\nstep=2 data_ms=6\nstep=2 step_ms=21\n"
    r = parsers.parse_log(one).records
    assert r["first_line"].tolist() == [1, 3] and r["last_line"].tolist() == [2, 4]


def test_data_is_seconds_only_as_a_label():
    assert _read("Time 0.25 (0.3) Data 0.1 (0.2)") == {"Time": 250.0, "Data": 100.0}  # (ProgressMeter's shape)
    assert _read("data=3 upload_ms=2") == {"upload": 2.0}  # a bare `data=` is no time
    assert _read("Data 3 files loaded in 2.0s") == {"loaded": 2000.0}  # a count of files, not a time
    assert _read("Data 0.1 (0.1) Time 0.25 (0.3)") == {"Data": 100.0, "Time": 250.0}  # the word after: the next label
    # timm's meter: `Data: 0.012 (0.015)`, seconds when printed with a point; `Data: 5` is a count
    assert _read("Train: 0 [  50/1000 (  5%)]  Loss: 6.912 (6.92)  Time: 0.412s,  155.3/s  (0.420s,  152.4/s)  "
                 "LR: 1.000e-05  Data: 0.012 (0.015)") == {"Time": 412.0, "Data": 12.0}
    assert _read("Data: 5 upload: 2ms") == {"upload": 2.0}
    assert _quantities("Data: 5 upload: 2ms") == {"Data": 5.0}


def test_detection_keeps_kv_logs_kv():
    assert parsers.parse_log("upload=1.5s, compute=250us, wait_ms=3\n").format == "kv"
    assert parsers.parse_log("a_ms=1 b_ms=2\nnoise line\na_ms=3\n").format == "kv"
    held = "INFO job=abc upload_ms=120\nINFO job=abc step_total_ms=430\n"
    assert parsers.parse_log(held, held_key="step_total").format == "kv"
    # a startup line in prose among key=value steps: read as either, the steps are the records
    # (kv no longer reads `upload=3` as 3 ms: nothing in it says time)
    many = parsers.parse_log("Loaded model in 3.2s\n" + "".join(f"upload_ms={i} compute_ms={2 * i}\n" for i in range(5)))
    assert int(many.records["complete"].sum()) == 5
    assert set(many.components.loc[many.components["record"] >= 0, "component"]) == {"upload", "compute"}
    assert parsers.parse_log("step=1 upload_ms=2\n").format == "lines"


def test_chunked_reading_equals_one_chunk(monkeypatch):
    """A log read in many small chunks gives the frames of one read: what a line means may
    depend on earlier lines (a key printed with a unit, a cut line), so the state goes on."""
    text = "".join(
        f"2026-12-01T09:00:{i % 60:02d}.5Z [epoch 0] step {i}/400 loss: 1.0 data: {i % 7}.5ms compute: 3.0ms "
        f"step: {i % 7 + 3}.5ms\n" + ("warning: something\n" if i % 50 == 0 else "")
        + ("[epoch 0] step 9/400 data: 1x\n" if i == 300 else "")
        + ("[epoch 0] step 9/400 data: 1.5ms compute: 3.0ms step: 10\n" if i == 350 else "")
        for i in range(400))
    one = parsers.parse_log(text.encode())
    for size in (97, 1000, 4096):
        monkeypatch.setattr(reader, "CHUNK", size)
        two = parsers.parse_log(text.encode())
        for a, b in ((one.components, two.components), (one.records, two.records),
                     (one.quantities, two.quantities), (one.skipped, two.skipped)):
            pd.testing.assert_frame_equal(a, b)
        assert (one.whole, one.notes, one.timing_lines) == (two.whole, two.notes, two.timing_lines)
    assert "cut line" in " ".join(one.skipped["reason"])


def test_no_timing_lines_is_no_data():
    with pytest.raises(NoDataError):
        parsers.parse_log("just prose here\nloaded 3 files in 12 dirs\n", "lines")


def test_a_logger_line_written_right_after_a_bar_redraw_is_read():
    """tqdm redraws without a newline; a logger's next line lands right after the bar's `]`
    (huggingface/accelerate#1589, deepspeedai/DeepSpeed#1436): that text is a line of its own.
    Its timers had been dropped without a word (the bar's shape took the line). A bar whose
    postfix holds brackets, and a bar alone, read as before."""
    from gpuscope.parsers.log.lines.read import pieces

    line = ("  3%|###   | 12/345 [00:07<06:50,  1.23s/it][2023-06-21 07:39:09,625] [INFO] [Rank 0] time (ms) | "
            "optimizer_allgather: 7.96 | optimizer_step: 60.64")
    assert pieces(line)[0].endswith("1.23s/it]") and pieces(line)[1].startswith("[2023-06-21")
    text = "".join(f"step {i} time (ms) | fwd: 2{i}.0 | bwd: 4{i}.0\n" for i in range(3)) + line + "\n"
    p = parsers.parse_log(text, "lines")
    assert {"optimizer_allgather", "optimizer_step"} <= set(p.components["component"]) and len(p.skipped) == 0
    bar = "Epoch 0:  5%|#  | 50/1000 [00:02<00:40, 23.50it/s, loss=0.3, lr=[0.001]]"
    assert pieces(bar) == [bar] and pieces(bar + "\r" + bar) == [bar, bar]

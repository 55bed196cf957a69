"""The frameworks' entries of the one formats table (parsers/log/formats.py FRAMEWORKS): each names
its reader, its gates, an example as the framework prints it and its corpus sample; the
table feeds the lines reader (parsers/log/lines/line.py SHAPE_GATES), the refusals' reasons and
the docs."""

from __future__ import annotations

import tomllib

import pytest

from gpuscope import parsers
from gpuscope.errors import NoDataError
from gpuscope.parsers.log import formats
from gpuscope.parsers.log.lines import frameworks as lineshapes
from gpuscope.parsers.log.lines import line as lineread
from tests.conftest import DATA, REPO

EXPECTED = tomllib.loads((DATA / "corpus" / "expected.toml").read_text())
ENTRIES = formats.FRAMEWORKS


def test_every_gate_passes_the_readers_cheap_test():
    assert lineread.SHAPE_GATES and all(lineread.maybe_framework(g) for g, _ in lineread.SHAPE_GATES)


def test_names_are_unique_and_each_has_its_corpus_case():
    assert len({f.name for f in ENTRIES}) == len(ENTRIES)
    for f in ENTRIES:
        case = f"corpus/{f.corpus}"
        assert (DATA / case).is_file() and case in EXPECTED, f.name


@pytest.mark.parametrize("f", ENTRIES, ids=[f.name for f in ENTRIES])
def test_each_entry_says_where_it_is_read(f):
    import importlib

    assert f.rules and (not f.reader or f"lines.frameworks.{f.reader}" in f.rules)
    for rule in f.rules:
        mod, _, attr = rule.partition(".")
        obj = importlib.import_module(f"gpuscope.parsers.log.{mod}")
        for part in attr.split("."):
            obj = getattr(obj, part)  # (raises: a rule that names nothing)


@pytest.mark.parametrize("f", ENTRIES, ids=[f.name for f in ENTRIES])
def test_each_entry_reads_its_example(f):
    if f.reader:
        assert callable(getattr(lineshapes, f.reader)) and f.gates
        assert any(g in f.example for g in f.gates), "the example goes to its reader"
        assert all((g, getattr(lineshapes, f.reader)) in lineread.SHAPE_GATES for g in f.gates)
    st = lineread.State()
    for line in f.example.split("\n"):
        r = lineread.read_line(line, st)
    if f.refuses:
        assert r is None, "a refused framework's line is no timing line"
    elif f.name != "mlperf":  # (an interval's end needs its start line)
        assert type(r) is tuple and r[0], f"{f.name}: no time read from {f.example!r}"


@pytest.mark.parametrize("f", [f for f in ENTRIES if f.refuses], ids=lambda f: f.name)
def test_a_refused_framework_is_refused_with_what_it_is(f):
    case = f"corpus/{f.corpus}"
    assert EXPECTED[case]["refused"] in f.refuses
    with pytest.raises(NoDataError, match="measurements, not timed steps") as e:
        parsers.parse_log(DATA / case)
    assert f.refuses in str(e.value)


def test_the_docs_and_the_no_timing_message_list_every_framework():
    docs = (REPO / "docs" / "ANALYZE.md").read_text()
    assert formats.docs_table() in docs, "docs/ANALYZE.md's table is formats.docs_table()"
    shapes = formats.shapes_read("lines")
    for f in ENTRIES:
        assert f"`{f.name}`" in docs, f.name
        assert (f.name in shapes) != bool(f.refuses), f.name


def test_a_tqdm_bar_among_step_lines_is_no_step_and_a_validation_bar_is_evaluation():
    bar = "\r".join(f"Loading: {i * 10}%|##| {i}/10 [00:0{i}<00:01, 9.35it/s]" for i in range(1, 11))
    steps = "".join(f"step={i} h2d_ms=12.0 compute_ms=30.0 step_ms=43.0\n" for i in range(6))
    val = "Validation DataLoader 0: 100%|##| 313/313 [00:02<00:00, 130.1it/s]\n"
    p = parsers.parse_log(bar + "\n" + steps + val, "lines")
    assert p.whole == "step" and int(p.records["complete"].sum()) == 6 and p.steps_per_record == 1
    assert any("progress-bar redraw(s)" in n for n in p.notes)
    assert any("1 evaluation line(s)" in n for n in p.notes)


def test_a_bar_without_a_rate_and_a_keras_redraw_have_no_time():
    st = lineread.State()
    assert lineread.read_line("  0%|          | 0/500 [00:00<?, ?it/s]", st) is None
    assert lineread.read_line("  32/1875 [>.............................] - ETA: 3s - loss: 2.3", st) is None
    assert lineread.read_line(" 938/1875 \u2501\u2501\u2501\u2501 1s 1ms/step - loss: 0.59", st) is None


def test_tensorflow_rates_are_inverted_and_a_hook_line_keeps_its_step():
    st = lineread.State()
    names, values, qn, qv, *_ = lineread.read_line("INFO:tensorflow:global_step/sec: 250", st)
    assert names == ["step.mean"] and values == [4.0] and not qn
    names, values, qn, qv, *_ = lineread.read_line("INFO:tensorflow:loss = 0.41, step = 300 (0.322 sec)", st)
    assert names == ["elapsed"] and values == [322.0] and (qn, qv) == (["step"], [300.0])
    assert lineshapes.read_tensorflow("epoch done (12.5 sec)", st) is lineshapes.NOT_MINE  # (no `tag = value`)


def test_kv_differences_a_running_total_as_lines_does():
    text = "".join(f"step={i} train_wall=32 wall={33 * (i + 1)}\n" for i in range(5))
    # (kv gives a bare `wall=` no unit, issue 33: its running total printed with one)
    for fmt, log in (("kv", text.replace("wall=", "wall_s=")), ("lines", text)):
        p = parsers.parse_log(log, fmt)
        wall = p.components[p.components["component"] == "wall"]["value_ms"].tolist()
        assert len(set(wall)) == 1, (fmt, wall)
        assert any("running total" in n for n in p.notes), fmt


def test_hugging_face_steps_come_from_the_runtime_and_the_rate():
    p = parsers.parse_log("{'train_runtime': 100.0, 'train_steps_per_second': 4.0, 'train_loss': 0.5}\n", "lines")
    assert p.steps_per_record == 400 and list(p.components["component"]) == ["train_runtime"]
    assert p.quantities[["name", "value"]].values.tolist() == [["covers_steps", 400.0]]


def test_a_coloured_keras_3_bar_and_criterion_s_progress():
    st = lineread.State()
    r = lineread.read_line("1875/1875 \x1b[32m\u2501\u2501\u2501\x1b[0m\x1b[37m\x1b[0m 3s 1ms/step - loss: 0.4", st)
    assert r[0] == ["elapsed", "step.mean"] and r[1] == [3000.0, 1.0] and (r[2], r[3]) == (["covers_steps"], [1875.0])
    assert lineread.read_line("Benchmarking fib 20: Warming up for 3.0000 s", st) is None
    # (another program's line that opens with the word is read as any line is)
    assert lineread.read_line("Benchmarking model took 3.2 s", st)[0] == ["model"]


def test_a_tqdm_bar_without_a_total():
    r = lineread.read_line("123it [00:03, 40.00it/s]", lineread.State())
    assert r[0] == ["time_per_it"] and r[1] == [25.0] and (r[2], r[3]) == (["iter", "iter_of"], [123.0, -1.0])


def test_megatron_timer_lines_are_known_by_their_padding():
    st = lineread.State()
    r = lineread.read_line("    optimizer ......................................: 10.20", st)
    assert r[0] == ["optimizer.max"] and r[1] == [10.2]
    # not padded to Megatron's 48 columns: read as any line is (no unit: no time)
    assert lineread.read_line("    optimizer ....: 10.20", st) is None
    assert lineshapes.read_megatron_timers("loading checkpoint ..: done", st) is lineshapes.NOT_MINE


def test_a_training_bar_beside_one_off_timing_lines_stays_the_steps():
    one_offs = "Loaded model in 3.2s\nCompiled graph in 12.0s\nWarmup took 1.0s\n"
    bar = "\r".join(f"Epoch 0: {i}%|#| {i * 10}/1000 [00:0{i}<00:15, 22.0{i}it/s]" for i in range(1, 9))
    p = parsers.parse_log(one_offs + bar + "\n", "lines")
    assert p.whole == "time_per_it" and int(p.records["complete"].sum()) == 8 and p.steps_per_record == 10
    assert not any("progress-bar redraw(s)" in n for n in p.notes)


def test_a_counter_and_a_dash_of_another_program_is_no_keras_redraw():
    for line in ("12/40 - step_time: 35ms - loss: 0.3", "40/40 - step_time: 35ms - loss: 0.3"):
        assert lineshapes.read_keras(line, lineread.State()) is lineshapes.NOT_MINE
        r = lineread.read_line(line, lineread.State())
        assert r[0] == ["step_time"] and r[1] == [35.0]


def test_a_configured_duration_is_a_setting_not_a_time_spent():
    # perf_analyzer's `Measurement window: 5000 msec` under its settings header became a 5 s
    # component; a timeout or a deadline given to a program is no time it spent either
    from pathlib import Path

    from gpuscope.parsers import parse_log

    p = Path(__file__).parent / "data" / "corpus" / "perf_analyzer" / "summary.txt"
    assert "Measurement_window" not in set(parse_log(p).components["component"].astype(str))
    log = parse_log("step=1 fwd_ms=12.0 timeout=30s deadline_ms=500\nstep=2 fwd_ms=12.5 timeout=30s deadline_ms=500\n")
    names = set(log.components["component"].astype(str))
    assert "fwd" in " ".join(names) and not {n for n in names if "timeout" in n or "deadline" in n}


def test_a_cprofile_report_is_refused_and_a_log_printing_one_after_its_steps_is_read():
    """Lightning's AdvancedProfiler prints pstats (Lightning-AI/pytorch-lightning#782): its
    `4869394 function calls (...) in 19.107 seconds` had been one step with a part named
    `calls`; the report is refused as what it is. A training log that prints such a report
    after its own steps is read for the steps (the report a small part of it)."""
    report = (DATA / "corpus/lightning/advanced_profiler_get_train_batch.txt").read_text()
    with pytest.raises(NoDataError, match="a cProfile report"):
        parsers.parse_log(report, name="profile.txt")
    log = "".join(f"step {i}: data 12.{i} ms, compute 80.{i} ms, total 93.{i} ms\n" for i in range(40)) + report
    p = parsers.parse_log(log, name="train.log")
    assert len(p.records) >= 30 and "calls" not in set(p.components["component"])

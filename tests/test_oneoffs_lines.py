"""Issue 33, one-off lines: a time printed once about a phase of the run (a compile, a warm-up)
or about the run itself is never a step and never a part of one (parsers/log/oneoffs.py); bash's
`time` block is one record of `real` with user and sys beside it; a build's, a test runner's and
a watchdog's times are no timing lines."""

from __future__ import annotations

import pytest

from gpuscope import parsers
from gpuscope.errors import NoDataError
from gpuscope.parsers.log.lines.line import State, read_line

STEPS = "".join(f"step {i} data_ms={10 + i % 3} compute_ms={30 + i % 5}\n" for i in range(6))


def _parse(text: str):
    return parsers.parse_log(text, "lines")


def test_compile_and_warmup_sentences_are_kept_apart_from_the_steps():
    text = ("[generate.py:99] Compilation for generate_next_token takes: 2.45 sec\n"
            "[generate.py:111] Warmup run for quantized model takes: 51.02 sec\n" + STEPS
            + "[monitor.py:33] torch.compile takes 47.72 s in total\n")
    p = _parse(text)
    assert int(p.records["complete"].sum()) == 6 and p.whole is None
    assert {"Compilation_for_generate_next_token", "Warmup_run_for_quantized_model", "torch.compile"} <= set(
        p.not_parts)
    assert p.not_parts["torch.compile"].startswith("a one-off compile (its total over the start-up)")
    assert p.components.loc[p.components["component"] == "torch.compile", "record"].tolist() == [-1]
    assert any("one-off phase(s)" in n and "torch.compile" in n for n in p.notes)


def test_jax_compile_log_lines_are_named_by_their_phase():
    text = ("WARNING:absl:Finished tracing + transforming f for jit in 2.244359254837036 sec\n"
            "Finished jaxpr to MLIR module conversion jit(train) in 2.1959640979766846 sec\n"
            "WARNING:absl:Finished XLA compilation of f in 1.267568826675415 sec\n")
    p = _parse(text)
    assert list(p.components["component"]) == ["tracing", "MLIR_conversion", "XLA_compilation"]
    assert p.components["value_ms"].round(3).tolist() == [2244.359, 2195.964, 1267.569]
    assert int(p.records["complete"].sum()) == 0 and set(p.not_parts) == {"tracing", "MLIR_conversion",
                                                                          "XLA_compilation"}


def test_a_compile_time_among_a_step_s_parts_stays_a_part():
    """What would fire falsely: a compile printed on each step's line with the step's other
    times (a loop that recompiles every step) is a part of that step, never kept apart."""
    text = "".join(f"step {i} compile_ms={12 + i} run_ms=30 total_ms={42 + i}\n" for i in range(5))
    p = _parse(text)
    assert "compile" not in p.not_parts and int(p.records["complete"].sum()) == 5 and p.whole == "total"
    # a sentence naming no compile or warm-up is read as before (`forward takes 12 ms`)
    q = _parse("".join(f"step {i}: forward takes {12 + i} ms\n" for i in range(4)))
    assert not q.not_parts and int(q.records["complete"].sum()) == 4


def test_bash_time_is_one_record_of_real_with_user_and_sys_beside_it():
    block = "\nreal\t0m{r}s\nuser\t1m28.785s\nsys\t0m1.112s\n"
    p = _parse("".join(block.format(r=r) for r in ("0.057", "39.407", "0.340")))
    assert p.whole == "real" and int(p.records["complete"].sum()) == 3
    assert sorted(p.not_parts) == ["sys", "user"] and "CPU time" in p.not_parts["user"]
    held = p.records.loc[p.records["complete"], "held_ms"].tolist()
    assert held == [57.0, 39407.0, 340.0]  # (user, 88.8 s, more than real: never a part of it)
    # what would fire falsely: a `user` that is no bash time (a label with its unit) is read as before
    q = _parse("".join(f"step {i} user 12.5 ms kernel 30 ms\n" for i in range(3)))
    assert "user" not in q.not_parts and int(q.records["complete"].sum()) == 3


@pytest.mark.parametrize("line", [
    "    Finished release [optimized] target(s) in 0.58s",
    "    Finished `release` profile [optimized] target(s) in 1m 02s",
    "ok  \torderbench\t4.963s",
    "[Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=319682, OpType=_ALLGATHER_BASE, "
    "Timeout(ms)=100000) ran for 138169 milliseconds before timing out.",
    "test evm_circuit::evm_circ_benches::bench_evm_circuit_prover has been running for over 60 seconds",
    "test result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 2 filtered out; finished in 8270.24s",
])
def test_a_build_a_test_runner_and_a_watchdog_print_no_timing_line(line):
    assert read_line(line, State()) is None


def test_a_log_of_only_such_lines_is_refused_and_steps_beside_them_are_kept():
    with pytest.raises(NoDataError, match=r"of no step: 'Finished release .*' \(cargo's build time"):
        _parse("    Finished release [optimized] target(s) in 0.58s\nok  \tpkg\t4.963s\n")
    with pytest.raises(NoDataError, match="the NCCL watchdog's time before a collective timed out"):
        _parse("[Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=3, Timeout(ms)=100000) "
               "ran for 138169 milliseconds before timing out.\n")
    p = _parse("    Finished release [optimized] target(s) in 0.58s\n" + STEPS + "ok  \tpkg\t4.963s\n")
    assert int(p.records["complete"].sum()) == 6 and set(p.components["component"]) == {"data", "compute"}


def test_the_replayed_and_the_per_line_readings_agree():
    """Many lines of each one-off shape among step lines: the compiled splitter's replay and the
    Python reader alone give the same scan (the one-off shapes are gated: read by their reader)."""
    from tests.test_linereplay_paths import NATIVE, same_scan, scan

    if NATIVE is None or not hasattr(NATIVE, "Shapes"):
        pytest.skip("the compiled scanner is not built here")
    text = "".join(f"step {i} data_ms={10 + i % 3} compute_ms={30 + i % 5}\n"
                   f"Finished XLA compilation of f{i} in 0.{i + 1}26 sec\n"
                   f"Compiling a graph for dynamic shape takes {i}.40 s\n"
                   f"real\t0m{i}.057s\nuser\t0m{i}.090s\nsys\t0m0.024s\n" for i in range(12))
    same_scan(scan(text, False), scan(text, True))


def test_a_run_total_after_the_steps_is_no_step_and_no_whole():
    """ignite's `Total Time: 93.50` after its epochs' `Time Taken` (and JAX's `total time:` after
    ten `epoch time:` lines) had been the record's whole: one record of every epoch, incomplete.
    (Those pastes print no unit, so they are refused now, issue 33 class 3: here with one.)"""
    p = _parse("Epoch 1, Time Taken : 31.6 s\nEpoch 2, Time Taken : 32.0 s\nTotal Time: 93.5 s\n")
    assert int(p.records["complete"].sum()) == 2 and p.whole is None
    assert p.not_parts["Total_Time"].startswith("the run's total, printed once after the 2 steps")
    assert any(n.startswith("the run's total") for n in p.notes)
    q = _parse("".join(f"{i} epoch time: 0.0{i + 1} s\n" for i in range(4)) + "\ntotal time: 0.101 s\n")
    assert int(q.records["complete"].sum()) == 4 and "total_time" in q.not_parts


def test_what_would_make_a_run_total_fire_falsely_does_not():
    # a total below the sum of the steps before it is no run total of them
    p = _parse("Epoch 1 took 10 s\nEpoch 2 took 11 s\nEpoch 3 took 10 s\ntotal: 12 s\n")
    assert "total" not in p.not_parts
    # lines without a counter before a total printed once are its parts, not steps
    q = _parse("load 5 ms\nload 6 ms\nload 4 ms\ntotal 15 ms\n")
    assert not q.not_parts and q.whole == "total"
    # a total printed in the middle of the steps is not after them
    r = _parse("Epoch 1 took 10 s\nEpoch 2 took 11 s\ntotal: 40 s\nEpoch 3 took 10 s\n")
    assert "total" not in r.not_parts


def test_ranks_final_bar_states_each_stand_for_the_bar_s_iterations():
    """Six ranks each print their bar's last state (15/15 at ~31.8 s/it, accelerate#2375): the
    counter does not advance, and each record is the mean over 15 iterations, not one step."""
    bar = "Training: 100%|##########| 15/15 [07:57<00:00, 31.8{}s/it]\n"
    p = _parse("".join(bar.format(i) for i in range(6)))
    assert int(p.records["complete"].sum()) == 6 and p.steps_per_record == 15
    assert any("last state (15/15)" in n for n in p.notes)
    # what would fire falsely: a bar still counting, whose last redraw is 15/15, advances by 5
    redraws = "".join(f"Training: {i * 33}%|###| {i * 5}/15 [00:{i * 5:02d}<00:10, 1.0{i}s/it]\n" for i in (1, 2, 3))
    assert _parse(redraws).steps_per_record == 5


def test_the_bar_s_quantity_names_are_the_bar_reader_s():
    from gpuscope.parsers.log.lines import frameworks as lineshapes
    from gpuscope.parsers.log.lines import steps as linesteps

    assert (linesteps.BAR_COUNTER, linesteps.BAR_TOTAL) == (lineshapes.BAR_COUNTER, lineshapes.BAR_TOTAL)


def test_a_sentence_s_last_word_names_no_time_and_a_model_load_is_a_one_off():
    """`Status: success. Took 8468104 microseconds.` had named its time `success.`: the word
    before `Took` ends the sentence before it. TensorFlow's SavedModel load is a one-off setup."""
    text = ("2021-04-21 20:17:23.406511: I tensorflow/cc/saved_model/loader.cc:379] SavedModel load for tags "
            "{ serve }; Status: success. Took 8468104 microseconds.\n" + STEPS)
    p = _parse(text)
    assert p.components.loc[p.components["component"] == "SavedModel_load_time", "value_ms"].tolist() == [8468.104]
    assert "SavedModel_load_time" in p.not_parts and int(p.records["complete"].sum()) == 6
    q = _parse("".join(f"batch {i} done. Took {10 + i} ms\n" for i in range(3)))
    assert set(q.components["component"]) == {"took"}
    # a word before `took` that is no sentence's end still names it
    assert set(_parse("forward took 12 ms\nforward took 13 ms\n").components["component"]) == {"forward"}


def test_a_validation_only_run_reads_its_batches_as_steps():
    """DALI's ImageNet example run for its `Test:` speed only (NVIDIA/DALI#5964): every line an
    evaluation line had all been kept apart, 0 steps and nothing said; a validation run's batches
    are its steps, and a note says the run is one."""
    text = "".join(f"Test: [{i}/196]  Time {t} ({t})  Loss 0.48 (0.48)\n"
                   for i, t in ((0, "10.827"), (10, "0.215"), (20, "0.216"), (30, "0.215")))
    p = _parse(text)
    assert int(p.records["complete"].sum()) == 4 and p.whole == "Time" and p.steps_per_record == 10
    assert any("validation-only run" in n for n in p.notes)


def test_evaluation_lines_beside_training_lines_stay_apart():
    """What would fire falsely: a training log with its evaluation lines, or a log of Hugging
    Face's evaluation results only (`eval_runtime`: a whole pass over the evaluation set, no batch)."""
    text = STEPS + "".join(f"Test: [{i}/10]  Time 0.2{i} (0.2{i})\n" for i in range(3))
    p = _parse(text)
    assert int(p.records["complete"].sum()) == 6 and not any("validation-only" in n for n in p.notes)
    hf = "".join(f"{{'eval_loss': 0.{i}, 'eval_runtime': 12.{i}, 'epoch': {i}.0}}\n" for i in range(1, 3))
    q = _parse(hf)
    assert int(q.records["complete"].sum()) == 0 and not any("validation-only" in n for n in q.notes)

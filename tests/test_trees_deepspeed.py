"""DeepSpeed's wall_clock_breakdown timers (issue 33 class 4; parsers/log/notparts.py _deepspeed,
parsers/log/lines/records.py _nested_only and bars_apart): the micro-step and the global timers
of one step are one step, ZeRO's optimizer timers lie inside `step`, and a tqdm bar redrawn
in front of a logger's timing line is no step (its smoothed rate no record's whole)."""

from __future__ import annotations

from gpuscope import parsers

PFX = "[2023-06-21 07:39:09,625] [INFO] [logging.py:96:log_dist] [Rank 0] rank=0 time (ms) | "


def _step(k: float) -> str:
    return (PFX + f"optimizer_allgather: 7.96 | optimizer_gradients: 0.02 | optimizer_step: {60 + k:.2f}\n"
            + PFX + f"forward_microstep: 27.48 | backward_microstep: 73.59 | step_microstep: {72 + k:.2f}\n"
            + PFX + f"forward: 27.46 | backward: 73.60 | step: {72 + k:.2f}\n")


def test_micro_and_global_timers_of_one_step_are_one_step():
    p = parsers.parse_log("".join(_step(k) for k in range(3)), "lines")
    assert int(p.records["complete"].sum()) == 3 and not p.whole
    assert p.records.loc[p.records["complete"], "held_ms"].round(2).tolist() == [173.06, 174.06, 175.06]
    assert p.not_parts["forward_microstep"].startswith("nested in 'forward'")
    assert p.not_parts["optimizer_step"].startswith("nested in 'step'")
    assert any("no steps of their own" in n for n in p.notes)


def test_micro_step_timers_alone_stay_the_parts():
    """False-positive guard: without the global timers, the micro-step's are the step's parts,
    and an `optimizer_step` without DeepSpeed's `step` is a part as any."""
    text = "".join(PFX + f"forward_microstep: 27.4{k} | backward_microstep: 73.59 | step_microstep: 72.59\n"
                   for k in range(4))
    p = parsers.parse_log(text, "lines")
    assert int(p.records["complete"].sum()) == 4 and "forward_microstep" not in p.not_parts
    q = parsers.parse_log("".join(f"iter {k} forward_ms=20.{k} optimizer_step_ms=5.0\n" for k in range(4)), "lines")
    assert "optimizer_step" not in q.not_parts and int(q.records["complete"].sum()) == 4


def test_a_bar_redrawn_in_front_of_a_timing_line_is_no_step():
    bar = "  3%|###      | {n}/345 [00:07<06:50,  1.2{n}s/it]"
    text = "".join(bar.format(n=n) + _step(n) for n in range(2))
    p = parsers.parse_log(text, "lines")
    assert not p.whole and int(p.records["complete"].sum()) == 2
    assert any("progress-bar redraw(s)" in n for n in p.notes)


def test_the_flops_profilers_summary_is_one_step_and_module_latencies_no_parts():
    text = ("fwd latency:                     76.67 ms\nbwd latency:                     108.02 ms\n"
            "fwd FLOPS per GPU = fwd flops per GPU / fwd latency:          81.9 TFLOPS\n"
            "step latency:                    34.09 us\niter latency:                    184.73 ms\n"
            "samples/second:                  433.07\n\ndepth 1:\n"
            "    params      - {'BertModel': '335.15 M', 'BertPreTrainingHeads': '32.34 M'}\n"
            "    fwd latency - {'BertModel': '34.29 ms', 'BertPreTrainingHeads': '3.23 ms'}\n")
    p = parsers.parse_log(text, "lines")
    assert sorted(set(p.components["component"])) == ["bwd_latency", "fwd_latency", "iter_latency", "step_latency"]
    assert p.whole == "iter_latency" and int(p.records["complete"].sum()) == 1


def test_a_latency_with_words_before_it_is_the_shared_readers():
    """False-positive guard: `p99 fwd latency: 12 ms` (a statistic) is no profiler summary's line."""
    from gpuscope.parsers.log.lines import frameworks as lineshapes
    from gpuscope.parsers.log.lines import line as lineread

    assert lineshapes.read_flops_profiler("p99 fwd latency: 12.5 ms", lineread.State()) is lineshapes.NOT_MINE


def test_tf_benchmark_models_table_is_refused_as_the_table_it_is():
    """Its bracketed header (`[Node type] [count] [avg ms] ...`) names the table; rows with no
    header at all are still refused for that (false-positive guard)."""
    import pytest

    from gpuscope.errors import NoDataError

    rows = "".join(f"            Conv2D{i}      3      42.24{i}      36.750%     36.750%    47204.801     3\n"
                   for i in range(4))
    head = "                 [Node type]  [count]  [avg ms]  [avg %]  [cdf %]  [mem KB]  [times called]\n"
    with pytest.raises(NoDataError, match="TensorFlow benchmark_model") as e:
        parsers.parse_log(head + rows)
    assert "without its header" not in str(e.value)
    with pytest.raises(NoDataError, match="without its header"):
        parsers.parse_log(rows)


def test_the_compiled_replay_reads_these_shapes_as_the_per_line_reader(tmp_path):
    """Lines of a shape seen often are replayed from the compiled splitter (a digit-free root
    `Start:` line never reaches a reader there): the readings stay the per-line reader's."""
    from tests.test_linereplay_paths import both
    from tests.test_trees_ark import TREE, TRITON

    for i, text in enumerate((TREE * 20, TRITON * 20, "".join(_step(k) for k in range(20)))):
        path = tmp_path / f"log{i}.txt"
        path.write_text(text)
        both(path)

"""Evaluation lines are no steps (issue 33, class 6): one `epoch N: eval time 4213.5 ms` line
per epoch made 42 steps of 40 (its label `eval time` was let pass as llama.cpp's generation);
after the epoch's counter it is the epoch's evaluation, kept apart and never a part. The
false fire: llama.cpp's own `eval time =` (no counter) stays its generation's time."""

from __future__ import annotations

from gpuscope import parsers
from gpuscope.rolemodel import model_for


def _log() -> str:
    lines = []
    for e in range(2):
        lines += [f"epoch {e} step {s}: data 50.{s} ms, compute 70.{s} ms, step 120.{s} ms" for s in range(20)]
        lines.append(f"epoch {e}: eval time 4213.5 ms")
    return "\n".join(lines) + "\n"


def test_one_eval_line_per_epoch_is_no_step():
    p = parsers.parse_log(_log(), "lines")
    assert int(p.records["complete"].sum()) == 40 and p.whole == "step"
    c = p.components
    assert (c[c["component"] == "eval_time"]["record"] == -1).all()
    assert "evaluation" in p.not_parts["eval_time"] and model_for(p).role_of("eval_time") == "info"


def test_an_eval_time_without_a_counter_is_not_made_an_evaluation():
    text = "".join(f"prompt eval time = 81{i}.0 ms\neval time = 122{i}.5 ms\n" for i in range(6))
    p = parsers.parse_log(text, "lines")
    assert "eval_time" not in p.not_parts


def test_a_logger_named_test_makes_no_evaluation():
    """`Test | INFO | h2d copy 512 MiB: 57.2 ms` (issue 33, class 5): `Test` is the logger's name
    before its level, not an evaluation; `Test: [10/100] Time 0.2s` still is one."""
    text = "".join(f"Test | INFO | step {i} | h2d copy 512 MiB: 57.{i} ms | compute: 20.{i} ms\n" for i in range(8))
    p = parsers.parse_log(text, "lines")
    assert int(p.records["complete"].sum()) == 8 and not [n for n in p.notes if "evaluation line" in n]
    q = parsers.parse_log("".join(f"Test: [{i}/100] Time 0.2{i}s\n" for i in range(8)), "lines")
    assert [n for n in q.notes if "evaluation line" in n]


def test_evaluation_times_stay_out_of_the_component_statistics(tmp_path):
    """Class 6's last part: `analyze` of a log with one `eval time` per epoch shows the
    training's components only (the evaluation's were kept out of the split, not the
    statistics); the read notes name what was left out."""
    from gpuscope.analysis import analyze
    from gpuscope.sources.open import open_source

    path = tmp_path / "train.log"
    path.write_text(_log())
    a = analyze(open_source(path))
    assert set(a.log.stats_table.frame().index) == {"step", "data", "compute"}
    p = parsers.parse_log(_log(), "lines")
    assert p.evaluation_names() == {"eval_time"}
    assert any("eval_time" in n and "left out of the component statistics" in n for n in p.notes)


def test_a_name_printed_on_training_and_evaluation_lines_stays():
    """False-positive guard: the ProgressMeter prints `Time` on its `Epoch:` and its `Test:`
    lines: the name is the training's too, never left out."""
    text = "".join(f"Epoch: [0][{i}/8]\tTime 0.2{i} (0.2{i})\tData 0.0{i} (0.0{i})\n" for i in range(8))
    text += "".join(f"Test: [{i}/4]\tTime 0.1{i} (0.1{i})\n" for i in range(4))
    p = parsers.parse_log(text, "lines")
    assert p.evaluation_names() == frozenset() and int(p.records["complete"].sum()) == 8

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

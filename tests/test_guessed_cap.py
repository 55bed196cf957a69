"""One cap for findings resting only on a role guessed from an ambiguous name (issue 33's rule;
gpuscope/analysis/rules/guessed.py): at most LOW, said to be a guess; an unambiguous name, a
--model, keep the severity (the false fires the cap must not make)."""

from __future__ import annotations

from gpuscope.analysis import analyze
from gpuscope.rolemodel import load_model
from gpuscope.sources.open import open_source


def _log(tmp_path, key: str):
    f = tmp_path / f"{key}.log"
    f.write_text("".join(f"step={i} {key}_ms={80 + i % 3} compute_ms=20 step_ms={101 + i % 3}\n" for i in range(12)))
    return f


def _stall(f, model=None):
    diags = analyze(open_source(str(f), model=model)).findings
    return next(d for d in diags if d.id == "host_stall")


def test_a_stall_resting_on_load_is_a_low_guess(tmp_path):
    d = _stall(_log(tmp_path, "load"))
    assert d.severity == "low" and "A guess" in d.summary and d.evidence["guessed_from"] == {"load": "load"}
    assert d.evidence["severity_uncapped"] in ("high", "medium")


def test_an_unambiguous_name_keeps_its_severity(tmp_path):
    d = _stall(_log(tmp_path, "data"))
    assert d.severity == "high" and "guess" not in d.summary


def test_a_model_lifts_the_cap(tmp_path):
    m = tmp_path / "m.toml"
    m.write_text('name = "loop"\nheld = "step"\n[roles]\ncpu_stall = ["load"]\ngpu_compute = ["compute"]\n')
    load_model(m)
    d = _stall(_log(tmp_path, "load"), model=str(m))
    assert d.severity == "high" and "guess" not in d.summary

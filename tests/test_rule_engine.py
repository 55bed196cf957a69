"""rules/engine.py and rules/registry.py: one rule signature, registered by a decorator that states
what the rule emits and the cause each finding names; one runner; the ranking's tie-break order."""

from __future__ import annotations

import sys
import types

import pytest

from gpuscope.analysis.core import Diagnosis
from gpuscope.analysis.evidence import collect
from gpuscope.analysis.rules.engine import LOG, Finding, link_when_near_line, rank, rule, rules_of
from gpuscope.analysis.rules.registry import all_rules, log_rules, sample_rules, trace_rules

#: the order of the rules before they were declared by a decorator (registry.py's lists): ranking ties keep it
ORDER = ["h2d_bound", "pcie_underused", "d2h_bound", "cpu_stall_at_barrier", "lock_convoy", "unstable_component",
         "inconsistent_records", "first_partition_warmup", "log_long_pauses", "pageable_memcpy", "host_starved",
         "sync_bound", "launch_bound", "copies_not_overlapped", "kernel_mix", "trace_link_bound", "no_gpu_activity",
         "gpu_starved", "gpu_underused", "upload_bound_pageable", "download_bound_pageable", "copy_phase", "link_bound",
         "copies_unresolved", "gpu_bound", "host_stall_cycle", "gpu_imbalance", "upload_imbalance", "clocks_throttled",
         "pcie_link_downgraded", "memory_nearly_full", "long_pauses", "startup_idle", "too_few_samples"]


def test_every_rule_once_in_the_order_that_breaks_ties():
    ids = [r.id for r in all_rules()]
    assert len(ids) == len(set(ids))
    assert [i for i in ids if i in ORDER] == ORDER
    assert [r.id for r in all_rules()] == [r.id for r in (*log_rules(), *trace_rules(), *sample_rules())]
    assert {r.needs for r in log_rules()} == {("log",)} and {r.needs for r in trace_rules()} == {("trace",)}
    assert {r.needs for r in sample_rules()} == {("samples",)}


def test_every_rule_states_what_it_emits_and_every_cause_is_a_word():
    for r in all_rules():
        assert r.emits, r.id
        assert all(c is None or c.replace("_", "").isalpha() for c in r.emits.values()), r.id


def _module(name: str) -> types.ModuleType:
    m = types.ModuleType(name)
    sys.modules[name] = m
    return m


def _log_evidence():
    # an evidence with a log part (the engine reads ev.sources); the rule below never reads it
    return collect(log=types.SimpleNamespace(totals={}), phases=None)  # type: ignore[arg-type]


def test_a_decorated_function_in_a_module_is_a_rule_of_it():
    mod = _module("tests._fake_rules_one")

    def one(ev) -> list[Finding]:
        return [(Diagnosis("slow_thing", "medium", "s", {"share_of_line_rate": 0.9}, "r"), 0.2),
                (Diagnosis("note", "info", "n", {}, "r"), 0.0)]
    one.__module__ = mod.__name__
    rule("fake_one", needs=LOG, uses=(), emits={"slow_thing": "upload", "note": None},
         cause=link_when_near_line("upload"))(one)
    (r,) = rules_of(mod)
    assert r.id == "fake_one" and r.run is one
    found = rank([r], _log_evidence())
    assert [(d.id, d.cause, d.part) for d in found] == [("slow_thing", "link", "log"), ("note", None, "log")]


def test_a_finding_the_rule_did_not_declare_is_caught():
    mod = _module("tests._fake_rules_two")

    def two(ev) -> list[Finding]:
        return [(Diagnosis("undeclared", "low", "s", {}, "r"), 0.1)]
    two.__module__ = mod.__name__
    rule("fake_two", needs=LOG, uses=(), emits={"declared": None})(two)
    with pytest.raises(AssertionError, match="undeclared"):
        rank(rules_of(mod), _log_evidence())


def test_a_cause_depends_on_the_copies_rate():
    cause = link_when_near_line("readback")
    assert cause(Diagnosis("d2h_bound", "high", "", {"share_of_line_rate": 0.85}, "")) == "link"
    assert cause(Diagnosis("d2h_bound", "high", "", {"share_of_line_rate": 0.3}, "")) == "readback"
    assert cause(Diagnosis("d2h_bound", "high", "", {}, "")) == "readback"

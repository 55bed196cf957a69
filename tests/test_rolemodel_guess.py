"""Role guessing for logs of any program (gpuscope.rolemodel.guess_model / model_for), the
vocabulary a model gives the reports, and --model overriding both."""

from __future__ import annotations

import pytest

from gpuscope import parsers
from gpuscope.errors import UsageError
from gpuscope.rolemodel import (
    CUZK_VOCABULARY,
    GUESSED,
    guess_role,
    load_model,
    model_for,
    model_from_dict,
)
from tests.conftest import DATA, EXAMPLES

RUNS = DATA / "h200_foreign" / "runs"


@pytest.mark.parametrize(("name", "role", "word"), [
    ("h2d", "h2d", "h2d"), ("htod_copy", "h2d", "htod"), ("upload", "h2d", "upload"), ("to_device", "h2d", "to_device"),
    ("memcpyHtoD", "h2d", "memcpy"), ("transfer", "h2d", "transfer"),
    ("data", "cpu_stall", "data"), ("data_time", "cpu_stall", "data"), ("dataloader", "cpu_stall", "dataloader"),
    ("loading", "cpu_stall", "loading"), ("loads", "cpu_stall", "load"), ("fetch", "cpu_stall", "fetch"),
    ("prep", "cpu_stall", "prep"),
    ("preprocessing", "cpu_stall", "prep"), ("io_wait", "cpu_stall", "io"), ("data_wait", "cpu_stall", "data"),
    ("forward", "gpu_compute", "forward"), ("bwd", "gpu_compute", "bwd"), ("fwd", "gpu_compute", "fwd"),
    ("compute_time", "gpu_compute", "compute"), ("kernel", "gpu_compute", "kernel"),
    ("optimizer_step", "gpu_compute", "optimizer"),
    ("lock_wait", "contention", "lock_wait"),
    ("copy_back", "d2h", "copy_back"), ("gpu_to_cpu_copy", "d2h", "to_cpu"), ("disk_read", "cpu_stall", "read"),
])
def test_roles_guessed_from_names_say_how(name, role, word):
    got, how = guess_role(name)
    assert got == role
    assert how.startswith(f"guessed from name {word!r}")


def test_unknown_names_get_no_role_and_never_compute():
    for name in ("sync", "misc", "foo"):
        role, how = guess_role(name)
        assert role is None and "counted in other" in how
    for name in ("d2h", "download", "read_back", "to_cpu"):  # read-backs: their own role, never compute
        role, how = guess_role(name)
        assert role == "d2h" and "device-to-host" in how
    role, how = guess_role("total_fn")
    assert role == "info" and "aggregate" in how


def test_a_bare_wait_gets_no_role_and_says_why():
    """`wait` alone: a lock's wait (contention) or a data wait (a stall), opposite cures: no
    role, said (issue 33); beside a lock's tenure it is the lock's (tests/test_linenest.py)."""
    for name in ("wait", "wait_ms", "waiting"):
        role, how = guess_role(name)
        assert role is None and "lock or for data" in how and "counted in other" in how


def test_names_whose_words_do_not_say_what_ran_get_no_role():
    # a server's queue is requests waiting, not the GPU waiting for the host; `train` names the
    # whole loop (fairseq's cumulative train_wall, a whole run's train_runtime), not GPU work
    for name in ("queue", "queue_time", "train_wall", "train"):
        role, _ = guess_role(name)
        assert role not in ("cpu_stall", "gpu_compute"), name


def test_a_training_loops_stall_is_named_for_any_program_with_its_old_id_an_alias(tmp_path):
    from gpuscope.analysis import analyze
    from gpuscope.sources import open_source

    log = tmp_path / "loop.log"
    log.write_text("".join(f"step={i} data_ms={80 + i % 3} compute_ms=20 step_ms={101 + i % 3}\n" for i in range(12)))
    ds = [d.to_json() for d in analyze(open_source(str(log))).findings]
    stall = next(d for d in ds if d["id"] == "host_stall")
    assert stall["aliases"] == ["cpu_stall_at_barrier"] and "barrier" not in stall["summary"]
    assert "pinned" not in stall["recommendation"]  # nothing about host memory is in its evidence


def test_guessed_models_of_the_captures():
    cases = {
        "copy_pageable": ("step", {"h2d": "h2d", "compute": "gpu_compute"}, "step"),
        "train_slow": ("step", {"data": "cpu_stall", "compute": "gpu_compute"}, "step"),
        "printf_pipe": ("total", {"prep": "cpu_stall", "h2d": "h2d", "kernel": "gpu_compute"}, "iteration"),
        "launch_bound": ("elapsed", {}, "iteration"),
    }
    for run, (whole, roles, noun) in cases.items():
        p = parsers.parse_log(RUNS / run)
        m = model_for(p)
        assert m.name == GUESSED and m.held == whole and m.roles == roles, run
        assert m.vocabulary.record == noun and m.vocabulary.whole == f"{noun} time"
        assert not m.vocabulary.cuzk and not m.vocabulary.lock
        prov = m.provenance(p.components["component"].unique())
        assert prov["name"] == "guessed" and prov["held"]["name"] == whole
        assert prov["roles"][whole]["role"] == "whole" and "named like a whole" in prov["roles"][whole]["how"]
        for comp, role in roles.items():
            assert prov["roles"][comp]["role"] == role
            assert prov["roles"][comp]["how"].startswith("guessed from name")


def test_a_log_without_a_whole_says_so():
    p = parsers.parse_log("iter 1: a 2 ms, b 3 ms\niter 2: a 2 ms, b 4 ms\n")
    m = model_for(p)
    assert m.held == "" and "sum of its parts" in m.held_how
    assert m.provenance()["held"]["name"] is None
    assert {k: v["role"] for k, v in m.provenance()["roles"].items()} == {"a": None, "b": None}


def test_cuzk_logs_keep_the_builtin_model():
    builtin = load_model()
    for src in (EXAMPLES / "cuzk_daemon.log", EXAMPLES / "article_excerpt.log"):
        assert model_for(parsers.parse_log(src)) == builtin
    kv = parsers.parse_log("h2d_ms=5 msm_ms=3 mutex_held_ms=9\n", "kv")
    assert model_for(kv) == builtin  # prints the CuZK held key
    kv2 = parsers.parse_log("ntt_kernels_ms=5 coset_intt_sync_ms=3 foo_ms=1\n", "kv")
    assert model_for(kv2) == builtin  # mostly CuZK names
    assert builtin.vocabulary == CUZK_VOCABULARY


def test_model_option_overrides_the_guess(tmp_path):
    f = tmp_path / "mine.toml"
    f.write_text('name = "mine"\nheld = "step"\n[roles]\ngpu_compute = ["h2d"]\ncpu = ["compute"]\n'
                 '[vocabulary]\nrecord = "iteration"\n')
    p = parsers.parse_log(RUNS / "copy_pageable", held_key="step")
    m = model_for(p, str(f))
    assert m.name == "mine" and m.roles == {"h2d": "gpu_compute", "compute": "cpu"}
    assert m.vocabulary.record == "iteration" and m.vocabulary.records == "iterations"
    assert m.provenance()["roles"]["h2d"]["how"] == f"listed in {f}"
    assert model_for(p, m) is m


def test_vocabulary_table_is_validated():
    base = {"held": "h", "roles": {"h2d": ["a"]}}
    m = model_from_dict(base, source="x.toml")
    assert (m.vocabulary.record, m.vocabulary.whole, m.vocabulary.held) == ("record", "record time", "h")
    with pytest.raises(UsageError, match="vocabulary.nope"):
        model_from_dict({**base, "vocabulary": {"nope": "x"}}, source="x.toml")
    with pytest.raises(UsageError, match="vocabulary.lock"):
        model_from_dict({**base, "vocabulary": {"lock": "yes"}}, source="x.toml")
    with pytest.raises(UsageError, match="vocabulary.record"):
        model_from_dict({**base, "vocabulary": {"record": ""}}, source="x.toml")


@pytest.mark.parametrize(("name", "word"), [
    ("d2d_copy", "d2d"), ("memcpy_d2d", "d2d"), ("p2p_copy", "p2p"), ("nvlink_copy", "nvlink"),
    ("network_transfer", "network_transfer"), ("host_copy", "host_copy"), ("staging_copy", "staging_copy"),
    ("cuda_malloc", "malloc"), ("cuda_sync", "sync"), ("stream_synchronize", "synchronize"),
])
def test_a_copy_word_or_cuda_does_not_contradict_what_the_name_says(name, word):
    """A device-to-device, network or on-host copy is no upload for its `copy`; an allocation or
    a sync is no GPU compute for its `cuda` (before: h2d / gpu_compute): no role, saying why."""
    role, how = guess_role(name)
    assert role is None and f"guessed from name {word!r}" in how


@pytest.mark.parametrize(("name", "role"), [
    ("queue_and_inference_time", None),       # a wait and the GPU's work in one figure: no one role
    ("h2d_and_compute", None),
    ("load_and_preprocess", "cpu_stall"),     # both halves host work: the role stands (the false fire)
    ("backward_allreduce", None),             # a collective, not the backward's compute
    ("model_and_optimizer_setup", None),      # a one-off setup
])
def test_names_of_two_kinds_collectives_and_setups(name, role):
    assert guess_role(name)[0] == role


def test_a_decode_is_gpu_work_beside_a_prefill_and_the_ambiguous_word_alone(tmp_path):
    from gpuscope.rolemodel import guess_model

    llm = tmp_path / "llm.log"
    llm.write_text("".join(f"step={i} prefill_ms=12.0 decode_ms=3.{i}\n" for i in range(6)))
    assert guess_model(parsers.parse_log(llm)).roles.get("decode") == "gpu_compute"
    jpeg = tmp_path / "jpeg.log"  # (no prefill: an input's decode on the host, the ambiguous guess it was)
    jpeg.write_text("".join(f"step={i} decode_ms=3.{i} forward_ms=9.0\n" for i in range(6)))
    assert guess_model(parsers.parse_log(jpeg)).roles.get("decode") == "cpu_stall"

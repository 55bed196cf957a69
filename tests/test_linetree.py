"""Timer trees read as trees (issue 33 class 4; parsers/log/lines/trees.py): the root is the whole
of its tree, children are parts of their parent and never summed beside it, a node is named
by all its words, and a guessed role never comes from the object of a phrase."""

from __future__ import annotations

from gpuscope import parsers
from gpuscope.parsers.log.lines import line as lineread
from gpuscope.rolemodel import model_for
from gpuscope.rolewords import guess_role

FOREST = """INFO     prove [ 1.00s | 1.00% / 100.00% ]
INFO     ┝━ commit to trace data [ 700ms | 10.00% / 70.00% ]
INFO     │  ┝━ coset_lde_batch [ 400ms | 40.00% ]
INFO     │  ┕━ build merkle tree [ 200ms | 20.00% ]
INFO     ┕━ compute quotient polynomial [ 290ms | 29.00% ]
"""


def _two(text: str) -> str:
    return text + text.replace("1.00s", "1.10s")


def test_the_issue_case_commit_to_trace_data_is_no_stall_and_the_floor_never_exceeds_the_whole(tmp_path):
    import math

    from gpuscope.analysis import analyze
    from gpuscope.sources.open import open_source

    p = parsers.parse_log(_two(FOREST), "lines")
    assert p.whole == "prove" and int(p.records["complete"].sum()) == 2
    assert sorted(p.records.loc[p.records["complete"], "held_ms"].round(1).tolist()) == [1000.0, 1100.0]
    assert p.not_parts["commit_to_trace_data/coset_lde_batch"].startswith("nested in 'commit_to_trace_data'")
    model = model_for(p)
    assert model.role_of("commit_to_trace_data") is None  # (was `data`: a data stall)
    path = tmp_path / "tree.txt"
    path.write_text(_two(FOREST))
    a = analyze(open_source(path))
    assert not [d for d in a.findings if d.severity in ("high", "medium")]
    assert math.isnan(a.log.bounds["cpu_floor_s"])  # (had been 7x the whole: a `data` stall, nested parts summed)
    assert a.log.bounds["observed_s"] == 2.1


def test_plonky2_depth_by_bars_and_a_root_per_record():
    text = "\n".join(["3.0000s to prove", "| 1.0000s to commit", "| | 0.6000s to build Merkle tree",
                      "| 1.5000s to compute quotient polys"] * 3)
    p = parsers.parse_log(text, "lines")
    assert int(p.records["complete"].sum()) == 3 and p.whole == "prove"
    assert set(p.not_parts) == {"prove", "commit/build_Merkle_tree"}
    assert p.records.loc[p.records["complete"], "held_ms"].tolist() == [3000.0] * 3


def test_a_root_without_children_is_a_one_off_never_the_whole():
    p = parsers.parse_log("INFO     generate trace [ 142ms | 100.00% ]\n" + FOREST
                          + "INFO     verify [ 4.18ms | 100.00% ]\n", "lines")
    assert p.whole == "prove" and int(p.records["complete"].sum()) == 1
    assert p.not_parts["generate_trace"].startswith("a timer tree's root without children")


def test_a_child_without_its_parent_is_damage_and_an_event_holds_no_time():
    st = lineread.State()
    assert "without its parent" in lineread.read_line("| | 0.1000s to IFFT", st)
    assert lineread.read_line("INFO     ┝━ ｉ [info]: opening 3 matrices at 2 points", st) is None


def test_prose_and_other_brackets_are_no_tree_lines():
    """False-positive guard: `took 12.5s to load` and a bracket without a time and a share are
    read by the shared reader as before, never as a tree's node."""
    st = lineread.State()
    r = lineread.read_line("model took 12.5s to load weights", st)
    assert r is None or type(r) is str or "round" not in r[2]
    assert lineread.read_line("INFO     progress [ 12 items | 50% ]", st) is None
    assert st.tree.number == 0


def test_a_phrase_takes_no_role_from_its_object_but_copies_still_read():
    assert guess_role("commit_to_trace_data")[0] is None
    assert guess_role("load_to_gpu")[0] == "h2d"
    assert guess_role("copy_to_device")[0] == "h2d"
    assert guess_role("data_time")[0] == "cpu_stall"
    assert guess_role("compute_inverse_denominators")[0] == "gpu_compute"
    # what would make the phrase rule misread: short names whose object is the activity
    assert guess_role("wait_for_data")[0] == "cpu_stall" and guess_role("wait_for_lock")[0] == "contention"
    assert guess_role("time_to_load")[0] == "cpu_stall" and guess_role("wait_for_the_data_loader")[0] == "cpu_stall"


def test_a_hostile_line_behind_a_tree_gate_costs_linear_time():
    import time

    st = lineread.State()
    t = time.perf_counter()
    for line in ("INFO     " + " " * 60000 + "% ]", "INFO     " + "│  " * 20000 + "x % ]", "| " * 30000 + "0.1234s to "):
        r = lineread.read_line(line, st)
        assert r is None or type(r) is str or "round" not in r[2]
    assert time.perf_counter() - t < 2.0


def test_a_tree_of_another_root_is_its_own_roots_record_never_root_plus_children():
    """Two trees of different roots (`generate trace`, `prove`), once each: each root is the
    whole of its own tree's record (not the first root's alone: the other's record had been its
    children's sum), never a part beside its children (parsers/log/nestrecords.py tree_roots)."""
    text = ("INFO     generate trace [ 300ms | 10.00% / 100.00% ]\nINFO     ┝━ fill rows [ 200ms | 66.00% ]\n"
            "INFO     ┕━ pad [ 90ms | 30.00% ]\n" + FOREST)
    p = parsers.parse_log(text, "lines")
    assert sorted(p.records.loc[p.records["complete"], "held_ms"].round(1).tolist()) == [300.0, 1000.0]
    assert {"prove", "generate_trace"} <= set(p.not_parts)

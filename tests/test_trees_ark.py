"""ark_std's print-trace trees (arkworks, halo2) read as trees (issue 33 class 4; parsers/log/
linetree.py read_ark): the root's End the whole, a nested timer never summed beside its parent,
a paste without the root's End a record of its children, End labels holding numbers named by
all their words, roots without children alone the stages of one record."""

from __future__ import annotations

from gpuscope import parsers
from gpuscope.parsers.log.lines import line as lineread

TREE = """Start:   Prover
\u00b7\u00b7Start:   Compute A
\u00b7\u00b7End:     Compute A ..........................................30.000ms
\u00b7\u00b7Start:   Compute B
\u00b7\u00b7\u00b7\u00b7Start:   Inner FFT
\u00b7\u00b7\u00b7\u00b7End:     Inner FFT ..................................15.000ms
\u00b7\u00b7End:     Compute B ..........................................20.000ms
End:     Prover ....................................................55.000ms
"""


def _held(p) -> list[float]:
    return p.records.loc[p.records["complete"], "held_ms"].round(3).tolist()


def test_a_nested_timer_is_never_summed_beside_its_parent_and_the_root_is_the_whole():
    p = parsers.parse_log(TREE * 3, "lines")
    assert p.whole == "Prover" and int(p.records["complete"].sum()) == 3 and _held(p) == [55.0] * 3
    assert p.not_parts["Compute_B/Inner_FFT"].startswith("nested in 'Compute_B'")
    assert p.not_parts["Prover"].startswith("a timer tree's root")
    assert set(p.components["component"]) == {"Compute_A", "Compute_B", "Compute_B/Inner_FFT", "Prover"}


def test_a_paste_without_the_roots_lines_is_one_record_of_its_children_no_whole():
    cut = "\n".join(TREE.splitlines()[1:-1]) + "\n"
    p = parsers.parse_log(cut, "lines")
    assert not p.whole and int(p.records["complete"].sum()) == 1
    assert set(p.not_parts) == {"Compute_B/Inner_FFT"}


def test_labels_holding_numbers_keep_all_their_words_and_stages_are_one_record():
    text = ("Start:   Setup generation with degree = 19\n"
            "End:     Setup generation with degree = 19 ........................577.481s\n"
            "Start:   Proof generation with 19 rows\n"
            "End:     Proof generation with 19 rows ............................7646.568s\n"
            "Start:   Proof verification\n"
            "End:     Proof verification .......................................537.954ms\n")
    p = parsers.parse_log(text, "lines")
    assert sorted(set(p.components["component"])) == ["Proof_generation_with_19_rows", "Proof_verification",
                                                      "Setup_generation_with_degree_19"]
    assert not p.whole and int(p.records["complete"].sum()) == 1


def test_a_stage_beside_a_tree_is_a_one_off():
    text = "Start:   Load keys\nEnd:     Load keys ............12.000ms\n" + TREE * 2
    p = parsers.parse_log(text, "lines")
    assert p.whole == "Prover" and int(p.records["complete"].sum()) == 2
    assert p.not_parts["Load_keys"].startswith("a timer tree's root without children")


def test_prose_with_start_or_end_is_the_shared_readers():
    """False-positive guard: `End: epoch 3 time=12.5s` (no dotted time) and a root's `Start:`
    line are read by the shared reader as before, never as a tree's node (no counter `round`)."""
    st = lineread.State()
    r = lineread.read_line("End: epoch 3 time=12.5s", st)
    assert type(r) is tuple and r[0] == ["time"] and "round" not in r[2]
    assert lineread.read_line("Start: epoch 3", st) is None
    assert st.tree.number == 0


TRITON = """### Triton VM \u2013 Prove        10.00s    #Reps   Share  Category     395.8 GiB
\u251c\u2500trace execution               2.00s        1  20.00%  (gen  \u2013  4.34%)    +3.1 GiB
\u251c\u2500main tables                   7.00s        1  70.00%                  +94.9 GiB
\u2502 \u251c\u2500Merkle tree                 4.00s        1  40.00%                  +11.1 GiB
\u2502 \u2502 \u2514\u2500Merkle tree               1.00s        5  10.00%  (hash \u2013  2.03%)    +9.1 GiB
\u2502 \u2514\u2500pad                       500.00ms       1   5.00%                 -800.0 KiB
"""


def test_triton_vms_profile_rows_keep_their_names_and_nest():
    p = parsers.parse_log(TRITON * 2, "lines")
    assert p.whole == "Triton_VM_Prove" and int(p.records["complete"].sum()) == 2 and _held(p) == [10000.0] * 2
    assert set(p.components["component"]) == {"Triton_VM_Prove", "trace_execution", "main_tables",
                                              "main_tables/Merkle_tree", "main_tables/Merkle_tree/Merkle_tree",
                                              "main_tables/pad"}
    assert p.not_parts["main_tables/Merkle_tree/Merkle_tree"].startswith("nested in 'main_tables/Merkle_tree'")


def test_a_drawn_tree_without_a_time_and_a_share_is_no_profile_row():
    """False-positive guard: a directory tree (`├─src  12 files`) or a row without its share
    is the shared reader's, never a profile's node."""
    st = lineread.State()
    assert lineread.read_line("\u251c\u2500src                 12 files", st) is None
    r = lineread.read_line("\u251c\u2500build took 12.5s", st)
    assert r is None or type(r) is str or "round" not in r[2]
    assert st.tree.number == 0


def test_a_cpu_provers_tree_takes_no_gpu_role_from_a_name_alone():
    """A CPU program's timer tree (no GPU word anywhere) guesses no `compute_*` as GPU work; a
    tree that names its GPU (`MSM on GPU`) and a step log keep the guess (false-positive guard)."""
    from gpuscope.rolemodel import model_for

    cpu = TREE.replace("Compute B", "compute quotient")
    m = model_for(parsers.parse_log(cpu * 2, "lines"))
    assert m.role_of("Compute_A") is None and "CPU program's timer tree" in m.how["Compute_A"]
    gpu = cpu.replace("Compute A", "MSM on GPU")
    m = model_for(parsers.parse_log(gpu * 2, "lines"))
    assert m.role_of("compute_quotient") == "gpu_compute"
    q = parsers.parse_log("step 1 load_ms=12 compute_ms=30\nstep 2 load_ms=11 compute_ms=31\n", "lines")
    assert model_for(q).role_of("compute") == "gpu_compute"


def test_two_trees_of_different_roots_each_once_are_two_records_of_their_roots():
    gen = TREE.replace("Prover", "Generator").replace("55.000ms", "70.000ms")
    p = parsers.parse_log(gen + TREE, "lines")
    assert int(p.records["complete"].sum()) == 2 and _held(p) == [70.0, 55.0]
    assert any("each root is the whole of its own tree's record" in n for n in p.notes)
    one = parsers.parse_log(TREE * 2, "lines")  # (one root: no such note)
    assert not any("each root is the whole" in n for n in one.notes)

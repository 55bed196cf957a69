"""Parts printed in parentheses after a time belong to it (parsers/log/lines/nesting.py; issue 33,
class 0): a lock's tenure with its parts is the record's whole, the times beside it lie
outside it (a lock's wait is contention, never a data stall), and any other value keeps its
nested parts out of the sum."""

from __future__ import annotations

from gpuscope import parsers
from gpuscope.rolemodel import model_for
from tests.conftest import DATA


def _analysis(case: str):
    from gpuscope.analysis import analyze
    from gpuscope.sources.open import open_source

    return analyze(open_source(DATA / case))


def test_the_seed_s_split_from_words_nobody_chose():
    """heap: the upload is 61% of the lock's held time (167 of 274 ms); pinned 23 of 130 (17%).
    Before: `held` summed beside its own parts (h2d 17% of a record time that counted it twice,
    synth and wait inside it)."""
    for case, share in (("corpus/mutex_words/heap.txt", 0.61), ("corpus/mutex_words/pinned.txt", 0.175)):
        p = parsers.parse_log(DATA / case)
        assert p.whole == "held" and sorted(p.not_parts) == ["synth", "wait"]
        assert "outside 'held'" in p.not_parts["wait"]
        d = next(d for d in _analysis(case).findings if d.id == "h2d_bound")
        assert abs(d.evidence["h2d_share"] - share) < 0.01, (case, d.evidence)
        assert "of the lock-held time" in d.summary
    heap = _analysis("corpus/mutex_words/heap.txt").findings[0]
    assert heap.id == "h2d_bound" and heap.severity == "high" and heap.evidence["h2d_median_ms"] == 167.0


def test_a_lock_wait_is_contention_never_a_stall():
    """The wait printed beside a lock's tenure is the wait for that lock: no cpu_stall finding
    (before: MEDIUM `the GPU waited for host-side work (wait)`)."""
    p = parsers.parse_log(DATA / "corpus/mutex_words/heap.txt")
    m = model_for(p)
    assert m.role_of("wait") == "contention" and "wait for the lock" in m.how["wait"]
    assert m.role_of("synth") == "cpu" and m.vocabulary.lock
    assert not [d for d in _analysis("corpus/mutex_words/heap.txt").findings if d.id == "cpu_stall_at_barrier"]


def test_nested_parts_of_a_part_are_never_summed_beside_it():
    """`compute=100ms (fwd=40ms bwd=60ms)`: compute stays a part, fwd/bwd are nested in it (the
    false positive of making any value with parentheses the whole: `data` would fall outside)."""
    text = "".join(f"step {i}: data=20ms compute=10{i}ms (fwd=40ms bwd=6{i}ms)\n" for i in range(6))
    p = parsers.parse_log(text, "lines")
    assert p.whole is None and sorted(p.not_parts) == ["bwd", "fwd"]
    assert p.records["held_ms"].tolist()[:2] == [120.0, 121.0]


def test_a_percentage_or_a_rate_in_parentheses_changes_nothing():
    text = "".join(f"step {i}: data=20ms compute=100ms (38%) total=12{i}ms (2.5 it/s)\n" for i in range(6))
    p = parsers.parse_log(text, "lines")
    assert p.whole == "total" and p.not_parts == {}


def test_parts_above_the_value_are_no_parts_of_it():
    text = "".join("w0 synth=400ms held=100ms (copy=167ms gpu=107ms)\n" for _ in range(6))
    p = parsers.parse_log(text, "lines")
    assert p.whole != "held" and "copy" not in p.not_parts


def test_a_bare_wait_without_a_lock_makes_no_stall_finding(tmp_path):
    """`wait` with no lock in the record: the name alone cannot tell a lock's wait from a data
    wait, so no role and no host-stall story (before: MEDIUM "the GPU waited for host-side work")."""
    from gpuscope.analysis import analyze
    from gpuscope.sources.open import open_source

    log = tmp_path / "loop.log"
    log.write_text("".join(f"step={i} wait_ms={80 + i % 3} compute_ms=20 step_ms={101 + i % 3}\n" for i in range(12)))
    m = model_for(parsers.parse_log(log))
    assert m.role_of("wait") is None and "lock or for data" in m.how["wait"]
    assert not [d for d in analyze(open_source(str(log))).findings if d.id == "host_stall"]

"""A lock's tenure printed in a program's own words, without parentheses (issue 33 class 0, the
mission's own case; parsers/log/lines/nesting.py `tenure`): `wait_ms=296 held_ms=278 h2d_ms=169
gpu_ms=108` gets the seed's table (the upload's share of the lock-held time, the workers' wait
for the lock as contention), the way `held=274ms (copy=167ms gpu=107ms)` does. The false fires
the rule must not make are below: parts that outlast the tenure, another field named like the
whole, a tenure printed last with no wait beside it, a lock's wait taken for its tenure."""

from __future__ import annotations

import random

import pytest

from gpuscope import parsers
from gpuscope.analysis import analyze
from gpuscope.rolemodel import model_for
from gpuscope.sources.open import open_source

SHAPES = {
    "kv": "worker={w} partition={p} wait_ms={q:.0f} held_ms={h:.0f} h2d_ms={c:.0f} gpu_ms={g:.0f}",
    "lock_words": "worker {w} part {p}: lock_wait={q:.0f}ms lock_held={h:.0f}ms upload={c:.0f}ms kernel={g:.0f}ms",
    "prose": "worker {w} partition {p}: mutex wait {q:.0f} ms, held {h:.0f} ms: h2d {c:.0f} ms, gpu {g:.0f} ms",
    "parentheses": "[w{w} p{p}] synth={s:.0f}ms wait={q:.0f}ms held={h:.0f}ms (copy={c:.0f}ms gpu={g:.0f}ms)",
    "sentence": "worker {w} waited {q:.0f} ms, then held the lock for {h:.0f} ms: h2d {c:.0f} ms, gpu {g:.0f} ms",
}


def _log(tmp_path, shape: str, n: int = 24):
    rnd = random.Random(7)
    lines = []
    for p in range(n):
        c, g = rnd.uniform(150, 180), rnd.uniform(100, 115)
        lines.append(SHAPES[shape].format(w=p % 2 + 1, p=p, s=rnd.uniform(440, 480), q=rnd.uniform(200, 300),
                                          h=c + g + rnd.uniform(0, 3), c=c, g=g))
    f = tmp_path / f"{shape}.log"
    f.write_text("\n".join(lines) + "\n")
    return f


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_a_tenure_in_any_words_gets_the_seeds_table(tmp_path, shape):
    a = analyze(open_source(str(_log(tmp_path, shape))))
    ids = [d.id for d in a.findings]
    h2d = a.findings[ids.index("h2d_bound")]
    assert h2d.severity == "high" and "of the lock-held time" in h2d.summary
    assert h2d.evidence["h2d_share"] == pytest.approx(0.60, abs=0.02)
    assert "lock_convoy" in ids
    assert "host_stall" not in ids and "cpu_stall_at_barrier" not in ids  # (the wait is the lock's)


def test_a_wait_beside_a_tenure_printed_last_is_the_locks(tmp_path):
    f = tmp_path / "w.log"
    f.write_text("".join(f"w{i % 2} p{i} lock_wait={230 + i}ms held={260 + i % 5}ms\n" for i in range(12)))
    p = parsers.parse_log(f)
    assert p.whole == "held" and "outside 'held'" in p.not_parts["lock_wait"]
    assert model_for(p).role_of("lock_wait") == "contention"
    assert [d.id for d in analyze(open_source(str(f))).findings][:1] == ["lock_convoy"]


@pytest.mark.parametrize("why, line", [
    ("the parts outlast the tenure: no parts of it", "w0 held={h}ms h2d=167ms gpu=107ms"),
    ("another field is named like the whole", "w0 wait=5ms held={h}ms h2d=60ms gpu=39ms total=1{h}ms"),
    ("a tenure printed last with no wait beside it", "w0 data=20ms held={h}ms"),
    ("a lock's wait is not its tenure", "step {i}: lock_wait={h}ms compute=50ms"),
    ("words that merely hold the letters", "step {i}: block_ms={h} threshold_ms=5 compute_ms=50"),
])
def test_no_tenure_where_the_words_or_the_numbers_do_not_say_so(why, line):
    text = "".join(line.format(h=100 + i % 3, i=i) + "\n" for i in range(8))
    p = parsers.parse_log(text, "lines")
    assert p.whole not in ("held", "lock_wait", "block"), why
    assert not any(v.startswith("outside") for v in p.not_parts.values()), why


@pytest.mark.parametrize("line, name, role", [
    ("worker 3 held the lock for {h} ms", "lock_held", None),
    ("released the lock after holding it for {h} ms", "lock_held", None),
    ("Worker 2 held GPU lock for {h} ms", "gpu_lock_held", None),
    ("acquired gpu lock after {h} ms", "gpu_lock_wait", "contention"),
    ("took the gpu mutex after {h} ms", "gpu_mutex_wait", "contention"),
    ("waited for the lock for {h} ms", "lock_wait", "contention"),
    ("forward took {h} ms", "forward", "gpu_compute"),  # (no lock named: the word before the filler, as before)
])
def test_a_sentence_names_the_lock_and_whether_it_was_held_or_waited_for(line, name, role):
    """`held the lock for 12 ms` was read as `lock`, guessed a wait for it (contention): the verb
    nearest the number says which; a held time alone is the lock's tenure, no wait."""
    p = parsers.parse_log("".join(line.format(h=10 + i) + "\n" for i in range(6)), "lines")
    assert p.columns("components").codes("component")[1] == [name]
    assert model_for(p).role_of(name) == role


def test_a_held_time_printed_alone_is_no_wait_for_the_lock():
    p = parsers.parse_log("".join(f"worker={i % 2} lock_held_ms={40 + i}\n" for i in range(8)))
    assert model_for(p).role_of("lock_held") is None
    assert "tenure" in model_for(p).provenance()["roles"]["lock_held"]["how"]

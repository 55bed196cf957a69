"""A claim a few records cannot carry (issue 33, class 9): unstable_component over five
inference requests whose inputs differ was HIGH. With fewer than UNSTABLE_FEW_RECORDS records
and no steady part beside it, it is at most LOW and says why; the article's four tenures,
whose other parts are steady (a controlled comparison), keep HIGH (the false fire the cap
must not make: tests/test_analysis_rules.py test_article_diagnoses)."""

from __future__ import annotations

from gpuscope.analysis import analyze
from gpuscope.sources.open import open_source

REQUESTS = """request 1: prefill=120.5ms decode=812.3ms total=935.1ms
request 2: prefill=48.2ms decode=301.7ms total=352.0ms
request 3: prefill=210.9ms decode=1490.2ms total=1704.8ms
request 4: prefill=75.0ms decode=520.4ms total=597.1ms
request 5: prefill=160.3ms decode=1103.9ms total=1266.5ms
"""


def _diag(tmp_path, text: str, did: str):
    f = tmp_path / "req.log"
    f.write_text(text)
    return next((d for d in analyze(open_source(str(f))).findings if d.id == did), None)


def test_five_requests_of_different_inputs_make_no_high_claim(tmp_path):
    d = _diag(tmp_path, REQUESTS, "unstable_component")
    assert d is not None and d.severity == "low" and "Over only 5" in d.summary
    assert d.evidence["severity_uncapped"] == "high"
    stall = _diag(tmp_path, REQUESTS, "host_stall")  # `decode`: an LLM's GPU phase or a host decode
    assert stall is None or stall.severity == "low"


def test_many_records_keep_the_severity(tmp_path):
    text = "".join(f"step {i}: data={5 + 40 * (i % 4)}ms compute={20 + i % 2}ms step={25 + 40 * (i % 4) + i % 2}ms\n"
                   for i in range(30))
    d = _diag(tmp_path, text, "unstable_component")
    assert d is not None and d.severity in ("high", "medium") and "Over only" not in d.summary


TEI = ('2025-08-09T19:35:{s:02d}.725783Z  INFO openai_embed{{total_time="{t:.3f}ms" tokenization_time="9.7ms" '
       'queue_time="491.5µs" inference_time="{i:.3f}ms"}}: text_embeddings_router::http::server: Success\n')


def test_a_server_s_requests_make_no_high_claim_however_many(tmp_path):
    """text-embeddings-inference's request lines (issue 33, class 9): ten or more requests, each
    with its own input: inference varies with the input's size, which the log does not print;
    unstable_component had been HIGH over ten of them. It is LOW and says why."""
    sizes = [800, 750, 1480, 1010, 1120, 640, 900, 1300, 700, 1050, 980, 1210]
    text = "".join(TEI.format(s=k, t=x + 10.5, i=x) for k, x in enumerate(sizes))
    d = _diag(tmp_path, text, "unstable_component")
    assert d is not None and d.severity == "low" and "a server's requests" in d.summary
    assert d.evidence["severity_uncapped"] == "high"


def test_a_training_loop_s_steps_with_an_inference_part_keep_the_severity(tmp_path):
    """The input that would make the request cap fire falsely: a loop whose steps print an
    `inference` part (an RL actor's step) under a step counter: steps are alike."""
    text = "".join(f"step {i}: data={20 + i % 2}ms inference={5 + 40 * (i % 4)}ms step={25 + 40 * (i % 4) + i % 2}ms\n"
                   for i in range(30))
    d = _diag(tmp_path, text, "unstable_component")
    assert d is not None and d.severity in ("high", "medium") and "a server's requests" not in d.summary

"""The corpus of timing output as frameworks print it (tests/data/corpus/<framework>/*.txt,
written from each framework's documented format) and as real programs printed it on the
H200 (tests/data/h200_*/runs/*/timing.log): every case read as tests/data/corpus/expected.toml
says (fields, steps, whole, statistics and nested parts, first diagnosis; or refused with the
reason), and no component anywhere comes from a number without time evidence in its line."""

from __future__ import annotations

import re
import tomllib

import pytest

from gpuscope import parsers
from gpuscope.errors import NoDataError
from tests.conftest import DATA

EXPECTED = tomllib.loads((DATA / "corpus" / "expected.toml").read_text())
CASES = sorted(EXPECTED)


# time evidence, written independently of the parser's tables: a unit after a number, in a
# label (`(ms)`) or as a key's suffix (`_ms=`, `elapsedMs`), near the component's name, or a
# header unit before it (`time (ms) |`), or a time word in the component's name
_UNIT = r"(ms|msec|msecs|s|sec|secs|seconds?|us|usec|usecs|\u00b5s|\u03bcs|ns|nsec|min|mins|minutes?|milliseconds?)"
_NEAR = re.compile(rf"\d\s*{_UNIT}(?![A-Za-z])|\(\s*{_UNIT}\s*\)|^[_-]?{_UNIT}\b|(Ms|Sec|Seconds|Millis|Us|Ns)\b")
_HEADER = re.compile(rf"\(\s*{_UNIT}\s*\)|\b{_UNIT}\b")
_TIME_WORDS = ("time", "elapsed", "latency", "duration", "took", "runtime", "wall", "data")
_SEPARATORS = re.compile(r"[|,;=]")
_PER_THING = re.compile(rf"\d\s*{_UNIT}/$")
_PER_SECOND = re.compile(r"/(s|sec|second)\b")
_TIME_TO = re.compile(rf"\d\s*{_UNIT}\s+to\s+$")  # the time before its name: plonky2's `0.1702s to transpose`
_BAR_END = re.compile(r"\d\s?\[[\d:]+(?:<[\d:?]+)?,\s*(?:\d+(?:\.\d+)?|\?)(?:it/s|s/it)(?:,(?:[^\[\]]|\[[^\]]*\])*)?\]")


def time_evidence(src: str, name: str) -> bool:
    """Whether a line's text says the component `name` read from it is a time."""
    words = [w for w in re.split(r"[_.\-/]", name.lower()) if w]  # (`/`: a timer tree's path)
    if any(w in _TIME_WORDS for w in words):
        return True
    bar = _BAR_END.search(src)  # (a logger's line written right after a tqdm redraw: its own text)
    if bar is not None and name.lower() in src[bar.end():].lower():
        src = src[bar.end():]
    if ":::MLLOG" in src and '"INTERVAL_END"' in src and '"time_ms"' in src:
        return True  # (an interval: the difference of two time stamps)
    low = src.lower()
    for w in words:
        at = low.find(w)
        while at >= 0:
            rest = src[at + len(w):at + len(w) + 120]
            cut = _SEPARATORS.search(rest, 1)
            window = rest[: cut.end() + 24] if cut else rest  # (the value after `key=` / `key:`)
            if _NEAR.search(window) or _HEADER.search(src[:at].split("|")[0][-40:]):
                return True
            if _TIME_TO.search(src[max(0, at - 24):at]):
                return True
            if _PER_THING.search(src[max(0, at - 16):at]) or _PER_SECOND.match(rest):
                return True  # a time per it (`2ms/step`), or a rate of it per second (`global_step/sec`)
            at = low.find(w, at + 1)
    return False


def block_unit(text: list[str], i: int) -> bool:
    """An indented line under a block header that prints the unit (`... time across ranks (ms):`)."""
    while i > 0 and text[i][:1] == " " and text[i].strip():
        i -= 1
        if text[i][:1] != " " and re.search(rf"\(\s*{_UNIT}\s*\):\s*$", text[i]):
            return True
    return False


def test_the_evidence_check_can_fail():
    """The checker itself: the misreads of the issue have no evidence."""
    assert not time_evidence("[rank0] world_size=8 rank=0 tokens_per_sec=812.5", "world_size")
    assert not time_evidence("Namespace(workers=2, batchSize=64, lr=0.0002)", "batchSize")
    assert not time_evidence("(bn1): BatchNorm2d(64, eps=1e-05, momentum=0.1)", "eps")
    assert not time_evidence("done cycles=16 checksum=74.00", "cycles")
    assert not time_evidence("1875/1875 [====] - loss: 0.2950 - steps: 12", "steps.mean")
    assert time_evidence("1875/1875 [====] - 5s 2ms/step - loss: 0.2950", "step.mean")
    assert time_evidence("INFO:tensorflow:global_step/sec: 312.5", "step.mean")
    block = ["(min, max) time across ranks (ms):", "    optimizer ....: (10.12, 10.20)", "iteration 3", "    x ..: 3"]
    assert block_unit(block, 1) and not block_unit(block, 3)
    assert time_evidence("step 0 | fwd 55.5 ms | d2h 806.9 ms", "d2h")
    assert time_evidence("time (ms) | fwd_microstep: 41.03 | bwd_microstep: 88.31", "bwd_microstep")
    assert time_evidence("step=0 h2d_ms=228.6 compute_ms=227.7", "compute")
    assert time_evidence("| | 0.1702s to transpose LDEs", "commit/transpose_LDEs")
    assert not time_evidence("| 168113 to run generators", "run_generators")
    assert time_evidence("0/9 [00:00<?, ?it/s][2021-10-08] rank=0 time (ms) | forward_microstep: 435.69", "forward_microstep")
    assert not time_evidence("0/9 [00:00<?, ?it/s][2021-10-08] time | world_size: 8", "world_size")


def test_every_corpus_file_has_an_expectation():
    files = {p.relative_to(DATA).as_posix() for ext in ("txt", "json") for p in (DATA / "corpus").glob(f"*/*.{ext}")}
    logs = {p.relative_to(DATA).as_posix() for p in DATA.glob("h200_*/runs/*/timing.log")}
    assert files | logs == set(CASES) - {c for c in CASES if not (DATA / c).exists()}
    assert all((DATA / c).exists() for c in CASES)


def test_every_case_says_its_diagnosis_or_why_none_or_its_refusal():
    assert [c for c, w in EXPECTED.items() if not {"refused", "diagnosis", "no_diagnosis"} & set(w)] == []


def _parse(case: str):
    return parsers.parse_log(DATA / case)


@pytest.mark.parametrize("case", CASES)
def test_each_case_reads_as_expected(case):
    want = EXPECTED[case]
    if "refused" in want:
        with pytest.raises(NoDataError, match=want["refused"]):
            _parse(case)
        return
    p = _parse(case)
    comps = p.components
    assert p.format == want["format"]
    assert sorted(set(comps["component"])) == sorted(want["fields"])
    assert (p.whole or "") == want["whole"]
    assert int(p.records["complete"].sum()) == want["steps"]
    assert sorted(p.not_parts) == sorted(want.get("not_parts", []))
    assert p.steps_per_record == want.get("every", 1)


@pytest.mark.parametrize("case", [c for c in CASES if "roles" in EXPECTED[c]])
def test_roles_claim_only_what_the_text_carries(case):
    from gpuscope.rolemodel import model_for

    model = model_for(_parse(case))
    assert {n: model.role_of(n) or "-" for n in EXPECTED[case]["roles"]} == EXPECTED[case]["roles"]


def test_a_model_load_is_a_one_off_setup_never_a_stall():
    """llama.cpp's `load time`: once per run, before any token; the component says so."""
    from gpuscope.rolemodel import model_for

    p = _parse("corpus/llama_cpp/print_timings.txt")
    assert p.not_parts["load_time"].startswith("a one-off setup")
    assert "never a host stall" in model_for(p).how["load_time"]
    # a per-step `load` in a training loop is still guessed a host-side stall
    q = parsers.parse_log("step 1 load_ms=12 compute_ms=30\nstep 2 load_ms=11 compute_ms=31\n", "lines")
    assert "load" not in q.not_parts and model_for(q).role_of("load") == "cpu_stall"


@pytest.mark.parametrize("case", [c for c in CASES if "never" in EXPECTED[c]])
def test_no_counter_size_rate_stamp_or_config_becomes_a_component(case):
    try:
        names = set(_parse(case).components["component"])
    except NoDataError:
        return
    assert not names & set(EXPECTED[case]["never"])


@pytest.mark.parametrize("case", [c for c in CASES if "refused" not in EXPECTED[c]])
def test_no_component_from_a_number_without_time_evidence(case):
    p = _parse(case)
    text = (DATA / case).read_bytes().decode(errors="replace").split("\n")  # (a `\\r` bar: one line)
    comps = p.components
    for line, name in set(zip(comps["line"].tolist(), comps["component"].tolist(), strict=True)):
        src = text[line - 1]
        assert time_evidence(src, name) or block_unit(text, line - 1), (case, line, name, src)


@pytest.mark.parametrize("case", [c for c in CASES if "diagnosis" in EXPECTED[c]])
def test_first_diagnosis(case):
    from gpuscope.analysis import analyze
    from gpuscope.sources.open import open_source

    a = analyze(open_source(DATA / case))
    assert a.findings and a.findings[0].id == EXPECTED[case]["diagnosis"]


@pytest.mark.parametrize("case", [c for c in CASES if "no_diagnosis" in EXPECTED[c]])
def test_no_diagnosis_where_the_text_cannot_carry_one(case):
    from gpuscope.analysis import analyze
    from gpuscope.sources.open import open_source

    a = analyze(open_source(DATA / case))
    assert not [d for d in a.findings if d.severity in ("high", "medium")], EXPECTED[case]["no_diagnosis"]


def test_a_refusal_names_the_shapes_and_the_closest_line():
    with pytest.raises(NoDataError) as e:
        _parse("corpus/config_dumps/argparse_dcgan.txt")
    msg = str(e.value)
    assert "shapes read:" in msg and "a time per step" in msg
    assert "closest: 'Namespace(workers=2" in msg and "no unit or time word" in msg
    with pytest.raises(NoDataError, match="nccl-tests table"):
        _parse("corpus/nccl_tests/all_reduce_perf.txt")


def test_mllog_intervals_and_damage():
    ev = ':::MLLOG {{"time_ms": {t}, "event_type": "{k}", "key": "{key}", "metadata": {{"epoch_num": {n}}}}}\n'
    text = (ev.format(t=1700000000000, k="INTERVAL_START", key="epoch_start", n=1)
            + ev.format(t=1700000002500, k="INTERVAL_END", key="epoch_stop", n=1)
            + ev.format(t=1700000003000, k="INTERVAL_START", key="epoch_start", n=2)
            + ev.format(t=1700000002000, k="INTERVAL_END", key="epoch_stop", n=2)
            + ":::MLLOG {not json\n"
            + ev.format(t=1700000003000, k="INTERVAL_START", key="epoch_start", n=3)
            + ev.format(t=1700000005000, k="INTERVAL_END", key="epoch_stop", n=3))
    p = parsers.parse_log(text, "lines")
    assert p.components["value_ms"].tolist() == [2500.0, 2000.0]
    assert len(p.skipped) == 2 and p.components["ts"].tolist() == [1700000002.5, 1700000005.0]


def test_a_line_every_kth_step_is_said():
    """The PyTorch examples' ProgressMeter prints every 10th batch: its records are one step
    in 10, and the notes say so (a log printing every step says nothing)."""
    notes = " ".join(_parse("corpus/pytorch_examples/every_10th.txt").notes)
    assert "advances by 10 a line" in notes and "records count printed lines" in notes
    assert "advances by" not in " ".join(_parse("h200_foreign/runs/imagenet_fast/timing.log").notes)
    assert "advances by 10" in " ".join(_parse("corpus/megatron/pretrain_gpt.txt").notes)


def test_megatron_s_max_over_the_ranks_is_the_one_the_step_waits_for():
    """Megatron's timers: min and max over the ranks of one timer, statistics of it (never two
    parts); the max is the slowest rank's, what the step waits for, and the role model says so."""
    from gpuscope.rolemodel import model_for

    for case in ("corpus/megatron/pretrain_gpt_timers.txt", "corpus/megatron/pretrain_gpt_timers_max.txt"):
        p = _parse(case)
        how = model_for(p).how
        assert "the one the step waits for" in p.not_parts["forward-backward.max"] and "never summed" in how[
            "forward-backward.max"]
    assert "fastest rank" in _parse("corpus/megatron/pretrain_gpt_timers.txt").not_parts["optimizer.min"]


def test_a_keras_log_of_etas_only_is_refused_for_what_it_lacks():
    """The refusal names what the redraws print (a forecast) and what would tell (ms/step);
    a Keras 3 redraw is told the same, and a log with its epoch's end is read."""
    with pytest.raises(NoDataError) as e:
        _parse("corpus/keras/eta_only.txt")
    msg = str(e.value)
    assert "`32/1875 [>" in msg and "ms/step" in msg and "no unit or time word" not in msg
    k3 = "Epoch 1/2\n\r   1/1875 \u2501\u2501\u2501\u2501 4:05 131ms/step - accuracy: 0.1250 - loss: 2.3394\n"
    with pytest.raises(NoDataError, match="an ETA is a forecast"):
        parsers.parse_log(k3, "lines")
    assert _parse("corpus/keras/fit.txt").components["component"].nunique() == 2


# A case gpuscope still reads wrong stays in the corpus, marked `known_wrong = "why"` in
# expected.toml: the tests it fails (`known_wrong_in`, by default the reading's own) are strict
# xfails, so the fix that makes one pass also has to drop its mark.
@pytest.fixture(autouse=True)
def _known_wrong(request):
    case = getattr(getattr(request.node, "callspec", None), "params", {}).get("case")
    want = EXPECTED.get(case, {}) if isinstance(case, str) else {}
    if "known_wrong" in want and request.node.originalname in want.get(
            "known_wrong_in", ["test_each_case_reads_as_expected"]):
        request.node.add_marker(pytest.mark.xfail(strict=True, reason=want["known_wrong"]))


def test_a_known_wrong_case_says_what_is_wrong_and_names_real_tests():
    names = {n for n in globals() if n.startswith("test_")}
    for case, want in EXPECTED.items():
        if "known_wrong" in want:
            assert isinstance(want["known_wrong"], str) and want["known_wrong"].strip(), case
            assert set(want.get("known_wrong_in", [])) <= names, case


def test_a_refusal_never_says_a_time_with_its_unit_has_none():
    """TF1's profiler rows (`343us`, tensorflow/profiler-ui#7) had been refused as 'numbers have
    no unit or time word beside them': the closest line's time is named, and what it lacks (a
    name tied to it); a line whose numbers truly have no unit is told as before."""
    with pytest.raises(NoDataError) as e:
        _parse("corpus/tensorflow/tfprof_op_view.txt")
    assert "'343us'" in str(e.value) and "no unit or time word" not in str(e.value)
    with pytest.raises(NoDataError, match="no unit or time word beside them"):
        _parse("corpus/nccl_debug/init_timings_16ranks.txt")


def test_a_refusal_never_says_a_time_word_beside_a_number_is_missing():
    """`time/batch = 0.194` (char-rnn) and `time: 4.770/4.770` (torch_xla) print a time word
    right before their number and no unit (issue 33 class 3): the refusal quotes it and says
    so, never that the line has no time word."""
    for case, quoted in (("corpus/tensorflow/char_rnn_time_per_batch.txt", "'time/batch = 0.194'"),
                         ("corpus/training_logs/torch_xla_time_current_mean.txt", "'time: 4.770/4.770'")):
        with pytest.raises(NoDataError) as e:
            _parse(case)
        assert quoted in str(e.value) and "no unit or time word" not in str(e.value), case
def test_a_label_of_four_words_keeps_them_all():
    """lotus-bench's `compute window post proof (cold)` and `verify window post proof (cold)`:
    with three words kept, both were `window_post_proof_cold` (two stages, one name)."""
    text = ("compute window post proof (cold): 7m23.073211503s\n"
            "verify window post proof (cold): 13.782046217s\n")
    names = set(parsers.parse_log(text, "lines").components["component"])
    assert names == {"compute_window_post_proof_cold", "verify_window_post_proof_cold"}


def test_a_label_word_s_closing_period_is_punctuation():
    """sglang.bench_latency's `Prefill. latency: 5.021 ms` names Prefill_latency, not `Prefill._latency`
    (a `.` in a name stands before a statistic: `TTFT.mean`)."""
    text = "Prefill. latency:  5.021 ms, throughput:    203.93 token/s\nDecode.  latency:  0.331 ms, throughput:      3.02 token/s\n"
    assert list(dict.fromkeys(parsers.parse_log(text, "lines").components["component"])) == [
        "Prefill_latency", "Decode_latency"]


def test_a_zerolog_event_named_by_a_dotted_word():
    """gnark's MSM lines (`krs2.MultiExp done MSMG1 4194303 took=...`, okx/zeknox#107): the
    event is the dotted word, never the MSM's group or size (MSMG1, 4194303); before, every
    MultiExp's took was one `took`, read as the whole of its line."""
    text = ("14:39:13 DBG ar.MultiExp done MSMG1 2322982 took=735.652846 acceleration=none backend=groth16\n"
            "14:39:14 DBG krs2.MultiExp done MSMG1 4194303 took=1364.779481 acceleration=none backend=groth16\n"
            "14:39:14 DBG prover done acceleration=none backend=groth16 curve=bn254 took=2187.031405\n")
    p = parsers.parse_log(text, "lines")
    comps = p.components
    assert list(dict.fromkeys(comps["component"])) == ["ar_MultiExp_took", "krs2_MultiExp_took", "prover_took"]
    assert comps["value_ms"].tolist() == [735.652846, 1364.779481, 2187.031405]  # (zerolog's ms)
    assert not p.whole


def test_a_time_per_token_is_no_part_named_by_its_last_word():
    """vLLM's 2023 benchmark_serving (vllm-project/vllm#359): `Average latency per output token:
    1.10 s` had been a part `output_token` (and `per token` one named `token`), summed into the
    run beside its whole; a time per token is a statistic of a rate: never a part."""
    from gpuscope.parsers.log.lines.vocabulary import label_of

    assert label_of(["Average", "latency", "per"], "token", True) == "latency_per_token.average"
    assert label_of(["latency", "per", "output"], "token", True) == "latency_per_output_token"
    assert label_of(["elapsed", "time", "per"], "iteration", True) == "elapsed_time_per_iteration"
    text = ("Total time: 166.88 s\nAverage latency: 67.59 s\nAverage latency per token: 0.21 s\n"
            "Average latency per output token: 1.10 s\n")
    p = parsers.parse_log(text, "lines")
    assert set(p.components["component"]) == {"Total_time", "latency.average"} and p.whole == "Total_time"


def test_a_refusal_of_united_times_says_what_they_are():
    """A text whose times carry their units but are statistics or rates (a lone `Average
    latency per token: 0.21 s`) is refused for that, not for `no unit or time word` (the unit is
    right there); a benchmark table of ns/op or genai-perf's table is named as the table it is."""
    with pytest.raises(NoDataError) as e:
        parsers.parse_log("Average latency per token: 0.21 s\nAverage latency per token: 0.22 s\n", "lines")
    assert "no unit or time word" not in str(e.value) and "statistics or rates" in str(e.value)
    with pytest.raises(NoDataError, match="a benchmark table of ns/op"):
        _parse("corpus/zk_bench/constantine_msm.txt")  # (its rows: `95680066.8 ns/op (avg)`)
    with pytest.raises(NoDataError, match="a genai-perf table"):
        _parse("corpus/genai_perf/request_latency_ns.txt")
    with pytest.raises(NoDataError, match="no unit or time word"):
        _parse("corpus/config_dumps/argparse_dcgan.txt")


def test_a_time_per_token_beside_its_whole_is_no_vote_for_kv():
    """A TGIS-style response line (IBM/vllm#15): `tokenization_time=0.45ms
    queue_and_inference_time=1096.67ms time_per_token=5.48ms total_time=1097.12ms`: kv reads the
    time per token, lines keeps it out as a rate; that had voted the line kv, which has no whole,
    so the time per token and total_time were summed beside the parts (a record of 2.2 s)."""
    from gpuscope.parsers.log.detect import detect_format

    line = ("INFO 04-09 21:51:01 logs.py:43] generate_stream{input=[b'x'] tokenization_time=0.45ms "
            "queue_and_inference_time=1096.67ms time_per_token=5.48ms total_time=1097.12ms input_toks=16}: done\n")
    assert detect_format(line) == "lines"
    p = parsers.parse_log(line)
    assert p.whole == "total_time" and "time_per_token" not in set(p.components["component"])
    # a kv log whose times lines cannot read still votes kv (`load=12` is kv's bare milliseconds)
    assert detect_format("load=12 compute=30 total=45\nload=11 compute=31 total=44\n") == "kv"


def test_a_mean_plus_minus_its_std_takes_the_unit_after_the_std():
    """OpenVINO GenAI's `Generate time: 21.88 ± 1.20 ms` (openvinotoolkit/openvino.genai#875):
    the bare mean under a time word had read as 21.88 s (1000x); the unit after the std is the
    mean's. Without a unit nothing is a time (`loss: 0.52 ± 0.03`)."""
    p = parsers.parse_log("Generate time: 21.88 ± 1.20 ms\nGenerate time: 22.10 ± 1.31 ms\n", "lines")
    assert p.components["value_ms"].tolist() == [21.88, 22.10]
    many = "".join(f"step {i} Generate time: {20 + i % 7}.5 ± 1.2 ms\n" for i in range(400))
    assert parsers.parse_log(many, "lines").components["value_ms"].max() == 26.5  # (replayed lines too)
    with pytest.raises(NoDataError):
        parsers.parse_log("loss: 0.52 ± 0.03\nloss: 0.50 ± 0.02\n", "lines")


def test_perf_analyzer_s_latency_limit_is_a_setting():
    """`Latency limit: 0 msec` (perf_analyzer's settings, triton-inference-server/server#7492)
    is a bound it was given: it had been read as a 0 ms step, the only record of its summary."""
    p = _parse("corpus/perf_analyzer/async_client_overhead.txt")
    assert "Latency_limit" not in set(p.components["component"]) and int(p.records["complete"].sum()) == 0


def test_a_stage_done_is_named_by_the_words_before_done():
    """halo2's keccak bench (privacy-ethereum/zkevm-circuits#175) prints `v key done 3.8s`,
    `create proof done 7.6s`: every stage had been one name `done`."""
    text = "v key done 3.823163666s\np key done 276.542227291s\ncreate proof done 7.589675333s\n"
    assert list(parsers.parse_log(text, "lines").components["component"]) == [
        "v_key_done", "p_key_done", "create_proof_done"]


def test_quoted_times_that_kv_cannot_read_vote_for_lines():
    """TGI's `validation_time="5.669107ms" queue_time="161.454300714s"`
    (huggingface/text-generation-inference#3173): kv reads no quoted value, lines reads both;
    the line had voted for neither and the text was refused for `no timing lines found`."""
    from gpuscope.parsers.log.detect import detect_format

    text = 'validation_time="5.669107ms" queue_time="161.454300714s"\n'
    assert detect_format(text) == "lines"
    assert parsers.parse_log(text).components["value_ms"].tolist() == [5.669107, 161454.300714]


def test_maximum_minimum_and_p99_9_are_statistics():
    """A custom Triton client's report (triton-inference-server/server#4667): `P99.9:
    3921919μs` and `Maximum Latency: 5156863μs` had been parts summed beside the mean and the
    other percentiles; they are statistics of the latency like them."""
    p = _parse("corpus/perf_analyzer/custom_client_us.txt")
    assert {"P99.9", "Latency.maximum"} <= set(p.not_parts)

"""Statistics are not steps, parts or wholes (issue 33, the `stats` class): a mean, min, max,
percentile or std printed about a run is a statistic of many records."""

from __future__ import annotations

from gpuscope import parsers


def test_a_statistic_with_its_breakdown_is_no_record_s_whole():
    """perf_analyzer's `Avg gRPC time: 824 usec (marshal 4 usec + response wait 818 usec + ...)`:
    the mean's breakdown in parentheses had made `gRPC_time.avg` the log's whole, where no record
    has one. What would make it fire falsely: a step's own total with its parts in parentheses
    (`step 3: total 90 ms (data 10 ms + compute 80 ms)`) is still the whole."""
    text = ("  Avg latency: 832 usec (standard deviation 197 usec)\n"
            "  p50 latency: 839 usec\n"
            "  Avg gRPC time: 824 usec (marshal 4 usec + response wait 818 usec + unmarshal 2 usec)\n"
            "  Avg request latency: 422 usec (overhead 155 usec + queue 51 usec + compute 215 usec)\n")
    p = parsers.parse_log(text, "lines")
    assert not p.whole and int(p.records["complete"].sum()) == 0
    assert {"gRPC_time.avg", "marshal", "request_latency.avg", "queue"} <= set(p.not_parts)
    steps = "".join(f"step {i}: total {90 + i} ms (data {10 + i} ms + compute 80 ms)\n" for i in range(4))
    q = parsers.parse_log(steps, "lines")
    assert q.whole == "total" and int(q.records["complete"].sum()) == 4


def test_a_statistic_word_four_words_before_a_label_s_unit_is_kept():
    """LoadGen's `Min First Token latency (ns) : 20091116` (mlcommons/inference#2341): the label's
    unit had counted as a fifth word, so `Min` fell off and min, max and mean were one name
    `First_Token_latency`, read as three steps. A label without a unit still keeps four words
    before its key (the input a longer run would misname: `zero one two three four five: 3 ms`)."""
    text = ("Min First Token latency (ns)                : 20091116\n"
            "Max First Token latency (ns)                : 1316118108\n"
            "Mean First Token latency (ns)               : 169476022\n")
    p = parsers.parse_log(text, "lines")
    assert list(p.components["component"]) == [
        "First_Token_latency.min", "First_Token_latency.max", "First_Token_latency.mean"]
    assert int(p.records["complete"].sum()) == 0
    many = "".join(f"{s} First Token latency (ns) : {1000 + i}\n" for i in range(200) for s in ("Min", "Max"))
    assert set(parsers.parse_log(many, "lines").components["component"]) == {
        "First_Token_latency.min", "First_Token_latency.max"}  # (the replayed lines too)
    assert set(parsers.parse_log("zero one two three four five: 3 ms\n", "lines").components["component"]) == {
        "one_two_three_four_five"}


GENAI = ("Load time: 18507.00 ms\nGenerate time: 21.88 ± 1.20 ms\nTokenization time: 0.28 ± 0.02 ms\n"
         "TTFT: 20.88 ± 0.47 ms\nTPOT: 20.88 ± 0.47 ms\nThroughput : 47.89 ± 1.07 tokens/s\n")


def test_a_mean_with_its_std_is_a_statistic_and_a_load_beside_them_a_one_off():
    """OpenVINO GenAI's benchmark_genai (openvinotoolkit/openvino.genai#875): means ± std over
    the generate calls had been one record each (6 steps) and the model's load another; the
    means are statistics (`TTFT.mean`), the load a one-off setup: no step. The inputs that
    would make it fire falsely: a time without ± on the same line keeps its name, and a load
    printed on every step beside its parts stays a part."""
    p = parsers.parse_log(GENAI, "lines")
    assert list(dict.fromkeys(p.components["component"])) == [
        "Load_time", "Generate_time.mean", "Tokenization_time.mean", "TTFT.mean", "TPOT.mean"]
    assert int(p.records["complete"].sum()) == 0 and not p.whole
    assert p.not_parts["Load_time"].startswith("a one-off setup")
    many = "".join(f"step {i} Generate time: {20 + i % 7}.5 ± 1.2 ms data {i % 3 + 1}.5 ms\n" for i in range(300))
    q = parsers.parse_log(many, "lines")  # (replayed lines too)
    assert set(q.components["component"]) == {"Generate_time.mean", "data"}
    steps = "".join(f"step {i} load_ms={12 + i % 2} compute_ms=30\n" for i in range(6))
    r = parsers.parse_log(steps, "lines")
    assert "load" not in r.not_parts and int(r.records["complete"].sum()) == 6


def test_a_grid_s_rows_with_the_unit_in_their_label_are_read():
    """evalscope perf's grid (vllm-project/vllm#27776): `| Time taken for tests (s) | 54.3489 |`
    (the run's wall: its whole) and `| Average time to first token (s) | 0.8962 |` (a statistic)
    had been lost: a bare `(s)` after a word that is no time word was no unit, and the fifth
    word (`Average`) fell off. A `(s)` after a label without a time word is still none (the
    input that would make it fire falsely: `Number of request(s) | 100`)."""
    text = ("| Time taken for tests (s)          |   54.3489 |\n"
            "| Number of request(s)              |  100      |\n"
            "| Average latency (s)               |   24.9804 |\n"
            "| Average time to first token (s)   |    0.8962 |\n")
    p = parsers.parse_log(text, "lines")
    assert list(p.components["component"]) == [
        "Time_taken_for_tests", "latency.average", "time_to_first_token.average"]
    assert p.whole == "Time_taken_for_tests" and int(p.records["complete"].sum()) == 1
    assert p.components["value_ms"].tolist()[0] == 54348.9


def test_a_label_before_its_index_names_the_line_s_time():
    """sglang's bench_one_batch (sgl-project/sglang#30147): `Decode 0. Batch size: 1, latency:
    0.00637 s` had been a bare `latency`, named like a whole, so each decode was a record and
    `Total. latency` a part beside it (10 steps). The label names it (Decode_latency), the run's
    `Total_latency` is the whole: a record per run. The input that would make it fire falsely:
    a counter before the time (`step 3. latency: 5 ms`) keeps its reading."""
    run = ("Prefill. latency: 0.02265 s, throughput:   2648.96 token/s\n"
           + "".join(f"Decode {i}. Batch size: 1, latency: 0.0060{i} s, throughput:    157.09 token/s\n" for i in range(5))
           + "Decode.  median latency: 0.00602 s, median throughput:    170.84 token/s\n"
           + "Total. latency:  0.076 s, throughput:    923.17 token/s\n")
    p = parsers.parse_log(run * 2, "lines")
    assert list(dict.fromkeys(p.components["component"])) == [
        "Prefill_latency", "Decode_latency", "Decode_latency.median", "Total_latency"]
    assert p.whole == "Total_latency" and int(p.records["complete"].sum()) == 2
    steps = "".join(f"step {i}. latency: {5 + i} ms\n" for i in range(4))
    assert "Decode_latency" not in set(parsers.parse_log(steps, "lines").components["component"])
    assert "step_latency" not in set(parsers.parse_log(steps, "lines").components["component"])


def test_an_average_smallest_and_largest_time_per_step_are_statistics():
    """accelerate's per-configuration report (huggingface/accelerate#1244): `Average time /
    step: 0.027s`, `Smallest: 0.023s`, `Largest: 0.0378s` had been four steps whose whole was
    `step` with Smallest and Largest two parts summed beside it. They are statistics of the
    time per step: no step, no part. The inputs that would make it fire falsely: a plain
    `time / step:` is still one step's time, and `loss / acc` is no `per`."""
    block = "- Average time / step: {a}s\n- Smallest: {s}s\n- Largest: {m}s\n\n"
    text = "".join(block.format(a=a, s=s, m=m) for a, s, m in (("0.027", "0.023", "0.0378"), ("0.022", "0.017", "0.042")))
    p = parsers.parse_log(text, "lines")
    assert list(dict.fromkeys(p.components["component"])) == ["time_per_step.average", "Smallest", "Largest"]
    assert set(p.not_parts) == {"time_per_step.average", "Smallest", "Largest"}
    assert int(p.records["complete"].sum()) == 0 and not p.whole
    q = parsers.parse_log("".join(f"time / step: 0.0{i + 2}s\n" for i in range(3)), "lines")
    assert set(q.components["component"]) == {"time_per_step"} and int(q.records["complete"].sum()) == 3
    from gpuscope.parsers.log.lines.line import SLASH_PER

    assert SLASH_PER.search("train loss / acc: 0.5") is None and SLASH_PER.search("time / step: 3") is not None
    assert SLASH_PER.search("iter 3: 2.81 s / it") is None  # (tqdm's own: tests/test_linenotations.py)

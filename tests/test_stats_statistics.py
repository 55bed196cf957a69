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

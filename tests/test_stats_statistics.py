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

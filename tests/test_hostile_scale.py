"""Time that grows with the wrong thing (issue 22): a trace of thousands of streams, threads
or processes must cost about what its events cost. A trace of 3,000 streams took 13 s to
analyze, 12 s to export and 44 s and a gigabyte to plot (a pandas frame and groupby per
stream, a scan of every event per lane, a row per stream in the picture); 300 streams of
the same 2,000 events were 25-45x the CPU time of 10 streams. CPU seconds, not wall time:
they stay meaningful on a loaded box."""

from __future__ import annotations

import json
import time

import pytest

from tests.hostile_check import run_cli


def _trace(streams: int, n: int, threads: int = 1, pids: int = 1) -> dict:
    evs = []
    for i in range(n):
        t = 1000.0 + 3.0 * i
        evs.append({"ph": "X", "cat": "kernel", "name": f"k{i % 7}", "pid": 0, "tid": i % streams, "ts": t, "dur": 5.0,
                    "args": {"device": 0, "stream": i % streams, "correlation": i}})
        evs.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 100 + i % pids,
                    "tid": i % threads, "ts": t - 2, "dur": 1.0, "args": {"correlation": i}})
    return {"traceEvents": evs}


def _cpu(argv: list[str]) -> float:
    t = time.process_time()
    code, out, err, _ = run_cli(argv)
    assert code == 0 and err.startswith("gpuscope: wrote") or err == "", (argv, code, err)
    return time.process_time() - t


@pytest.mark.parametrize("command", ["analyze", "export", "plot"])
def test_a_trace_of_hundreds_of_streams_costs_about_what_its_events_cost(tmp_path, command):
    def argv(path, k):
        return {"analyze": ["analyze", str(path), "--json"],
                "export": ["export", str(path), "--perfetto", str(tmp_path / f"out{k}.json")],
                "plot": ["plot", str(path), "-o", str(tmp_path / f"out{k}.png")]}[command]

    few, many = tmp_path / "few.json", tmp_path / "many.json"
    streams, events = {"analyze": (500, 1000), "export": (300, 600), "plot": (300, 600)}[command]
    few.write_text(json.dumps(_trace(3, events)))
    many.write_text(json.dumps(_trace(streams, events)))
    _cpu(argv(few, 0))  # imports, fonts: not the input's cost
    base = min(_cpu(argv(few, 1)), _cpu(argv(few, 2)))
    cost = _cpu(argv(many, 3))
    assert cost < 12 * base + 0.5, f"{command}: {cost:.2f} s CPU for {streams} streams, {base:.2f} s for 3"


def test_thousands_of_host_threads_and_processes_cost_about_what_their_events_cost(tmp_path):
    few, threads, pids = tmp_path / "few.json", tmp_path / "threads.json", tmp_path / "pids.json"
    few.write_text(json.dumps(_trace(1, 2000)))
    threads.write_text(json.dumps(_trace(1, 2000, threads=2000)))
    pids.write_text(json.dumps(_trace(1, 2000, pids=2000)))
    _cpu(["analyze", str(few), "--json"])
    base = _cpu(["analyze", str(few), "--json"])
    for p in (threads, pids):
        assert _cpu(["analyze", str(p), "--json"]) < 6 * base + 0.5, p.name
        assert _cpu(["export", str(p), "--perfetto", str(tmp_path / (p.stem + ".pf.json"))]) < 12 * base + 1.0, p.name


def test_the_picture_of_thousands_of_lanes_draws_the_busiest_and_one_row_for_the_rest():
    import pandas as pd

    from gpuscope.reports.lanes import Lane
    from gpuscope.reports.plot import MAX_LANES, fewer_lanes

    def lane(k, busy):
        df = pd.DataFrame({"t_start": [0.0], "t_end": [busy], "phase": ["kernel"], "worker": [k], "gpu": [0],
                           "partition": [-1]})
        return Lane(f"stream {k}", "GPU 0", df, df.iloc[:0])

    lanes = [lane(k, 1.0 if k % 10 else 5.0) for k in range(300)]
    out = fewer_lanes(lanes)
    assert len(out) == MAX_LANES and out[-1].label == f"{300 - MAX_LANES + 1} more lanes, on one row"
    kept = [int(ln.label.split()[1]) for ln in out[:-1]]
    busiest = list(range(0, 300, 10))
    assert kept == sorted(kept) and set(busiest) <= set(kept)  # the busiest, in their order
    assert set(kept) - set(busiest) == {k for k in range(19) if k % 10}  # then ties by order: 1-9, 11-18
    assert len(out[-1].main) == 300 - MAX_LANES + 1
    assert fewer_lanes(lanes[:MAX_LANES]) == lanes[:MAX_LANES]

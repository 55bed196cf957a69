#!/usr/bin/env python3
"""`make bench`: read + analyze a generated 1,000,000-event profiler trace, and the JSON readers.

Generates bench-out/trace_1m.json.gz once (tools/gen_trace.py: training-style steps of
kernels, runtime calls, copies, memsets, operators, annotations and ac2g flows), then times,
each in a fresh process, median of --runs:

    read+analyze    parsers.kineto.read_trace + analysis.trace_analysis.analyze_trace + to_json
    <reader>        the decode alone (gunzip included), for the candidate JSON readers:
                    stdlib json, orjson and msgspec generic (dicts; each with the garbage
                    collector on and off), msgspec typed (the structs parsers.kineto decodes
                    into); orjson only when it is installed

and prints wall seconds, CPU seconds and peak RSS for each. Exit 1 if read+analyze fails.

    python tools/bench_trace.py [--runs 3] [--events 1000000] [--file PATH] [--readers]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

WORKER = r"""
import gc, gzip, json, resource, sys, time
which, path = sys.argv[1], sys.argv[2]
t0, c0 = time.perf_counter(), time.process_time()
out = {}
if which == "read+analyze":
    from gpuscope.parsers.trace.kineto import read_trace
    from gpuscope.analysis.evidence import collect
    from gpuscope.analysis.rules.registry import run_rules
    from gpuscope.analysis.trace_analysis import analyze_trace
    from gpuscope.analysis.document import trace_doc
    t0, c0 = time.perf_counter(), time.process_time()
    fr = read_trace(path)
    t1 = time.perf_counter()
    a = analyze_trace(fr, line_rate_gbs=55.5, line_rate_source="option")
    a.findings = run_rules(collect(trace=a))
    j = json.dumps(trace_doc(a))
    out.update(read_s=t1 - t0, analyze_s=time.perf_counter() - t1, events=fr.events,
               diagnoses=[d.id for d in a.findings])
else:
    raw = open(path, "rb").read()
    raw = gzip.decompress(raw) if path.endswith(".gz") else raw
    if which.endswith("(gc off)"):
        gc.disable()
    if which.startswith("stdlib json"):
        n = len(json.loads(raw)["traceEvents"])
    elif which.startswith("orjson"):
        import orjson
        n = len(orjson.loads(raw)["traceEvents"])
    elif which.startswith("msgspec generic"):
        import msgspec
        n = len(msgspec.json.decode(raw)["traceEvents"])
    else:
        import msgspec
        from gpuscope.parsers.trace.kineto_json import Document
        n = len(msgspec.json.decode(raw, type=Document).traceEvents)
    out["events"] = n
out.update(wall_s=time.perf_counter() - t0, cpu_s=time.process_time() - c0,
           peak_rss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
print(json.dumps(out))
"""

READERS = ["stdlib json", "stdlib json (gc off)", "orjson", "orjson (gc off)", "msgspec generic",
           "msgspec generic (gc off)", "msgspec typed"]


def generate(path: Path, events: int) -> None:
    from tools import gen_trace

    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(".tmp-" + path.name)  # same suffix: gen_trace.write gzips .gz
    gen_trace.write(gen_trace.generate(events, seed=1), tmp)
    tmp.replace(path)


def run_once(which: str, path: Path) -> dict | None:
    proc = subprocess.run([sys.executable, "-c", WORKER, which, str(path)], capture_output=True, text=True,
                          cwd=REPO)
    if proc.returncode != 0:
        sys.stderr.write(f"bench: {which} exited {proc.returncode}: {proc.stderr.strip()[-300:]}\n")
        return None
    return json.loads(proc.stdout.strip().splitlines()[-1])


def bench(which: str, path: Path, runs: int) -> dict | None:
    got = [r for r in (run_once(which, path) for _ in range(runs)) if r is not None]
    if not got:
        return None
    med = {k: statistics.median(r[k] for r in got) for k in ("wall_s", "cpu_s", "peak_rss_mb")}
    return {**got[0], **med, "name": which, "runs": len(got)}


def have(module: str) -> bool:
    try:
        __import__(module)
    except ImportError:
        return False
    return True


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--file", type=Path, default=None, help="a trace to time (default: generate one)")
    ap.add_argument("--readers", action="store_true", help="also time the candidate JSON readers alone")
    args = ap.parse_args(argv)
    path = args.file or REPO / "bench-out" / f"trace_{args.events // 1000}k.json.gz"
    if args.file is None and not path.exists():
        t = time.perf_counter()
        generate(path, args.events)
        print(f"generated {path} in {time.perf_counter() - t:.1f} s")
    size = path.stat().st_size / 1e6
    print(f"trace {path} ({size:.1f} MB on disk), {os.cpu_count()} CPUs, median of {args.runs} runs")
    names = ["read+analyze"]
    if args.readers:
        names += [r for r in READERS if not r.startswith("orjson") or have("orjson")]
    failed = False
    print(f"{'':24s} {'wall s':>8s} {'CPU s':>8s} {'peak RSS MB':>12s}")
    for name in names:
        r = bench(name, path, args.runs)
        if r is None:
            failed |= name == "read+analyze"
            continue
        extra = ""
        if name == "read+analyze":
            extra = (f"  (read {r['read_s']:.2f} s, analyze+JSON {r['analyze_s']:.2f} s; {r['events']:,} events;"
                     f" {', '.join(r['diagnoses'])})")
        print(f"{name:24s} {r['wall_s']:8.2f} {r['cpu_s']:8.2f} {r['peak_rss_mb']:12.0f}{extra}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())

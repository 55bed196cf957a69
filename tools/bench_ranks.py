#!/usr/bin/env python3
"""`make bench`: a folder of many rank traces analyzed per rank, by 1, 2, 4, ... processes.

Generates bench-out/ranks_<N>x<E>/rankK.pt.trace.json.gz once (tools/gen_trace.py, four seeds
copied round the ranks), then times gpuscope.ranks_run.analyze_ranks over the folder (each rank
opened with the facade and analyzed as `gpuscope analyze` would) with each worker count up to
the machine's cores, and prints wall seconds and the speed-up over one process. Exit 1 when a
rank fails or the rows differ between worker counts.

    python tools/bench_ranks.py [--ranks 64] [--events 100000] [--workers 1,2,4]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def make_folder(ranks: int, events: int) -> Path:
    d = REPO / "bench-out" / f"ranks_{ranks}x{events}"
    if d.is_dir() and len(list(d.glob("rank*.pt.trace.json.gz"))) == ranks:
        return d
    d.mkdir(parents=True, exist_ok=True)
    seeds = []
    for s in range(min(4, ranks)):
        f = d / f"seed{s}.json.gz.tmp"
        subprocess.run([sys.executable, str(REPO / "tools" / "gen_trace.py"), "--events", str(events),
                        "--seed", str(s + 1), "-o", str(f.with_suffix(""))], check=True)
        seeds.append(f.with_suffix(""))
    for k in range(ranks):
        shutil.copyfile(seeds[k % len(seeds)], d / f"rank{k}.pt.trace.json.gz")
    for f in seeds:
        f.unlink()
    return d


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, default=64)
    ap.add_argument("--events", type=int, default=100_000)
    ap.add_argument("--workers", default=None, help="comma-separated worker counts (default 1, 2, 4, ... cores)")
    a = ap.parse_args()
    from gpuscope.ranks_run import analyze_ranks, rank_inputs

    folder = make_folder(a.ranks, a.events)
    paths = rank_inputs(folder)
    cores = os.cpu_count() or 1
    counts = [int(x) for x in a.workers.split(",")] if a.workers else sorted({*(2**i for i in range(8) if 2**i <= cores),
                                                                              cores})
    print(f"{len(paths)} rank traces of {a.events:,} events ({sum(p.stat().st_size for p in paths) / 1e6:.0f} MB "
          f"gzipped) in {folder}; {cores} cores")
    print(f"{'workers':>8} {'wall s':>8} {'speed-up':>9} {'s/rank':>7}")
    base, first = None, None
    for w in counts:
        t0 = time.perf_counter()
        doc = analyze_ranks(paths, workers=w, line_rate=55.5)
        wall = time.perf_counter() - t0
        if doc["errors"]:
            print(f"rank failed: {doc['errors'][0]}", file=sys.stderr)
            return 1
        rows = [{k: v for k, v in r.items() if k != "seconds"} for r in doc["table"]]
        if first is None:
            first = rows
        elif rows != first:
            print(f"rows differ with {w} workers", file=sys.stderr)
            return 1
        base = base or wall
        print(f"{doc['workers']:>8} {wall:>8.2f} {base / wall:>8.2f}x {wall / len(paths):>7.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""`make bench`: analyze throughput on a generated 1,000,000-line cuzk daemon log.

Generates bench-out/daemon_1m.log once (tools/gen_daemon_log.py, seed 1, ISO prefixes,
~100 MB), then times, each as a fresh process, median of --runs:

    gpuscope analyze FILE --json > pipe           the issue's target: <= 3 s, peak RSS < 1.5 GB
    python -c 'parsers.parse_log(FILE)'           the parser's share (budget 1.6 s incl. start)
    grep -c CUZK FILE                             the floor: reading the bytes once

and prints wall seconds, lines/s, MB/s and peak RSS for each. Exit 1 if a command fails.

    python tools/bench_analyze.py [--runs 5] [--lines 1000000] [--file PATH]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TARGET_S = 3.0
TARGET_RSS_MB = 1500


def generate(path: Path, lines: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    subprocess.run([sys.executable, str(REPO / "tools" / "gen_daemon_log.py"), "--lines", str(lines),
                    "--seed", "1", "--prefix", "iso", "-o", str(tmp)], check=True)
    tmp.replace(path)


def run_once(cmd: list[str]) -> tuple[float, float, int]:
    """(wall s, peak RSS MB, exit code) of one run, stdout discarded."""
    t0 = time.perf_counter()
    # stdout to a pipe, not /dev/null: GNU grep stops at the first match when it sees /dev/null
    with tempfile.TemporaryFile() as errf:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=errf, cwd=REPO)
        while proc.stdout.read(1 << 20):
            pass
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        proc.stdout.close()
        proc.returncode = os.waitstatus_to_exitcode(status)
        errf.seek(0)
        err = errf.read().decode(errors="replace")
    if proc.returncode not in (0, 1) or (proc.returncode == 1 and "grep" not in cmd[0]):
        sys.stderr.write(f"bench: {' '.join(cmd[:3])} ... exited {proc.returncode}: {err.strip()[-300:]}\n")
    return wall, usage.ru_maxrss / 1024.0, proc.returncode


def bench(name: str, cmd: list[str], runs: int, n_lines: int, size_mb: float) -> dict:
    walls, rss, codes = [], [], []
    for _ in range(runs):
        w, r, c = run_once(cmd)
        walls.append(w)
        rss.append(r)
        codes.append(c)
    med = statistics.median(walls)
    return {"name": name, "median_s": med, "min_s": min(walls), "max_s": max(walls),
            "lines_per_s": n_lines / med, "mb_per_s": size_mb / med, "peak_rss_mb": max(rss),
            "ok": all(c == 0 for c in codes)}


def analyze_cmd(path: Path) -> list[str]:
    exe = Path(sys.executable).parent / "gpuscope"
    base = [str(exe)] if exe.exists() else [sys.executable, "-m", "gpuscope"]
    return [*base, "analyze", str(path), "--json"]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--lines", type=int, default=1_000_000)
    ap.add_argument("--file", type=Path, default=None, help="log to time (default: generated)")
    args = ap.parse_args(argv)
    path = args.file or REPO / "bench-out" / f"daemon_{args.lines}.log"
    if args.file is None and not path.exists():
        print(f"bench: generating {path} ({args.lines} lines) ...", flush=True)
        generate(path, args.lines)
    if not path.is_file():
        print(f"bench: {path}: no such file", file=sys.stderr)
        return 3
    with open(path, "rb") as f:
        n_lines = sum(chunk.count(b"\n") for chunk in iter(lambda: f.read(1 << 24), b""))
    size_mb = path.stat().st_size / 1e6
    print(f"bench: {path.name}: {n_lines} lines, {size_mb:.1f} MB, {os.cpu_count()} CPUs, "
          f"median of {args.runs}", flush=True)

    results = []
    have_analyze = run_once([*analyze_cmd(path)[:-2], "--help"])[2] == 0
    if have_analyze:
        results.append(bench("gpuscope analyze --json", analyze_cmd(path), args.runs, n_lines, size_mb))
    else:
        print("bench: `gpuscope analyze` is not available; timing the parser only", flush=True)
    parse = ("import sys; from gpuscope import parsers; p = parsers.parse_log(sys.argv[1]); "
             "print(len(p.records), len(p.components))")
    results.append(bench("parsers.parse_log", [sys.executable, "-c", parse, str(path)],
                         args.runs, n_lines, size_mb))
    grep = shutil.which("grep")
    if grep:
        results.append(bench("grep -c CUZK (floor)", [grep, "-c", "CUZK", str(path)],
                             args.runs, n_lines, size_mb))

    print(f"{'command':<26} {'median s':>9} {'min s':>7} {'max s':>7} {'lines/s':>12} "
          f"{'MB/s':>8} {'peak RSS MB':>12}")
    for r in results:
        print(f"{r['name']:<26} {r['median_s']:9.3f} {r['min_s']:7.3f} {r['max_s']:7.3f} "
              f"{r['lines_per_s']:12,.0f} {r['mb_per_s']:8.1f} {r['peak_rss_mb']:12.0f}"
              + ("" if r["ok"] else "  FAILED"))
    if have_analyze:
        a = results[0]
        verdict = a["median_s"] <= TARGET_S and a["peak_rss_mb"] < TARGET_RSS_MB
        print(f"target: analyze <= {TARGET_S:.1f} s and RSS < {TARGET_RSS_MB} MB: "
              f"{'met' if verdict else 'NOT met'}")
    return 0 if all(r["ok"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""`make bench`: analyze throughput on a generated 1,000,000-line cuzk daemon log.

Generates bench-out/daemon_1m.log once (tools/gen_daemon_log.py, seed 1, ISO prefixes,
~100 MB), then times, each as a fresh process, median of --runs:

    gpuscope analyze FILE --json > pipe           the issue's target: <= 3 s, peak RSS < 1.5 GB
    python -c 'parsers.parse_log(FILE)'           the parser's share (budget 1.6 s incl. start)
    grep -c CUZK FILE                             the floor: reading the bytes once

and prints wall seconds, lines/s, MB/s and peak RSS for each. Exit 1 if a command fails.
`--shape condensed|kv|lines` times a generated log of another format instead (the article's
condensed lines, key=value lines, timing lines as people print them: bench-out/<shape>_N.log,
seed 1, ISO prefixes, one noise line in four).

    python tools/bench_analyze.py [--runs 5] [--lines 1000000] [--file PATH] [--shape cuzk]
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


def generate_shape(path: Path, lines: int, shape: str) -> None:
    """A log of `lines` lines in one of the other formats, groups of 4 lines (3 timing lines
    and a noise line), numbers from a seeded generator."""
    import random
    from datetime import UTC, datetime, timedelta

    rng = random.Random(1)
    t = datetime(2026, 11, 30, 14, 0, 0, tzinfo=UTC)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    with open(tmp, "w") as f:
        for i in range(0, lines, 4):
            t += timedelta(milliseconds=rng.uniform(50, 400))
            p = t.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
            a, b, c = rng.uniform(100, 200), rng.uniform(80, 100), rng.uniform(0, 9)
            if shape == "condensed":
                group = (f"mutex_wait_ms={rng.randint(0, 3000)} | barrier_wait_ms={rng.randint(0, 200)}",
                         f"ntt_kernels={int(a)}ms | msm={int(b)}ms | batch_add={rng.randint(390, 410)} | tail_msm=198",
                         f"mutex_held_ms={int(a + b) + 600} | total_fn={rng.randint(4000, 9000)}ms")
            elif shape == "kv":
                group = (f"INFO job=j{i} upload_ms={a:.1f} h2d_bytes=1610612736",
                         f"INFO job=j{i} compute_ms={b:.1f}, wait_ms={c:.1f}",
                         f"INFO job=j{i} gpu_held_ms={a + b + c:.1f}")
            else:
                group = (f"step={i} h2d_ms={a:.1f} compute_ms={b:.1f} step_ms={a + b + 0.2:.1f} h2d_bytes=1610612736",
                         f"[epoch 0] step {i}/{lines} loss: 6.9042 data: {a:.1f}ms compute: {b:.1f}ms step: {a + b:.1f}ms",
                         f"iter {i}: prep {a:.3f} ms, h2d {b:.3f} ms, kernel 20.004 ms, total {a + b + 20.004:.3f} ms")
            for g in group:
                f.write(f"{p} {g}\n")
            f.write(f"{p} /opt/venv/lib/python3.12/site-packages/torch/profiler.py:224: UserWarning: events cleared\n")
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
    ap.add_argument("--shape", choices=("cuzk", "condensed", "kv", "lines"), default="cuzk",
                    help="format of the generated log (default: the cuzk daemon log)")
    args = ap.parse_args(argv)
    name = "daemon" if args.shape == "cuzk" else args.shape
    path = args.file or REPO / "bench-out" / f"{name}_{args.lines}.log"
    if args.file is None and not path.exists():
        print(f"bench: generating {path} ({args.lines} lines) ...", flush=True)
        if args.shape == "cuzk":
            generate(path, args.lines)
        else:
            generate_shape(path, args.lines, args.shape)
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
        word = "CUZK" if args.shape == "cuzk" else "ms"
        results.append(bench(f"grep -c {word} (floor)", [grep, "-c", word, str(path)],
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

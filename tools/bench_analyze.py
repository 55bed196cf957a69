#!/usr/bin/env python3
"""`make bench`: the analyzer's performance targets (issue 14), each beside its figure.

Generates once, under bench-out/ (tools/gen_daemon_log.py, ISO prefixes): a 1,000,000-line
cuzk daemon log (seed 1, ~99 MB) and a 2,000,000-line one (seed 2, ~197 MB), then times each
command as a fresh process (median of --runs; CPU seconds = user + system of the process and
its children, the stable figure on a shared machine; peak RSS; wall):

    gpuscope analyze daemon_1000000.log --json        target <= 1.5 CPU-s, <= 400 MB
    gpuscope analyze examples/article_excerpt.log     target <= 0.4 CPU-s
    gpuscope analyze daemon_2000000.log --json        target: linear in the 1M figure, progress on stderr
    gpuscope plot daemon_2000000.log -o x.png         target <= 5 s, lanes aggregated

and `analyze --json` of 1M-line logs of each format shape (cuzk, condensed, kv, lines: the
article's condensed lines, key=value lines, timing lines as people print them; seed 1, one
noise line in four), once each, with the scanner that read them. Bytecode is cached first
(one warm-up run), as after an install. Exit 1 if a command fails.

    python tools/bench_analyze.py [--runs 3] [--no-shapes] [--pure] [--tree OTHER_CHECKOUT]
    python tools/bench_analyze.py --shape kv [--lines N] [--file PATH]   one log: analyze, parse_log, grep
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
OUT = REPO / "bench-out"
EXCERPT = REPO / "examples" / "article_excerpt.log"
TARGET_1M_CPU, TARGET_1M_RSS = 1.5, 400
TARGET_EXCERPT_CPU = 0.4
TARGET_PLOT_S = 5.0
LINEAR_SLACK = 2.2  # the 2M figure may be at most this many times the 1M one
SHAPES = ("cuzk", "condensed", "kv", "lines")


def generate(path: Path, lines: int, seed: int = 1) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    subprocess.run([sys.executable, str(REPO / "tools" / "gen_daemon_log.py"), "--lines", str(lines),
                    "--seed", str(seed), "--prefix", "iso", "-o", str(tmp)], check=True)
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


def log_of(name: str, lines: int, make, suffix: str = ".log") -> Path:
    """bench-out/NAME_LINES.log (or `suffix`), made once by `make(path)`."""
    path = OUT / f"{name}_{lines}{suffix}"
    if not path.exists():
        print(f"bench: generating {path} ({lines:,} lines) ...", flush=True)
        make(path)
    return path


PURE = False  # --pure: the children run the Python path


def env() -> dict:
    e = dict(os.environ)
    e.pop("PYTHONDONTWRITEBYTECODE", None)  # cached bytecode, as after an install
    e.pop("GPUSCOPE_PURE_SCANNER", None)
    if PURE:
        e["GPUSCOPE_PURE_SCANNER"] = "1"
    return e


def run_once(cmd: list[str]) -> dict:
    """One run: wall s, CPU s (user + system, with children), peak RSS MB, exit code, stderr."""
    t0 = time.perf_counter()
    # stdout to a pipe, not /dev/null: GNU grep stops at the first match when it sees /dev/null
    with tempfile.TemporaryFile() as errf:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=errf, cwd=REPO, env=env())
        while proc.stdout.read(1 << 20):
            pass
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        proc.stdout.close()
        errf.seek(0)
        err = errf.read().decode(errors="replace")
    code = os.waitstatus_to_exitcode(status)
    if code not in (0, 1) or (code == 1 and "grep" not in cmd[0]):
        sys.stderr.write(f"bench: {' '.join(cmd[:3])} ... exited {code}: {err.strip()[-300:]}\n")
    return {"wall": wall, "cpu": usage.ru_utime + usage.ru_stime, "rss": usage.ru_maxrss / 1024.0, "code": code,
            "err": err}


def bench(cmd: list[str], runs: int) -> dict:
    rs = [run_once(cmd) for _ in range(runs)]
    med = lambda k: statistics.median(r[k] for r in rs)  # noqa: E731
    return {"wall": med("wall"), "cpu": med("cpu"), "rss": max(r["rss"] for r in rs),
            "ok": all(r["code"] == 0 for r in rs), "err": rs[-1]["err"], "runs": runs}


TREE: Path | None = None  # --tree: run another source checkout's gpuscope (before/after figures)
# that checkout's gpuscope, not this venv's editable one (its import mapping is dropped)
RUNNER = ("import sys; sys.meta_path[:] = [f for f in sys.meta_path if 'editable' not in "
          "(getattr(f, '__module__', '') + getattr(f, '__name__', '') + type(f).__name__).lower()]; "
          "sys.path.insert(0, sys.argv.pop(1)); from gpuscope.cli import main; sys.argv[0] = 'gpuscope'; main()")


def gpuscope(*args: str) -> list[str]:
    if TREE is not None:
        return [sys.executable, "-c", RUNNER, str(TREE), *args]
    exe = Path(sys.executable).parent / "gpuscope"
    base = [str(exe)] if exe.exists() else [sys.executable, "-m", "gpuscope"]
    return [*base, *args]


def scanner() -> str:
    if TREE is not None:
        return f"{TREE.name}'s own"
    code = ("from gpuscope.parsers.log import scan; from gpuscope.analysis import groupstats; "
            "print('compiled' if scan.compiled_scanner() else 'python', "
            "'C' if groupstats._native() else 'pandas')")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env(), cwd=REPO)
    return p.stdout.strip() or "?"


def fig(r: dict, rss: bool = True) -> str:
    return f"{r['cpu']:.2f} CPU-s, " + (f"{r['rss']:.0f} MB, " if rss else "") + f"{r['wall']:.2f} s wall"


def targets(runs: int, shapes: bool) -> int:
    m1 = log_of("daemon", 1_000_000, lambda p: generate(p, 1_000_000, 1))
    m2 = log_of("daemon", 2_000_000, lambda p: generate(p, 2_000_000, 2))
    sc, stats = (scanner().split() + ["?", "?"])[:2] if TREE is None else (scanner(), "its own way")
    print(f"bench: {os.cpu_count()} CPUs, {sc} scanner, statistics in {stats}; median of {runs} "
          "(CPU seconds are the stable figure on a shared machine)"
          + (f"; gpuscope of {TREE}" if TREE else ""), flush=True)
    run_once(gpuscope("analyze", str(EXCERPT), "--json"))  # warm-up: bytecode cached
    out = tempfile.mkdtemp(prefix="gpuscope-bench-")
    rows = []
    a1 = bench(gpuscope("analyze", str(m1), "--json"), runs)
    ok1 = a1["cpu"] <= TARGET_1M_CPU and a1["rss"] <= TARGET_1M_RSS and a1["ok"]
    rows.append((f"analyze --json, 1M-line daemon log ({m1.stat().st_size / 1e6:.0f} MB)", fig(a1),
                 f"<= {TARGET_1M_CPU} CPU-s, <= {TARGET_1M_RSS} MB", ok1))
    ex = bench(gpuscope("analyze", str(EXCERPT)), max(runs, 5))
    rows.append(("analyze, the article's 12-line excerpt", fig(ex), f"<= {TARGET_EXCERPT_CPU} CPU-s",
                 ex["cpu"] <= TARGET_EXCERPT_CPU and ex["ok"]))
    a2 = bench(gpuscope("analyze", str(m2), "--json"), runs)
    progress = any(f"gpuscope: {w} " in a2["err"] for w in ("reading", "analyzing"))
    ratio = a2["cpu"] / a1["cpu"] if a1["cpu"] else float("nan")
    rows.append((f"analyze --json, 2M-line daemon log ({m2.stat().st_size / 1e6:.0f} MB)",
                 fig(a2) + f"; {ratio:.2f}x the 1M CPU-s; progress on stderr: {'yes' if progress else 'no'}",
                 f"linear (<= {LINEAR_SLACK}x), progress", ratio <= LINEAR_SLACK and progress and a2["ok"]))
    png = str(Path(out) / "timeline.png")
    pl = bench(gpuscope("plot", str(m2), "-o", png), runs)
    rows.append(("plot, 2M-line daemon log", fig(pl), f"<= {TARGET_PLOT_S:.0f} s, lanes aggregated",
                 pl["wall"] <= TARGET_PLOT_S and pl["ok"]))
    w = max(len(r[0]) for r in rows)
    print(f"\n{'work':<{w}}  {'figure':<58}  {'target':<30}  verdict")
    for work, figure, target, ok in rows:
        print(f"{work:<{w}}  {figure:<58}  {target:<30}  {'met' if ok else 'NOT met'}")
    print(f"(the plot: {png})")
    failed = not all(r["ok"] for r in (a1, ex, a2, pl))
    if shapes:
        print(f"\nformat shapes: analyze --json of 1,000,000-line logs, once each ({sc} scanner where "
              "the format has it; `lines` is read in Python)")
        print(f"{'shape':<10} {'MB':>6} {'CPU-s':>7} {'RSS MB':>7} {'wall s':>7} {'CPU us/line':>12}")
        for shape in SHAPES:
            name = "daemon" if shape == "cuzk" else shape
            path = m1 if shape == "cuzk" else log_of(name, 1_000_000, lambda p, s=shape: generate_shape(p, 1_000_000, s))
            r = bench(gpuscope("analyze", str(path), "--json"), 1)
            failed |= not r["ok"]
            print(f"{shape:<10} {path.stat().st_size / 1e6:6.1f} {r['cpu']:7.2f} {r['rss']:7.0f} {r['wall']:7.2f} "
                  f"{r['cpu'] * 1e6 / 1_000_000:12.2f}")
    return 1 if failed else 0


def one_log(args) -> int:
    """The single-log mode: analyze --json, parse_log alone, and grep (the floor)."""
    name = "daemon" if args.shape == "cuzk" else args.shape
    path = args.file or OUT / f"{name}_{args.lines}.log"
    if args.file is None and not path.exists():
        print(f"bench: generating {path} ({args.lines} lines) ...", flush=True)
        (generate(path, args.lines) if args.shape == "cuzk" else generate_shape(path, args.lines, args.shape))
    if not path.is_file():
        print(f"bench: {path}: no such file", file=sys.stderr)
        return 3
    with open(path, "rb") as f:
        n_lines = sum(chunk.count(b"\n") for chunk in iter(lambda: f.read(1 << 24), b""))
    size_mb = path.stat().st_size / 1e6
    print(f"bench: {path.name}: {n_lines} lines, {size_mb:.1f} MB, {os.cpu_count()} CPUs, {scanner()}, "
          f"median of {args.runs}", flush=True)
    run_once(gpuscope("analyze", str(EXCERPT), "--json"))
    parse = ("import sys; from gpuscope import parsers; p = parsers.parse_log(sys.argv[1]); "
             "print(p.count('records'), p.count('components'))")
    results = [("gpuscope analyze --json", bench(gpuscope("analyze", str(path), "--json"), args.runs)),
               ("parsers.parse_log", bench([sys.executable, "-c", parse, str(path)], args.runs))]
    grep = shutil.which("grep")
    if grep:
        word = "CUZK" if args.shape == "cuzk" else "ms"
        results.append((f"grep -c {word} (floor)", bench([grep, "-c", word, str(path)], args.runs)))
    print(f"{'command':<26} {'CPU s':>7} {'wall s':>7} {'lines/s':>12} {'MB/s':>8} {'peak RSS MB':>12}")
    for name, r in results:
        print(f"{name:<26} {r['cpu']:7.3f} {r['wall']:7.3f} {n_lines / r['wall']:12,.0f} {size_mb / r['wall']:8.1f} "
              f"{r['rss']:12.0f}" + ("" if r["ok"] or "grep" in name else "  FAILED"))
    return 0 if all(r["ok"] for n, r in results if "grep" not in n) else 1


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--no-shapes", action="store_true", help="skip the format shapes table")
    ap.add_argument("--shape", choices=SHAPES, default=None, help="time one generated log of this shape")
    ap.add_argument("--lines", type=int, default=1_000_000, help="lines of that log (with --shape)")
    ap.add_argument("--file", type=Path, default=None, help="time this log instead (single-log mode)")
    ap.add_argument("--pure", action="store_true", help="GPUSCOPE_PURE_SCANNER=1: the Python path")
    ap.add_argument("--tree", type=Path, default=None,
                    help="time the gpuscope of another source checkout (e.g. a `git archive` of an older commit)")
    args = ap.parse_args(argv)
    global PURE, TREE
    PURE = args.pure
    TREE = args.tree.resolve() if args.tree else None
    if args.shape is not None or args.file is not None:
        args.shape = args.shape or "cuzk"
        return one_log(args)
    return targets(args.runs, not args.no_shapes)


if __name__ == "__main__":
    sys.exit(main())

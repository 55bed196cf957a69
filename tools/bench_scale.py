#!/usr/bin/env python3
"""`make bench`, second part: issue 21's table, every source and verb at 10^5, 10^6 and 4x10^6
lines or rows, each beside its target, with the growth between sizes.

Generated once under bench-out/ (seeded): ProgressMeter lines (the PyTorch examples' shape),
`data: 1.2ms compute: 3.4ms` lines, `k=v` lines with units, JSON dict lines, a samples.csv (one
GPU, 50 Hz, gpuscope's columns; also drawn by `plot`, and a samples.csv naming 1,000 GPU
indices); `draw`: plot, export --perfetto and analyze --html of the 1M-line kvunits log and the
1M-row samples file, each against the analyze of the same input (issue 31); and for compare two 1M-line CuZK daemon logs (tools/
gen_daemon_log.py) and two 1M-line `k=v` logs. Each command runs as a fresh process (CPU
seconds = user + system with children; peak RSS), as in tools/bench_analyze.py: once, but
the commands judged against a target `--runs` times (default 3), their median CPU seconds
and largest peak shown (one run of the same command moves by 10-20% on a shared 2-core VM).

    python tools/bench_scale.py [--sizes 100000,1000000,4000000] [--only progressmeter,samples] [--runs 3]
                                [--tree OTHER_CHECKOUT] [--generate]

`--tree` times another checkout's gpuscope on the same inputs (tools/bench_analyze.py's runner: a
before/after pair on one machine); `--generate` makes the inputs of --only/--sizes and exits, so
that two benches can then run side by side without both writing them.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_analyze  # noqa: E402
from bench_analyze import bench, generate, gpuscope, log_of  # noqa: E402

# issue 21's targets: (CPU-s, MB) at 1,000,000 lines/rows; samples at 4,000,000 rows
LOG_TARGET = (1.5, 400)
SAMPLES_TARGET_4M = (4.0, 600)
COMPARE_SLACK = 3.0  # compare of two 1M-line logs: at most this many times one analyze


def _stamp(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def write_lines(path: Path, n: int, shape: str, seed: int = 21) -> None:
    rng = random.Random(seed)
    t = datetime(2026, 11, 30, 14, 0, 0, tzinfo=UTC)
    tmp = path.with_suffix(".tmp")
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(tmp, "w") as f:
        for i in range(n):
            t += timedelta(milliseconds=rng.uniform(20, 60))
            data, comp = rng.uniform(0.001, 0.2), rng.uniform(0.02, 0.05)
            if shape == "progressmeter":
                line = (f"Epoch: [{i // 5000}][{i % 5000:4d}/5000]\tTime {data + comp:6.3f} ({data + comp:6.3f})\t"
                        f"Data {data:6.3f} ({data:6.3f})\tLoss 6.9e+00 (6.9e+00)\tAcc@1   0.00 (  0.10)")
            elif shape == "datacompute":
                line = f"{_stamp(t)} [epoch 0] step {i} data: {data * 1e3:.1f}ms compute: {comp * 1e3:.1f}ms"
            elif shape == "kvunits":
                line = f"{_stamp(t)} INFO step={i} upload={data * 1e3:.2f}ms kernel={comp * 1e3:.2f}ms total={(data + comp) * 1e3:.2f}ms"
            elif shape == "jsonl":
                line = json.dumps({"step": i, "data_ms": round(data * 1e3, 2), "compute_ms": round(comp * 1e3, 2),
                                   "step_ms": round((data + comp) * 1e3, 2), "loss": 6.9})
            else:
                raise ValueError(shape)
            f.write(line + "\n")
    tmp.replace(path)


def write_samples(path: Path, n: int) -> None:
    from gpuscope.schemas import SAMPLE_COLUMNS

    rng = random.Random(21)
    t0 = 1796047200.0
    tmp = path.with_suffix(".tmp")
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(tmp, "w") as f:
        f.write(",".join(SAMPLE_COLUMNS) + "\n")
        busy = False
        for i in range(n):
            if i % 50 == 0:
                busy = rng.random() < 0.6
            row = {"t_wall": f"{t0 + i * 0.02:.3f}", "t_mono": f"{i * 0.02:.6f}", "gpu": "0",
                   "rx_gbs": f"{rng.uniform(0, 9) if busy else 0.001:.6f}", "tx_gbs": "0.002000",
                   "pcie_source": "counter", "wrap_suspect": "0"}
            if i % 5 == 0:
                row.update(sm_active=f"{rng.uniform(0.6, 0.95) if busy else 0.0:.6f}", sm_occupancy="0.3",
                           dram_active="0.2", power_w="350.5", sm_clock_mhz="1980", gpu_util_pct="100" if busy else "0")
            f.write(",".join(row.get(c, "") for c in SAMPLE_COLUMNS) + "\n")
    tmp.replace(path)


# samples beyond analyze --json: `plot` of each samples.csv (the picture decimated to its pixel
# columns), and a samples.csv naming a new GPU index on every row (issue 22: analyze and plot in
# time proportional to the rows, not the GPUs); per row, against the analyze target's 1 us/row
SAMPLES_PER_ROW_US = SAMPLES_TARGET_4M[0] / 4_000_000 * 1e6
MANY_GPUS_ROWS = 40_000


def write_many_gpus(path: Path, n: int) -> None:
    """n rows at 50 Hz, each with the next of 1,000 GPU indices (a merge of hosts, or damage)."""
    rng = random.Random(22)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    with open(tmp, "w") as f:
        f.write("t_wall,t_mono,gpu,rx_gbs,tx_gbs,sm_active,pcie_source,wrap_suspect\n")
        for i in range(n):
            f.write(f"{1796047200 + i * 0.02:.3f},{i * 0.02:.3f},{i % 1000},{rng.uniform(0, 5):.3f},0.01,"
                    f"{rng.random():.3f},counter,0\n")
    tmp.replace(path)


def samples_extras(sizes: list[int], rows: list[tuple[str, str, str, str]]) -> bool:
    """The samples rows beyond analyze --json (see SAMPLES_PER_ROW_US): True when one failed."""
    import tempfile

    failed = False
    with tempfile.TemporaryDirectory() as tmp:
        for n in sizes:
            path = ensure("samples", n, lambda p, n=n: write_samples(p, n))
            r = bench(gpuscope("plot", str(path), "-o", str(Path(tmp) / "s.png")), 1)
            failed |= not r["ok"]
            rows.append((f"plot samples, {n:,} rows", f"{r['cpu']:.2f} CPU-s, {r['rss']:.0f} MB, "
                         f"{r['cpu'] / n * 1e6:.2f} us/row", "bounded picture", "" if r["ok"] else "FAILED"))
        path = log_of("scale_samples_many_gpus", MANY_GPUS_ROWS, lambda p: write_many_gpus(p, MANY_GPUS_ROWS), ".csv")
        for verb, args in (("analyze --json", ["analyze", str(path), "--json"]),
                           ("plot", ["plot", str(path), "-o", str(Path(tmp) / "g.png")])):
            r = bench(gpuscope(*args), 1)
            failed |= not r["ok"]
            per_row = r["cpu"] / MANY_GPUS_ROWS * 1e6
            rows.append((f"{verb} of {MANY_GPUS_ROWS:,} rows naming 1,000 GPUs", f"{r['cpu']:.2f} CPU-s, "
                         f"{r['rss']:.0f} MB, {per_row:.0f} us/row", "in proportion to the rows",
                         "FAILED" if not r["ok"] else ""))
    return failed


# issue 31: the verbs that draw from what analyze reads (plot, export --perfetto, analyze --html)
# of a 10^6-line log and a 10^6-row samples file, each beside the analyze --json of the same input
DRAW_SLACK, DRAW_MB = 2.0, 600
DRAW_N = 1_000_000


def draw_rows(judged: int, rows: list[tuple[str, str, str, str]]) -> bool:
    """plot / export --perfetto / analyze --html of the 1M-line kvunits log and the 1M-row
    samples file, each with its ratio to that input's analyze --json: True when one failed."""
    import tempfile

    failed = False
    inputs = (("1M-line kvunits log", ensure("kvunits", DRAW_N, lambda p: write_lines(p, DRAW_N, "kvunits"))),
              ("1M-row samples file", ensure("samples", DRAW_N, lambda p: write_samples(p, DRAW_N))))
    with tempfile.TemporaryDirectory() as tmp:
        for name, path in inputs:
            base = bench(gpuscope("analyze", str(path), "--json"), judged)
            failed |= not base["ok"]
            for verb, args in (("plot", ["plot", str(path), "-o", str(Path(tmp) / "t.png")]),
                               ("export --perfetto", ["export", str(path), "--perfetto", str(Path(tmp) / "t.json")]),
                               ("analyze --html", ["analyze", str(path), "--html", str(Path(tmp) / "t.html")])):
                r = bench(gpuscope(*args), judged)
                failed |= not r["ok"]
                ratio = r["cpu"] / base["cpu"] if base["cpu"] else float("nan")
                met = r["ok"] and ratio <= DRAW_SLACK and r["rss"] <= DRAW_MB
                rows.append((f"{verb} of the {name}", f"{r['cpu']:.2f} CPU-s, {r['rss']:.0f} MB; {ratio:.1f}x its "
                             f"analyze ({base['cpu']:.2f})" + (f"; medians of {judged}" if judged > 1 else ""),
                             f"<= {DRAW_SLACK:.0f}x analyze, <= {DRAW_MB} MB",
                             "FAILED" if not r["ok"] else ("met" if met else "NOT met")))
    return failed


def ensure(name: str, n: int, make) -> Path:
    return log_of(f"scale_{name}", n, make, ".csv" if name == "samples" else ".log")


def generate_inputs(sizes: list[int], only: set[str]) -> None:
    """Every input the rows of `only` at `sizes` read, made once (what the rows would make)."""
    for shape in ("progressmeter", "datacompute", "kvunits", "jsonl"):
        if shape in only:
            for n in sizes:
                ensure(shape, n, lambda p, n=n, s=shape: write_lines(p, n, s))
    if "samples" in only or "draw" in only:
        for n in sizes if "samples" in only else [DRAW_N]:
            ensure("samples", n, lambda p, n=n: write_samples(p, n))
    if "samples" in only:
        log_of("scale_samples_many_gpus", MANY_GPUS_ROWS, lambda p: write_many_gpus(p, MANY_GPUS_ROWS), ".csv")
    if "draw" in only:
        ensure("kvunits", DRAW_N, lambda p: write_lines(p, DRAW_N, "kvunits"))
    if "compare" in only:
        for seed in (1, 2):
            ensure(f"daemon_seed{seed}", 1_000_000, lambda p, s=seed: generate(p, 1_000_000, s))
            ensure(f"kvunits_seed{seed}", 1_000_000, lambda p, s=seed: write_lines(p, 1_000_000, "kvunits", s))


def row(label: str, r: dict, target: tuple[float, float] | None) -> tuple[str, str, str, str]:
    fig = f"{r['cpu']:.2f} CPU-s, {r['rss']:.0f} MB" + (f" (median of {r['runs']})" if r.get("runs", 1) > 1 else "")
    if not r["ok"]:
        return label, fig, "-", "FAILED"
    if target is None:
        return label, fig, "-", ""
    met = r["cpu"] <= target[0] and r["rss"] <= target[1]
    return label, fig, f"<= {target[0]} CPU-s, <= {target[1]} MB", "met" if met else "NOT met"


def _size(n: int) -> str:
    return {100_000: "10^5", 1_000_000: "10^6", 4_000_000: "4x10^6"}.get(n, f"{n:,}")


def growth_row(shape: str, seen: list[tuple[int, dict]], target: tuple[float, float]) -> tuple[str, str, str, str]:
    """One line per input: its CPU seconds at each size with the growth from the size before
    (linear work grows as the size: 10x, then 4x), beside the target."""
    parts, prev = [], None
    for n, r in seen:
        g = f" ({r['cpu'] / prev[1]['cpu']:.1f}x for {n / prev[0]:.0f}x)" if prev and prev[1]["cpu"] else ""
        parts.append(f"{_size(n)} {r['cpu']:.2f}{g}")
        prev = (n, r)
    at = 4_000_000 if shape == "samples" else 1_000_000
    hit = [r for n, r in seen if n == at]
    verdict = "" if not hit else ("met" if hit[0]["ok"] and hit[0]["cpu"] <= target[0] and hit[0]["rss"] <= target[1]
                                  else "NOT met")
    return f"growth of {shape}", " / ".join(parts) + " CPU-s", f"{_size(at)} <= {target[0]} CPU-s, {target[1]} MB", verdict


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="100000,1000000,4000000")
    ap.add_argument("--only", default="progressmeter,datacompute,kvunits,jsonl,samples,compare,draw")
    ap.add_argument("--runs", type=int, default=3, help="runs of each command judged against a target (median)")
    ap.add_argument("--tree", type=Path, default=None, help="time this other checkout's gpuscope (before/after)")
    ap.add_argument("--generate", action="store_true", help="make the inputs only, then exit")
    args = ap.parse_args(argv)
    if args.tree is not None:
        bench_analyze.TREE = args.tree.resolve()
    judged = max(1, args.runs)
    sizes = [int(s) for s in args.sizes.split(",") if s]
    only = set(args.only.split(","))
    if args.generate:
        generate_inputs(sizes, only)
        return 0
    rows: list[tuple[str, str, str, str]] = []
    failed = False
    if "samples" in only:  # (plot, and a file of many GPU indices: samples_extras)
        failed |= samples_extras(sizes, rows)
    for shape in ("progressmeter", "datacompute", "kvunits", "jsonl", "samples"):
        if shape not in only:
            continue
        prev = None
        seen: list[tuple[int, dict]] = []
        for n in sizes:
            if shape == "samples":
                path = ensure("samples", n, lambda p, n=n: write_samples(p, n))
                target = SAMPLES_TARGET_4M if n == 4_000_000 else None
                r = bench(gpuscope("analyze", str(path), "--json"), judged if target else 1)
            else:
                path = ensure(shape, n, lambda p, n=n, s=shape: write_lines(p, n, s))
                target = LOG_TARGET if n == 1_000_000 else None
                r = bench(gpuscope("analyze", str(path), "--json"), judged if target else 1)
            failed |= not r["ok"]
            growth = f" ({r['cpu'] / prev:.1f}x the previous size)" if prev else ""
            label, fig, tgt, verdict = row(f"analyze {shape}, {n:,} {'rows' if shape == 'samples' else 'lines'}", r, target)
            rows.append((label, fig + growth, tgt, verdict))
            prev = r["cpu"] or None
            seen.append((n, r))
        if len(seen) > 1:
            rows.append(growth_row(shape, seen, SAMPLES_TARGET_4M if shape == "samples" else LOG_TARGET))
    if "compare" in only:
        for kind in ("cuzk", "kvunits"):
            paths = []
            for seed in (1, 2):
                if kind == "cuzk":
                    paths.append(ensure(f"daemon_seed{seed}", 1_000_000, lambda p, s=seed: generate(p, 1_000_000, s)))
                else:
                    p = ensure(f"kvunits_seed{seed}", 1_000_000, lambda p, s=seed: write_lines(p, 1_000_000, "kvunits", s))
                    paths.append(p)
            one = bench(gpuscope("analyze", str(paths[0]), "--json"), judged)
            cmp = bench(gpuscope("compare", str(paths[0]), str(paths[1]), "--json"), judged)
            failed |= not (one["ok"] and cmp["ok"])
            ratio = cmp["cpu"] / one["cpu"] if one["cpu"] else float("nan")
            ok = cmp["ok"] and ratio <= COMPARE_SLACK
            rows.append((f"compare of two 1M-line {kind} logs", f"{cmp['cpu']:.2f} CPU-s, {cmp['rss']:.0f} MB; "
                         + (f"medians of {judged}; " if judged > 1 else "")
                         + f"{ratio:.1f}x one analyze ({one['cpu']:.2f})", f"<= {COMPARE_SLACK:.0f}x one analyze",
                         "met" if ok else "NOT met"))
    if "draw" in only:
        failed |= draw_rows(judged, rows)
    w = max(len(r[0]) for r in rows) if rows else 10
    print(f"\n{'work':<{w}}  {'figure':<52}  {'target':<26}  verdict")  # (growth rows: every size of one input)
    for label, fig, tgt, verdict in rows:
        print(f"{label:<{w}}  {fig:<52}  {tgt:<26}  {verdict}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

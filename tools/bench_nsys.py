#!/usr/bin/env python3
"""`make bench`: an Nsight Systems SQLite export at scale (issue 32's scale row).

Makes $TMPDIR/gpuscope-bench-nsys/nsys_<N>_v2.sqlite once (outside the checkout) by replicating a
real export's rows (same schema: the source file copied, then its kernels, copies, memsets, runtime calls and NVTX ranges inserted
again FACTOR times, copy after copy, each shifted past the previous one in time and in
correlationId, so launches still join their GPU work and rows come in time order as a longer
capture's do), then times, each in a fresh process:

    sqlite3 scan    what sqlite3 itself takes to scan those tables (count and sums of the
                    columns the reader reads), the floor the reader is held to (<= 10x)
    read            parsers.trace.nsys_sqlite.read_nsys_sqlite
    read+analyze    + analysis.trace_analysis.analyze_trace + to_json

and prints wall seconds, CPU seconds and peak RSS for each. Where the sqlite3 command-line tool
and GNU time are on the PATH, `sqlite3 CLI` is the same scan by the sqlite3 program itself under
`/usr/bin/time -v` (its CPU = user + sys, its peak = maximum resident set size), the floor the
ratio is taken against; else the stdlib driver's scan is. `--repeat N` runs the steps N times,
interleaved (scan, read, ..., scan, read, ...: on a shared machine the load then falls on both
alike), and prints the median of each figure. The source is one of the real exports of
../shared/data/nsight/ (never copied into the project); without it the bench says so and exits 0.

    python tools/bench_nsys.py [--kernels 1000000] [--repeat 1] [--no-analyze] [--source PATH] [--out DIR]
    make bench NSYS_KERNELS=100000    (the scale flag: `make bench` reads 1,000,000 kernels)
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SOURCE = REPO.parent / "shared" / "data" / "nsight" / "h100_2gpu_1s.sqlite"
LAYOUT = "v2"  # the replicated file's row layout (v2: copy after copy; in its name, so an older file is not reused)
TABLES = ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET",
          "CUPTI_ACTIVITY_KIND_RUNTIME", "NVTX_EVENTS")

WORKER = r"""
import json, resource, sqlite3, sys, time
which, path = sys.argv[1], sys.argv[2]
c_import = time.process_time()
if which != "sqlite3 scan":  # the imports (pandas, numpy: ~1 s) before the clock: a fixed cost, not the scale's
    from gpuscope.parsers.trace.nsys_sqlite import read_nsys_sqlite
t0, c0 = time.perf_counter(), time.process_time()
out = {"import_cpu_s": c0 - c_import}
if which == "sqlite3 scan":
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    for t, cols in json.loads(sys.argv[3]).items():
        out[t] = con.execute(f"SELECT count(*), {', '.join(f'total({c})' for c in cols)} FROM {t}").fetchone()[0]
else:
    fr = read_nsys_sqlite(path)
    out.update(read_s=time.perf_counter() - t0, kernels=fr.counts["kernel"], copies=fr.counts["memcpy"])
    if which == "read+analyze":
        from gpuscope.analysis.trace_analysis import analyze_trace
        from gpuscope.analysis.document import trace_doc
        t1 = time.perf_counter()
        a = analyze_trace(fr, line_rate_gbs=50.0, line_rate_source="option")
        json.dumps(trace_doc(a))
        out.update(analyze_s=time.perf_counter() - t1, diagnoses=[d.id for d in a.findings])
out.update(wall_s=time.perf_counter() - t0, cpu_s=time.process_time() - c0,
           peak_mib=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
print(json.dumps(out))
"""

# the columns the reader reads of each table (what the scan sums)
SCAN = {
    "CUPTI_ACTIVITY_KIND_KERNEL": ["start", '"end"', "deviceId", "streamId", "correlationId", "globalPid",
                                   "demangledName", "shortName"],
    "CUPTI_ACTIVITY_KIND_MEMCPY": ["start", '"end"', "deviceId", "streamId", "correlationId", "globalPid", "bytes",
                                   "copyKind", "srcKind", "dstKind"],
    "CUPTI_ACTIVITY_KIND_MEMSET": ["start", '"end"', "deviceId", "streamId", "correlationId", "globalPid", "bytes",
                                   "memKind"],
    "CUPTI_ACTIVITY_KIND_RUNTIME": ["start", '"end"', "globalTid", "correlationId", "nameId"],
    "NVTX_EVENTS": ["start", '"end"', "globalTid", "textId", "eventType"],
}


def make(source: Path, out: Path, factor: int) -> None:
    """Copy the source, then insert its event rows `factor` more times, shifted."""
    tmp = out.with_suffix(".part")
    shutil.copyfile(source, tmp)
    con = sqlite3.connect(tmp)
    lo, hi = con.execute("SELECT min(start), max(\"end\") FROM CUPTI_ACTIVITY_KIND_RUNTIME").fetchone()
    span = int(hi - lo) + 1_000_000
    corr = int(con.execute("SELECT max(correlationId) FROM CUPTI_ACTIVITY_KIND_RUNTIME").fetchone()[0]) + 1
    con.execute(f"CREATE TEMP TABLE k AS WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r "
                f"WHERE i < {factor}) SELECT i FROM r")
    for t in TABLES:
        cols = [r[1] for r in con.execute(f"PRAGMA table_info({t})")]
        shifted = []
        for c in cols:
            if c in ("start", "end"):
                shifted.append(f'"{c}" + k.i * {span}')
            elif c == "correlationId":
                shifted.append(f"correlationId + k.i * {corr}")
            else:
                shifted.append(f'"{c}"')
        names = ", ".join(f'"{c}"' for c in cols)
        # copy after copy, each in the source's row order: rows in time order, as a longer capture's
        # come (the first form, o x k, put each source row's copies next to one another, so that
        # every 65,536 rowids spanned the whole capture)
        con.execute(f"INSERT INTO {t} ({names}) SELECT {', '.join(shifted)} FROM k, {t} AS o "
                    f"WHERE o.rowid <= (SELECT max(rowid) FROM {t}) ORDER BY k.i, o.rowid")
        con.commit()
    con.execute("VACUUM")
    con.close()
    tmp.replace(out)


def _cli_scan(path: Path) -> dict | None:
    """The scan by the sqlite3 program under GNU time -v: None where either is missing."""
    sqlite, gtime = shutil.which("sqlite3"), Path("/usr/bin/time")
    if sqlite is None or not gtime.is_file():
        return None
    sql = "".join(f"SELECT count(*), {', '.join(f'total({c})' for c in cols)} FROM {t};\n" for t, cols in SCAN.items())
    t0 = time.perf_counter()
    p = subprocess.run([str(gtime), "-v", sqlite, f"file:{path}?mode=ro", sql], capture_output=True, text=True,
                       check=False)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        raise SystemExit(f"sqlite3 CLI scan failed: {p.stderr.strip().splitlines()[-1:]}")
    got = {k.strip(): v.strip() for k, _, v in (ln.partition(": ") for ln in p.stderr.splitlines())}
    cpu = float(got["User time (seconds)"]) + float(got["System time (seconds)"])
    return {"wall_s": wall, "cpu_s": cpu, "peak_mib": int(got["Maximum resident set size (kbytes)"]) / 1024}


def run(which: str, path: Path) -> dict:
    if which == "sqlite3 CLI":
        got = _cli_scan(path)
        assert got is not None
        return got
    args = [sys.executable, "-c", WORKER, which, str(path)]
    if which == "sqlite3 scan":
        args.append(json.dumps(SCAN))
    p = subprocess.run(args, capture_output=True, text=True, cwd=REPO, check=False)
    if p.returncode != 0:
        raise SystemExit(f"{which} failed: {p.stderr.strip().splitlines()[-1:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def _medians(runs: list[dict]) -> dict:
    """Each number's median over the runs (the rest: the last run's)."""
    out = dict(runs[-1])
    for k, v in runs[-1].items():
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            out[k] = statistics.median(r[k] for r in runs)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kernels", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=1, help="runs of each step, interleaved; medians printed")
    ap.add_argument("--no-analyze", action="store_true", help="time the read alone (not read+analyze)")
    ap.add_argument("--source", type=Path, default=SOURCE)
    ap.add_argument("--out", type=Path, default=Path(tempfile.gettempdir()) / "gpuscope-bench-nsys")
    a = ap.parse_args(argv)
    if not a.source.is_file():
        print(f"bench_nsys: no source export at {a.source} (the real exports live in ../shared/data/nsight/): "
              "skipped")
        return 0
    con = sqlite3.connect(f"file:{a.source}?mode=ro", uri=True)
    (n0,) = con.execute("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()
    con.close()
    factor = max(0, math.ceil(a.kernels / n0) - 1)
    a.out.mkdir(parents=True, exist_ok=True)
    big = a.out / f"nsys_{a.kernels}_{LAYOUT}.sqlite"
    if not big.is_file():
        t = time.perf_counter()
        make(a.source, big, factor)
        print(f"made {big} ({big.stat().st_size / 2**20:.0f} MiB, {factor + 1} x {a.source.name}) "
              f"in {time.perf_counter() - t:.1f} s")
    steps = (["sqlite3 CLI"] if shutil.which("sqlite3") and Path("/usr/bin/time").is_file() else []) + \
        ["sqlite3 scan", "read"]
    steps += [] if a.no_analyze else ["read+analyze"]
    runs: dict[str, list[dict]] = {w: [] for w in steps}
    for _ in range(max(1, a.repeat)):
        for w in steps:
            runs[w].append(run(w, big))
    rows = {w: _medians(r) for w, r in runs.items()}
    con = sqlite3.connect(f"file:{big}?mode=ro", uri=True)
    counts = {t: con.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in TABLES}
    con.close()
    print("rows: " + ", ".join(f"{t.removeprefix('CUPTI_ACTIVITY_KIND_').lower()} {n:,}" for t, n in counts.items()))
    # the ratio in CPU seconds: on a shared machine wall time measures the neighbours too
    floor = "sqlite3 CLI" if "sqlite3 CLI" in rows else "sqlite3 scan"
    print(f"{'step':<14} {'wall s':>8} {'cpu s':>8} {'peak MiB':>9}  x {floor} (cpu)   "
          f"[median of {max(1, a.repeat)}, interleaved]")
    scan = rows[floor]["cpu_s"]
    for w, r in rows.items():
        print(f"{w:<14} {r['wall_s']:>8.2f} {r['cpu_s']:>8.2f} {r['peak_mib']:>9.0f}  {r['cpu_s'] / scan:>5.1f}")
    if "read+analyze" in rows:
        extra = rows["read+analyze"]
        print(f"read {extra['read_s']:.2f} s + analyze {extra['analyze_s']:.2f} s; diagnoses: {extra['diagnoses']}")
    print(f"imports before the clock: {rows['read']['import_cpu_s']:.2f} s CPU")
    return 0


if __name__ == "__main__":
    sys.exit(main())

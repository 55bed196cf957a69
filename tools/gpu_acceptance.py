"""The acceptance table of issues 11 and 12 over a capture folder of tools/gpu_capture_foreign.sh:
for each program, what gpuscope ranks first and the numbers to check it by.

    python3 tools/gpu_acceptance.py CAPTURE_DIR [--json OUT.json]

Checks (printed as ok / FAIL): the expected cause ranks first; no pinning advice on pinned runs;
the upload rate gpuscope reports is within 10% of the program's own bytes/time; the trace's
memcpy rows match what the program copied (count and bytes exactly, rate within 5% of the
trace's own per-event figures); printf lines are stamped within 50 ms of when they were printed.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from datetime import datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gpuscope.analysis import analyze  # noqa: E402
from gpuscope.sources import open_source  # noqa: E402

# program -> the diagnosis ids any of which is the right first cause
EXPECTED = {
    "copy_pageable": {"h2d_bound", "pcie_underused", "upload_bound_pageable"},
    "copy_pinned": None,  # no pinning advice; any first cause
    "train_slow": {"host_stall", "cpu_stall_at_barrier", "gpu_starved"},
    "train_fast": None,
    "launch_bound": {"gpu_starved", "launch_bound"},
    "sync_bound": {"gpu_starved", "sync_bound"},
    "printf_pty": {"host_stall", "cpu_stall_at_barrier", "gpu_starved"},
    "printf_pipe": {"host_stall", "cpu_stall_at_barrier", "gpu_starved"},
}
TRACE_EXPECTED = {
    "copy_pageable": {"pageable_memcpy"}, "copy_pinned": None, "train_slow": {"host_starved"},
    "launch_bound": {"launch_bound"}, "sync_bound": {"sync_bound"},
}


def _pins(diags) -> bool:
    return any("pin the" in d["recommendation"].lower() or "pinned (page-locked)" in d["recommendation"].lower()
               or d["id"] in ("pageable_memcpy", "upload_bound_pageable", "pcie_underused") for d in diags)


def program_rate(log: Path) -> float | None:
    """Median of the program's own h2d_bytes / h2d_ms (GB/s) from its step lines."""
    rates = []
    for line in log.read_text(errors="replace").splitlines():
        m = re.search(r"h2d_ms=([\d.]+).*h2d_bytes=(\d+)", line)
        if m and float(m.group(1)) > 0:
            rates.append(int(m.group(2)) / (float(m.group(1)) / 1e3) / 1e9)
    return statistics.median(rates) if rates else None


def stamp_errors_ms(log: Path) -> list[float]:
    """Arrival stamp - the program's own printed_at, per line (ms)."""
    out = []
    for line in log.read_text(errors="replace").splitlines():
        m = re.match(r"(\S+Z) .*printed_at=([\d.]+)", line)
        if m:
            t = datetime.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S.%fZ").timestamp()
            t += datetime.now().astimezone().utcoffset().total_seconds()  # the stamp is UTC
            out.append((t - float(m.group(2))) * 1e3)
    return out


def _first(what: str, name: str, doc: dict, expected: dict) -> dict:
    """The row every source gets: what ranks first, and the first-cause and pinning checks."""
    diags = doc["findings"]
    row = {"what": f"{what} {name}", "first": f"{diags[0]['severity']} {diags[0]['id']}" if diags else "-",
           "checks": []}
    exp = expected.get(name)
    if exp is not None:
        row["checks"].append(("first cause", bool(diags) and diags[0]["id"] in exp))
    if "pinned" in name:
        row["checks"].append(("no pinning advice", not _pins(diags)))
    return row


def check_run(name: str, d: Path, line_rate: float | None) -> dict:
    a = analyze(open_source(d, line_rate=line_rate)).document()
    row = _first("run", name, a, EXPECTED)
    own = program_rate(d / "timing.log")
    if own:
        got = (a["log"] or {}).get("split", {}).get("upload_gbs")
        row["upload"] = f"gpuscope {got:.2f} vs program {own:.2f} GB/s" if got else f"program {own:.2f} GB/s"
        row["checks"].append(("upload rate within 10%", bool(got) and abs(got / own - 1) <= 0.10))
    if name.startswith("printf"):
        errs = stamp_errors_ms(d / "timing.log")
        if errs:
            row["stamps"] = f"stamp - printed_at: median {statistics.median(errs):.1f} ms, max {max(errs):.1f} ms"
            if name == "printf_pty":
                row["checks"].append(("printf stamped within 50 ms", max(abs(e) for e in errs) <= 50))
    act = (a["trace"]["activity"] if a["trace"] is not None
           else (a["samples"] or {}).get("activity") or {})  # (the trace's is exact: it wins)
    row["busy"] = act.get("busy_fraction")
    return row


def check_trace(name: str, f: Path, line_rate: float | None, expect_copies: tuple[int, int] | None) -> dict:
    a = analyze(open_source(f, line_rate=line_rate)).document()
    row = _first("trace", name, a, TRACE_EXPECTED)
    h2d = [m for m in (a["trace"] or {}).get("memcpy") or [] if m["direction"] == "HtoD" and m["bytes"] > 2**20]
    if expect_copies and h2d:
        m = h2d[0]
        row["memcpy"] = f"{m['count']} x HtoD {m['host_memory']}, {m['bytes']:,} B, {m['gbs']:.2f} GB/s"
        row["checks"].append(("memcpy count and bytes exact", (m["count"], m["bytes"]) == expect_copies))
        row["checks"].append(("rate within 5% of the events'", abs(m["gbs"] / m["per_event_gbs_median"] - 1) <= 0.05))
    return row


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("capture")
    ap.add_argument("--json")
    a = ap.parse_args()
    cap = Path(a.capture)
    rate = None
    bw = cap / "bandwidth.json"
    if bw.is_file():
        try:
            rate = json.loads(bw.read_text()).get("line_rate_gbs")
        except ValueError:
            rate = None
    rows = []
    for d in sorted((cap / "runs").iterdir()):
        if d.is_dir():
            rows.append(check_run(d.name, d, rate))
    copies = (12, 12 * 512 * 2**20)  # copy_loop.py: 4 traced steps x 3 tensors of 512 MiB
    for f in sorted((cap / "traces").glob("*.json*")):
        name = f.name.split(".")[0]
        rows.append(check_trace(name, f, rate, copies if name.startswith("copy") else None))
    for tb in (cap / "traces").glob("*_tb"):
        rows.append(check_trace(tb.name, tb, rate, None))
    fails = 0
    for r in rows:
        checks = " ".join(f"[{'ok' if ok else 'FAIL'}: {what}]" for what, ok in r["checks"])
        fails += sum(1 for _, ok in r["checks"] if not ok)
        extra = "; ".join(str(r[k]) for k in ("upload", "memcpy", "stamps") if k in r)
        print(f"{r['what']:<24} first {r['first']:<32} {checks} {extra}")
    print(f"{fails} check(s) failed of {sum(len(r['checks']) for r in rows)}")
    if a.json:
        Path(a.json).write_text(json.dumps(rows, indent=1, default=str))
    return 1 if fails else 0


if __name__ == "__main__":
    raise SystemExit(main())

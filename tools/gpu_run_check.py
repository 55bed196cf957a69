"""Check and time `gpuscope run` on a GPU machine in one go (used for docs/BENCHMARKS.md "run").

    PYTHONPATH=. python3 tools/gpu_run_check.py --log-n 24 --partitions 8 --out $OUT

1. measures the pinned H2D line rate (`gpuscope bandwidth`, cached for the runs);
2. runs the pipeline in the given modes (and with --contention), each through the CLI;
3. prints one table: throughput, the upload's share of mutex_held, the upload's rate from
   the h2d_ms/h2d_bytes lines and the NVML PCIe RX during h2d spans (both vs the line rate),
   and SM activity while the mutex is held (GPM samples inside the lock-held spans);
4. packs the run directories into OUT/runs.tgz.
"""

from __future__ import annotations

import argparse
import json
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

HELD_PHASES = ("h2d", "ntt", "msm", "barrier", "batch_add", "tail_msm")


def sh(args: list[str], log: Path, slice_s: float | None = None) -> int:
    """Run a gpuscope command; past `slice_s` it gets a Ctrl-C (SIGINT): `run` then stops at
    the next phase boundary and still leaves a complete run directory (status interrupted)."""
    t0 = time.time()
    with open(log, "a") as f:
        f.write(f"\n$ gpuscope {' '.join(args)}\n")
        f.flush()
        proc = subprocess.Popen([sys.executable, "-m", "gpuscope", *args], stdout=f, stderr=f)
        try:
            rc = proc.wait(timeout=slice_s)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGINT)
            try:
                rc = proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                rc = proc.wait()
        f.write(f"[rc={rc} in {time.time() - t0:.1f} s]\n")
    return rc


def probe_register(gib: float = 2.0) -> str:
    """H2D rate from a cudaHostRegister'ed buffer alone, and while another thread registers and
    unregisters a second buffer (what a second worker does in registered mode)."""
    import threading

    from gpuscope import cuda

    cp = cuda.require("probe_register")
    rt = cp.cuda.runtime
    n = int(gib * (1 << 30))
    x = np.ones(n, np.uint8)
    y = np.ones(n, np.uint8)
    d = cp.empty(n, np.uint8)
    rt.hostRegister(x.ctypes.data, n, 0)

    def rate() -> float:
        s, e = cp.cuda.Event(), cp.cuda.Event()
        s.record()
        d.set(x)
        e.record()
        e.synchronize()
        return n / (cp.cuda.get_elapsed_time(s, e) / 1e3) / 1e9

    rate()
    alone = [rate() for _ in range(3)]
    stop = threading.Event()
    churn = [0]

    def other() -> None:
        while not stop.is_set():
            rt.hostRegister(y.ctypes.data, n, 0)
            rt.hostUnregister(y.ctypes.data)
            churn[0] += 1

    t = threading.Thread(target=other)
    t.start()
    time.sleep(0.05)
    busy = [rate() for _ in range(5)]
    stop.set()
    t.join()
    rt.hostUnregister(x.ctypes.data)
    return (f"registered H2D {gib:g} GiB: alone {np.median(alone):.1f} GB/s; while another thread "
            f"registers/unregisters {gib:g} GiB ({churn[0]} cycles): {np.median(busy):.1f} GB/s "
            f"(min {min(busy):.1f})")


def held_sm_activity(d: Path) -> tuple[float, float]:
    """Mean GPM SM activity and mean PCIe RX of samples inside lock-held spans (per GPU)."""
    s = pd.read_csv(d / "samples.csv")
    sp = pd.read_csv(d / "spans.csv")
    sp = sp[sp["phase"].isin(HELD_PHASES)]
    sm_vals, inside_any = [], np.zeros(len(s), dtype=bool)
    for g, grp in sp.groupby("gpu"):
        iv = sorted(zip(grp["t_start"], grp["t_end"], strict=True))
        merged: list[list[float]] = []
        for a, b in iv:
            if merged and a <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], b)
            else:
                merged.append([a, b])
        st = np.array([m[0] for m in merged])
        en = np.array([m[1] for m in merged])
        t = s["t_wall"].to_numpy()
        i = np.searchsorted(st, t, side="right") - 1
        ok = (i >= 0) & (s["gpu"].to_numpy() == g)
        ins = np.zeros(len(s), dtype=bool)
        ins[ok] = t[ok] < en[i[ok]]
        inside_any |= ins
        sm_vals.append(s.loc[ins, "sm_active"])
    sm = pd.concat(sm_vals) if sm_vals else pd.Series(dtype=float)
    return float(sm.mean()) if len(sm) else float("nan"), int(inside_any.sum())


def row(d: Path, label: str, rate: float | None) -> dict:
    meta = json.loads((d / "meta.json").read_text())
    p = meta.get("pipeline") or {}
    out = {"run": label, "status": meta.get("status"), "done": p.get("partitions_done"),
           "part/s": p.get("partitions_per_s"), "h2d/held": p.get("h2d_share_of_held"),
           "h2d GB/s": p.get("h2d_gbs"), "verified": p.get("verified")}
    try:
        summ = json.loads((d / "summary.json").read_text())
        ph = (summ.get("pcie") or {}).get("phases", summ.get("pcie") or {})
        h2d = ph.get("h2d") or {}
        out["RX h2d GB/s"] = h2d.get("rx_gbs_median")
        out["split h2d"] = summ["split"].get("h2d_share")
    except (OSError, ValueError, KeyError):
        pass
    try:
        out["SM held"], out["n held"] = held_sm_activity(d)
    except (OSError, ValueError, KeyError) as e:
        out["SM held"] = f"n/a ({e})"
    if rate and isinstance(out.get("h2d GB/s"), float):
        out["h2d/line"] = out["h2d GB/s"] / rate
    if rate and isinstance(out.get("RX h2d GB/s"), float):
        out["RX/line"] = out["RX h2d GB/s"] / rate
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--log-n", type=int, default=24)
    ap.add_argument("--partitions", type=int, default=8)
    ap.add_argument("--modes", default="pageable,pinned,registered")
    ap.add_argument("--contention-modes", default="pageable,pinned")
    ap.add_argument("--contention", type=int, default=8)
    ap.add_argument("--extra", default="", help="extra run options for every run, space separated")
    ap.add_argument("--variant", action="append", default=[],
                    help="LABEL:MODE:OPTIONS, an extra run (e.g. 'pinned-c24:pinned:--srs-chunk-log 24')")
    ap.add_argument("--out", required=True)
    ap.add_argument("--no-bandwidth", action="store_true")
    ap.add_argument("--probe-register", action="store_true")
    ap.add_argument("--slice-s", type=float, default=None,
                    help="Ctrl-C a run after this many seconds (it still reports what it did)")
    a = ap.parse_args()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    log = out / "gpu_run_check.log"
    runs = Path(tempfile.mkdtemp(prefix="gpuscope-runs-check-"))
    if not a.no_bandwidth:
        sh(["bandwidth", "--sizes", "512M,1536M", "--repeats", "3"], log)
    sys.path.insert(0, ".")
    from gpuscope import linerate

    rate = linerate.measured_line_rate()
    probe = probe_register() if a.probe_register else None
    plan = [(m, m, 0, "") for m in a.modes.split(",") if m]
    plan += [(f"{m}+c{a.contention}", m, a.contention, "")
             for m in a.contention_modes.split(",") if m and a.contention]
    for v in a.variant:
        label, mode, opts = v.split(":", 2)
        plan.append((label, mode, 0, opts))
    rows = []
    for label, mode, cont, opts in plan:
        d = runs / label
        args = ["run", "--mode", mode, "--log-n", str(a.log_n), "--partitions", str(a.partitions),
                "--out", str(d), "--json"] + (["--contention", str(cont)] if cont else []) \
            + a.extra.split() + opts.split()
        rc = sh(args, log, a.slice_s)
        if (d / "meta.json").exists():
            r = row(d, label, rate)
            r["rc"] = rc
            rows.append(r)
        else:
            rows.append({"run": label, "rc": rc})
    with tarfile.open(out / "runs.tgz", "w:gz") as tf:
        tf.add(runs, arcname="runs")
    df = pd.DataFrame(rows)
    df.to_csv(out / "gpu_run_check.csv", index=False)
    pd.set_option("display.width", 250)
    pd.set_option("display.max_columns", 30)
    print(f"line rate (gpuscope bandwidth, pinned H2D): {rate} GB/s")
    if probe:
        print(probe)
    print(df.to_string(index=False, float_format=lambda x: f"{x:.3f}"))
    by = {r["run"]: r for r in rows}
    for base in ("", f"+c{a.contention}"):
        pin, pag = by.get("pinned" + base, {}), by.get("pageable" + base, {})
        if pin.get("part/s") and pag.get("part/s"):
            print(f"pinned/pageable throughput{base or ''}: {pin['part/s'] / pag['part/s']:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())

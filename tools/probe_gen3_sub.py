"""The subprocess cases of tools/probe_gen3.py (issue 22): a file-size rlimit (RLIMIT_FSIZE,
the full disk a user without root can make) on every writer and on record and run, and a stop
signal at a random moment to record and run --backend cpu; run_sub runs one and checks what
its own contract says (exit 0, 4 or 6 under the limit; 128+N or 130 after a signal; meta.json
whole, never `running` after gpuscope is gone, never `complete` after a full disk)."""

from __future__ import annotations

import json
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from tools.probe_gen3 import BIN, BOUNDS, EXAMPLE, RUN, Case

if TYPE_CHECKING:
    from tools.probe_gen3 import Gen3


def case_fsize(self: Gen3) -> Case:
    how = self.pick(["html", "csv", "png", "perfetto", "record", "run"])
    if how in ("record", "run"):
        d = self.path("_fsrun")
        prog = "for i in range(3000): print(f'step={i} data_ms=1.5 total_ms=3.0')"
        argv = (["record", "--out", str(d), "--", sys.executable, "-c", prog] if how == "record" else
                ["run", "--backend", "cpu", "--partitions", "2", "--log-n", "8", "--out", str(d)])
        return Case(f"file-size limit ({how})", argv, sub=("fsize", self.pick([4096, 16384, 65536, 1 << 20]), d))
    d = self.path("_fs")
    d.mkdir()
    out = d / {"html": "r.html", "csv": "csv", "png": "r.png", "perfetto": "r.json"}[how]
    if self.r.random() < 0.4 and how != "csv":
        out.write_text("old")
    src = self.pick([[str(EXAMPLE)], [str(RUN)], [str(BOUNDS / "traces" / "hbm_bound.json.gz")]])
    argv = {"html": ["analyze", *src, "--html", str(out)], "csv": ["analyze", *src, "--csv", str(out)],
            "png": ["plot", *src, "-o", str(out)], "perfetto": ["export", *src, "--perfetto", str(out)]}[how]
    limit = self.pick([0, 1, 512, 4096, 65536, 1 << 20])
    return Case(f"file-size limit ({how})", argv, output=out if how != "csv" else None,
                sub=("fsize", limit))

def case_signal(self: Gen3) -> Case:
    d = self.path("_sig")
    which = self.pick(["record", "record", "run"])
    sig = self.pick([signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
    if which == "record":
        # a program that ends quietly on its own signals (its traceback would be its voice, not gpuscope's)
        prog = ("import time,sys,signal\nfor s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):\n"
                " signal.signal(s, lambda n, f: sys.exit(128 + n))\n"
                "for i in range(400):\n print(f'step={i} data_ms=1.5 total_ms=3.0', flush=True)\n"
                " time.sleep(0.005)\n")
        argv = ["record", "--no-summary" if self.r.random() < 0.3 else "--summary", "--out", str(d), "--",
                sys.executable, "-c", prog]
    else:
        argv = ["run", "--backend", "cpu", "--partitions", "3", "--log-n", "8", "--out", str(d)]
    return Case(f"signal {signal.Signals(sig).name} ({which})", argv, sub=("signal", sig, self.r.uniform(0.05, 2.5), d))


def run_sub(case: Case, env: dict) -> tuple[int, str, str, list[str]]:
    """Run a subprocess case; (exit code, stdout, stderr, what broke its own contract)."""
    cmd = [str(BIN), *case.argv] if BIN.exists() else [sys.executable, "-m", "gpuscope", *case.argv]
    kind = case.sub[0]
    found: list[str] = []
    if kind == "fsize":
        limit = case.sub[1]

        def pre():
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

        p = subprocess.run(cmd, capture_output=True, text=True, env=env, preexec_fn=pre, timeout=300)
        if p.returncode not in (0, 4, 6):  # 4: an input with nothing to draw says so first
            found.append(f"file-size limit {limit}: exit {p.returncode}")
        if len(case.sub) > 2:  # a run directory: complete only when it was written whole
            meta = Path(case.sub[2]) / "meta.json"
            try:
                status = json.loads(meta.read_text()).get("status") if meta.exists() else None
            except ValueError:
                status = "not whole"
            if status == "running" or status == "not whole":
                found.append(f"meta.json {status} after a full disk")
            if p.returncode == 6 and status == "complete":
                found.append("exit 6 (out of a resource) but meta.json says complete")
        return p.returncode, p.stdout, p.stderr, found
    _, sig, delay, d = case.sub
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True)
    time.sleep(delay)
    p.send_signal(sig)
    try:
        out, err = p.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
        found.append("did not end within 120 s of the signal")
    code = p.returncode
    if code not in (0, 128 + sig, 130):  # run: every stop signal is 'interrupted', 130 (docs/CLI.md)
        found.append(f"exit {code} after {signal.Signals(sig).name}")
    meta = Path(d) / "meta.json"
    if meta.exists():
        try:
            m = json.loads(meta.read_text())
            if m.get("status") == "running":
                found.append("meta.json says running after gpuscope is gone")
            if code == 0 and m.get("status") != "complete":
                found.append(f"exit 0 but meta.json status {m.get('status')!r}")
        except ValueError:
            found.append("meta.json not whole")
    return code, out, err, found

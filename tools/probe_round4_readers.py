"""Round four of tools/probe_hostile.py (issue 34), the readers and time: classes 1 (the
Prometheus reader's numbers, times and gpu labels), 2 (a run directory's claim file), 3 (holes
in the samples, time going back), 9 (the Prometheus reader's memory), 16 (a floor above the
observed time), 17 (kernels overlapping on one stream, a copy bandwidth of 1e308) and 18 (a
[contains] cycle). Each generator takes probe_hostile.Gen (its random source, paths and
`command`) and returns one case, as Gen's own do."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from tests.hostile_check import POISON_TEXT

REPO = Path(__file__).resolve().parents[1]
RUN = REPO / "tests" / "data" / "h200_bounds" / "runs" / "hbm_bound"
# (probe_hostile's ABSURD, which imports this module)
ABSURD = ["1e308", "-1e308", "1e20", "99999999999999999999", "-1", "nan", "inf", "-0", "0x10", "1e-400", "",
          "\u0664\u0665", "\uff14\uff15", "4_5", "12..", "9876'5432"]


def round4_readers(g):
    """One case (argv, stdin, poisoned, kind) of the classes above, made with probe_hostile.Gen `g`."""
    return g.r.choice([_r4_prometheus, _r4_claim, _r4_holes, _r4_trace, _r4_model_cycle])(g)


def _r4_prometheus(g):
    """Class 1/9: a range query with poisoned values, times and gpu labels."""
    t0, vals = 1796168338.0, ABSURD + POISON_TEXT + ["0.5", "NaN", "+Inf", " 0.5", "0.5\u00a0"]
    series = []
    for name in ("DCGM_FI_PROF_SM_ACTIVE", "DCGM_FI_DEV_POWER_USAGE", "gpuscope_pcie_bytes_total"):
        gpu = g.r.choice(["0", "0", "1", str(2**63), "-3", "\u0663", "x", 7])
        pts = [[g.r.choice([t0 + i, t0 + i, True, None, "x", 1e300]) if g.r.random() < 0.1 else t0 + i,
                g.r.choice(vals) if g.r.random() < 0.3 else "0.5"] for i in range(g.r.randrange(1, 60))]
        series.append({"metric": {"__name__": name, "gpu": gpu, "direction": "rx", "Hostname": "h"}, "values": pts})
    p = g.path(".json")
    p.write_text(json.dumps({"status": "success", "data": {"resultType": "matrix", "result": series}}))
    return g.command(str(p)), None, True, "round4: prometheus"


def _r4_claim(g):
    """Class 2: a run directory says running; its claim file is a FIFO, /dev/zero, a huge pid."""
    d = g.path("_run")
    d.mkdir()
    for name in ("timing.log", "samples.csv"):
        shutil.copy(RUN / name, d / name)
    meta = json.loads((RUN / "meta.json").read_text()) | {"status": "running"}
    (d / "meta.json").write_text(json.dumps(meta))
    c = d / ".gpuscope-run"
    g.r.choice([lambda: os.mkfifo(c), lambda: c.symlink_to("/dev/zero"), lambda: c.mkdir(),
                   lambda: c.write_text(json.dumps({"pid": g.r.choice([2**70, -3, 0, "1", 1.5]),
                                                    "host": os.uname().nodename})),
                   lambda: c.write_text("{" * 5000), lambda: c.write_bytes(b"x" * 100_000)])()
    return g.command(str(d)), None, False, "round4: claim file"


def _r4_holes(g):
    """Class 3: samples with an hour-long hole or an hour read twice (DST fall-back)."""
    t0, rows = 1796168338.0, ["t_wall,t_mono,gpu,sm_active,gpu_util_pct"]
    times = [t0 + i / 10 for i in range(50)]
    times += ([t0 + 3600 + i / 10 for i in range(50)] if g.r.random() < 0.5
              else [t0 + 2.05 + i / 10 for i in range(50)] + [t0 - 3600 + i for i in range(30)])
    rows += [f"{t:.3f},{t - t0:.3f},0,0.9,90" for t in times]
    p = g.path(".csv")
    p.write_text("\n".join(rows) + "\n")
    return g.command(str(p)), None, False, "round4: holes"


def _r4_trace(g):
    """Class 17: kernels overlapping on one stream, copy bandwidths of 1e308."""
    ev = [{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1000.0 + i * g.r.random(),
           "dur": 1000.0, "args": {"device": 0, "stream": 7, "correlation": i + 1}} for i in range(50)]
    ev += [{"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pinned -> Device)", "pid": 0, "tid": 7,
            "ts": 3000.0 + i, "dur": 0.5, "args": {"device": 0, "stream": 7, "correlation": 99 + i, "bytes": 4096,
                                                   "memory bandwidth (GB/s)": g.r.choice([1e308, -1, 1e5, 12.5])}}
           for i in range(5)]
    p = g.path(".json")
    p.write_text(json.dumps({"traceEvents": ev}))
    return g.command(str(p)), None, False, "round4: trace details"


def _r4_model_cycle(g):
    """Class 18: a [contains] cycle, and class 16: bimodal steps (a floor above the observed)."""
    if g.r.random() < 0.5:
        n = g.r.randrange(2, 5)
        body = 'held = "x"\n[roles]\nh2d = [' + ", ".join(f'"c{i}"' for i in range(n)) + ']\n[contains]\n'
        body += "".join(f'c{i} = {{ inner = "c{(i + 1) % n}", remainder_role = "gpu_compute" }}\n' for i in range(n))
        p = g.path(".toml")
        p.write_text(body)
        return ["analyze", str(REPO / "examples" / "article_excerpt.log"), "--model", str(p)], None, False, \
            "round4: model cycle"
    slow = g.r.randrange(40, 90)
    p = g.path(".log")
    p.write_text("".join(f"step {i} data_ms={100.0 if i < slow else 1.0} compute_ms=10.0 "
                         f"step_ms={(100.0 if i < slow else 1.0) + 10.0}\n" for i in range(100)))
    return g.command(str(p)), None, False, "round4: bimodal steps"

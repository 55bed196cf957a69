"""`make demo`: gpuscope's main job end to end on an embedded default.

With a GPU (CuPy sees one): the PCIe line rate measured (`gpuscope bandwidth`, a few seconds),
a short verified run (log-n 18, every partition checked), then the proving pipeline in pageable
mode, then in pinned mode (log-n 24, 16 partitions; unverified, since the checks run under the
lock and flatten the difference: with --verify the pinned run was only 1.1x on an H200), each
ending with its analyze summary, then the two runs compared: the article's pathology and its cure. log-n 24 because at log-n 22 the uploads are shorter than the
sampling interval and the two runs' held times overlap (pinned/pageable 0.92, CI 0.62-1.01
on an H200), while at 24 the cure shows (1.6x, uploads 6 -> 54 GB/s).

Without a GPU: the same pipeline on the CPU reference backend at log-n 10 (Python-integer
arithmetic; clearly labelled: host-memory modes have no effect and there is no PCIe), with
--verify, ending with the analyze summary of its run directory; then the diagnosis and
pinned what-if of examples/cuzk_daemon.log, a production-shaped daemon log, and the diagnosis
of a PyTorch program's profiler trace captured on an H200. Well under a minute.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def gpuscope(*args: str) -> int:
    cmd = [sys.executable, "-m", "gpuscope", *args]
    print(f"\n$ gpuscope {' '.join(args)}", flush=True)
    return subprocess.call(cmd, cwd=REPO)


def main() -> int:
    sys.path.insert(0, str(REPO))
    from gpuscope.workload.backends import gpu_present

    stamp = time.strftime("%Y%m%d-%H%M%S")
    root = REPO / "runs"
    if gpu_present():
        print("gpuscope demo: GPU found: pageable vs pinned a/b/c uploads, log-n 24, 16 partitions")
        # the PCIe line rate the runs are judged against: measured here, not the 50 GB/s default
        if gpuscope("bandwidth", "--sizes", "512M", "--repeats", "3") != 0:
            print("gpuscope demo: bandwidth failed; the runs use the default line rate", flush=True)
        # correctness first, at a size where checking every partition takes seconds
        rc = gpuscope("run", "--mode", "pinned", "--log-n", "18", "--partitions", "4", "--verify",
                      "--out", str(root / f"demo-{stamp}-verify"))
        if rc != 0:
            return rc
        dirs = []
        for mode in ("pageable", "pinned"):  # unverified: the checks would hold the lock too
            d = root / f"demo-{stamp}-{mode}"
            rc = gpuscope("run", "--mode", mode, "--log-n", "24", "--partitions", "16", "--out", str(d))
            if rc != 0:
                return rc
            dirs.append(str(d))
        return gpuscope("compare", *dirs)
    print("gpuscope demo: no GPU here (CuPy or a CUDA device missing).\n"
          "Running the CPU REFERENCE backend at log-n 10: real field and curve arithmetic in "
          "Python integers, host-memory modes have no effect, no PCIe traffic, no NVML samples.")
    d = root / f"demo-{stamp}-cpu"
    rc = gpuscope("run", "--backend", "cpu", "--log-n", "10", "--partitions", "8",
                  "--workers", "2", "--synth-threads", "2", "--verify", "--out", str(d))
    if rc != 0:
        return rc
    print("\ngpuscope demo: and the diagnosis on a production-shaped daemon log (two workers, pageable "
          "a/b/c uploads; examples/cuzk_daemon.log, made by tools/gen_daemon_log.py), with the "
          "pinned what-if:", flush=True)
    rc = gpuscope("analyze", "examples/cuzk_daemon.log", "--what-if", "--abc-bytes", "1536M")
    if rc != 0:
        return rc
    print("\ngpuscope demo: and any other GPU program: a PyTorch copy loop's own profiler trace, "
          "recorded on an H200 (tests/data/h200_foreign/traces: three 512 MiB uploads per step from "
          "pageable memory):", flush=True)
    return gpuscope("analyze", "tests/data/h200_foreign/traces/copy_pageable.json.gz", "--line-rate", "55.5")


if __name__ == "__main__":
    sys.exit(main())

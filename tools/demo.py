"""`make demo`: gpuscope's main job end to end on an embedded default.

With a GPU (CuPy sees one): the PCIe line rate measured (`gpuscope bandwidth`, a few seconds),
then the proving pipeline in pageable mode, then in pinned mode (log-n 24, 16 partitions, with
--verify), each ending with its analyze summary, then the two runs compared: the article's
pathology and its cure. log-n 24 because at log-n 22 the uploads are shorter than the
sampling interval and the two runs' held times overlap (pinned/pageable 0.92, CI 0.62-1.01
on an H200), while at 24 the cure shows (1.6x, uploads 6 -> 54 GB/s).

Without a GPU: the same pipeline on the CPU reference backend at log-n 10 (Python-integer
arithmetic; clearly labelled: host-memory modes have no effect and there is no PCIe), with
--verify, ending with the analyze summary of its run directory; then the diagnosis and
pinned what-if of examples/cuzk_daemon.log, a production-shaped daemon log. Well under a minute.
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
        dirs = []
        for mode in ("pageable", "pinned"):
            d = root / f"demo-{stamp}-{mode}"
            rc = gpuscope("run", "--mode", mode, "--log-n", "24", "--partitions", "16",
                          "--verify", "--out", str(d))
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
    return gpuscope("analyze", "examples/cuzk_daemon.log", "--what-if", "--abc-bytes", "1536M")


if __name__ == "__main__":
    sys.exit(main())

"""GpuBackend.warm_up on a cold CuPy kernel cache (marker gpu): after it, the first compute_h and
MSM at that size cost what the second do, i.e. nothing compiles inside a timed tenure."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu

REPO = Path(__file__).resolve().parents[1]

PROBE = """
import time
import numpy as np
from gpuscope.workload import layout
from gpuscope.workload.gpu import GpuBackend

be = GpuBackend()
be.warm_up(20, seed=3)
rng = np.random.default_rng(5)
n = 1 << 20
pts = be.generate_points(n, 11)
sc, a, b, c = (layout.random_fr(n, rng) for _ in range(4))
for name, call in (("msm", lambda: be.msm(pts, sc)), ("h", lambda: be.compute_h(a, b, c))):
    ts = []
    for _ in range(2):
        t = time.perf_counter()
        call()
        be.synchronize()
        ts.append(time.perf_counter() - t)
    print(name, ts[0], ts[1])
"""


def test_first_calls_after_warm_up_compile_nothing(tmp_path):
    env = {**os.environ, "CUPY_CACHE_DIR": str(tmp_path / "cupy-cache"),
           "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    env.pop("GPUSCOPE_CUBIN_DIR", None)
    proc = subprocess.run([sys.executable, "-c", PROBE], env=env, cwd=REPO, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    for line in proc.stdout.split("\n"):
        if line.strip():
            name, first, second = line.split()
            print(line)
            # a JIT compile costs 0.1-1 s per kernel; the calls themselves ~30 ms at 2^20
            assert float(first) < 2 * float(second) + 0.05, line

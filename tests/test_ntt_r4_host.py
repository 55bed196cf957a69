"""The prepared NTT variants "fusedh" and "fast2" (kernels.NTT_VARIANTS) emulated on the CPU.

tests/ntt_r4_host_check.cpp runs the kernel's passes with ntt.cuh's index functions and the
kernel's order of field operations: radix-4 steps (GPUSCOPE_NTT_R4, with a check that each quad
covers the elements and twiddles of the radix-2 butterflies it replaces), the first pass reading
a*b - c (GPUSCOPE_NTT_FUSED_H) and one n-entry scale factor per output (GPUSCOPE_NTT_FULL_SCALE).
compute_h composed that way, with 1/Z folded into the last scale table as GpuBackend does, must
equal the Python reference.
"""

from __future__ import annotations

import random
import shutil
import subprocess
from pathlib import Path

import pytest

from gpuscope.workload import reference
from gpuscope.workload.field import FR_GENERATOR, R_MOD, root_of_unity
from gpuscope.workload.gpu_plan import ntt_plan

REPO = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")


@pytest.fixture(scope="module")
def emu(tmp_path_factory):
    exe = tmp_path_factory.mktemp("r4") / "ntt_r4"
    subprocess.run(
        ["g++", "-std=c++17", "-O2", "-I", str(REPO / "gpuscope/workload/cuda"), "-o", str(exe),
         str(REPO / "tests/ntt_r4_host_check.cpp")],
        check=True, capture_output=True,
    )
    proc = subprocess.Popen([str(exe)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def run(vectors, *, plan, inverse=False, r4=True, scale=(1, 1)):
        log_n = len(vectors[0]).bit_length() - 1
        roots = [root_of_unity(s + 1) for s in range(log_n)]
        if inverse:
            roots = [pow(w, -1, R_MOD) for w in roots]
        words = [log_n, len(plan), *(v for p in plan for v in p), int(r4), int(len(vectors) == 3)]
        words += [format(x, "x") for x in (*roots, *scale)]
        words += [format(x, "x") for vec in vectors for x in vec]
        proc.stdin.write(" ".join(map(str, words)) + "\n")
        proc.stdin.flush()
        line = proc.stdout.readline().strip()
        assert not line.startswith("ERR"), line
        return [int(v, 16) for v in line.split()]

    yield run
    proc.stdin.close()
    proc.wait(timeout=10)


# the GPU's default plans, plus narrow blocks so that odd stage counts (radix-2 tail), L = 0..3
# and several passes all occur at small sizes
PLANS = [(k, ntt_plan(k)) for k in (1, 2, 5, 10, 12)] + [
    (k, ntt_plan(k, block_log=bl, lmax=lm)) for k, bl, lm in ((9, 5, 2), (11, 6, 3), (11, 4, 1), (8, 3, 0))
]


@pytest.mark.parametrize("log_n,plan", PLANS, ids=[f"2^{k}-{len(p)}pass" for k, p in PLANS])
def test_radix4_passes_equal_reference(emu, log_n, plan):
    rng = random.Random(log_n * 31 + len(plan))
    x = [rng.randrange(R_MOD) for _ in range(1 << log_n)]
    assert emu([x], plan=plan) == reference.ntt(x)
    n_inv = pow(1 << log_n, -1, R_MOD)
    assert emu([x], plan=plan, inverse=True, scale=(1, n_inv)) == reference.intt(x)


@pytest.mark.parametrize("r4", [False, True], ids=["fusedh", "fast2"])
@pytest.mark.parametrize("log_n,plan", [(4, ntt_plan(4)), (9, ntt_plan(9, block_log=5, lmax=2))])
def test_fused_compute_h_equals_reference(emu, r4, log_n, plan):
    rng = random.Random(log_n + 7 * r4)
    n = 1 << log_n
    a = [rng.randrange(R_MOD) for _ in range(n)]
    b = [rng.randrange(R_MOD) for _ in range(n)]
    c = [x * y % R_MOD for x, y in zip(a, b, strict=True)]
    c[3] = (c[3] + 1) % R_MOD  # unsatisfied row: h must still match
    g = FR_GENERATOR
    n_inv = pow(n, -1, R_MOD)
    z_inv = pow(pow(g, n, R_MOD) - 1, -1, R_MOD)
    evals = [emu([emu([v], plan=plan, inverse=True, r4=r4, scale=(g, n_inv))], plan=plan, r4=r4) for v in (a, b, c)]
    h = emu(evals, plan=plan, inverse=True, r4=r4, scale=(pow(g, -1, R_MOD), n_inv * z_inv % R_MOD))
    assert h == reference.compute_h(a, b, c)


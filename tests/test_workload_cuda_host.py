"""The CUDA field/curve/NTT/MSM code compiled as host C++ (g++), checked against Python ints.

tests/workload_host_check.cpp includes gpuscope/workload/cuda/*.cuh; the NTT command emulates
the kernel's passes with the same index functions and the same pass plan as the GPU backend.
"""

from __future__ import annotations

import random
import shutil
import subprocess
from pathlib import Path

import pytest

from gpuscope.workload import curve, reference
from gpuscope.workload.field import FQ, FR, root_of_unity
from gpuscope.workload.gpu_plan import msm_window, ntt_plan

REPO = Path(__file__).resolve().parents[1]
CUDA = REPO / "gpuscope" / "workload" / "cuda"

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")


@pytest.fixture(scope="module")
def host(tmp_path_factory):
    exe = tmp_path_factory.mktemp("hc") / "host_check"
    subprocess.run(
        ["g++", "-std=c++17", "-O1", "-I", str(CUDA), "-o", str(exe), str(REPO / "tests" / "workload_host_check.cpp")],
        check=True,
        capture_output=True,
    )
    proc = subprocess.Popen([str(exe)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def ask(line: str) -> str:
        proc.stdin.write(line + "\n")
        proc.stdin.flush()
        return proc.stdout.readline().strip()

    yield ask
    proc.stdin.close()
    proc.wait(timeout=10)


def h(x: int) -> str:
    return format(x, "x")


@pytest.mark.parametrize("field,name", [(FR, "fr"), (FQ, "fq")])
def test_field_ops_match_python(host, field, name):
    rng = random.Random(name)
    p = field.p
    cases = [0, 1, 2, p - 1, p - 2, (1 << (32 * field.limbs - 2)) % p] + [rng.randrange(p) for _ in range(40)]
    for a in cases:
        b = rng.choice(cases)
        assert int(host(f"{name} mul {h(a)} {h(b)}"), 16) == a * b % p
        assert int(host(f"{name} add {h(a)} {h(b)}"), 16) == (a + b) % p
        assert int(host(f"{name} sub {h(a)} {h(b)}"), 16) == (a - b) % p
        assert int(host(f"{name} neg {h(a)}"), 16) == (-a) % p
    for a in cases[:12]:
        assert int(host(f"{name} inv {h(a)}"), 16) == (pow(a, -1, p) if a else 0)


def _pt(s: list[str]):
    x, y = int(s[0], 16), int(s[1], 16)
    return None if x == 0 and y == 0 else (x, y)


def _hx(pt) -> str:
    return "0 0" if pt is None else f"{h(pt[0])} {h(pt[1])}"


def test_curve_add_including_special_cases(host):
    g = curve.G1_GEN
    pts = [curve.mul(g, k) for k in (1, 2, 3, 12345)]
    pairs = [(pts[0], pts[1]), (pts[1], pts[1]), (pts[2], curve.neg(pts[2])), (None, pts[3]), (pts[3], None), (None, None)]
    for p, q in pairs:
        out = host(f"g1add {_hx(p)} {_hx(q)}").split()
        expect = curve.add(p, q)
        assert _pt(out[0:2]) == expect and _pt(out[2:4]) == expect and out[4] == "1"


def test_curve_scalar_mul(host):
    g = curve.G1_GEN
    for k in (0, 1, 2, 7, reference.r - 1, reference.r, 0xDEADBEEF << 200):
        assert _pt(host(f"g1mul {_hx(g)} {h(k)}").split()) == curve.mul(g, k)


def test_signed_digits_recompose(host):
    rng = random.Random(5)
    r = reference.r
    for k in [0, 1, r - 1, (1 << 254) + 12345] + [rng.randrange(r) for _ in range(30)]:
        for c in (6, 8, 13, 16):
            W = msm_window(c)
            d = [int(x) for x in host(f"digits {h(k)} {c} {W}").split()]
            assert len(d) == W
            assert all(-(1 << (c - 1)) <= x <= (1 << (c - 1)) for x in d)
            assert sum(x << (c * i) for i, x in enumerate(d)) == k


def test_point_scalars_match_python(host):
    for seed, i in [(0, 0), (1, 5), (2**63 + 7, 123456), (42, 2**24 - 1)]:
        assert int(host(f"pscalar {seed} {i}"), 16) == curve.point_scalars(seed, i, 1)[0]


@pytest.mark.parametrize("log_n", [1, 3, 8, 11, 13])
def test_ntt_pass_plan_matches_reference(host, log_n):
    rng = random.Random(log_n)
    n = 1 << log_n
    x = [rng.randrange(reference.r) for _ in range(n)]
    plan = ntt_plan(log_n, block_log=6 if log_n > 8 else 10, lmax=2)
    roots = [root_of_unity(s + 1) for s in range(log_n)]
    cmd = f"ntt {log_n} {len(plan)} " + " ".join(f"{a} {b} {c}" for a, b, c in plan)
    cmd += " " + " ".join(h(v) for v in roots) + " " + " ".join(h(v) for v in x)
    out = [int(v, 16) for v in host(cmd).split()]
    assert out == reference.ntt(x)


def test_ntt_plan_shapes():
    for log_n in range(1, 27):
        plan = ntt_plan(log_n)
        assert plan[0][0] == 0 and plan[0][2] == 0
        s = 0
        for s0, S, L in plan:
            assert s0 == s and S >= 1 and S + L <= 10 and L <= s0
            s += S
        assert s == log_n


def test_ntt_plan_takes_the_fewest_passes_lmin_allows():
    # L = 2 instead of 3 where that saves a pass over the whole vector
    assert ntt_plan(26) == [(0, 10, 0), (10, 8, 2), (18, 8, 2)]
    assert ntt_plan(24) == ntt_plan(24, lmin=3) == [(0, 10, 0), (10, 7, 3), (17, 7, 3)]
    for log_n in range(1, 29):
        fewest = min(len(ntt_plan(log_n, lmax=lv, lmin=lv)) for lv in (2, 3))
        assert len(ntt_plan(log_n)) == fewest
        assert all(L >= 2 or L == s0 or S + L == 10 for s0, S, L in ntt_plan(log_n)[1:])


def test_generated_ptx_header_is_current():
    out = subprocess.run(
        ["python3", str(REPO / "tools" / "gen_field_ptx.py")], capture_output=True, text=True, check=True
    ).stdout
    assert out == (CUDA / "field_ptx.cuh").read_text()


def test_expanded_sources_map_lines_to_real_files():
    from gpuscope.workload import kernels

    src = kernels.expand_source("msm.cu")
    assert src.startswith('#line 1 "msm.cu"')
    assert src.count('#line 1 "field.cuh"') == 1  # included once although two headers include it
    assert '#line 1 "curve.cuh"' in src and "#pragma once" not in src
    # the line after an include is mapped back to the including file
    lines = (CUDA / "msm.cu").read_text().splitlines()
    inc = next(i for i, ln in enumerate(lines, 1) if ln.startswith('#include "msm.cuh"'))
    assert f'#line {inc + 1} "msm.cu"' in src
    assert kernels.source_hash("ntt") != kernels.source_hash("ntt", ("GPUSCOPE_PORTABLE_MUL",))

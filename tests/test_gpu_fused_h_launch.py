"""GpuBackend's kernel launches for compute_h, without a GPU: CuPy is a numpy stand-in and each
kernel a recorder, so a wrong kernel name or argument list of the prepared "fusedh"/"fast2"
composition shows here, not on the one device run. Each launch's argument count must equal its
extern "C" signature's parameter count in cuda/ntt.cu."""

from __future__ import annotations

import re
import sys
import types
from importlib import resources

import numpy as np
import pytest

from gpuscope.workload import kernels
from gpuscope.workload.gpu_plan import ntt_plan


def _signatures() -> dict[str, int]:
    src = (resources.files("gpuscope.workload") / "cuda" / "ntt.cu").read_text()
    sigs = {}
    for m in re.finditer(r'extern "C" __global__ void(?: NTT_BOUNDS)? (\w+)\(([^)]*)\)', src):
        sigs[m.group(1)] = len([p for p in m.group(2).split(",") if p.strip()])
    return sigs


def _fake_cupy() -> types.ModuleType:
    cp = types.ModuleType("cupy")
    cp.ndarray = np.ndarray
    cp.asarray = np.asarray
    cp.ascontiguousarray = np.ascontiguousarray
    cp.empty = np.empty
    cp.cuda = types.SimpleNamespace(memory=types.SimpleNamespace(OutOfMemoryError=MemoryError))
    return cp


@pytest.fixture
def launches(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", _fake_cupy())
    calls = []
    monkeypatch.setattr(kernels, "module", lambda *a, **k: None)

    def function(mod, name, defines=None):
        return lambda grid, block, args, shared_mem=0: calls.append((name, args, block[0]))

    monkeypatch.setattr(kernels, "function", function)
    return calls


def _h(variant: str, log_n: int, calls):
    from gpuscope.workload.gpu import GpuBackend

    gpu = GpuBackend(kernels.NTT_VARIANTS[variant], modules=())
    n = 1 << log_n
    a, b, c = (np.zeros((n, 8), dtype=np.uint32) for _ in range(3))
    calls.clear()
    out = gpu.compute_h(a, b, c)
    return out, [(name, args, threads) for name, args, threads in calls if name.startswith("fr_ntt_pass") or name == "fr_h_pointwise"]


@pytest.mark.parametrize("log_n", [10, 12, 20])
@pytest.mark.parametrize("variant", ["fast", "fusedh", "fast2", "fast2s", "fast2s4"])
def test_compute_h_launches_match_the_kernels(launches, variant, log_n):
    out, ntt_calls = _h(variant, log_n, launches)
    sigs = _signatures()
    for name, args, _threads in launches:
        assert name in sigs, name
        assert len(args) == sigs[name], (name, len(args), sigs[name])
    threads = {t for name, _, t in ntt_calls if name.startswith("fr_ntt_pass")}
    assert max(threads) == (128 if "GPUSCOPE_NTT_T128" in kernels.NTT_VARIANTS[variant] else 256)  # __launch_bounds__
    npass = len(ntt_plan(log_n))
    names = [name for name, _, _ in ntt_calls]
    fused = "GPUSCOPE_NTT_FUSED_H" in kernels.NTT_VARIANTS[variant]
    last = ["fr_ntt_pass"] * (npass - 1) + ["fr_ntt_pass_scaled"]
    final = (["fr_ntt_pass_h_scaled"] if npass == 1 else ["fr_ntt_pass_h", *last[1:]]) if fused else ["fr_h_pointwise", *last]
    assert names == (last + ["fr_ntt_pass"] * npass) * 3 + final
    lobits = [int(args[10]) for name, args, _ in ntt_calls if name.endswith("_scaled")]
    assert lobits == [log_n if fused else 12] * 4  # n-entry tables with FULL_SCALE
    first = next(args for name, args, _ in ntt_calls if name.startswith("fr_ntt_pass_h")) if fused else None
    if fused:  # the final iNTT writes a buffer none of its three inputs share
        ins = (first[1], first[-2], first[-1])
        assert all(out is not x for x in ins) and first[0] is out

"""tools/gpu_ntt_variants.py without a GPU: its control flow, checks, failure reporting and table.

The script gets one device run, so its Python must be right before it reaches the GPU: here CuPy
is a numpy-backed stand-in and GpuBackend wraps the CPU backend (one variant made wrong, one made
to crash), at 2^4..2^6 instead of 2^10..2^24.
"""

from __future__ import annotations

import importlib.util
import json
import sys
import types
from pathlib import Path

import numpy as np
import pytest

from gpuscope.workload import backends, kernels

TOOL = Path(__file__).resolve().parents[1] / "tools" / "gpu_ntt_variants.py"


class _Arr(np.ndarray):
    def get(self):
        return np.asarray(self)


def _fake_cupy() -> types.ModuleType:
    cp = types.ModuleType("cupy")
    cp.__version__ = "fake"
    cp.ndarray = _Arr
    cp.asarray = lambda x: np.asarray(x).view(_Arr)
    cp.array_equal = lambda a, b: np.array_equal(np.asarray(a), np.asarray(b))

    class Device:
        id = 0
        compute_capability = "90"

        def synchronize(self):
            pass

    class Event:
        def record(self):
            pass

        def synchronize(self):
            pass

    runtime = types.SimpleNamespace(getDeviceCount=lambda: 1, getDeviceProperties=lambda i: {"name": b"Fake H200"})
    cp.cuda = types.SimpleNamespace(Device=Device, Event=Event, runtime=runtime, get_elapsed_time=lambda a, b: 1.5)
    cp.get_default_memory_pool = lambda: types.SimpleNamespace(free_all_blocks=lambda: None)
    return cp


class _FakeGpu:
    def __init__(self, defines=None, modules=("ntt", "msm")):
        if "GPUSCOPE_FR_PTX_ADDSUB" in defines:
            raise RuntimeError("compile failed (simulated)")
        self.wrong = defines == ("GPUSCOPE_FR_CIOS",)
        self.cpu = backends.get_backend("cpu")

    def _wrap(self, x):
        x = np.array(np.asarray(x), dtype=np.uint32)
        return x.view(_Arr)

    def ntt(self, x, *, inverse=False):
        out = self._wrap(self.cpu.ntt(np.asarray(x), inverse=inverse))
        if self.wrong and not inverse:
            out[0, 0] ^= 1
        return out

    def compute_h(self, a, b, c):
        return self._wrap(self.cpu.compute_h(np.asarray(a), np.asarray(b), np.asarray(c)))


@pytest.fixture
def tool(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", _fake_cupy())
    import gpuscope.workload.gpu as gpu_mod

    monkeypatch.setattr(gpu_mod, "GpuBackend", _FakeGpu, raising=False)
    monkeypatch.setattr(kernels, "function", lambda *a, **k: types.SimpleNamespace(num_regs=56, local_size_bytes=0))
    spec = importlib.util.spec_from_file_location("gpu_ntt_variants", TOOL)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    monkeypatch.setattr(mod, "CHECK_LOGS", (4, 5))
    monkeypatch.setattr(mod, "H_LOGS", (4, 5))
    monkeypatch.setattr(mod, "ROUND_TRIP_LOG", 6)
    return mod


def test_variants_table_pass_and_fail(tool, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["x", "--out", str(tmp_path), "--sizes", "5,6", "--repeats", "3"])
    rc = tool.main()
    out = capsys.readouterr().out
    assert rc == 1
    table = out[out.index("\nvariant ") + 1 :]
    rows = {t[0]: t for t in (ln.split() for ln in table.splitlines()) if len(t) > 1 and t[1] in ("PASS", "FAIL")}
    assert list(rows) == list(kernels.NTT_VARIANTS)
    assert rows["stride"][1] == "PASS"
    assert rows["base"][1] == "PASS" and rows["base"][3:] == ["1.50"] * 6
    assert rows["cios"][1] == "FAIL" and "cios failed: ntt 2^4" in table
    assert rows["fast"][1] == "FAIL" and "compile failed (simulated)" in table
    res = json.loads((tmp_path / "variants.json").read_text())
    assert res["base"]["failed"] == [] and res["base"]["times"]["compute_h 2^6"] == 1.5
    assert (tmp_path / "variants.log").read_text().count("CHECK") >= 6


def test_only_passing_variants_exit_zero(tool, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["x", "--out", str(tmp_path), "--sizes", "5", "--variants", "base"])
    assert tool.main() == 0
    assert "base       PASS" in capsys.readouterr().out


def test_reference_is_the_first_passing_variant(tool, tmp_path, monkeypatch, capsys):
    """Without base in the list, the 2^big comparisons use the first variant that passed."""
    monkeypatch.setattr(sys, "argv", ["x", "--out", str(tmp_path), "--sizes", "5", "--variants", "cios,stride,base"])
    assert tool.main() == 1  # cios is wrong
    log = (tmp_path / "variants.log").read_text()
    assert "[stride] reference for the 2^5 comparisons" in log
    assert "[base] CHECK ntt 2^5 == stride: ok" in log and "[base] CHECK compute_h 2^5 == stride: ok" in log
    assert "== cios" not in log

"""`gpuscope bench kernels`: help text, option checks, no-GPU exit code; floors arithmetic."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from gpuscope.cli import app
from gpuscope.workload import bench
from tests.conftest import gpu_available


def test_help_has_an_example():
    r = CliRunner().invoke(app, ["bench", "kernels", "--help"])
    assert r.exit_code == 0
    assert "gpuscope bench kernels --sizes" in r.stdout
    assert r.stderr == ""


def test_bad_sizes_is_a_usage_error():
    r = CliRunner().invoke(app, ["bench", "kernels", "--sizes", "20,x"])
    assert r.exit_code == 2
    assert r.stdout == ""
    assert r.stderr.startswith("gpuscope: --sizes") and r.stderr.count("\n") == 1


def test_out_of_range_size_is_a_usage_error_before_the_gpu_is_looked_for():
    r = CliRunner().invoke(app, ["bench", "kernels", "--sizes", "30"])
    assert r.exit_code == 2 and r.stdout == "" and "10..26" in r.stderr


def test_bad_repeats_is_a_usage_error():
    r = CliRunner().invoke(app, ["bench", "kernels", "--repeats", "0"])
    assert r.exit_code == 2 and r.stdout == "" and "--repeats" in r.stderr


@pytest.mark.skipif(gpu_available()[0], reason="a GPU is present")
def test_without_gpu_exits_5():
    r = CliRunner().invoke(app, ["bench", "kernels", "--sizes", "10"])
    assert r.exit_code == 5
    assert r.stdout == ""
    assert "gpu" in r.stderr.lower() and r.stderr.count("\n") == 1


def test_floors_scale_from_the_2_24_figures():
    assert bench.floor_ms("ntt", 24) == pytest.approx(3.4)
    assert bench.floor_ms("compute_h", 24) == pytest.approx(7 * 3.4)
    assert bench.floor_ms("msm", 24) == pytest.approx(90.0)
    assert bench.floor_ms("msm", 20) == pytest.approx(90.0 / 16)
    assert bench.floor_ms("ntt", 20) == pytest.approx(3.4 / 16 * 20 / 24)
    assert bench.floor_ms("batch_add", 24) is None
    assert bench.target_ms("msm", 24) == 400.0 and bench.target_ms("msm", 22) is None


@pytest.mark.gpu
def test_bench_json_on_gpu():
    r = CliRunner().invoke(app, ["bench", "kernels", "--sizes", "12", "--repeats", "2", "--json"])
    assert r.exit_code == 0, r.stderr
    rows = json.loads(r.stdout)
    kernels = {row["kernel"] for row in rows}
    assert {"ntt", "intt", "compute_h", "msm", "batch_add", "tail_msm"} <= kernels
    assert all(row["median_ms"] > 0 for row in rows)


@pytest.mark.gpu
def test_bench_table_names_the_device_and_ntt_variant():
    from gpuscope.workload import kernels

    r = CliRunner().invoke(app, ["bench", "kernels", "--sizes", "10", "--repeats", "1"])
    assert r.exit_code == 0, r.stderr
    assert f"NTT variant {kernels.ntt_variant()}" in " ".join(r.stdout.split())  # (title may wrap)


def test_bench_kernels_times_each_call_with_its_own_arguments(monkeypatch):
    """bench_kernels on a stand-in CuPy and backend (no GPU): every kernel timed, in order, each
    call given the arrays made for it (ntt's inverse flag, the bitmap of batch_add and tail_msm)."""
    import sys
    import types

    import numpy as np

    class Event:
        def record(self):
            pass

        def synchronize(self):
            pass

    cuda_ns = types.SimpleNamespace(Event=Event, Device=lambda: types.SimpleNamespace(synchronize=lambda: None),
                                    get_elapsed_time=lambda start, end: 2.5)
    fake_cp = types.SimpleNamespace(
        cuda=cuda_ns, asarray=np.asarray,
        get_default_memory_pool=lambda: types.SimpleNamespace(free_all_blocks=lambda: None))
    monkeypatch.setitem(sys.modules, "cupy", fake_cp)

    class Recorder:
        cp = fake_cp

        def __init__(self):
            self.calls = []

        def _note(self, name, *args, **kw):
            self.calls.append((name, tuple(a.shape if hasattr(a, "shape") else a for a in args), kw))
            return np.zeros((4, 8), np.uint32)

        def fr_mul(self, a, b):
            self._note("fr_mul", a, b)
            return np.zeros_like(a)

        def ntt(self, a, *, inverse=False):
            return self._note("ntt", a, inverse=inverse)

        def compute_h(self, a, b, c):
            return self._note("compute_h", a, b, c)

        def generate_points(self, n, seed):
            self._note("generate_points", n, seed)
            return np.zeros((n, 2, 12), np.uint32)

        def msm(self, p, s):
            return self._note("msm", p, s)

        def batch_add(self, p, m):
            assert m.dtype == bool
            return self._note("batch_add", p, m)

        def tail_msm(self, p, s, m):
            assert m.dtype == bool
            return self._note("tail_msm", p, s, m)

    gpu = Recorder()
    rows = bench.bench_kernels([10], repeats=2, seed=7, backend=gpu)
    assert [r.kernel for r in rows] == ["ntt", "intt", "compute_h", "generate_points", "msm", "batch_add", "tail_msm"]
    assert all(r.median_ms == 2.5 and r.log_n == 10 for r in rows)
    assert [r.runs for r in rows] == [2, 2, 2, 1, 2, 2, 2]
    n, fr, pts = 1 << 10, (1 << 10, 8), (1 << 10, 2, 12)
    timed = [c for c in gpu.calls if c[0] != "fr_mul"]
    assert ("ntt", (fr,), {"inverse": False}) in timed and ("ntt", (fr,), {"inverse": True}) in timed
    assert ("compute_h", (fr, fr, fr), {}) in timed and ("generate_points", (n, 7), {}) in timed
    assert ("msm", (pts, fr), {}) in timed and ("batch_add", (pts, (n,)), {}) in timed
    assert ("tail_msm", (pts, fr, (n,)), {}) in timed
    # 1 warm-up + 2 timed runs of each repeated kernel; generate_points timed once, once more for the points
    assert [c[0] for c in timed].count("msm") == 3 and [c[0] for c in timed].count("generate_points") == 2

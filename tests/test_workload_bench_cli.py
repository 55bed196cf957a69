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

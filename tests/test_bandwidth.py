"""`gpuscope bandwidth`: option checks, the line-rate cache, and the GPU measurement (gpu marker)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from gpuscope import hostbw, linerate
from gpuscope.cli import app
from gpuscope.errors import UsageError
from tests.conftest import gpu_available


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))


def test_parse_sizes():
    assert hostbw.parse_sizes("64M,512M,1536M") == [64 << 20, 512 << 20, 1536 << 20]
    assert hostbw.parse_sizes("1.5G, 4K,100") == [int(1.5 * 2**30), 4096, 100]
    assert hostbw.parse_sizes("2GiB") == [2 << 30]
    for bad in ("", "x", "0", "-5M", "12Q"):
        with pytest.raises(UsageError, match="--sizes"):
            hostbw.parse_sizes(bad)
    assert [hostbw.fmt_size(n) for n in (1536 << 20, 2 << 30, 4096, 1000)] == ["1536M", "2G", "4K", "1000"]


def test_linerate_cache_roundtrip(tmp_path):
    assert linerate.measured_line_rate() is None
    a = {"gpu": {"name": "H200", "uuid": "GPU-a"}, "line_rate_gbs": 55.4, "measured_at": "2026-11-30T10:00:00.000000Z"}
    b = {"gpu": {"name": "H200", "uuid": "GPU-b"}, "line_rate_gbs": 25.0, "measured_at": "2026-11-30T11:00:00.000000Z"}
    p = linerate.save("GPU-a", a)
    linerate.save("GPU-b", b)
    assert p == tmp_path / "cache" / "gpuscope" / "bandwidth.json"
    assert linerate.measured_line_rate("GPU-a") == 55.4
    assert linerate.measured_line_rate("GPU-b") == 25.0
    assert linerate.measured_line_rate("GPU-zzz") is None
    assert linerate.measured_line_rate() == 25.0  # the most recent
    p.write_text("{broken")
    assert linerate.measured_line_rate("GPU-a") is None  # a damaged cache is no measurement


def test_summary_rows():
    res = {"results": [
        {"kind": "pinned", "direction": "h2d", "size_bytes": 1, "size": "1", "median_gbs": 50.0},
        {"kind": "pinned", "direction": "d2h", "size_bytes": 1, "size": "1", "median_gbs": 52.0},
        {"kind": "pageable", "direction": "h2d", "size_bytes": 1, "size": "1", "median_gbs": 9.0},
    ]}
    assert hostbw.summary_rows(res) == [
        {"size": "1", "kind": "pinned", "h2d_gbs": 50.0, "d2h_gbs": 52.0},
        {"size": "1", "kind": "pageable", "h2d_gbs": 9.0},
    ]


@pytest.mark.parametrize("args,needle", [
    (["--sizes", "12Q"], "--sizes: bad size"),
    (["--repeats", "0"], "--repeats must be at least 1"),
    (["--contention", "-1"], "--contention must be 0 or more"),
])
def test_bandwidth_usage_errors(args, needle):
    r = CliRunner().invoke(app, ["bandwidth", *args])
    assert r.exit_code == 2 and r.stdout == ""
    assert needle in r.stderr and len(r.stderr.strip().splitlines()) == 1


@pytest.mark.skipif(gpu_available()[0], reason="checks the no-GPU path")
def test_bandwidth_without_gpu_exit5():
    r = CliRunner().invoke(app, ["bandwidth", "--sizes", "1M"])
    assert r.exit_code == 5 and r.stdout == ""
    assert r.stderr.startswith("gpuscope: bandwidth needs") and len(r.stderr.strip().splitlines()) == 1


def test_bandwidth_help_has_example():
    r = CliRunner().invoke(app, ["bandwidth", "--help"])
    assert r.exit_code == 0 and "Example: gpuscope bandwidth" in r.stdout and r.stderr == ""


@pytest.mark.gpu
def test_bandwidth_pinned_h2d_at_least_50_gbs(tmp_path):
    r = CliRunner().invoke(app, ["bandwidth", "--sizes", "256M,1G", "--repeats", "5", "--json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    pinned = [x for x in d["results"] if x["kind"] == "pinned" and x["direction"] == "h2d"]
    pageable = [x for x in d["results"] if x["kind"] == "pageable" and x["direction"] == "h2d"]
    assert max(x["median_gbs"] for x in pinned) >= 50.0
    assert max(x["median_gbs"] for x in pageable) < max(x["median_gbs"] for x in pinned)
    assert d["pinning"]["host_alloc_s_per_gib"] > 0 and d["pinning"]["host_register_s_per_gib"] > 0
    assert linerate.measured_line_rate(d["gpu"]["uuid"]) == pytest.approx(d["line_rate_gbs"])
    # the UUID is NVML's spelling, so info/record find the measured rate
    from gpuscope import nvml

    nv = nvml.get()
    if nv is not None:
        assert d["gpu"]["uuid"] in {nv.device(i)["uuid"] for i in range(nv.device_count())}


def test_contention_threads_really_copy():
    import time

    with hostbw.Contention(2, chunk=1 << 20) as c:
        time.sleep(0.2)
    assert c.bytes_copied >= 2 * (1 << 20) and c.gbs > 0.01
    with hostbw.Contention(0) as c0:
        pass
    assert c0.bytes_copied == 0


def test_line_rate_rule_option_then_meta_then_cache_then_default():
    assert linerate.resolve_line_rate(None, None) == (50.0, "default")
    linerate.save("GPU-a", {"line_rate_gbs": 55.4, "measured_at": "2026-11-30T10:00:00.000000Z"})
    assert linerate.resolve_line_rate(None, {}) == (55.4, "cache")
    assert linerate.resolve_line_rate(None, {"line_rate_gbs": 52.0}) == (52.0, "meta")
    assert linerate.resolve_line_rate(40.0, {"line_rate_gbs": 52.0}) == (40.0, "option")
    assert linerate.resolve_line_rate(None, {"line_rate_gbs": True}) == (55.4, "cache")  # not a number
    assert linerate.source_text("cache") == "gpuscope bandwidth cache (measured)"

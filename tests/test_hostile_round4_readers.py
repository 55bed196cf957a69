"""Hostile input, round four (issue 34), the readers and time: classes 1, 2, 3, 9, 16, 17, 18.
Each case writes its own input; each fails on the code before its fix."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from gpuscope.cli import app
from gpuscope.errors import EXIT_RESOURCE, EXIT_USAGE, UsageError
from gpuscope.rolemodel import load_model

from .conftest import DATA, EXAMPLES

LOG = EXAMPLES / "article_excerpt.log"


def cli(*args, input=None):
    r = CliRunner().invoke(app, [str(a) for a in args], input=input)
    return r.exit_code, r.stdout, r.stderr


def one_line(stderr: str) -> str:
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("gpuscope: "), stderr
    assert "internal error" not in lines[0] and "Traceback" not in stderr
    return lines[0]


# -- 18: a [contains] cycle in a role model ----------------------------------------------------

_ROLES = 'held = "x"\n[roles]\nh2d = ["a", "b", "c"]\n[contains]\n'


@pytest.mark.parametrize("contains", [
    'a = { inner = "b", remainder_role = "gpu_compute" }\nb = { inner = "a", remainder_role = "gpu_compute" }\n',
    'a = { inner = "b", remainder_role = "gpu_compute" }\nb = { inner = "c", remainder_role = "gpu_compute" }\n'
    'c = { inner = "a", remainder_role = "gpu_compute" }\n',
])
def test_a_contains_cycle_is_refused_with_one_line(tmp_path, contains):
    p = tmp_path / "m.toml"
    p.write_text(_ROLES + contains)
    with pytest.raises(UsageError, match="a cycle"):
        load_model(p)
    code, _, err = cli("analyze", LOG, "--model", p)
    assert code == EXIT_USAGE and "a cycle" in one_line(err)


def test_a_contains_chain_without_a_cycle_is_still_a_model(tmp_path):
    # what would make the cycle check fire falsely: a chain (a holds b, b holds c), or two
    # outers sharing one inner; neither comes back to where it began
    p = tmp_path / "m.toml"
    p.write_text(_ROLES + 'a = { inner = "b", remainder_role = "gpu_compute" }\n'
                 'b = { inner = "c", remainder_role = "gpu_compute" }\n')
    assert load_model(p).contains["b"].inner == "c"
    p.write_text(_ROLES + 'a = { inner = "c", remainder_role = "gpu_compute" }\n'
                 'b = { inner = "c", remainder_role = "gpu_compute" }\n')
    assert set(load_model(p).contains) == {"a", "b"}


# -- 9: out of memory, anywhere ------------------------------------------------------------------

def test_memory_error_anywhere_is_exit_6_with_one_line(monkeypatch):
    import gpuscope.rolemodel as rolemodel

    def starve(*a, **k):
        raise MemoryError()

    monkeypatch.setattr(rolemodel, "model_from_dict", starve)
    code, _, err = cli("analyze", LOG)
    assert code == EXIT_RESOURCE and "out of memory" in one_line(err)


# -- 16: a floor above what was observed -------------------------------------------------------

def _bimodal_log(tmp_path, slow: int, n: int = 100):
    p = tmp_path / "bimodal.log"
    p.write_text("".join(f"step {i} data_ms={100.0 if i < slow else 1.0} compute_ms=10.0 "
                         f"step_ms={(100.0 if i < slow else 1.0) + 10.0}\n" for i in range(n)))
    return p


def test_the_cpu_floor_of_bimodal_steps_is_not_above_the_observed_time(tmp_path):
    from gpuscope.analysis import analyze
    from gpuscope.sources import open_source

    # data 100 ms in 51 of 100 steps, 1 ms in the rest: median x steps = 10 s, observed 6.15 s
    b = analyze(open_source(str(_bimodal_log(tmp_path, 51)))).log.bounds
    assert b["cpu_floor_s"] <= b["observed_s"] and b["observed_over_floor"] >= 1.0
    assert b["cpu_floor_s"] == pytest.approx(5.149)  # the data parts' whole time
    assert any("bimodal" in s for s in b["assumptions"])


def test_a_steady_or_right_skewed_log_keeps_its_median_floor(tmp_path):
    # what would make the mean fire falsely: a log whose medians x steps stay below the
    # observed (most steps fast, a few slow): the median floor, no assumption about it
    from gpuscope.analysis import analyze
    from gpuscope.sources import open_source

    b = analyze(open_source(str(_bimodal_log(tmp_path, 20)))).log.bounds
    assert b["cpu_per_partition_ms"] == pytest.approx(1.0)
    assert not any("bimodal" in s or "exceeds the observed" in s for s in b["assumptions"])


# -- 2: the run directory's claim file, read when meta.json says running ------------------------

RUN = DATA / "h200_bounds" / "runs" / "hbm_bound"


def _running_rundir(tmp_path):
    d = tmp_path / "run"
    shutil.copytree(RUN, d)
    meta = json.loads((d / "meta.json").read_text())
    meta["status"] = "running"
    (d / "meta.json").write_text(json.dumps(meta))
    return d


def _claim_fifo(c):
    os.mkfifo(c)


def _claim_zero(c):
    os.symlink("/dev/zero", c)


def _claim_huge_pid(c):
    c.write_text(json.dumps({"pid": 2**70, "host": socket.gethostname(), "claimed": "now"}))


def _claim_negative_pid(c):
    c.write_text(json.dumps({"pid": -3, "host": socket.gethostname(), "claimed": "now"}))


@pytest.mark.parametrize("make", [_claim_fifo, _claim_zero, _claim_huge_pid, _claim_negative_pid])
def test_a_hostile_claim_file_is_recorder_state_unknown_and_the_run_is_read(tmp_path, make):
    d = _running_rundir(tmp_path)
    (d / ".gpuscope-run").unlink(missing_ok=True)
    make(d / ".gpuscope-run")
    r = subprocess.run([sys.executable, "-m", "gpuscope", "analyze", str(d)],
                       capture_output=True, timeout=60, text=True)
    assert r.returncode == 0, r.stderr
    assert "recorder state is unknown" in r.stdout + r.stderr
    assert "internal error" not in r.stderr


def test_a_claim_of_a_live_recorder_still_says_so(tmp_path):
    # what would make the guard fire falsely: a good claim (this process, this host)
    from gpuscope import rundir

    d = _running_rundir(tmp_path)
    (d / ".gpuscope-run").unlink(missing_ok=True)
    (d / ".gpuscope-run").write_text(json.dumps({"pid": os.getpid(), "host": socket.gethostname(),
                                                 "claimed": "now"}) + "\n")
    assert rundir.recorder_alive(d) == (os.getpid(), True)
    assert "still being recorded" in rundir.running_note(d)


# -- 1: the Prometheus reader's numbers, bounds and GPU labels ----------------------------------

T0 = 1_796_000_000.0


def _prom(values, name="DCGM_FI_PROF_SM_ACTIVE", gpu="0", times=None):
    times = times if times is not None else [T0 + i for i in range(len(values))]
    return json.dumps({"status": "success", "data": {"resultType": "matrix", "result": [
        {"metric": {"__name__": name, "gpu": gpu, "Hostname": "n"},
         "values": [[t, v] for t, v in zip(times, values, strict=True)]}]}})


@pytest.mark.parametrize("text", ["\u0669\u0668", "\uff10.\uff15", "\u09e6.\u09eb", "98_765", "0.5\u00a0",
                                  " 0.5", "+Inf", "-Inf", "inf", "0x1p-1", "1e999"])
def test_a_prometheus_value_float_takes_but_no_format_prints_is_damage(text):
    from gpuscope.parsers.samples.prometheus import read_prometheus

    df = read_prometheus(_prom(["0.5", text, "0.25"]))
    assert df["sm_active"].tolist()[0] == 0.5 and df["sm_active"].tolist()[2] == 0.25
    assert df["sm_active"].isna().tolist()[1] and df.attrs["bad_values"] == {"sm_active": 1}


def test_a_prometheus_value_beyond_its_bounds_is_damage_not_busy():
    from gpuscope.parsers.samples.prometheus import read_prometheus

    df = read_prometheus(_prom(["0.5", "98765", "-0.5", "NaN"]))
    assert df["sm_active"].tolist()[0] == 0.5 and df["sm_active"].isna().sum() == 3
    assert df.attrs["bad_values"] == {"sm_active": 2}  # NaN is no reading, not damage


@pytest.mark.parametrize("t", [True, "1796000001", None, -5, 1e300, [1]])
def test_a_prometheus_time_that_is_no_epoch_number_is_not_read(t):
    from gpuscope.parsers.samples.prometheus import read_prometheus

    df = read_prometheus(_prom(["0.5", "0.5", "0.5"], times=[T0, t, T0 + 2]))
    assert df["t_wall"].tolist() == [T0, T0 + 2] and df.attrs["malformed_rows"] == 1


@pytest.mark.parametrize("gpu", [str(2**63), "-3", "\u0663", "1024", "3x"])
def test_a_prometheus_gpu_label_naming_no_gpu_is_refused(gpu):
    from gpuscope.errors import NoDataError
    from gpuscope.parsers.samples.prometheus import read_prometheus

    with pytest.raises(NoDataError):
        read_prometheus(_prom(["0.5", "0.5"], gpu=gpu))
    code, _, err = cli("analyze", "-", input=_prom(["0.5", "0.5"], gpu=gpu))
    assert code == 4
    one_line(err)


def test_plain_prometheus_values_read_as_before():
    # what would make the number rules fire falsely: the API's own spellings (exponent,
    # integer, a leading minus within bounds of a temperature, NaN) and an integer time
    from gpuscope.parsers.samples.prometheus import read_prometheus

    df = read_prometheus(_prom(["1e-1", "1", "NaN"], gpu="7", times=[int(T0), T0 + 1, T0 + 2]))
    assert df["sm_active"].tolist()[:2] == [0.1, 1.0] and df["gpu"].tolist() == [7, 7, 7]
    assert df.attrs["bad_values"] == {} and df.attrs["malformed_rows"] == 0
    df = read_prometheus(_prom(["-20", "45"], name="DCGM_FI_DEV_GPU_TEMP"))
    assert df["temperature_c"].tolist() == [-20.0, 45.0]


# -- 9: the Prometheus reader's memory and its own cap -----------------------------------------

def _range_query(n: int, gpus: int = 2) -> str:
    names = ["DCGM_FI_PROF_SM_ACTIVE", "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_PROF_PCIE_RX_BYTES"]
    return json.dumps({"status": "success", "data": {"resultType": "matrix", "result": [
        {"metric": {"__name__": name, "gpu": str(g), "Hostname": "n"},
         "values": [[T0 + i, "0.5"] for i in range(n)]} for g in range(gpus) for name in names]}})


def test_a_range_query_is_read_in_a_few_times_its_size_not_26x():
    import tracemalloc

    from gpuscope.parsers.samples.prometheus import read_prometheus

    text = _range_query(10_000)  # ~1.3 MB, 60,000 points
    tracemalloc.start()
    try:
        df = read_prometheus(text)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(df) == 20_000
    assert peak < 6 * len(text), f"peak {peak / len(text):.1f}x the input"


def test_a_prometheus_result_past_its_cap_is_one_line(monkeypatch):
    monkeypatch.setenv("GPUSCOPE_MAX_PROMETHEUS", "1K")
    code, _, err = cli("analyze", "-", input=_range_query(100))
    assert code == 3 and "GPUSCOPE_MAX_PROMETHEUS" in one_line(err)


# -- 17: trace details: kernels overlapping on one stream, a bandwidth of 1e308, a fraction > 1 ---

def _kineto(tmp_path, kernels, copies=(), annotations=()):
    ev = [{"ph": "X", "cat": "kernel", "name": f"k{i % 3}", "pid": 0, "tid": 7, "ts": ts, "dur": dur,
           "args": {"device": 0, "stream": stream, "correlation": i + 1}}
          for i, (ts, dur, stream) in enumerate(kernels)]
    ev += [{"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pinned -> Device)", "pid": 0, "tid": 7,
            "ts": ts, "dur": dur, "args": {"device": 0, "stream": 7, "correlation": 900 + i, "bytes": 1_000_000,
                                           "memory bandwidth (GB/s)": gbs}}
           for i, (ts, dur, gbs) in enumerate(copies)]
    ev += [{"ph": "X", "cat": cat, "name": "fwd", "pid": 0, "tid": 1 if cat == "user_annotation" else 7,
            "ts": ts, "dur": dur, "args": {"device": 0, "stream": 7} if cat == "gpu_user_annotation" else {}}
           for cat, ts, dur in annotations]
    p = tmp_path / "t.json"
    p.write_text(json.dumps({"schemaVersion": 1, "traceEvents": ev, "deviceProperties": [
        {"id": 0, "name": "H100", "numSms": 132, "totalGlobalMem": 80_000_000_000}]}))
    return p


def _trace_json(p):
    code, out, err = cli("analyze", p, "--json")
    assert code == 0, err
    return json.loads(out)


def test_kernels_overlapping_on_one_stream_are_their_union_and_said(tmp_path):
    # 100 kernels of 1 ms each, all within 1.1 ms on one stream: 1.1 ms of kernels, not 100
    d = _trace_json(_kineto(tmp_path, [(1000.0 + i, 1000.0, 7) for i in range(100)]))
    rows = d["trace"]["kernels"]
    assert rows[0]["kernel_ms"] == pytest.approx(1.099)
    assert rows[0]["kernel_overlap_ms"] == pytest.approx(100 - 1.099)
    assert any("kernels overlap on 1 stream" in n for n in d["trace"]["trace"]["notes"])


def test_kernels_back_to_back_or_on_two_streams_are_no_overlap(tmp_path):
    # what would make the overlap note fire falsely: kernels that end where the next begins,
    # and kernels at the same time on two streams (concurrency, not damage)
    d = _trace_json(_kineto(tmp_path, [(1000.0 + 10 * i, 10.0, 7) for i in range(10)]
                            + [(1000.0 + 10 * i, 10.0, 8) for i in range(10)]))
    rows = d["trace"]["kernels"]
    assert all(r["kernel_ms"] == pytest.approx(0.1) and r["kernel_overlap_ms"] == 0 for r in rows)
    assert not any("overlap" in n for n in d["trace"]["trace"]["notes"])


@pytest.mark.parametrize("gbs", [1e308, -5.0, 1e5])
def test_a_copy_bandwidth_argument_beyond_any_link_is_damage(tmp_path, gbs):
    from gpuscope.parsers.trace.kineto import read_trace

    p = _kineto(tmp_path, [(1000.0, 10.0, 7)], copies=[(1100.0, 50.0, gbs), (1200.0, 50.0, 20.0)])
    fr = read_trace(p)
    assert fr.gpu["trace_gbs"].dropna().tolist() == [20.0] and fr.counts["damaged_bandwidth"] == 1
    assert len(fr.gpu[fr.gpu["kind"].astype(object) == "memcpy"]) == 2  # the copies themselves are read
    d = _trace_json(p)
    assert any("bandwidth argument" in n for n in d["trace"]["trace"]["notes"])


def test_a_gpu_annotation_past_the_span_gives_no_share_above_one(tmp_path):
    # the GPU-side range of an annotation reaches past the last kernel and host event
    p = _kineto(tmp_path, [(1000.0, 100.0, 7)], annotations=[("user_annotation", 1000.0, 50.0),
                                                             ("gpu_user_annotation", 1000.0, 100.1)])
    d = _trace_json(p)
    phases = d["trace"]["phases"]
    assert phases and all(r["share_of_span"] <= 1.0 and r["gpu_busy_fraction"] <= 1.0 for r in phases)


# -- 3: a hole in the samples is unknown, time going back is said --------------------------------

def _samples_csv(tmp_path, times, sm=0.9, name="samples.csv"):
    p = tmp_path / name
    rows = ["t_wall,t_mono,gpu,sm_active,gpu_util_pct"]
    rows += [f"{t:.3f},{t - times[0]:.3f},0,{sm},90" for t in times]
    p.write_text("\n".join(rows) + "\n")
    return p


def _activity(p):
    code, out, err = cli("analyze", p, "--json")
    assert code == 0, err
    return json.loads(out)["samples"]["activity"]


def test_an_hour_without_samples_is_unknown_not_computing(tmp_path):
    # 10 s of readings at 10 Hz, an hour with none, 10 s more: 20 s covered of ~3,620
    times = [T0 + i / 10 for i in range(100)] + [T0 + 3610 + i / 10 for i in range(100)]
    a = _activity(_samples_csv(tmp_path, times))
    assert a["coverage"] < 0.01 and a["wall_s"] > 3600
    assert a["classes"].get("computing", 0) < 0.01 or a["classes"].get("unknown", 0) > 0.99
    assert any("hole" in n and "unknown" in n for n in a["notes"])


def test_readings_at_an_uneven_pace_are_no_hole(tmp_path):
    # what would make the hole fire falsely: a sampler at 1 s that sometimes takes 2-3 s
    times, t = [], T0
    for i in range(200):
        times.append(t)
        t += 3.0 if i % 17 == 0 else 1.0
    a = _activity(_samples_csv(tmp_path, times))
    assert a["coverage"] == pytest.approx(1.0)
    assert not any("hole" in n or "goes back" in n for n in a["notes"])


def test_a_prometheus_scrape_gap_is_a_hole(tmp_path):
    times = [T0 + i for i in range(30)] + [T0 + 1800 + i for i in range(30)]
    p = tmp_path / "fleet.json"
    p.write_text(_prom(["0.9"] * 60, times=times))
    a = _activity(p)
    assert a["coverage"] < 0.05 and any("hole" in n for n in a["notes"])


def test_time_going_back_an_hour_is_said_and_unknown(tmp_path):
    # nvidia-smi's local time across a DST fall-back: 01:00-02:00 twice; the file in its order
    first = [T0 + i for i in range(0, 3600, 5)]
    second = [T0 + 2.5 + i for i in range(0, 3600, 5)] + [T0 + 3600 + i for i in range(0, 600, 5)]
    a = _activity(_samples_csv(tmp_path, first + second))
    assert any("goes back 1 time" in n for n in a["notes"])
    assert a["coverage"] < 0.2  # the hour read twice is unknown; the 10 minutes after it are read

"""Prometheus query results (DCGM's metrics and gpuscope's) read as samples and analyzed."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from gpuscope.cli import app
from gpuscope.errors import InputError, NoDataError
from gpuscope.parsers.samples.prometheus import looks_like_prometheus, read_prometheus

T0 = 1_796_000_000.0


def _series(name, values, **labels):
    return {"metric": {"__name__": name, "gpu": "0", "Hostname": "node1", **labels},
            "values": [[T0 + i, str(v)] for i, v in enumerate(values)]}


def _doc(*series):
    return {"status": "success", "data": {"resultType": "matrix", "result": list(series)}}


def dcgm(n=20):
    # 10 s computing (SM 0.9, tensor 0.8), then 10 s idle while PCIe RX moves 12 GB/s
    sm = [0.9] * (n // 2) + [0.0] * (n - n // 2)
    rx = [1e6] * (n // 2) + [12e9] * (n - n // 2)
    return _doc(_series("DCGM_FI_PROF_SM_ACTIVE", sm), _series("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", [x * 0.9 for x in sm]),
                _series("DCGM_FI_PROF_PCIE_RX_BYTES", rx), _series("DCGM_FI_PROF_PCIE_TX_BYTES", [0] * n),
                _series("DCGM_FI_DEV_GPU_UTIL", [100 if x else 0 for x in sm]),
                _series("DCGM_FI_DEV_POWER_USAGE", [600 if x else 90 for x in sm]),
                _series("DCGM_FI_DEV_FB_USED", [2048] * n), _series("DCGM_FI_DEV_SM_CLOCK", [1980] * n),
                _series("DCGM_FI_PROF_NVLINK_TX_BYTES", [0] * n))


def test_dcgm_columns_and_units():
    df = read_prometheus(json.dumps(dcgm()))
    assert df.attrs["format"] == "prometheus" and len(df) == 20
    assert df["sm_active"].iloc[0] == 0.9 and df["rx_gbs"].iloc[-1] == 12.0
    assert df["gpu_util_pct"].iloc[0] == 100 and df["power_w"].iloc[-1] == 90
    assert df["mem_used_mib"].iloc[0] == 2048 and df["t_wall"].iloc[0] == T0 and df["t_mono"].iloc[0] == 0
    assert df.attrs["unknown_metrics"] == {"DCGM_FI_PROF_NVLINK_TX_BYTES": 1}


def test_analyze_tells_computing_from_transferring(tmp_path):
    p = tmp_path / "fleet.json"
    p.write_text(json.dumps(dcgm()))
    r = CliRunner().invoke(app, ["analyze", str(p), "--json", "--line-rate", "50"])
    assert r.exit_code == 0, r.stderr
    cls = json.loads(r.stdout)["samples"]["activity"]["classes"]
    assert cls["computing"] == pytest.approx(9 / 19, abs=0.06) and cls["transferring"] == pytest.approx(10 / 19, abs=0.06)


def test_gpuscope_counter_becomes_a_rate_and_a_reset_is_missing():
    c = [0, 5e9, 10e9, 1e9, 6e9]
    df = read_prometheus(json.dumps(_doc(_series("gpuscope_pcie_bytes_total", c, direction="rx"),
                                         _series("gpuscope_pcie_throughput_bytes_per_second", [7e9] * 5,
                                                 direction="rx"),
                                         _series("gpuscope_sm_active_ratio", [0.5] * 5),
                                         _series("gpuscope_state_seconds_total", [1] * 5, state="idle"))))
    rx = df["rx_gbs"].tolist()
    assert rx[1:3] == [5.0, 5.0] and rx[3] != rx[3] and rx[4] == 5.0  # NaN after the reset; gauge not used
    assert df.attrs["unknown_metrics"] == {}  # derived series are not "unknown"


def test_several_hosts_are_numbered_and_named():
    d = _doc(_series("DCGM_FI_PROF_SM_ACTIVE", [0.5] * 3, Hostname="a"),
             _series("DCGM_FI_PROF_SM_ACTIVE", [0.1] * 3, Hostname="b"))
    df = read_prometheus(json.dumps(d))
    assert sorted(df["gpu"].unique().tolist()) == [0, 1]
    assert df.attrs["gpu_names"] == {0: "a gpu 0", 1: "b gpu 0"}


def test_several_responses_in_one_file_and_a_vector():
    a = json.dumps(_doc(_series("DCGM_FI_PROF_SM_ACTIVE", [0.5] * 3)))
    b = json.dumps({"status": "success", "data": {"resultType": "vector", "result": [
        {"metric": {"__name__": "DCGM_FI_DEV_POWER_USAGE", "gpu": "0"}, "value": [T0, "300"]}]}})
    df = read_prometheus(a + "\n" + b + "\n")
    assert df["power_w"].max() == 300 and df["sm_active"].max() == 0.5


@pytest.mark.parametrize("text,err,needle", [
    ('{"status": "error", "errorType": "bad_data", "error": "parse error"}', InputError, "bad_data"),
    ('{"status": "success", "data": {"resultType": "scalar", "result": [1, "2"]}}', NoDataError, "scalar"),
    ('{"status": "success", "data": {"resultType": "matrix", "result": []}}', NoDataError, "no series"),
    ('{"status": "success", "data": {"resultType": "matrix", "result": [', InputError, "invalid JSON"),
])
def test_bad_results_one_line(text, err, needle):
    with pytest.raises(err, match=needle):
        read_prometheus(text)


def test_bad_result_through_the_cli_is_one_line(tmp_path):
    p = tmp_path / "err.json"
    p.write_text('{"status": "error", "errorType": "timeout", "error": "query timed out"}')
    r = CliRunner().invoke(app, ["analyze", str(p)])
    assert r.exit_code == 3 and "timeout" in r.stderr and "Traceback" not in r.stderr


def test_detection():
    assert looks_like_prometheus(json.dumps(dcgm()).encode())
    assert not looks_like_prometheus(b'{"traceEvents": []}')


@pytest.mark.parametrize("text", [
    "[" * 100_000,
    '{"status": "success", "data": {"resultType": "matrix", "result": {"a": 1}}}',
    '{"status": "success", "data": {"resultType": "matrix", "result": [{"metric": [1], "values": 3}]}}',
    '{"status": "success", "data": {"resultType": "matrix", "result": [{"metric": {"__name__": '
    '"DCGM_FI_PROF_SM_ACTIVE", "gpu": "x"}, "values": [[1, "a"], ["b", 2], [3], null, [4, "NaN"]]}]}}',
    '[1, 2]', '"status"',
])
def test_hostile_results_are_one_error_or_read(text):
    try:
        df = read_prometheus(text)
    except (InputError, NoDataError):
        return
    assert df["gpu"].tolist() == [0] * len(df)  # 'x' names no GPU number: GPU 0


def test_standard_input_and_samples_option(tmp_path):
    text = json.dumps(dcgm())
    r = CliRunner().invoke(app, ["analyze", "-", "--json"], input=text)
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["samples"]["read"]["format"] == "prometheus"
    log = tmp_path / "t.log"
    log.write_text("step=1 step_ms=10\nstep=2 step_ms=11\n")
    hist = tmp_path / "h.json"
    hist.write_text(text)
    r = CliRunner().invoke(app, ["analyze", str(log), "--samples", str(hist), "--json"])
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["samples"]["read"]["format"] == "prometheus"

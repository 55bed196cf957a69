"""The top-kernels table of a trace (gpuscope.analysis.evidence.trace.top_kernels): names shortened readably,
count, total, share, median; in analyze --json (`top_kernels`) and the console; and a trace's
record_function ranges in the Perfetto export under their whole names."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from typer.testing import CliRunner

from gpuscope.analysis.evidence.trace.top_kernels import short_name, top_kernels, unique_short_names
from gpuscope.cli import app
from tests.conftest import DATA

TRACES = DATA / "h200_foreign" / "traces"
runner = CliRunner()


@pytest.mark.parametrize(("name", "short"), [
    ("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
     "at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<float>, at::detail::Array<char*, 3>)",
     "vectorized_elementwise_kernel<…>"),  # namespaces dropped while too long
    ("void at::native::(anonymous namespace)::max_pool_backward_nchw<float, float, int>(float const*, int)",
     "at::native::max_pool_backward_nchw<…>"),
    ("nvjet_sm90_tst_320x128_64x3_1x2_h_bz_coopB_NNT", "nvjet_sm90_tst_320x128…_h_bz_coopB_NNT"),
    ("_ZN17cutlass__5x_cudnn6KernelINS_4conv6kernelEEEvNT_6ParamsE", "cutlass__5x_cudnn::Kernel<…>"),
    ("ampere_sgemm_128x64_tn", "ampere_sgemm_128x64_tn"),
])
def test_short_names(name, short):
    got = short_name(name)
    assert got == short and len(got) <= 38


def test_names_that_would_read_alike_keep_what_tells_them_apart():
    a = "void k<float, (T)0>(float const*)"
    b = "void k<float, (T)2>(float const*)"
    assert unique_short_names([a, b]) == ["k<float, (T)0>", "k<float, (T)2>"]
    long = "x" * 50
    a, b = unique_short_names([long + "_a" + "y" * 20 + "_z", long + "_b" + "y" * 20 + "_z"])  # cut alike
    assert a != b and b.endswith(" (2)")


def _gpu(rows):
    df = pd.DataFrame(rows, columns=["kind", "name", "dur_us"])
    return df.assign(kind=df["kind"].astype("category"), name=df["name"].astype("category"))


def test_figures_count_total_share_median_and_copies_left_out():
    rows = [("kernel", "a", 10.0), ("kernel", "a", 30.0), ("kernel", "a", 20.0), ("kernel", "b", 100.0),
            ("memcpy", "Memcpy HtoD", 5000.0)]
    got = top_kernels(_gpu(rows))
    assert [r["name"] for r in got] == ["b", "a"]
    b, a = got
    assert (a["count"], a["total_ms"], a["median_us"], a["max_us"]) == (3, 0.06, 20.0, 30.0)
    assert b["share"] == pytest.approx(100 / 160) and a["share"] == pytest.approx(60 / 160)
    assert top_kernels(_gpu([("memcpy", "m", 1.0)])) == []


def test_analyze_json_of_a_trace_has_top_kernels_and_the_console_shows_them():
    r = runner.invoke(app, ["analyze", str(TRACES / "train_slow.json.gz"), "--json"])
    assert r.exit_code == 0, r.output
    tk = json.loads(r.output)["trace"]["top_kernels"]
    assert 1 <= len(tk) <= 20
    assert [x["total_ms"] for x in tk] == sorted((x["total_ms"] for x in tk), reverse=True)
    first = tk[0]
    assert first["name"].startswith("void cudnn::") and first["count"] == 255
    assert sum(x["share"] for x in tk) <= 1.0 + 1e-9
    r = runner.invoke(app, ["analyze", str(TRACES / "train_slow.json.gz")], env={"COLUMNS": "80"})
    assert "Top kernels (by total GPU time)" in r.output
    line = next(ln for ln in r.output.splitlines() if first["short_name"] in ln)
    assert "255" in line and f"{first['share'] * 100:.1f}%" in line and f"{first['median_us']:.1f}" in line


def test_record_function_ranges_export_under_their_whole_names(tmp_path):
    out = tmp_path / "t.json"
    r = runner.invoke(app, ["export", str(TRACES / "train_slow.json.gz"), "--perfetto", str(out)])
    assert r.exit_code == 0, r.output
    ann = [e for e in json.loads(out.read_text())["traceEvents"] if e.get("cat") == "user_annotation"]
    names = {e["name"] for e in ann}
    assert "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__" in names
    assert {"forward_backward", "data", "ProfilerStep"} <= names


def test_ranges_as_they_ran_on_the_gpu_sit_under_their_stream(tmp_path):
    """A trace's gpu_user_annotation spans: a thin row under their stream in the picture, a
    'stream N ranges (on the GPU)' thread in the export; the profiler's step ranges left out."""
    out = tmp_path / "t.json"
    r = runner.invoke(app, ["export", str(TRACES / "train_slow.json.gz"), "--perfetto", str(out)])
    assert r.exit_code == 0, r.output
    evs = json.loads(out.read_text())["traceEvents"]
    threads = {(e["pid"], e["tid"]): e["args"]["name"] for e in evs if e["name"] == "thread_name"}
    gpu_side = [e for e in evs if e.get("cat") == "gpu_user_annotation"]
    assert {e["name"] for e in gpu_side} == {"data", "forward_backward", "Optimizer.step#SGD.step"}
    assert {threads[(e["pid"], e["tid"])] for e in gpu_side} == {"stream 7 ranges (on the GPU)"}

    from gpuscope.analysis.timeline_view import timeline_view
    from gpuscope.reports.lanes import assign_lanes
    from gpuscope.sources import open_source

    lanes = assign_lanes(timeline_view(open_source(TRACES / "train_slow.json.gz")).phases, noun="stream")
    stream = next(lane for lane in lanes if lane.label == "stream 7")
    assert len(stream.side) == 9 and stream.side["phase"].str.startswith("gpu_range:").all()


def test_missing_or_negative_durations_count_as_zero_and_the_frame_is_left_alone():
    """A NaN or negative duration counts 0 (fillna(0).clip(lower=0)), a name-less kernel is left
    out, copies are not kernels, and the frame's own column is not written."""
    dur = [5.0, float("nan"), -3.0, 2.0, 7.0, 1.0]
    gpu = pd.DataFrame({"kind": pd.Categorical(["kernel"] * 5 + ["memcpy"]),
                        "name": pd.Categorical(["a", "a", "b", "b", None, "a"]), "dur_us": dur})
    rows = {r["name"]: r for r in top_kernels(gpu)}
    assert set(rows) == {"a", "b"}
    assert (rows["a"]["count"], rows["a"]["total_ms"], rows["a"]["median_us"]) == (2, 0.005, 2.5)
    assert (rows["b"]["count"], rows["b"]["total_ms"], rows["b"]["max_us"]) == (2, 0.002, 2.0)
    assert rows["a"]["share"] == pytest.approx(5 / 14)  # (of all kernel time, the name-less one too)
    assert gpu["dur_us"].isna().sum() == 1 and gpu["dur_us"].min() == -3.0

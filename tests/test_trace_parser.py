"""parsers.kineto: the H200 captures read exactly, detection by content, bad input."""

from __future__ import annotations

import gzip
import json

import numpy as np
import pytest

from gpuscope.errors import InputError, NoDataError
from gpuscope.parsers.trace.kineto import is_trace, memcpy_kind, memset_memory, read_trace
from gpuscope.schemas import TRACE_GPU_SCHEMA, TRACE_HOST_SCHEMA
from tests.conftest import DATA
from tools.gen_trace import TraceBuilder

TRACES = DATA / "h200_foreign" / "traces"
MIB = 1 << 20


def _copies(fr):
    return fr.gpu[fr.gpu["kind"] == "memcpy"]


def test_pageable_capture_read_exactly():
    fr = read_trace(TRACES / "copy_pageable.json.gz")
    m = _copies(fr)
    assert len(m) == 12
    assert int(m["bytes"].sum()) == 6_442_450_944
    assert set(m["direction"]) == {"HtoD"} and set(m["host_memory"]) == {"pageable"}
    assert fr.skipped_events == 0 and not fr.truncated and fr.ranks == [0]
    assert fr.epoch_offset_s == pytest.approx(1_790_857_026.0)
    # epoch = baseTimeNanoseconds / 1e9 + ts / 1e6: the capture was made on 2026-12-01
    assert 1_796_000_000 < float(fr.epoch(m["ts_us"].iloc[0])) < 1_797_000_000
    assert dict(fr.gpu.dtypes.astype(str)) == TRACE_GPU_SCHEMA
    assert dict(fr.host.dtypes.astype(str)) == TRACE_HOST_SCHEMA
    assert fr.devices["name"].tolist() == ["NVIDIA H200"] and fr.devices["num_sms"].tolist() == [132]


def test_pinned_and_sync_captures():
    m = _copies(read_trace(TRACES / "copy_pinned.json.gz"))
    assert len(m) == 12 and set(m["host_memory"]) == {"pinned"}
    s = read_trace(TRACES / "sync_bound.json.gz")
    d = _copies(s)
    assert len(d) == 400 and set(d["direction"]) == {"DtoH"} and set(d["bytes"]) == {4.0}
    assert (s.host["name"] == "cudaStreamSynchronize").sum() == 400


def test_tensorboard_folder_reads_as_one_rank():
    fr = read_trace(TRACES / "train_fast_tb")
    assert fr.ranks == [0] and len(fr.files) == 1 and fr.files[0].endswith(".pt.trace.json.gz")
    assert (fr.gpu["kind"] == "kernel").sum() == 1149


def test_memcpy_and_memset_names():
    assert memcpy_kind("Memcpy HtoD (Pageable -> Device)") == ("HtoD", "pageable")
    assert memcpy_kind("Memcpy DtoH (Device -> Pinned)") == ("DtoH", "pinned")
    assert memcpy_kind("Memcpy DtoH (Device -> Pageable)") == ("DtoH", "pageable")
    assert memcpy_kind("Memcpy DtoD (Device -> Device)") == ("DtoD", "device")
    assert memcpy_kind("Memcpy PtoP (Device -> Device)") == ("PtoP", "device")
    assert memcpy_kind("Memcpy HtoD (Managed -> Device)") == ("HtoD", "managed")
    assert memcpy_kind("Memcpy HtoD") == ("HtoD", "unknown")
    assert memcpy_kind("CopyHostToDevice") == ("HtoD", "unknown")
    assert memset_memory("Memset (Device)") == "device"


def test_detection_by_content(tmp_path):
    assert is_trace(TRACES / "copy_pageable.json.gz")
    assert is_trace(TRACES / "train_fast_tb")
    assert not is_trace(DATA / "h200_foreign" / "capture.log")
    assert not is_trace(DATA / "h200_foreign" / "bandwidth.json")  # JSON, not a trace
    assert not is_trace(tmp_path / "missing.json")
    assert is_trace(b'{"schemaVersion": 1, "traceEvents": [')
    assert is_trace('[{"ph": "X", "ts": 1, "dur": 2}]')
    assert not is_trace("step=1 h2d_ms=3")
    log = tmp_path / "run.json"
    log.write_text('{"a": 1}')
    assert not is_trace(log)


def _doc(events, **header):
    return {"schemaVersion": 1, **header, "traceEvents": events}


def test_older_layout_int_ts_no_base_time_and_old_categories():
    events = [
        {"ph": "X", "cat": "Kernel", "name": "k", "pid": 0, "tid": 7, "ts": 100, "dur": 50,
         "args": {"device": 0, "stream": 7, "correlation": 5}},
        {"ph": "X", "cat": "Memcpy", "name": "Memcpy HtoD (Pinned -> Device)", "pid": 0, "tid": 7,
         "ts": 200, "dur": 10, "args": {"device": 0, "stream": 7, "bytes": 1000}},
        {"ph": "X", "cat": "Runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 90, "dur": 5,
         "args": {"correlation": 5}},
    ]
    fr = read_trace(json.dumps(_doc(events)))
    assert fr.epoch_offset_s is None and any("baseTimeNanoseconds" in n for n in fr.notes)
    assert sorted(fr.gpu["kind"]) == ["kernel", "memcpy"]
    assert fr.host["cat"].tolist() == ["cuda_runtime"] and fr.host["correlation"].tolist() == [5]


def test_bad_events_skipped_and_counted():
    events = [
        {"ph": "X", "cat": "kernel", "name": "ok", "pid": 0, "tid": 7, "ts": 1.0, "dur": 2.0,
         "args": {"device": 0, "stream": 7}},
        {"ph": "X", "cat": "kernel", "name": "no dur", "pid": 0, "tid": 7, "ts": 1.0},
        {"ph": "X", "cat": "kernel", "name": "negative", "pid": 0, "tid": 7, "ts": 1.0, "dur": -3},
        {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pageable -> Device)", "pid": 0, "tid": 7,
         "ts": 5.0, "dur": 1.0, "args": {"device": 0, "stream": 7}},
        {"ph": "X", "cat": "kernel", "name": "no device", "pid": "GPU", "tid": "x", "ts": 1.0, "dur": 1.0},
        {"ph": "X", "cat": "kernel", "name": "string ts", "pid": 0, "tid": 7, "ts": "abc", "dur": 1.0},
        {"ph": "X", "cat": "kernel", "name": "args a list", "pid": 0, "tid": 7, "ts": 1.0, "dur": 1.0,
         "args": [1, 2]},
        "not an event",
    ]
    fr = read_trace(json.dumps(_doc(events)))
    assert fr.gpu["name"].tolist() == ["ok"]
    reasons = fr.skipped["reason"].tolist()
    assert fr.skipped_events == 7
    assert "no valid dur" in reasons and "memcpy without bytes" in reasons and "no device/stream" in reasons
    assert sum(r.startswith("malformed event") for r in reasons) == 3
    assert "generic" in fr.reader


def test_malformed_json_is_input_error(tmp_path):
    p = tmp_path / "bad.json"
    p.write_text('{"traceEvents": [{"ph": "X", "ts": 1, "dur": 1} {"ph": "X"}], "x": 1}')
    with pytest.raises(InputError, match="not valid JSON"):
        read_trace(p)
    p.write_text("{not json at all")
    with pytest.raises(InputError, match="not valid JSON"):
        read_trace(p)


def test_empty_and_eventless_traces(tmp_path):
    p = tmp_path / "empty.json"
    p.write_text("")
    with pytest.raises(NoDataError, match="empty"):
        read_trace(p)
    p.write_text(json.dumps(_doc([])))
    with pytest.raises(NoDataError, match="no events"):
        read_trace(p)
    p.write_text(json.dumps({"deviceProperties": []}))
    with pytest.raises(NoDataError, match="traceEvents"):
        read_trace(p)
    p.write_text(json.dumps(_doc([{"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "x"}}])))
    with pytest.raises(NoDataError, match="no kernel"):
        read_trace(p)
    with pytest.raises(InputError, match="no such file"):
        read_trace(tmp_path / "nope.json.gz")
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "notes.json").write_text('{"a": 1}')
    with pytest.raises(NoDataError, match="no profiler traces"):
        read_trace(tmp_path / "d")


def test_truncated_gz_is_read_up_to_its_cut(tmp_path):
    full = gzip.decompress((TRACES / "copy_pageable.json.gz").read_bytes())
    whole = read_trace(TRACES / "copy_pageable.json.gz")
    cut = tmp_path / "cut.json.gz"
    cut.write_bytes(gzip.compress(full)[: len(gzip.compress(full)) // 2])
    fr = read_trace(cut)
    assert fr.truncated and any("truncated" in n for n in fr.notes)
    assert 0 < len(fr.gpu) < len(whole.gpu)
    assert fr.epoch_offset_s == whole.epoch_offset_s  # the header before traceEvents survives
    cut.write_bytes(gzip.compress(full)[:12])
    with pytest.raises(InputError, match="truncated gzip"):
        read_trace(cut)
    cut.write_bytes(b"\x1f\x8b\x08\x00" + b"\xff" * 64)
    with pytest.raises(InputError, match="gzip"):
        read_trace(cut)


def test_truncated_plain_json_and_nan_literals(tmp_path):
    b = TraceBuilder()
    for i in range(50):
        b.launch(i * 20.0, i * 20.0 + 8, 6.0)
    text = json.dumps(b.document())
    p = tmp_path / "cut.json"
    p.write_text(text[: int(len(text) * 0.7)])
    fr = read_trace(p)
    assert fr.truncated and 0 < (fr.gpu["kind"] == "kernel").sum() < 50
    p.write_text(text.replace('"dur": 6.0', '"dur": NaN', 1))  # stdlib-style NaN: that event skipped
    fr = read_trace(p)
    assert not fr.truncated and (fr.gpu["kind"] == "kernel").sum() == 49 and fr.skipped_events == 1


def test_folder_of_two_ranks_on_one_clock(tmp_path):
    for rank, base in ((0, 1_790_000_000_000_000_000), (1, 1_790_000_000_000_500_000)):
        b = TraceBuilder(rank=rank, base_ns=base, t0=1000.0)
        b.launch(0.0, 10.0, 100.0)
        b.write(tmp_path / f"worker{rank}.123.pt.trace.json.gz")
    (tmp_path / "README.json").write_text('{"not": "a trace"}')
    fr = read_trace(tmp_path)
    assert fr.ranks == [0, 1] and len(fr.files) == 2
    k = fr.gpu[fr.gpu["kind"] == "kernel"].sort_values("rank")
    # rank 1's base is 500 us later: on the common clock its kernel starts 500 us later
    assert np.diff(k["ts_us"].to_numpy()) == pytest.approx([500.0])
    assert fr.epoch_offset_s == pytest.approx(1_790_000_000.0)
    assert sorted(fr.devices["rank"]) == [0, 1]


def test_bytes_input_gz_and_plain():
    raw = (TRACES / "copy_pinned.json.gz").read_bytes()
    assert len(_copies(read_trace(raw))) == 12
    assert len(_copies(read_trace(gzip.decompress(raw)))) == 12

"""A JAX / XLA profiler trace (perfetto_trace.json.gz's Chrome JSON, written here in its shape:
devices as `/device:GPU:<n>` processes, streams as `Stream #<id>(...)` threads, copies named
MemcpyH2D / MemcpyD2H with their `memcpy_details`) read as a PyTorch trace is: its kernels per
stream (the `XLA Ops` summary thread not counted again), its copies' bytes and host memory kinds,
and the same rules (pageable copies). Each figure asserted is worked out from the events here."""

from __future__ import annotations

import gzip
import json

import pytest
from typer.testing import CliRunner

from gpuscope.cli import app
from gpuscope.parsers.trace.kineto import read_trace

MB64 = 64 << 20


def _trace(steps: int = 20, details: str = "kind_src:pageable kind_dst:device size:{size} dest:0 async:0") -> dict:
    ev = [{"ph": "M", "pid": 7, "name": "process_name", "args": {"name": "/device:GPU:0"}},
          {"ph": "M", "pid": 7, "tid": 14, "name": "thread_name", "args": {"name": "Stream #14(Compute)"}},
          {"ph": "M", "pid": 7, "tid": 15, "name": "thread_name", "args": {"name": "Stream #15(MemcpyH2D)"}},
          {"ph": "M", "pid": 7, "tid": 3, "name": "thread_name", "args": {"name": "XLA Ops"}},
          {"ph": "M", "pid": 9, "name": "process_name", "args": {"name": "/host:CPU"}},
          {"ph": "M", "pid": 9, "tid": 100, "name": "thread_name", "args": {"name": "python3"}}]
    t = 1000.0
    for _ in range(steps):
        ev += [{"ph": "X", "pid": 9, "tid": 100, "ts": t, "dur": 4900.0, "name": "PjitFunction(train_step)"},
               {"ph": "X", "pid": 7, "tid": 15, "ts": t + 50, "dur": 4000.0, "name": "MemcpyH2D",
                "args": {"correlation_id": "7", "memcpy_details": details.format(size=MB64)}},
               {"ph": "X", "pid": 7, "tid": 14, "ts": t + 4100, "dur": 800.0, "name": "fusion_12",
                "args": {"hlo_op": "fusion.12", "hlo_module": "jit_train_step", "correlation_id": "8"}},
               {"ph": "X", "pid": 7, "tid": 3, "ts": t + 4100, "dur": 800.0, "name": "fusion.12", "args": {}}]
        t += 5000.0
    return {"displayTimeUnit": "ns", "traceEvents": ev}


def _write(tmp_path, doc: dict):
    path = tmp_path / "perfetto_trace.json.gz"
    path.write_bytes(gzip.compress(json.dumps(doc).encode()))
    return path


def test_streams_kernels_and_copies_in_kinetos_words(tmp_path):
    f = read_trace(_write(tmp_path, _trace()))
    kernels = f.gpu[f.gpu["kind"] == "kernel"]
    copies = f.gpu[f.gpu["kind"] == "memcpy"]
    assert len(kernels) == 20 and set(kernels["stream"]) == {14}  # (XLA Ops' 20 summaries not counted)
    assert len(copies) == 20 and set(copies["stream"]) == {15} and set(f.gpu["device"]) == {0}
    assert copies["bytes"].sum() == 20 * MB64
    assert set(copies["direction"].astype(str)) == {"HtoD"} and set(copies["host_memory"].astype(str)) == {"pageable"}
    assert f.counts["host_unread"] == 20 and any("JAX / XLA" in n for n in f.notes)


def test_the_older_one_kind_details_give_the_host_side(tmp_path):
    f = read_trace(_write(tmp_path, _trace(4, "kind:pinned size:{size} dest:0 async:1")))
    copies = f.gpu[f.gpu["kind"] == "memcpy"]
    assert set(copies["host_memory"].astype(str)) == {"pinned"} and copies["bytes"].sum() == 4 * MB64


def test_pageable_copies_of_a_jax_trace_named_with_their_figures(tmp_path):
    path = _write(tmp_path, _trace())
    r = CliRunner().invoke(app, ["analyze", str(path), "--json", "--line-rate", "50"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    first = doc["findings"][0]
    assert first["id"] == "pageable_memcpy"
    gbs = 20 * MB64 / 1e9 / (20 * 4000e-6)  # bytes over the copies' own time
    assert first["evidence"]["gbs"] == pytest.approx(gbs, rel=1e-3) and first["evidence"]["count"] == 20
    assert not any("ProfilerActivity.CPU" in n for n in doc["trace"]["trace"]["notes"])
    # the advice in JAX's words, not PyTorch's
    assert "pinned_host" in first["recommendation"] and "tensor.pin_memory" not in first["recommendation"]


def test_the_advice_speaks_the_tracing_programs_words():
    from gpuscope.analysis.rules.trace_words import pin_how

    assert "tensor.pin_memory()" in pin_how("msgspec") and "cudaHostRegister" in pin_how("sqlite3")
    assert "pinned_host" in pin_how("msgspec (an XLA trace, read as Kineto's)")

"""Nsight Systems SQLite exports (parsers/trace/nsys_sqlite.py) read as profiler traces.

The real exports live in ../shared/data/nsight/ (SOURCES.md there; never copied into the
project): every figure asserted about them is checked against an independent SQL query written
here, decoded through the file's own ENUM tables, not against gpuscope's own output. The small
exports of the last tests are written here with sqlite3, on the real schema's column names."""

from __future__ import annotations

import functools
import json
import sqlite3
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from gpuscope.analysis.document import trace_doc
from gpuscope.analysis.evidence import collect
from gpuscope.analysis.rules.registry import run_rules
from gpuscope.analysis.trace_analysis import analyze_trace
from gpuscope.cli import app
from gpuscope.errors import InputError, UsageError
from gpuscope.parsers.trace.nsys_sqlite import read_nsys_sqlite

NSIGHT = Path(__file__).parents[2] / "shared" / "data" / "nsight"
EXPORTS = ("h100_2gpu_1s", "mfu_2gpu_before", "mfu_2gpu_after", "nsight-2025.5.2")
needs_exports = pytest.mark.skipif(not NSIGHT.is_dir(), reason=f"the real Nsight exports are not at {NSIGHT} "
                                   "(the CI lays shared/ beside the checkout)")
runner = CliRunner()

# the test's own reading of the ENUM symbols (independent of the reader's)
DIRECTION = {"CUDA_MEMCPY_KIND_HTOD": "HtoD", "CUDA_MEMCPY_KIND_DTOH": "DtoH", "CUDA_MEMCPY_KIND_DTOD": "DtoD",
             "CUDA_MEMCPY_KIND_PTOP": "PtoP", "CUDA_MEMCPY_KIND_HTOH": "HtoH"}
MEMORY = {"CUDA_MEMOPR_MEMORY_KIND_PAGEABLE": "pageable", "CUDA_MEMOPR_MEMORY_KIND_PINNED": "pinned",
          "CUDA_MEMOPR_MEMORY_KIND_DEVICE": "device", "CUDA_MEMOPR_MEMORY_KIND_MANAGED": "managed"}



def _traced(fr):
    """The export's trace analysis with its diagnoses (the trace rules through the one engine)."""
    a = analyze_trace(fr, line_rate_gbs=50.0, line_rate_source="test")
    a.findings = run_rules(collect(trace=a))
    return a


def _doc(a) -> dict:
    """The trace part of the document, with the trace's findings (as `findings` has them)."""
    return {**trace_doc(a), "findings": [d.to_json() for d in a.findings]}

def _path(name: str) -> Path:
    return NSIGHT / f"{name}.sqlite"


def _sql(name: str, q: str, *args) -> list[tuple]:
    con = sqlite3.connect(f"{_path(name).as_uri()}?mode=ro", uri=True)
    try:
        return con.execute(q, args).fetchall()
    finally:
        con.close()


def _union_ms(rows) -> float:
    """Length of the union of (start, end) ns intervals, in ms (the test's own sweep)."""
    total, cur_s, cur_e = 0, None, None
    for s, e in sorted(rows):
        if cur_e is None or s > cur_e:
            if cur_e is not None:
                total += cur_e - cur_s
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    if cur_e is not None:
        total += cur_e - cur_s
    return total / 1e6


@functools.cache
def _analysis(name: str) -> dict:
    return _doc(_traced(read_nsys_sqlite(_path(name))))


@needs_exports
@pytest.mark.parametrize("name", EXPORTS)
def test_copies_by_direction_and_memory_kind_match_the_exports_own_enums(name):
    rows = _sql(name, """
        SELECT o.name, s.name, d.name, count(*), sum(m.bytes), sum(m."end" - m.start)
        FROM CUPTI_ACTIVITY_KIND_MEMCPY m
        JOIN ENUM_CUDA_MEMCPY_OPER o ON o.id = m.copyKind
        JOIN ENUM_CUDA_MEM_KIND s ON s.id = m.srcKind JOIN ENUM_CUDA_MEM_KIND d ON d.id = m.dstKind
        GROUP BY 1, 2, 3""")
    want = {}
    for op, src, dst, n, nbytes, ns in rows:
        direction = DIRECTION[op]
        host = "device" if direction in ("DtoD", "PtoP") else MEMORY[dst if direction == "DtoH" else src]
        c, b, t = want.get((direction, host), (0, 0, 0))
        want[(direction, host)] = (c + n, b + nbytes, t + ns)
    got = {(r["direction"], r["host_memory"]): r for r in _analysis(name)["memcpy"]}
    assert set(got) == set(want)
    for key, (n, nbytes, ns) in want.items():
        r = got[key]
        assert (r["count"], r["bytes"]) == (n, nbytes), key
        assert r["ms"] == pytest.approx(ns / 1e6, rel=1e-9)
        assert r["gbs"] == pytest.approx(nbytes / ns, rel=1e-9)  # achieved rate: bytes / summed time


@needs_exports
def test_the_h100_trap_kind_1_is_pinned_and_kind_0_pageable():
    """nsys-ai reads srcKind backwards; the file's ENUM_CUDA_MEM_KIND says 0 PAGEABLE, 1 PINNED."""
    (pinned, pinned_b), = _sql("h100_2gpu_1s", """
        SELECT count(*), sum(bytes) FROM CUPTI_ACTIVITY_KIND_MEMCPY
        WHERE copyKind = (SELECT id FROM ENUM_CUDA_MEMCPY_OPER WHERE name = 'CUDA_MEMCPY_KIND_HTOD')
          AND srcKind = (SELECT id FROM ENUM_CUDA_MEM_KIND WHERE name = 'CUDA_MEMOPR_MEMORY_KIND_PINNED')""")
    (pageable,), = _sql("h100_2gpu_1s", """
        SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY
        WHERE copyKind = (SELECT id FROM ENUM_CUDA_MEMCPY_OPER WHERE name = 'CUDA_MEMCPY_KIND_HTOD')
          AND srcKind = (SELECT id FROM ENUM_CUDA_MEM_KIND WHERE name = 'CUDA_MEMOPR_MEMORY_KIND_PAGEABLE')""")
    assert (pinned, pageable) == (446, 4)  # SOURCES.md's figures, from the file's own enums
    g = read_nsys_sqlite(_path("h100_2gpu_1s")).gpu
    htod = g[g["direction"].astype(object) == "HtoD"]
    assert int((htod["host_memory"].astype(object) == "pinned").sum()) == pinned
    assert htod[htod["host_memory"].astype(object) == "pinned"]["bytes"].sum() == pinned_b
    assert int((htod["host_memory"].astype(object) == "pageable").sum()) == pageable
    # 50.95 GB of pinned copies get no pinning advice: what would make pageable_memcpy fire falsely
    j = _analysis("h100_2gpu_1s")
    assert all(d["id"] != "pageable_memcpy" or d["evidence"].get("count", 0) <= pageable for d in j["findings"])


@needs_exports
@pytest.mark.parametrize("name", EXPORTS)
def test_kernel_busy_time_per_device_matches_a_union_in_sql(name):
    devices = [d for (d,) in _sql(name, "SELECT DISTINCT deviceId FROM CUPTI_ACTIVITY_KIND_KERNEL")]
    j = _analysis(name)
    got = {d["device"]: d for d in j["activity"]["devices"]}
    for dev in devices:
        rows = _sql(name, 'SELECT start, "end" FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE deviceId = ?', dev)
        assert got[dev]["kernel_s"] * 1e3 == pytest.approx(_union_ms(rows), rel=1e-9)
    (n,), = _sql(name, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL")
    assert sum(k["kernels"] for k in j["kernels"]) == n


@needs_exports
@pytest.mark.parametrize("name", ["mfu_2gpu_before", "mfu_2gpu_after"])
def test_nvtx_phase_gpu_time_is_the_work_its_launches_made(name):
    """Runtime calls inside the range on its own thread -> correlationId (per process) -> GPU work.
    NCCL's ranges: ncclSend/ncclRecv inside a group launch nothing; ncclGroupEnd launches the kernels."""
    phase = "ncclGroupEnd"
    named = "coalesce(n.text, si.value) = :p"
    con = sqlite3.connect(f"{_path(name).as_uri()}?mode=ro", uri=True)
    try:
        (count,), = con.execute(f"SELECT count(*) FROM NVTX_EVENTS n LEFT JOIN StringIds si ON si.id = n.textId "
                                f"WHERE n.eventType = 59 AND {named}", {"p": phase}).fetchall()
        work = con.execute(f"""
            WITH r AS MATERIALIZED (SELECT n.start s, n."end" e, n.globalTid t FROM NVTX_EVENTS n
                       LEFT JOIN StringIds si ON si.id = n.textId WHERE n.eventType = 59 AND {named}),
                 c AS MATERIALIZED (SELECT DISTINCT rt.correlationId c, (rt.globalTid >> 24) << 24 p
                       FROM CUPTI_ACTIVITY_KIND_RUNTIME rt JOIN r ON rt.globalTid = r.t
                       WHERE rt.start >= r.s AND rt.start <= r.e),
                 g AS (SELECT start, "end", correlationId, globalPid FROM CUPTI_ACTIVITY_KIND_KERNEL
                       UNION ALL SELECT start, "end", correlationId, globalPid FROM CUPTI_ACTIVITY_KIND_MEMCPY
                       UNION ALL SELECT start, "end", correlationId, globalPid FROM CUPTI_ACTIVITY_KIND_MEMSET)
            SELECT g.globalPid, g.start, g."end" FROM g JOIN c ON g.correlationId = c.c AND g.globalPid = c.p""",
                           {"p": phase}).fetchall()
    finally:
        con.close()
    assert count > 0 and work
    (row,) = [p for p in _analysis(name)["phases"] if p["phase"] == phase]
    assert row["count"] == count
    # each process (rank) its own union, summed: the ranks' GPUs are different devices
    per_process = sum(_union_ms([(s, e) for q, s, e in work if q == p]) for p in {q for q, _, _ in work})
    assert row["gpu_busy_ms"] == pytest.approx(per_process, rel=1e-6)


@needs_exports
def test_emit_nvtx_operator_ranges_are_operators_and_the_rest_phases():
    (ops,), = _sql("mfu_2gpu_before", "SELECT count(*) FROM NVTX_EVENTS n LEFT JOIN StringIds si ON si.id = n.textId "
                                      "WHERE instr(coalesce(n.text, si.value), ', op_id = ') > 0")
    (others,), = _sql("mfu_2gpu_before", "SELECT count(*) FROM NVTX_EVENTS n LEFT JOIN StringIds si ON si.id = n.textId "
                                         "WHERE n.eventType = 59 AND instr(coalesce(n.text, si.value), 'op_id') = 0")
    fr = read_nsys_sqlite(_path("mfu_2gpu_before"))
    host = fr.host
    cat = host["cat"].astype(object)
    assert fr.counts["cpu_op"] == ops and fr.counts["user_annotation"] == others
    # every annotation is a row; of the operators only those named like a collective, a data
    # loader or a read-back (the rest are summarised: parsers/trace/nsys_host.py)
    assert int((cat == "user_annotation").sum()) == others
    kept = {n: c for n, c in _sql("mfu_2gpu_before", "SELECT substr(text, 1, instr(text, ',') - 1) AS n, count(*) "
                                                     "FROM NVTX_EVENTS WHERE instr(text, ', op_id = ') > 0 AND "
                                                     "(n LIKE 'c10d::%' OR n LIKE 'nccl:%' OR n LIKE 'gloo:%' OR "
                                                     "n IN ('aten::item', 'aten::_local_scalar_dense')) GROUP BY n")}
    assert kept and host[cat == "cpu_op"]["name"].astype(object).value_counts().to_dict() == kept
    for p in _analysis("mfu_2gpu_before")["phases"]:
        assert "op_id" not in p["phase"]
    sends = [p for p in _analysis("mfu_2gpu_before")["phases"] if p["phase"] == "ncclSend"]
    assert sends and sends[0]["gpu_busy_ms"] == 0.0  # batched into the group: launched at ncclGroupEnd


@needs_exports
def test_devices_epoch_and_what_is_missing_are_said():
    fr = read_nsys_sqlite(_path("nsight-2025.5.2"))
    (name, sms, mem), = _sql("nsight-2025.5.2", "SELECT name, smCount, totalMemory FROM TARGET_INFO_GPU")
    assert fr.devices[["name", "num_sms", "total_mem_bytes"]].iloc[0].tolist() == [name, sms, float(mem)]
    (epoch,), = _sql("nsight-2025.5.2", "SELECT utcEpochNs FROM TARGET_INFO_SESSION_START_TIME")
    assert fr.epoch_offset_s == epoch / 1e9
    (first,), = _sql("nsight-2025.5.2", "SELECT min(start) FROM CUPTI_ACTIVITY_KIND_KERNEL")
    assert fr.gpu[fr.gpu["kind"] == "kernel"]["ts_us"].min() == first / 1e3
    h100 = read_nsys_sqlite(_path("h100_2gpu_1s"))
    assert any("TARGET_INFO_GPU" in n for n in h100.notes)
    # one rank per process: pid decoded from globalTid, correlation ids stay per process
    pids = sorted(p for (p,) in _sql("h100_2gpu_1s", "SELECT DISTINCT (globalPid >> 24) & 16777215 "
                                                      "FROM CUPTI_ACTIVITY_KIND_KERNEL"))
    assert h100.ranks == [0, 1] and sorted(set(h100.host["pid"][h100.host["cat"] == "cuda_runtime"])) == pids
    assert [k & 16777215 for k in h100.host_summary.pkey.values()] == pids  # (rank order: pid order)


def cli(*args):
    return runner.invoke(app, [str(a) for a in args], env={"COLUMNS": "100"})


@needs_exports
def test_analyze_a_report_names_its_first_cause():
    r = cli("analyze", _path("h100_2gpu_1s"), "--json", "--line-rate", "50")
    assert r.exit_code == 0, r.stderr
    j = json.loads(r.stdout)
    assert j["source"]["kind"] == "trace" and j["log"] is None and j["trace"]["trace"]["reader"] == "sqlite3"
    # 95% of the second is pinned HtoD copies with no kernel beside them (SQL: HtoD time / span)
    (htod_ns,), = _sql("h100_2gpu_1s", "SELECT sum(\"end\" - start) FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE copyKind = 1")
    assert htod_ns / 1e9 / j["trace"]["activity"]["device_span_s"] > 0.9
    # pinned copies at 55% of the given line, another GPU copying beside them: their rate is the story
    # (rules/pinned_rate.py), their serialisation with kernels beside it
    ids = [d["id"] for d in j["findings"]]
    assert ids[0] == "pinned_copies_slow" and "copies_not_overlapped" in ids


@needs_exports
def test_compare_a_real_before_and_after_pair():
    r = cli("compare", _path("mfu_2gpu_before"), _path("mfu_2gpu_after"), "--json")
    assert r.exit_code == 0, r.stderr
    j = json.loads(r.stdout)
    (before,), = _sql("mfu_2gpu_before", "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY")
    (after,), = _sql("mfu_2gpu_after", "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY")
    assert sum(m["count"] for m in j["a"]["memcpy"]) == before
    assert sum(m["count"] for m in j["b"]["memcpy"]) == after


# -- small exports written here: the real tables' column names, without ENUM_* or TARGET_INFO_GPU --

SCHEMA = """
CREATE TABLE StringIds (id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE TARGET_INFO_SESSION_START_TIME (utcEpochNs INTEGER, utcTime TEXT, localTime TEXT, systemClockNs INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, "end" INTEGER NOT NULL, deviceId INTEGER NOT NULL,
    contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER,
    demangledName INTEGER NOT NULL, shortName INTEGER NOT NULL);
CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER NOT NULL, "end" INTEGER NOT NULL, deviceId INTEGER NOT NULL,
    contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER,
    bytes INTEGER NOT NULL, copyKind INTEGER NOT NULL, srcKind INTEGER, dstKind INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, "end" INTEGER NOT NULL, eventClass INTEGER NOT NULL,
    globalTid INTEGER, correlationId INTEGER, nameId INTEGER NOT NULL, returnValue INTEGER NOT NULL);
CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, "end" INTEGER, eventType INTEGER NOT NULL, text TEXT,
    globalTid INTEGER, textId INTEGER);
"""
PID = 4242
GPID = (1 << 48) | (PID << 24)  # a serialized GlobalId: host/vm bits, pid << 24, tid in the low 24 bits
MS = 1_000_000


def _small_export(path: Path) -> Path:
    """One process: a thread uploads 4 x 100 MB from pageable memory (20 ms each, 5 GB/s) inside an
    NVTX range "upload"; another thread's kernel runs during that range (not the range's work)."""
    con = sqlite3.connect(path)
    con.executescript(SCHEMA)
    con.executemany("INSERT INTO StringIds VALUES (?, ?)",
                    [(1, "cudaMemcpy_v3020"), (2, "cudaLaunchKernel_v7000"), (3, "gemm_kernel"), (4, "gemm")])
    con.execute("INSERT INTO TARGET_INFO_SESSION_START_TIME VALUES (1700000000000000000, '', '', 0)")
    t0, t1 = GPID | PID, GPID | (PID + 1)
    for i in range(4):
        s = (10 + 25 * i) * MS
        con.execute("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?, ?, 0, ?, ?, 1, 0)", (s, s + 21 * MS, t0, 100 + i))
        con.execute("INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (?, ?, 0, 1, 7, ?, ?, ?, 1, 0, 2)",
                    (s + MS // 2, s + MS // 2 + 20 * MS, 100 + i, GPID, 100_000_000))
    con.execute("INSERT INTO NVTX_EVENTS VALUES (?, ?, 59, 'upload', ?, NULL)", (5 * MS, 115 * MS, t0))
    con.execute("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?, ?, 0, ?, 200, 2, 0)", (40 * MS, 40 * MS + 5000, t1))
    con.execute("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?, ?, 0, 1, 13, 200, ?, 3, 4)", (41 * MS, 61 * MS, GPID))
    con.commit()
    con.close()
    return path


def test_an_export_without_enum_tables_or_gpu_info_reads_and_says_what_it_assumed(tmp_path):
    fr = read_nsys_sqlite(_small_export(tmp_path / "small.sqlite"))
    notes = " ".join(fr.notes)
    assert "ENUM_CUDA_MEMCPY_OPER" in notes and "ENUM_CUDA_MEM_KIND" in notes and "TARGET_INFO_GPU" in notes
    copies = fr.gpu[fr.gpu["kind"] == "memcpy"]
    assert set(copies["direction"].astype(object)) == {"HtoD"}
    assert set(copies["host_memory"].astype(object)) == {"pageable"}  # kind 0, by the documented numbering
    # the synchronous copies and the range are rows; the launch is summarised (its call looked up)
    assert set(fr.host["name"].astype(object)) == {"cudaMemcpy", "upload"}
    assert fr.counts["cuda_runtime"] == 5 and fr.summary().calls(0, np.array([200]))[0].tolist() == [40_000.0]
    assert fr.epoch_offset_s == 1_700_000_000.0 and (fr.host["pid"] == PID).all()
    j = _doc(_traced(fr))
    first = j["findings"][0]
    assert first["id"] == "pageable_memcpy" and first["evidence"]["count"] == 4
    assert first["evidence"]["gbs"] == pytest.approx(4e8 / (80 * MS), rel=1e-9)


def test_a_phase_is_credited_with_its_launches_not_with_what_overlapped_it(tmp_path):
    """The other thread's 20 ms kernel runs inside the "upload" range: wall-clock overlap would give
    the range 20 ms of kernel time; its launches gave it none."""
    fr = read_nsys_sqlite(_small_export(tmp_path / "small.sqlite"))
    j = _doc(_traced(fr))
    (row,) = [p for p in j["phases"] if p["phase"] == "upload"]
    assert row["kernel_ms"] == 0.0
    assert row["htod_ms"] == pytest.approx(80.0) and row["gpu_busy_ms"] == pytest.approx(80.0)
    assert row["wall_ms"] == pytest.approx(110.0)


def test_refusals_are_one_clear_line(tmp_path, monkeypatch):
    plain = tmp_path / "plain.sqlite"
    con = sqlite3.connect(plain)
    con.execute("CREATE TABLE notes (t TEXT)")
    con.commit()
    con.close()
    with pytest.raises(InputError, match="not an Nsight Systems export"):
        read_nsys_sqlite(plain)
    r = cli("analyze", plain)
    assert r.exit_code == 3 and "not an Nsight Systems export" in r.stderr
    rep = tmp_path / "run.nsys-rep"
    rep.write_bytes(b"not really a report")
    import shutil

    import gpuscope.parsers.trace.nsys_rep as nsys_source

    monkeypatch.setattr(shutil, "which", lambda _name: None)
    with pytest.raises(UsageError, match=r"nsys export --type sqlite -o .*run\.sqlite .*run\.nsys-rep"):
        nsys_source.read_nsys(rep)
    r = cli("analyze", rep)
    assert r.exit_code == 2 and "nsys export --type sqlite" in r.stderr and "\n" not in r.stderr.strip()


def test_an_sqlite_export_as_the_trace_of_a_run_is_read_by_content(tmp_path):
    from gpuscope.sources.open import open_source

    small = _small_export(tmp_path / "small.sqlite")
    src = open_source(small)
    assert src.kind == "trace" and src.trace is not None and src.trace.reader == "sqlite3"
    assert np.isclose(src.trace.gpu["bytes"].sum(), 4e8)


def test_bad_rows_are_skipped_and_counted_and_the_rest_read(tmp_path):
    path = _small_export(tmp_path / "small.sqlite")
    con = sqlite3.connect(path)
    con.execute("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?, ?, 0, 1, 13, 300, ?, 3, 4)", (9 * MS, 8 * MS, GPID))
    con.execute("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES ('soon', ?, 0, 1, 13, 301, ?, 3, 4)", (8 * MS, GPID))
    con.execute("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?, ?, 0, 1, 13, 302, ?, 99, 98)", (200 * MS, 201 * MS, GPID))
    con.execute("INSERT INTO NVTX_EVENTS VALUES (?, NULL, 59, 'open at the end', ?, NULL)", (150 * MS, GPID | PID))
    con.commit()
    con.close()
    fr = read_nsys_sqlite(path)
    assert fr.skipped_events == 2 and set(fr.skipped["name"]) == {"CUPTI_ACTIVITY_KIND_KERNEL"}
    kernels = fr.gpu[fr.gpu["kind"] == "kernel"]
    assert len(kernels) == 2 and "<unnamed kernel>" in set(kernels["name"].astype(object))  # ids not in StringIds
    assert "gemm_kernel" in set(kernels["name"].astype(object))
    assert fr.counts["nvtx_unfinished"] == 1 and any("without an end" in n for n in fr.notes)


def test_a_nsys_rep_is_exported_once_with_the_nsys_on_the_path(tmp_path, monkeypatch):
    """A stand-in `nsys` that writes the export where it is told (and counts its calls)."""
    small = _small_export(tmp_path / "source.sqlite")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "nsys"
    fake.write_text("#!/bin/sh\n"
                    f'echo call >> "{tmp_path}/calls"\n'
                    'while [ "$1" != "--output" ]; do shift; done\n'
                    f'cp "{small}" "$2"\n')
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    rep = tmp_path / "run.nsys-rep"
    rep.write_bytes(b"a report")
    from gpuscope.parsers.trace.nsys_rep import read_nsys

    fr = read_nsys(rep)
    assert fr.source == str(rep) and (tmp_path / "run.sqlite").is_file() and fr.counts["memcpy"] == 4
    read_nsys(rep)  # the cached export is newer than the report: no second export
    assert (tmp_path / "calls").read_text().count("call") == 1


def test_an_export_given_as_the_trace_of_a_log_is_read_by_content(tmp_path):
    from gpuscope.sources.open import open_source

    log = tmp_path / "timing.log"
    log.write_text("".join(f"step={i} upload_ms=20.0 compute_ms=5.0\n" for i in range(8)))
    src = open_source(log, trace=_small_export(tmp_path / "small.sqlite"))
    assert src.trace is not None and src.trace.reader == "sqlite3" and src.trace.counts["memcpy"] == 4


def test_plot_export_and_html_of_a_report(tmp_path):
    small = _small_export(tmp_path / "small.sqlite")
    r = cli("plot", small, "-o", tmp_path / "t.png")
    assert r.exit_code == 0, r.stderr
    out = tmp_path / "t.json"
    r = cli("export", small, "--perfetto", out)
    assert r.exit_code == 0, r.stderr
    evs = json.loads(out.read_text())["traceEvents"]
    assert any(e.get("name") == "thread_name" and e["args"]["name"] == "stream 7" for e in evs)
    r = cli("analyze", small, "--html", tmp_path / "r.html")
    assert r.exit_code == 0, r.stderr
    assert "pageable_memcpy" in (tmp_path / "r.html").read_text()


def test_the_same_pid_on_two_hosts_is_two_ranks_and_correlation_stays_within_each(tmp_path):
    """A merged multi-node report: pid 4242 on host 1 and on host 2, both using correlationId 100."""
    path = _small_export(tmp_path / "small.sqlite")
    other = (2 << 48) | (PID << 24)
    con = sqlite3.connect(path)
    con.execute("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?, ?, 0, ?, 100, 2, 0)", (10 * MS, 11 * MS, other | PID))
    con.execute("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?, ?, 0, 1, 9, 100, ?, 3, 4)", (12 * MS, 30 * MS, other))
    con.commit()
    con.close()
    fr = read_nsys_sqlite(path)
    assert fr.ranks == [0, 1] and set(fr.host["pid"]) == {PID}
    k = fr.gpu[fr.gpu["kind"] == "kernel"]
    assert sorted(k["rank"].tolist()) == [0, 1]
    # each launch stays with its own host's GPU work: rank 0's id 100 is its cudaMemcpy at 10 ms, rank 1's
    # its launch at 10 ms too, each found within its own process
    assert [fr.summary().calls(r, np.array([100]))[1].tolist() for r in (0, 1)] == [[21_000.0], [1_000.0]]


def test_driver_calls_are_host_events_whose_launches_join_their_kernels(tmp_path):
    """A Triton or JAX program launches through cuLaunchKernel: the driver table carries the id."""
    path = _small_export(tmp_path / "small.sqlite")
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE CUPTI_ACTIVITY_KIND_DRIVER (start INTEGER NOT NULL, \"end\" INTEGER NOT NULL, "
                "globalTid INTEGER, correlationId INTEGER, nameId INTEGER NOT NULL, returnValue INTEGER NOT NULL)")
    con.execute("INSERT INTO StringIds VALUES (5, 'cuLaunchKernel')")
    con.execute("INSERT INTO CUPTI_ACTIVITY_KIND_DRIVER VALUES (?, ?, ?, 500, 5, 0)", (130 * MS, 130 * MS + 4000, GPID | PID))
    con.execute("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?, ?, 0, 1, 13, 500, ?, 3, 4)", (131 * MS, 140 * MS, GPID))
    con.execute("INSERT INTO NVTX_EVENTS VALUES (?, ?, 59, 'triton step', ?, NULL)", (129 * MS, 131 * MS, GPID | PID))
    con.commit()
    con.close()
    fr = read_nsys_sqlite(path)
    assert fr.counts["cuda_driver"] == 1 and fr.summary().calls(0, np.array([500]))[0].tolist() == [130_000.0]
    j = _doc(_traced(fr))
    (row,) = [p for p in j["phases"] if p["phase"] == "triton step"]
    assert row["kernel_ms"] == pytest.approx(9.0)  # the kernel it launched, after the range ended


def test_progress_counts_the_event_rows_read_up_to_all_of_them(tmp_path):
    path = _small_export(tmp_path / "small.sqlite")
    con = sqlite3.connect(path)
    (rows,), = con.execute("SELECT (SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL) + (SELECT count(*) FROM "
                           "CUPTI_ACTIVITY_KIND_MEMCPY) + (SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME) + "
                           "(SELECT count(*) FROM NVTX_EVENTS)").fetchall()
    con.close()
    calls: list[tuple[int, int]] = []
    read_nsys_sqlite(path, progress=lambda done, total: calls.append((done, total)))
    assert calls and calls[-1] == (rows, rows) and all(t == rows for _, t in calls)
    assert [d for d, _ in calls] == sorted(d for d, _ in calls)


def test_texts_with_the_chunk_separator_sparse_and_extreme_rowids_read_whole(tmp_path):
    """The reader's chunks: rowids far apart (2**63 - 1 the last), a range text holding char(31)
    (the separator a chunk's texts are joined with) and a NULL text; every row read once, as SQL has it."""
    path = _small_export(tmp_path / "small.sqlite")
    con = sqlite3.connect(path)
    tid = GPID | PID
    for rowid, text in ((10**12, "a\x1fb"), (2**63 - 1, None), (5 * 10**15, "plain")):
        con.execute("INSERT INTO NVTX_EVENTS (rowid, start, \"end\", eventType, text, globalTid) VALUES (?, ?, ?, 59, ?, ?)",
                    (rowid, 120 * MS, 121 * MS, text, tid))
    con.commit()
    want = sorted((r or "<unnamed range>") for (r,) in con.execute("SELECT nullif(text, '') FROM NVTX_EVENTS"))
    con.close()
    fr = read_nsys_sqlite(path)
    got = fr.host[fr.host["cat"].astype(object) == "user_annotation"]
    assert sorted(got["name"].astype(object)) == want and fr.skipped_events == 0


def test_a_span_that_would_wrap_and_negative_bytes_are_skipped_with_their_reason(tmp_path):
    """end - start of -2**63 .. 2**63 - 1 wraps negative in int64: no negative duration is read."""
    path = _small_export(tmp_path / "small.sqlite")
    con = sqlite3.connect(path)
    con.execute("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?, ?, 0, 1, 13, 400, ?, 3, 4)", (-2**63, 2**63 - 1, GPID))
    con.execute("INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (?, ?, 0, 1, 7, 402, ?, -5, 1, 0, 2)", (MS, 2 * MS, GPID))
    con.commit()
    (kept,), = con.execute('SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE "end" - start BETWEEN 0 AND 1e15').fetchall()
    con.close()
    fr = read_nsys_sqlite(path)
    assert (fr.gpu["dur_us"] >= 0).all() and int((fr.gpu["kind"] == "kernel").sum()) == kept
    reasons = sorted(fr.skipped["reason"])
    assert len(reasons) == 2 and "span over 2**53 ns" in reasons[0] and reasons[1].endswith("MEMCPY: no bytes")


@needs_exports
def test_frames_keep_only_the_names_their_rows_use():
    """emit_nvtx's raw texts (one per operator call, each with its op_id) are renamed to operators:
    none may linger as an unused category (value_counts, groupby(observed=False) would list them)."""
    (ops,), = _sql("mfu_2gpu_before", "SELECT count(DISTINCT coalesce(n.text, si.value)) FROM NVTX_EVENTS n "
                                      "LEFT JOIN StringIds si ON si.id = n.textId "
                                      "WHERE instr(coalesce(n.text, si.value), ', op_id = ') > 0")
    fr = read_nsys_sqlite(_path("mfu_2gpu_before"))
    for f in (fr.gpu, fr.host):
        for c in f.columns:
            if str(f[c].dtype) == "category":
                assert set(f[c].cat.categories) == set(f[c].astype(object)), c
    assert ops > 1000 and len(fr.host["name"].cat.categories) < 200  # thousands of op_id texts, ~100 names


def test_operator_ranges_of_another_form_are_told_apart_by_the_regular_expression(tmp_path):
    """The reader tells emit_nvtx's canonical texts apart in SQL; a text holding "op_id" in another
    form (two spaces, a comma in the name, no digits) is read and decided by EMIT_NVTX: the same
    split, counts and host cover as the row-keeping reader had."""
    import re

    path = _small_export(tmp_path / "small.sqlite")
    con = sqlite3.connect(path)
    tid = GPID | PID
    texts = ["aten::mm, seq = 3, op_id = 7", "aten::mm,  op_id = 5", "a, b, op_id = 3", "note, op_id = x",
             "aten::item, op_id = 9", "aten::add, seq = 1x, op_id = 2"]
    for i, text in enumerate(texts):
        con.execute("INSERT INTO NVTX_EVENTS VALUES (?, ?, 59, ?, ?, NULL)", ((200 + 10 * i) * MS, (205 + 10 * i) * MS,
                                                                          text, tid))
    con.commit()
    con.close()
    emit = re.compile(r"^([^,]+?),\s*(?:seq\s*=\s*\d+,\s*)?op_id\s*=\s*\d+.*$", re.S)  # the regular expression
    ops = [t for t in texts if emit.match(t)]
    assert ops == ["aten::mm, seq = 3, op_id = 7", "aten::mm,  op_id = 5", "aten::item, op_id = 9"]
    fr = read_nsys_sqlite(path)
    assert fr.counts["cpu_op"] == len(ops) and fr.counts["user_annotation"] == 1 + len(texts) - len(ops)
    got = fr.host[fr.host["cat"].astype(object) == "user_annotation"]["name"].astype(object).tolist()
    assert sorted(got) == sorted(["upload", "a, b, op_id = 3", "note, op_id = x", "aten::add, seq = 1x, op_id = 2"])
    kept = fr.host[fr.host["cat"].astype(object) == "cpu_op"]["name"].astype(object).tolist()
    assert kept == ["aten::item"]  # (a read-back: kept as a row; aten::mm summarised)
    # the host cover holds the three operators' ranges and the runtime calls, not the annotations
    qs = np.array([(200 + 10 * i) * 1e3 for i in range(len(texts))])
    got = fr.summary().work_cover(0, qs, qs + 5e3)
    covered = {i for i in range(len(texts)) if got[i] == 5e3}
    assert covered == {0, 1, 4}

"""What an Nsight Systems export holds beside its events (parsers/trace/nsys_extra.py): thread
names (ThreadNames) and GPU metric samples (GPU_METRICS, a capture with --gpu-metrics-devices).

Thread names are checked on a real export (../shared/data/nsight/) against independent SQL. None of
the real exports has GPU_METRICS: those tests write one here with sqlite3, on the schema's column
names (GPU_METRICS: timestamp, typeId, metricId, value; TARGET_INFO_GPU_METRICS: typeId, sourceId,
typeName, metricId, metricName, the unit in the name's brackets)."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from gpuscope.analysis import analyze
from gpuscope.analysis.document import trace_doc
from gpuscope.parsers.trace.nsys_sqlite import read_nsys_sqlite
from gpuscope.sources.open import open_source
from tests.test_nsys_sqlite import (
    GPID,
    MS,
    PID,
    _path,
    _small_export,
    _sql,
    _traced,
    cli,
    needs_exports,
)

NAMES = ("SELECT (t.globalTid >> 24) & 16777215, t.globalTid & 16777215, s.value "
         "FROM ThreadNames t JOIN StringIds s ON s.id = t.nameId")


# -- thread names ---------------------------------------------------------------------------------

@needs_exports
def test_every_host_thread_is_named_as_the_exports_thread_names_say():
    fr = read_nsys_sqlite(_path("h100_2gpu_1s"))
    want = {(pid, tid): name for pid, tid, name in _sql("h100_2gpu_1s", NAMES)}
    got = {(pid, tid): name for (_, pid, tid), name in fr.threads.items()}
    host_threads = set(zip(fr.host["pid"].tolist(), fr.host["tid"].tolist(), strict=True))
    assert host_threads and host_threads <= set(got)  # (every thread with host events has its name)
    assert got == {k: v for k, v in want.items() if k in got}
    # the thread that made the most runtime calls, by the export's own join
    ((busiest,),) = _sql("h100_2gpu_1s", "SELECT s.value FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN ThreadNames t "
                         "USING (globalTid) JOIN StringIds s ON s.id = t.nameId GROUP BY r.globalTid "
                         "ORDER BY count(*) DESC LIMIT 1")
    calls = fr.host[fr.host["cat"].astype(object) == "cuda_runtime"]
    top = calls.groupby(["rank", "pid", "tid"]).size().idxmax()
    assert fr.threads[tuple(int(x) for x in top)] == busiest


@needs_exports
def test_a_gaps_host_op_names_the_thread_that_ran_it():
    j = trace_doc(_traced(read_nsys_sqlite(_path("h100_2gpu_1s"))))
    ops = [g["host_op"] for g in j["idle_gaps"] if g["host_op"]]
    assert ops
    for op in ops:  # the thread named is one that ran an NVTX range or runtime call of that name
        names = {n for (n,) in _sql("h100_2gpu_1s", "SELECT DISTINCT s.value FROM NVTX_EVENTS e JOIN ThreadNames t "
                                    "USING (globalTid) JOIN StringIds s ON s.id = t.nameId "
                                    "WHERE e.text = ? OR e.text LIKE ? || ',%'", op["name"], op["name"])}
        assert op["thread"] in names, op
    r = cli("analyze", _path("h100_2gpu_1s"), "--line-rate", "50")
    assert r.exit_code == 0 and f"thread {ops[0]['thread']}" in r.stdout.replace("\n", " ").replace("  ", " ")


@needs_exports
def test_an_export_without_thread_names_names_no_thread(tmp_path):
    """What would make it name a thread falsely: a name table missing; no name is made up."""
    p = tmp_path / "nonames.sqlite"
    shutil.copyfile(_path("h100_2gpu_1s"), p)
    con = sqlite3.connect(p)
    con.execute("DROP TABLE ThreadNames")
    con.commit()
    con.close()
    fr = read_nsys_sqlite(p)
    assert fr.threads == {}
    j = trace_doc(_traced(fr))
    assert all("thread" not in g["host_op"] for g in j["idle_gaps"] if g["host_op"])


# -- GPU_METRICS ----------------------------------------------------------------------------------

METRICS_SCHEMA = """
CREATE TABLE TARGET_INFO_GPU_METRICS (typeId INTEGER NOT NULL, sourceId INTEGER NOT NULL, typeName TEXT NOT NULL,
    metricId INTEGER NOT NULL, metricName TEXT NOT NULL);
CREATE TABLE GPU_METRICS (timestamp INTEGER, typeId INTEGER NOT NULL, metricId INTEGER NOT NULL, value INTEGER NOT NULL);
CREATE TABLE ThreadNames (nameId INTEGER NOT NULL, priority INTEGER, globalTid INTEGER);
"""
CATALOG = [(1, "SMs Active [Throughput %]"), (2, "DRAM Read Bandwidth [Throughput %]"),
           (3, "DRAM Write Bandwidth [Throughput %]"), (4, "PCIe RX Throughput [Throughput %]"),
           (5, "PCIe TX Throughput [Throughput %]"), (6, "GPC Clock Frequency [MHz]")]


def _with_metrics(path: Path, types: tuple[int, ...] = (0x100,), sm_unit: str = "Throughput %",
                  busy: tuple[int, int] = (41, 61)) -> Path:
    """The small export (one GPU: a kernel 41-61 ms, four pageable uploads) with metrics sampled every
    ms from 0 to 120 ms: SMs Active 100% and DRAM 30% read + 10% write in `busy` (the kernel), else 0."""
    _small_export(path)
    con = sqlite3.connect(path)
    con.executescript(METRICS_SCHEMA)
    con.execute("INSERT INTO StringIds VALUES (10, 'uploader')")
    con.execute("INSERT INTO ThreadNames VALUES (10, 20, ?)", (GPID | PID,))
    for t in types:
        con.executemany("INSERT INTO TARGET_INFO_GPU_METRICS VALUES (?, 0, 'GH100', ?, ?)",
                        [(t, m, n.replace("Throughput %", sm_unit) if m == 1 else n) for m, n in CATALOG])
        for ms in range(121):
            on = busy[0] < ms <= busy[1]
            con.executemany("INSERT INTO GPU_METRICS VALUES (?, ?, ?, ?)",
                            [(ms * MS, t, 1, 100 if on else 0), (ms * MS, t, 2, 30 if on else 0),
                             (ms * MS, t, 3, 10 if on else 0), (ms * MS, t, 4, 40), (ms * MS, t, 5, 1),
                             (ms * MS, t, 6, 1980)])
    con.commit()
    con.close()
    return path


def _q(path: Path, q: str):
    con = sqlite3.connect(path)
    try:
        return con.execute(q).fetchone()
    finally:
        con.close()


def test_gpu_metrics_are_samples_evidence_beside_the_events(tmp_path):
    p = _with_metrics(tmp_path / "metrics.sqlite")
    fr = read_nsys_sqlite(p)
    assert fr.samples is not None and len(fr.samples) == _q(p, "SELECT count(DISTINCT timestamp) FROM GPU_METRICS")[0]
    assert set(fr.samples["gpu"]) == {0} and fr.threads == {(0, PID, PID): "uploader"}
    a = analyze(open_source(p))
    act = a.samples.to_json()
    # a reading covers the period before it (the NVML recorder's window averages): the mean over
    # the readings after the first, in SQL
    (busy,) = _q(p, "SELECT avg(value) / 100.0 FROM GPU_METRICS WHERE metricId = 1 AND timestamp > 0")
    assert act["gpus"] == [0] and act["busy_fraction"] == pytest.approx(busy, rel=1e-4)  # (epoch-second float times)
    assert act["t_start"] == pytest.approx(1_700_000_000.0)  # on the export's epoch clock
    s = fr.samples.set_index("t_mono")
    assert s.loc[0.050, "dram_active"] == pytest.approx(0.40) and s.loc[0.070, "dram_active"] == 0.0
    # PCIe given as a percent of a peak the export does not state in bytes: left out, and said
    assert s["rx_gbs"].isna().all() and s["tx_gbs"].isna().all()
    notes = " ".join(fr.notes)
    assert "PCIe RX Throughput [Throughput %]" in notes and "121 samples read as GPU 0's" in notes
    assert a.trace is not None and any(d.part == "trace" for d in a.findings)  # the exact events still speak


def test_gpu_metrics_whose_gpu_cannot_be_told_are_left_out(tmp_path):
    """What would make them fire falsely: two metrics sources (two GPUs sampled) and the events on
    one device: which source is that device is not in the export, so neither is read as it."""
    fr = read_nsys_sqlite(_with_metrics(tmp_path / "two.sqlite", types=(0x100, 0x101)))
    assert fr.samples is None
    assert any("which device a source sampled is not in the export" in n for n in fr.notes)
    assert analyze(open_source(tmp_path / "two.sqlite")).samples is None


def test_metrics_of_another_gpu_are_left_out(tmp_path):
    """What would make them fire falsely: one metrics source and events on one device, but the
    metrics sampled another GPU (--gpu-metrics-devices=3 for a program on GPU 0): its SM activity
    (80-100 ms) does not line up with this GPU's kernel (41-61 ms), so it is not read as this GPU's."""
    fr = read_nsys_sqlite(_with_metrics(tmp_path / "other.sqlite", busy=(80, 100)))
    assert fr.samples is None
    assert any("does not line up with GPU 0's kernels (0% of it inside them)" in n for n in fr.notes)


def test_an_sm_metric_not_in_percent_is_not_read_as_one(tmp_path):
    """Without SM activity in percent nothing ties the metrics to the events' GPU: none is read."""
    fr = read_nsys_sqlite(_with_metrics(tmp_path / "cycles.sqlite", sm_unit="Cycles Active"))
    assert fr.samples is None
    notes = " ".join(fr.notes)
    assert "SMs Active [Cycles Active] (not a percent)" in notes and "SM activity was not read" in notes


def test_an_export_without_gpu_metrics_has_no_samples(tmp_path):
    fr = read_nsys_sqlite(_small_export(tmp_path / "plain.sqlite"))
    assert fr.samples is None and not any("GPU_METRICS" in n for n in fr.notes)

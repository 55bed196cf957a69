"""Run directories: atomic meta.json, incremental samples/timing log, readable after errors."""

from __future__ import annotations

import json
import os
import re
import threading
import time

import pytest

from gpuscope.clock import Clock
from gpuscope.errors import InputError, ResourceError, UsageError
from gpuscope.rundir import (
    CLAIM,
    SAMPLE_COLUMNS,
    RunDir,
    default_path,
    read_meta,
    read_samples,
)

ISO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z ")


def test_default_path_shape(tmp_path):
    p = default_path("record", tmp_path, now=0)
    assert p.parent == tmp_path and re.fullmatch(r"\d{8}-\d{6}-record", p.name)


def test_create_default_twice_same_second(tmp_path):
    a = RunDir.create(mode="record", root=tmp_path)
    b = RunDir.create(mode="record", root=tmp_path)
    assert a.path != b.path and a.path.is_dir() and b.path.is_dir()


def test_meta_atomic_merge(tmp_path):
    rd = RunDir.create(tmp_path / "r")
    assert rd.write_meta(status="running", argv=["x"], nan=float("nan"))
    assert rd.write_meta(status="complete", exit_code=0)
    m = read_meta(rd.path)
    assert m == {"schema_version": 1, "status": "complete", "argv": ["x"], "nan": None, "exit_code": 0}
    assert not any(p.name.endswith(".tmp") for p in rd.path.iterdir())


def test_samples_flushed_while_open(tmp_path):
    rd = RunDir.create(tmp_path / "r")
    w = rd.samples_writer()
    w.write_row({"t_wall": 1.0, "t_mono": 0.5, "gpu": 0, "rx_gbs": 2.5, "pcie_source": "gpm", "wrap_suspect": 0})
    time.sleep(0.3)
    w.write_row({"t_wall": 1.3, "t_mono": 0.8, "gpu": 0, "rx_gbs": float("nan"), "pcie_source": "gpm"})
    # not closed: the rows must already be on disk (flush <= 0.5 s)
    text = (rd.path / "samples.csv").read_text()
    assert text.splitlines()[0] == ",".join(SAMPLE_COLUMNS)
    assert len(text.splitlines()) == 3
    df = read_samples(rd.path)
    assert len(df) == 2 and df["rx_gbs"].isna().tolist() == [False, True]
    assert df["gpu"].dtype == "int16" and df["wrap_suspect"].tolist() == [0, 0]  # (compact: indices < 1024)
    w.close()


def test_read_samples_missing_and_torn(tmp_path):
    assert list(read_samples(tmp_path).columns) == list(SAMPLE_COLUMNS)
    p = tmp_path / "samples.csv"
    row = {"t_wall": "1.0", "t_mono": "0.1", "gpu": "0", "rx_gbs": "3.0", "pcie_source": "gpm", "wrap_suspect": "0"}
    p.write_text(",".join(SAMPLE_COLUMNS) + "\n" + ",".join(row.get(c, "") for c in SAMPLE_COLUMNS) + "\n2.0,0.2,0,4")
    df = read_samples(p)
    # torn row (a crash mid-write may have cut "4" from "4.25"): dropped and counted
    assert len(df) == 1 and df["rx_gbs"].tolist() == [3.0] and df.attrs["malformed_rows"] == 1
    (tmp_path / "empty.csv").write_text("")
    assert read_samples(tmp_path / "empty.csv").empty
    (tmp_path / "bad.csv").write_text("a,b\n1,2\n")
    with pytest.raises(InputError):
        read_samples(tmp_path / "bad.csv")


def test_timing_log_prefix_on_clock(tmp_path):
    rd = RunDir.create(tmp_path / "r")
    clock = Clock()
    t = rd.timing_log(clock)
    mono = clock.mono()
    t.write_line("CUZK_TIMING: mutex_held_ms=12\n", mono)
    t.close()
    line = (rd.path / "timing.log").read_text().splitlines()[0]
    assert ISO.match(line) and line.endswith(" CUZK_TIMING: mutex_held_ms=12")
    assert line.startswith(clock.iso(mono))


def test_out_under_a_file(tmp_path):
    (tmp_path / "f").write_text("x")
    with pytest.raises(ResourceError, match="cannot write run directory"):
        RunDir.create(tmp_path / "f" / "run")


@pytest.mark.skipif(os.geteuid() == 0, reason="root can write anywhere")
def test_unwritable_dir(tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        with pytest.raises(ResourceError):
            RunDir.create(ro / "run")
    finally:
        ro.chmod(0o700)


def test_write_error_reported_once_and_file_stays_readable(tmp_path):
    msgs: list[str] = []
    rd = RunDir.create(tmp_path / "r", on_error=msgs.append)
    w = rd.samples_writer()
    w.write_row({"t_wall": 1.0, "t_mono": 0.1, "gpu": 0})
    w.flush()

    class Full:
        def write(self, s):
            raise OSError(28, "No space left on device")

        def flush(self):
            raise OSError(28, "No space left on device")

        def close(self):
            pass

    w._f = Full()  # the disk fills up
    for _ in range(5):
        w.write_row({"t_wall": 2.0, "t_mono": 0.2, "gpu": 0})
    rd.report("meta.json", OSError(28, "No space left on device"))
    w.close()
    assert len(msgs) == 1 and "No space left" in msgs[0]
    assert len(read_samples(rd.path)) == 1


def test_read_meta_bad_json(tmp_path):
    (tmp_path / "meta.json").write_text("{not json")
    with pytest.raises(InputError):
        read_meta(tmp_path)
    with pytest.raises(InputError):
        read_meta(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    assert read_meta(tmp_path / "empty") == {}


def test_samples_schema_has_one_definition():
    """rundir writes and parsers read the samples.csv columns of gpuscope.schemas; writing a
    run directory never imports pandas."""
    import subprocess
    import sys

    from gpuscope import schemas
    from gpuscope.parsers import samples

    assert samples.SAMPLE_COLUMNS is schemas.SAMPLE_COLUMNS
    assert list(schemas.empty_samples().dtypes) == list(samples._frame([], 0, "gpuscope").dtypes)
    probe = "import sys, gpuscope.rundir, gpuscope.sampler; print('pandas' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "False", out.stderr


def test_mark_interrupted_merges_like_write_meta(tmp_path):
    rd = RunDir.create(tmp_path / "r")
    rd.write_meta(status="running", mode="pinned")
    rd.mark_interrupted(notes=["second Ctrl-C: exited at once"])
    meta = read_meta(rd.path)
    assert (meta["status"], meta["exit_code"], meta["mode"]) == ("interrupted", 130, "pinned")
    assert meta["notes"] == ["second Ctrl-C: exited at once"] and meta["ended"].endswith("Z")
    assert rd.meta["status"] == "interrupted"


def test_mark_interrupted_never_blocks_on_the_meta_lock(tmp_path):
    """The signal handler runs in the main thread; if that thread was inside write_meta, the
    lock is held and will never be released: meta.json is replaced from a temp file of its own."""
    rd = RunDir.create(tmp_path / "r")
    rd.write_meta(status="running", mode="pageable")
    with rd._meta_lock:  # the interrupted write_meta
        done = threading.Event()
        t = threading.Thread(target=lambda: (rd.mark_interrupted(notes=["n"]), done.set()))
        t.start()
        assert done.wait(5), "mark_interrupted blocked on the meta lock"
    meta = read_meta(rd.path)
    assert (meta["status"], meta["exit_code"], meta["mode"], meta["notes"]) == ("interrupted", 130, "pageable", ["n"])
    assert not (rd.path / ".meta.json.sigint.tmp").exists()


# -- claiming a run directory (issue 13) ------------------------------------------------------

def test_named_out_existing_directory_rules(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    rd = RunDir.create(empty)  # an empty directory is claimed
    assert rd.path == empty and (empty / CLAIM).is_file()
    assert json.loads((empty / CLAIM).read_text())["pid"] == os.getpid()
    with pytest.raises(UsageError, match=r"is taken by another gpuscope run \(pid \d+ on "):
        RunDir.create(empty)
    old = tmp_path / "old"  # a run written before claim files existed
    old.mkdir()
    (old / "meta.json").write_text("{}")
    with pytest.raises(UsageError, match="already holds a run"):
        RunDir.create(old)
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "notes.txt").write_text("x")
    with pytest.raises(UsageError, match=r"is not empty \(1 entries, e.g. 'notes.txt'\)"):
        RunDir.create(busy)
    (tmp_path / "file").write_text("x")
    with pytest.raises(UsageError, match="exists and is not a directory"):
        RunDir.create(tmp_path / "file")
    for blank in ("", "  "):
        with pytest.raises(UsageError, match="empty path names the current directory"):
            RunDir.create(blank)
    deep = RunDir.create(tmp_path / "a" / "b" / "c")  # parents are made
    assert (deep.path / CLAIM).is_file()


def test_named_out_claimed_by_exactly_one_of_many_threads(tmp_path):
    target, n = tmp_path / "same", 16
    barrier = threading.Barrier(n)
    won, refused = [], []

    def claim():
        barrier.wait(timeout=10)
        try:
            won.append(RunDir.create(target))
        except UsageError as e:
            refused.append(str(e))

    threads = [threading.Thread(target=claim) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=10)
    assert len(won) == 1 and len(refused) == n - 1
    assert all("is taken" in m or "already holds" in m for m in refused)


def test_default_path_next_free_name_under_threads(tmp_path, monkeypatch):
    """Runs started in the same second get distinct directories, each claimed by one."""
    from gpuscope import rundir

    monkeypatch.setattr(rundir, "default_path", lambda mode, root: tmp_path / f"20261130-120000-{mode}")
    (tmp_path / "20261130-120000-record").mkdir()  # an empty leftover is passed over, not shared
    n = 12
    barrier = threading.Barrier(n)
    paths: list = []
    threads = [threading.Thread(target=lambda: (barrier.wait(timeout=10),
                                                paths.append(RunDir.create(mode="record").path)))
               for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=10)
    names = sorted(p.name for p in paths)
    assert len(set(names)) == n and "20261130-120000-record" not in names
    assert all((p / CLAIM).is_file() for p in paths)


CLAIMER = r"""
import os, sys, time
from gpuscope.errors import UsageError
from gpuscope.rundir import RunDir
go = sys.argv[2]
while not os.path.exists(go):
    time.sleep(0.001)
try:
    RunDir.create(sys.argv[1])
    print("won")
except UsageError as e:
    print("refused:", e)
"""


def test_named_out_claimed_by_exactly_one_of_many_processes(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    repo = Path(__file__).resolve().parents[1]
    env = dict(os.environ, PYTHONPATH=str(repo))
    target, go = tmp_path / "same", tmp_path / "go"
    procs = [subprocess.Popen([sys.executable, "-c", CLAIMER, str(target), str(go)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
             for _ in range(6)]
    time.sleep(0.5)  # let them all start and wait for the go
    go.write_text("")
    outs = [p.communicate(timeout=30)[0].strip() for p in procs]
    assert sorted(o.split(":")[0] for o in outs) == ["refused"] * 5 + ["won"], outs

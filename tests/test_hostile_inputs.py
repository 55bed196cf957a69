"""Hostile input, round three (issue 22): tiny files that would cost gigabytes, values that
are no readings, odd files. Each case: a documented exit code and one `gpuscope:` line, or
the input read with its damage counted."""

from __future__ import annotations

import copy
import gzip
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpuscope.cli import app
from gpuscope.errors import EXIT_INPUT, EXIT_NO_DATA, EXIT_USAGE, InputError
from gpuscope.parsers import limits
from gpuscope.parsers.samples import read_samples

from .conftest import DATA, EXAMPLES

BOUNDS = DATA / "h200_bounds"
RUN = BOUNDS / "runs" / "hbm_bound"
TRACE = BOUNDS / "traces" / "hbm_bound.json.gz"
QUERY = BOUNDS / "smi" / "hbm_bound_query.csv"
LOG = EXAMPLES / "article_excerpt.log"


def cli(*args, input=None):
    r = CliRunner().invoke(app, [str(a) for a in args], input=input)
    return r.exit_code, r.stdout, r.stderr


def gpuscope(*args, **kw):
    return subprocess.run([sys.executable, "-m", "gpuscope", *map(str, args)], capture_output=True, timeout=60, **kw)


def one_line(stderr: str) -> str:
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("gpuscope: "), stderr
    assert "internal error" not in lines[0] and "Traceback" not in stderr
    return lines[0]


# -- memory and time that grow with the wrong thing ------------------------------------------

def test_a_gzip_bomb_is_refused_after_a_few_mb_not_after_filling_memory(tmp_path):
    bomb = tmp_path / "bomb.log.gz"
    bomb.write_bytes(gzip.compress(b"\n" * (100 << 20), 9))  # 100 KB -> 100 MiB of newlines
    code, _, err = cli("analyze", bomb)
    assert code == EXIT_INPUT and "decompression bomb" in one_line(err)
    assert "GPUSCOPE_MAX_GZIP_RATIO" in err


def test_the_ratio_guard_and_the_cap_are_overridable(tmp_path, monkeypatch):
    data = gzip.compress(b"x" * (80 << 20))
    monkeypatch.setenv("GPUSCOPE_MAX_GZIP_RATIO", "0")  # no guard
    out, cut = limits.gunzip(data, "log", "x.gz")
    assert len(out) == 80 << 20 and not cut
    monkeypatch.setenv("GPUSCOPE_MAX_LOG", "1M")
    with pytest.raises(InputError, match="more than 1 MiB.*GPUSCOPE_MAX_LOG"):
        limits.gunzip(data, "log", "x.gz")
    monkeypatch.setenv("GPUSCOPE_MAX_LOG", "lots")
    with pytest.raises(InputError, match="not a size"):
        limits.cap("log")


def test_a_trace_bomb_is_refused_too(tmp_path):
    bomb = tmp_path / "t.json.gz"
    bomb.write_bytes(gzip.compress(b'{"traceEvents":[' + b" " * (100 << 20) + b"]}", 9))
    code, _, err = cli("analyze", bomb)
    assert code == EXIT_INPUT and "decompression bomb" in one_line(err)


def test_concatenated_and_truncated_gzip_members_still_read():
    a, b = gzip.compress(b"one\n"), gzip.compress(b"two\n")
    assert limits.gunzip(a + b, "log", "x") == (b"one\ntwo\n", False)
    out, cut = limits.gunzip((a + b)[:-9], "log", "x")
    assert cut and out.startswith(b"one\n")


def test_stdin_of_zeros_is_refused_at_once():
    t = time.monotonic()
    with open("/dev/zero", "rb") as zero:
        r = gpuscope("analyze", "-", stdin=zero)
    assert r.returncode == EXIT_NO_DATA and "looks binary" in one_line(r.stderr.decode())
    assert time.monotonic() - t < 20


@pytest.mark.parametrize("args", [("analyze", "/dev/zero"), ("analyze", LOG, "--trace", "/dev/zero"),
                                  ("analyze", LOG, "--samples", "/dev/urandom")])
def test_devices_are_refused(args):
    code, _, err = cli(*args)
    assert code == EXIT_INPUT and "is a device" in one_line(err)


def test_the_chunked_reader_stops_at_the_cap_and_at_an_endless_line(tmp_path, monkeypatch):
    from gpuscope.parsers.log import reader

    f = tmp_path / "x.log"
    f.write_bytes(b"a" * (3 << 20))
    monkeypatch.setattr(reader, "MAX_LINE", 1 << 20)
    with pytest.raises(Exception, match="a line longer than 1 MiB"):
        list(reader.LogInput("x.log", path=f).chunks(1 << 18))
    f.write_bytes(b"step_ms=1\n" * (300 << 10))
    monkeypatch.setenv("GPUSCOPE_MAX_LOG", "1M")
    with pytest.raises(InputError, match="more than 1 MiB"):
        list(reader.LogInput("x.log", path=f).chunks(1 << 18))


# -- internal errors ---------------------------------------------------------------------------

def _trace_doc() -> dict:
    return json.loads(gzip.decompress(TRACE.read_bytes()))


@pytest.mark.parametrize("change", ["stream", "pid", "ts", "dur", "bytes"])
def test_absurd_trace_values_are_damaged_events(tmp_path, change):
    doc = _trace_doc()
    hit = 0
    for e in doc["traceEvents"]:
        if e.get("ph") != "X" or e.get("cat") not in (("gpu_memcpy",) if change == "bytes" else ("kernel", "gpu_memcpy")):
            continue
        hit += 1
        if change == "stream":
            e.setdefault("args", {})["stream"] = 2**64
        elif change == "pid":
            e["pid"] = 2**64
            e.setdefault("args", {}).pop("device", None)
        elif change == "ts":
            e["ts"] = 1e308
        elif change == "dur":
            e["dur"] = 1e300
        elif change == "bytes":
            e["args"]["bytes"] = 1e308
        if hit >= 5:
            break
    f = tmp_path / "t.json"
    f.write_text(json.dumps(doc))
    code, out, err = cli("analyze", f, "--json")
    assert code == 0, err
    assert "damaged trace event" in one_line(err)
    assert "e+2" not in out and "e+30" not in out  # no 300-digit figure anywhere


def test_a_trace_nested_1000_deep_is_one_line(tmp_path):
    f = tmp_path / "deep.json"
    f.write_text('{"traceEvents":[{"ph":"X","cat":"kernel","name":"k","ts":1,"dur":2,"pid":0,"tid":7,"args":'
                 + '{"a":' * 1000 + "1" + "}" * 1000 + "}]}")
    code, _, err = cli("analyze", f)
    assert code == EXIT_INPUT and "nested too deeply" in one_line(err)


def _query_rows(edit) -> str:
    lines = QUERY.read_text().splitlines()
    return "\n".join([lines[0]] + [edit(ln) for ln in lines[1:]]) + "\n"


@pytest.mark.parametrize("index", ["99999999999999999999", "1e20", "-1", "\u0661"])
def test_absurd_gpu_indices_drop_the_row(tmp_path, index):
    f = tmp_path / "q.csv"
    f.write_text(_query_rows(lambda ln: ln.replace(", 0, ", f", {index}, ", 1)))
    df = read_samples(f)
    assert len(df) == 0 and df.attrs["malformed_rows"] > 0
    code, _, err = cli("analyze", f)
    assert code == EXIT_NO_DATA and "without one readable sample" in one_line(err)


@pytest.mark.parametrize("value", ["\u0664\u0665 %", "\uff14\uff15 %", "4_5 %", "45.. %", "1e308 %", "450 %"])
def test_digits_of_other_scripts_and_absurd_values_are_damage_in_a_capture(tmp_path, value):
    f = tmp_path / "q.csv"
    f.write_text(_query_rows(lambda ln: ln.replace(", 0 %, ", f", {value}, ", 1)))
    df = read_samples(f)
    assert df.attrs["bad_values"].get("gpu_util_pct", 0) > 0
    assert df["gpu_util_pct"].dropna().between(0, 100).all()


@pytest.mark.parametrize("value", ["1e308", "\u0669\u0668\u0667", "98_765", "9876'5432", "1e20"])
def test_a_samples_time_that_is_no_time_drops_the_row(tmp_path, value):
    lines = (RUN / "samples.csv").read_text().splitlines()
    lines[5] = value + lines[5][lines[5].index(","):]
    f = tmp_path / "samples.csv"
    f.write_text("\n".join(lines) + "\n")
    df = read_samples(f)
    assert df.attrs["malformed_rows"] == 1 and df["t_wall"].max() < 1e10


def test_a_query_capture_with_a_bom_keeps_its_time_axis(tmp_path):
    f = tmp_path / "q.csv"
    f.write_bytes(b"\xef\xbb\xbf" + QUERY.read_bytes())
    df = read_samples(f)
    assert df["t_wall"].notna().all() and len(df) == len(read_samples(QUERY))


def test_a_query_capture_without_a_timestamp_is_refused(tmp_path):
    f = tmp_path / "q.csv"
    f.write_text("\n".join(",".join(ln.split(",")[1:]) for ln in QUERY.read_text().splitlines()) + "\n")
    code, _, err = cli("analyze", f)
    assert code == EXIT_NO_DATA and "without its timestamp column" in one_line(err)


def _rundir(tmp_path: Path) -> Path:
    d = tmp_path / "run"
    d.mkdir()
    for name in ("timing.log", "samples.csv", "meta.json"):
        (d / name).write_bytes((RUN / name).read_bytes())
    return d


def test_meta_json_fields_of_the_wrong_type_are_left_out(tmp_path):
    d = _rundir(tmp_path)
    meta = json.loads((d / "meta.json").read_text())
    good = copy.deepcopy(meta)
    for k in ("gpus", "line_rate_gbs", "driver", "sampler", "workload", "mode", "status"):
        meta[k] = [1, 2] if k != "gpus" else "x"
    (d / "meta.json").write_text(json.dumps(meta))
    code, out, err = cli("analyze", d, "--json")
    assert code == 0 and "of the wrong type left out" in one_line(err)
    meta = good
    meta["gpus"][0]["memory_total_mib"] = "lots"
    meta["gpus"][0]["pcie_link"] = 7
    (d / "meta.json").write_text(json.dumps(meta))
    code, out, err = cli("analyze", d)
    assert code == 0 and "gpus[0].memory_total_mib" in one_line(err)


def test_spans_csv_with_a_repeated_header_and_no_worker_column(tmp_path):
    d = _rundir(tmp_path)
    t0 = float((d / "samples.csv").read_text().splitlines()[2].split(",")[0])
    (d / "spans.csv").write_text(f"t_start,t_end,phase\n{t0},{t0 + 0.1},h2d\nt_start,t_end,phase\n"
                                 f"{t0 + 0.2},{t0 + 0.3},ntt\n{t0},{t0 + 1},x\n")
    code, _, err = cli("analyze", d, "--json")
    assert code == 0, err
    from gpuscope.rundir_spans import read_spans

    s = read_spans(d)
    assert len(s) == 3 and s.attrs["malformed_rows"] == 1 and (s["worker"] == -1).all()


def test_a_toml_model_nested_1000_deep_and_one_with_escapes(tmp_path):
    deep = tmp_path / "deep.toml"
    deep.write_text("a = " + "[" * 1000 + "]" * 1000 + "\n")
    code, _, err = cli("analyze", LOG, "--model", deep)
    assert code == EXIT_USAGE and "nested too deeply" in one_line(err)
    esc = tmp_path / "esc.toml"
    esc.write_text('held = "mutex_held"\n[roles]\nh2d = ["ntt_kernels"]\n[vocabulary]\n'
                   'record = "st\\u001b]8;;http://e.x/\\u001b\\\\ep"\n')
    code, out, err = cli("analyze", LOG, "--model", esc)
    assert code == EXIT_USAGE and "control character" in one_line(err)
    assert "\x1b" not in out + err
    wide = tmp_path / "wide.toml"
    wide.write_text('held = "mutex_held"\n[roles]\nh2d = [[[[["x"]]]]]\n')
    code, _, err = cli("analyze", LOG, "--model", wide)
    assert code == EXIT_USAGE and "nested more than" in one_line(err)


# -- odd files ---------------------------------------------------------------------------------

def test_a_fifo_with_a_writer_is_read(tmp_path):
    fifo = tmp_path / "f.log"
    os.mkfifo(fifo)

    def write():
        with open(fifo, "wb") as w:
            w.write(LOG.read_bytes())

    threading.Thread(target=write, daemon=True).start()
    code, out, err = cli("analyze", fifo, "--json")
    assert code == 0, err
    assert json.loads(out)["log"]["records"]


def test_a_fifo_without_a_writer_does_not_hang(tmp_path, monkeypatch):
    fifo = tmp_path / "f.log"
    os.mkfifo(fifo)
    monkeypatch.setenv("GPUSCOPE_FIFO_WAIT", "0.5")
    t = time.monotonic()
    code, _, err = cli("analyze", fifo)
    assert code == EXIT_INPUT and "named pipe" in one_line(err)
    assert time.monotonic() - t < 10


def test_samples_from_a_fifo(tmp_path):
    fifo = tmp_path / "s.csv"
    os.mkfifo(fifo)
    threading.Thread(target=lambda: fifo.write_bytes((RUN / "samples.csv").read_bytes()), daemon=True).start()
    code, _, err = cli("analyze", RUN, "--samples", fifo, "--json")
    assert code == 0, err


def test_a_proc_file_is_not_empty():
    code, _, err = cli("analyze", "/proc/self/status")
    assert code == EXIT_NO_DATA and "no timing lines" in one_line(err)  # read: it holds text, not timings


@pytest.mark.parametrize("kind", ["fifo", "dir", "zero"])
def test_a_run_directory_whose_timing_log_is_no_file_is_refused(tmp_path, kind):
    d = _rundir(tmp_path)
    (d / "timing.log").unlink()
    if kind == "fifo":
        os.mkfifo(d / "timing.log")
    elif kind == "dir":
        (d / "timing.log").mkdir()
    else:
        (d / "timing.log").symlink_to("/dev/zero")
    code, _, err = cli("analyze", d)
    assert code == EXIT_INPUT and "not a regular file" in one_line(err)


def test_a_utf8_bom_does_not_cost_the_first_line(tmp_path):
    plain = tmp_path / "plain.log"
    plain.write_text("step_ms=5\nstep_ms=6\n")
    bom = tmp_path / "bom.log"
    bom.write_bytes(b"\xef\xbb\xbf" + plain.read_bytes())
    a = json.loads(cli("analyze", plain, "--json")[1])
    b = json.loads(cli("analyze", bom, "--json")[1])
    assert a["log"]["records"] == b["log"]["records"] and b["log"]["timing_lines"] == 2
    assert json.loads(cli("analyze", "-", "--json", input=bom.read_bytes())[1])["log"]["timing_lines"] == 2


@pytest.mark.parametrize("enc", ["utf-16", "utf-16-be", "utf-32"])
def test_utf16_text_is_read_not_binary(tmp_path, enc):
    f = tmp_path / "w.log"
    text = LOG.read_text()
    f.write_bytes(text.encode(enc) if enc != "utf-16-be" else b"\xfe\xff" + text.encode("utf-16-be"))
    code, out, err = cli("analyze", f, "--json")
    assert code == 0, err
    assert json.loads(out)["log"]["timing_lines"] == json.loads(cli("analyze", LOG, "--json")[1])["log"]["timing_lines"]


def test_samples_from_another_day_are_refused_with_both_spans(tmp_path):
    lines = (RUN / "samples.csv").read_text().splitlines()
    out = [lines[0]]
    for ln in lines[1:]:
        f = ln.split(",")
        f[0] = f"{float(f[0]) - 2 * 86400:.3f}"
        out.append(",".join(f))
    s = tmp_path / "other_day.csv"
    s.write_text("\n".join(out) + "\n")
    code, _, err = cli("analyze", RUN, "--samples", s)
    line = one_line(err)
    assert code == EXIT_USAGE and "do not overlap in time" in line and "2.0 days apart" in line
    assert line.count("UTC") == 2
    assert cli("analyze", RUN, "--samples", RUN / "samples.csv")[0] == 0


def test_spans_csv_rows_short_of_their_header_or_with_junk_ids_are_dropped(tmp_path):
    from gpuscope.rundir_spans import read_spans

    d = _rundir(tmp_path)
    t0 = float((d / "samples.csv").read_text().splitlines()[2].split(",")[0])
    (d / "spans.csv").write_text(f"t_start,t_end,gpu,worker,partition,phase\n{t0},{t0 + 0.5},h2d\n"
                                 f"{t0},{t0 + 1},0,1e300,2,z\n{t0},{t0 + 1},0,1,2,ntt\n")
    s = read_spans(d)
    assert s["phase"].tolist() == ["ntt"] and s.attrs["malformed_rows"] == 2
    code, _, err = cli("plot", d, "-o", tmp_path / "p.png")  # a NaN phase crashed the legend
    assert code == 0, err


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv"), reason="needs root and setpriv to act as nobody")
def test_a_directory_without_its_execute_bit_is_one_line():
    import tempfile

    top = Path(tempfile.mkdtemp(prefix="noexec-"))  # pytest's own folders are 0700: nobody could not reach them
    top.chmod(0o755)
    d = _rundir(top)
    d.chmod(0o644)  # readable, not searchable
    try:
        for target in (d, d / "timing.log"):
            r = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable, "-m",
                                "gpuscope", "analyze", str(target)], capture_output=True, text=True, timeout=60,
                               env=dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1])))
            assert r.returncode == EXIT_INPUT and "permission denied" in one_line(r.stderr), r.stderr
    finally:
        d.chmod(0o755)
        shutil.rmtree(top)

"""The compiled scanner (parsers/_scan.c) and the Python scanners give the same frames and the
same `analyze --json`, on real logs and on random ones: the C scanner reads only what it is
certain of and hands every other line back to Python, so any difference is a bug."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpuscope import parsers
from gpuscope.errors import InputError, NoDataError
from gpuscope.parsers.log import logparse, reader, scan
from tests.conftest import DATA, EXAMPLES, REPO
from tests.test_fuzz_parsers import mutated_log

NATIVE = scan.compiled_scanner()
needs_native = pytest.mark.skipif(NATIVE is None, reason="the compiled scanner is not built here")
FRAMES = ("components", "records", "timeline", "skipped", "quantities")


def parse(src, fmt=None, *, pure: bool, **kw):
    old = os.environ.get(logparse.PURE_ENV)
    os.environ[logparse.PURE_ENV] = "1" if pure else "0"
    try:
        return parsers.parse_log(src, fmt, **kw)
    except (InputError, NoDataError) as e:
        return f"{type(e).__name__}: {e}"
    finally:
        if old is None:
            os.environ.pop(logparse.PURE_ENV, None)
        else:
            os.environ[logparse.PURE_ENV] = old


def same(a, b):
    if isinstance(a, str) or isinstance(b, str):
        assert a == b
        return
    for name in FRAMES:
        pd.testing.assert_frame_equal(getattr(a, name), getattr(b, name), check_exact=True)
    assert (a.format, a.total_lines, a.timing_lines, a.whole, a.whole_basis, a.notes) == (
        b.format, b.total_lines, b.timing_lines, b.whole, b.whole_basis, b.notes)
    # the names' codes in order of first appearance, on both paths
    assert a.columns("components").codes("component")[1] == b.columns("components").codes("component")[1]


def test_the_compiled_scanner_is_built_where_there_is_a_compiler():
    """`make test` / `pip install -e .` build it when a C compiler is present (CI has one)."""
    if not (shutil.which("cc") or shutil.which("gcc")):
        pytest.skip("no C compiler here: the Python scanners read every line")
    if os.environ.get(logparse.PURE_ENV, "") not in ("", "0"):
        pytest.skip(f"{logparse.PURE_ENV} is set: the suite runs the Python path")
    assert NATIVE is not None, "gcc is here but gpuscope.parsers._scan did not build (see pip's output)"


def test_the_env_var_forces_the_python_scanners(monkeypatch):
    monkeypatch.setenv(logparse.PURE_ENV, "1")
    assert scan.compiled_scanner() is None


REAL_LOGS = sorted({*EXAMPLES.glob("*.log"), *DATA.rglob("*.log")})


@needs_native
@pytest.mark.parametrize("path", REAL_LOGS, ids=lambda p: str(p.relative_to(REPO)))
def test_real_logs_read_alike(path):
    for src in (path, path.read_bytes()):
        same(parse(src, pure=True), parse(src, pure=False))


@needs_native
@pytest.mark.parametrize("fmt", ["cuzk", "condensed", "kv"])
def test_each_format_forced_on_the_daemon_log(fmt):
    data = (EXAMPLES / "cuzk_daemon.log").read_bytes()
    same(parse(data, fmt, pure=True), parse(data, fmt, pure=False))


@needs_native
def test_analyze_json_is_the_same(tmp_path):
    """The whole command, both ways, on logs of each format."""
    logs = [EXAMPLES / "cuzk_daemon.log", EXAMPLES / "article_excerpt.log", DATA / "h200_foreign" / "capture.log"]
    gen = tmp_path / "damaged.log"
    subprocess.run([sys.executable, str(REPO / "tools" / "gen_daemon_log.py"), "--partitions", "12", "--seed", "3",
                    "--damage", "0.05", "-o", str(gen)], check=True, capture_output=True)
    logs.append(gen)
    for log in logs:
        out = {}
        for pure in ("1", "0"):
            env = {**os.environ, logparse.PURE_ENV: pure}
            p = subprocess.run([sys.executable, "-m", "gpuscope", "analyze", str(log), "--json"], env=env,
                               capture_output=True, text=True, timeout=120)
            assert p.returncode == 0, p.stderr
            out[pure] = json.loads(p.stdout)
        assert out["1"] == out["0"], log


# -- random logs -----------------------------------------------------------------------------------

KEYS = ["mutex_wait_ms", "pre_lock_cpu_ms", "mutex_held_ms", "ntt_kernels", "msm_ms", "gpu_tid", "h2d_bytes",
        "num_circuits", "total_start_fn_ms", "a-b_ms", "_ms", "x.y", "upload", "job", "compute_s", "wait_us",
        "lat_ns", "step", "1x_ms", "msm", "d_b_alloc", "worker_id", "partition", "finish_ms", "total_ms"]
NUMBERS = ["0", "1", "17", "3481", "-5", "-0", "1.5", ".5", "5.", "1e3", "1E-2", "+7", "007", "1_000", "nan", "inf",
           "12345678901234567890", "1e999", "0.1", "2.50", "1048577", "3.0", "abc", "", "5=6", "j12", "Some(3)",
           "None", "Some(x)", "x1"]
UNITS = ["", "ms", "s", "us", "ns", "µs", "m", "sec"]
PREFIXES = ["", "2026-11-30T14:00:00.000000Z ", "2026-11-30T14:00:59.5Z ", "2026-11-30T14:00:00+01:00 ",
            "2026-11-30T14:00:00.123-0530 ", "2026-11-30T14:00:00 ", "2026-02-30T14:00:00Z ", "2026-11-30T14:00:61Z ",
            "2026-11-30T14:00:00,5Z ", "2026-11-30 14:00:00.5 ", "Nov 30 14:30:00 host cuzk[1]: ", "[pod/x/y] ",
            "svc-1  | ", "\x1b[2m2026-11-30T14:00:00Z\x1b[0m ", "Tue ", "T ", "C ", "9999-12-31T23:59:59.999999Z ",
            "2026-11-30T14:00:00.5z ", "2026-11-30T14:00:00.5]", "2026-11-30T24:00:00Z "]
SEPS = [" ", " | ", ", ", "\t", "  ", "|", ","]


GOOD_KEYS = ["mutex_wait_ms", "pre_lock_cpu_ms", "mutex_held_ms", "msm_ms", "gpu_tid", "h2d_bytes", "num_circuits",
             "total_start_fn_ms", "barrier_wait_ms", "upload", "compute_s", "wait_us", "lat_ns", "msm", "finish_ms",
             "total_ms", "worker_id", "partition", "job"]
GOOD_NUMBERS = ["0", "1", "17", "3481", "1.5", "0.25", "1610612736", "2", "48.211", "1e3", "007"]


@st.composite
def field(draw):
    if draw(st.integers(0, 4)):  # mostly what real logs print
        k = draw(st.sampled_from(GOOD_KEYS))
        v = draw(st.sampled_from(GOOD_NUMBERS)) + draw(st.sampled_from(["", "", "", "ms", "s", "us"]))
        if k == "job":
            v = draw(st.sampled_from(["abc", "j12", "x-1"]))
        return f"{k}={v}"
    k = draw(st.sampled_from(KEYS))
    v = draw(st.sampled_from(NUMBERS)) + draw(st.sampled_from(UNITS))
    return draw(st.sampled_from([f"{k}={v}", f"{k}={v}", k, f"={v}", f"{k}=", "monolithic", "=="]))


def _distinct(draw, keys, n):
    return draw(st.lists(st.sampled_from(keys), min_size=n, max_size=n, unique=True))


@st.composite
def good_line(draw):
    """A line as the programs print it: the C scanner reads it itself."""
    num = st.sampled_from(GOOD_NUMBERS + ["0", "12", "400", "1634"])
    kind = draw(st.sampled_from(["timing", "ntt", "timeline", "tracing", "kv"]))
    n = draw(st.integers(1, 5))
    if kind == "timing":
        keys = _distinct(draw, ["mutex_wait_ms", "pre_lock_cpu_ms", "mutex_held_ms", "msm_ms", "gpu_tid", "h2d_bytes",
                                "num_circuits", "total_start_fn_ms", "barrier_wait_ms", "tail_msm_ms", "other"], n)
        vals = [draw(num) if k != "gpu_tid" else draw(st.sampled_from(["0", "1", "2"])) for k in keys]
        body = "CUZK_TIMING: " + " ".join(f"{k}={v}" for k, v in zip(keys, vals, strict=True))
    elif kind == "ntt":
        keys = _distinct(draw, ["d_b_alloc", "ntt_kernels", "coset_intt_sync", "msm_invoke", "total"], n)
        body = "CUZK_NTT_H: " + " ".join(f"{k}={draw(num)}ms" for k in keys)
    elif kind == "timeline":
        det = _distinct(draw, ["partition=3", "worker=1", "gpu_ms=2136", "synth_ms=2226"], min(n, 4) - 1)
        body = ",".join(["TIMELINE", draw(num), draw(st.sampled_from(["GPU_START", "GPU_END", "SYNTH_END"])),
                         draw(st.sampled_from(["porep-1", "j"])), *det])
    elif kind == "tracing":
        keys = _distinct(draw, ["finish_ms", "drop_res_ms", "status_ms", "total_ms", "worker_id", "partition"], n)
        vals = [draw(num) if k.endswith("_ms") else draw(st.sampled_from(["0", "Some(3)", "None", "2"])) for k in keys]
        tag = draw(st.sampled_from(["GPU_TIMING", "FIN_TIMING"]))
        body = f" INFO cuzk_core::engine: {tag} finalizer partition " + " ".join(
            f"{k}={v}" for k, v in zip(keys, vals, strict=True))
    else:
        keys = _distinct(draw, ["mutex_wait_ms", "mutex_held_ms", "ntt_kernels", "msm", "batch_add", "upload_ms",
                                "compute", "wait_s", "lat_us", "h2d_bytes", "job", "step", "loss", "epoch", "v_num",
                                "train_loss", "tokens_per_sec", "data_time", "Loss", "ts", "time_per_step", "t_wall"], n)
        parts = []
        for k in keys:
            v = draw(num) + ("" if k == "h2d_bytes" else draw(st.sampled_from(["", "ms", "s", "us", "ns"])))
            parts.append(f"{k}={'abc' if k == 'job' else v}")
        body = draw(st.sampled_from(["INFO ", ""])) + draw(st.sampled_from([" | ", " ", ", "])).join(parts)
    return draw(st.sampled_from(PREFIXES[:5])) + body


@st.composite
def timing_line(draw):
    if draw(st.integers(0, 2)):
        return draw(good_line())
    fields = draw(st.lists(field(), min_size=0, max_size=6))
    sep = draw(st.sampled_from(SEPS))
    body = sep.join(fields)
    kind = draw(st.sampled_from(["timing", "timing", "timing", "ntt", "ntt", "timeline", "timeline", "gpu", "fin",
                                 "kv", "kv", "kv", "nospace", "noise", "info", "marker_twice"]))
    if kind == "timing":
        body = "CUZK_TIMING: " + body
    elif kind == "ntt":
        body = "CUZK_NTT_H: " + " ".join(f.replace("_ms=", "=") + "ms" if "=" in f else f for f in fields)
    elif kind == "timeline":
        off = draw(st.sampled_from(GOOD_NUMBERS + NUMBERS))
        ev = draw(st.sampled_from(["GPU_START", "GPU_END", "SYNTH_START", "SYNTH_END", "GPU_END", " X", "1bad", ""]))
        job = draw(st.sampled_from(["job-1", " job-2 ", "", "j"]))
        det = draw(st.lists(st.sampled_from(["partition=3", "worker=1", "gpu_ms=5", "synth_ms=-1", "monolithic",
                                             "partition=x", "gpu_ms=1.5", " partition=2", "", "k=v", "worker=+2",
                                             "partition=99999999999999999999", "synth_ms=2226", "worker=0"]),
                            max_size=4))
        body = ",".join(["TIMELINE", off, ev, job, *det])
    elif kind in ("gpu", "fin"):
        tag = "GPU_TIMING" if kind == "gpu" else "FIN_TIMING"
        body = draw(st.sampled_from(["", " INFO x: ", "xGPU", "a "])) + tag + " hot_path " + " ".join(fields)
    elif kind == "nospace":
        body = "CUZK_TIMING:" + body
    elif kind == "info":
        body = "CUZK_TIMING: d_a_cache allocated 512 MiB on gpu 0"
    elif kind == "marker_twice":
        body = "CUZK_NTT_H: a=1ms CUZK_TIMING: " + body
    line = draw(st.sampled_from(PREFIXES[:3] * 4 + PREFIXES)) + body
    if draw(st.integers(0, 19)) == 0:  # a character the C scanner hands back
        at = draw(st.integers(0, len(line)))
        line = line[:at] + draw(st.sampled_from(["é", "\x0b", "\x1c", "\r", "\x00", "\u00a0"])) + line[at:]
    return line


@st.composite
def random_log(draw):
    lines = draw(st.lists(timing_line(), min_size=1, max_size=25))
    eol = draw(st.sampled_from(["\n", "\r\n"]))
    text = eol.join(lines)
    if draw(st.booleans()):
        text += eol
    return text


@needs_native
@settings(max_examples=int(os.environ.get("SCANNER_EXAMPLES", 300)), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_log(), st.sampled_from([None, "cuzk", "condensed", "kv"]), st.sampled_from(["mutex_held", "msm"]))
def test_random_logs_read_alike(text, fmt, held):
    data = text.encode("utf-8", "surrogatepass")
    same(parse(data, fmt, pure=True, held_key=held), parse(data, fmt, pure=False, held_key=held))


@needs_native
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_log(), st.integers(1, 300))
def test_random_logs_in_small_chunks_read_alike(text, size):
    data = text.encode("utf-8", "surrogatepass")
    one = parse(data, pure=True)
    old = reader.CHUNK
    reader.CHUNK = size
    try:
        same(one, parse(data, pure=False))
    finally:
        reader.CHUNK = old


@needs_native
@settings(max_examples=200, deadline=None)
@given(st.sampled_from(PREFIXES), st.integers(0, 59), st.integers(0, 999999), st.sampled_from(["Z", "+02:00", "-0130", ""]))
def test_iso_times_read_alike(prefix, sec, frac, tz):
    from gpuscope.parsers.log.linetime import LineTimes

    tok = f"2026-{1 + sec % 12:02d}-{1 + frac % 28:02d}T{sec % 24:02d}:{frac % 60:02d}:{sec:02d}.{frac:06d}{tz}"
    c = NATIVE.iso_seconds(tok)
    if c is not None:
        assert c == LineTimes().iso(tok)


@needs_native
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_log(), st.sampled_from([None, "cuzk", "condensed", "kv"]))
def test_mutated_real_lines_read_alike(text, fmt):
    """The mutations of tests/test_fuzz_parsers.py (inserted, deleted, replaced characters in
    real CuZK, tracing and condensed lines): what one path reads, the other reads alike."""
    raw = text.encode("utf-8", "surrogatepass")
    same(parse(raw, fmt, pure=True), parse(raw, fmt, pure=False))

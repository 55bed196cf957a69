"""`gpuscope compare`, `plot`, `export` through typer's CliRunner (stdout and stderr apart),
end to end on generated pinned/pageable daemon logs and the shipped examples."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
from typer.testing import CliRunner

from gpuscope.cli import app
from tests.conftest import EXAMPLES, REPO

runner = CliRunner()
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def run(*args, columns: int = 120):
    return runner.invoke(app, [*map(str, args)], env={"COLUMNS": str(columns)})


@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    d = tmp_path_factory.mktemp("logs")
    out = {}
    for mode in ("pinned", "pageable"):
        p = d / f"{mode}.log"
        subprocess.run([sys.executable, str(REPO / "tools" / "gen_daemon_log.py"), "--mode", mode,
                        "--partitions", "16", "--seed", "5", "-o", str(p)], check=True, capture_output=True)
        out[mode] = p
    return out


def _held_median(path):
    from gpuscope.parsers import parse_log

    r = parse_log(str(path)).records
    return float(np.median(r.loc[r["complete"], "held_ms"]))


def test_compare_json_medians_verdict_and_prediction(logs):
    r = run("compare", logs["pinned"], logs["pageable"], "--json", "--abc-bytes", "1.5G", "--bootstrap", "500")
    assert r.exit_code == 0, r.stderr
    assert r.stderr == ""
    j = json.loads(r.stdout)
    held = j["components"]["mutex_held"]
    assert held["a_median_ms"] == _held_median(logs["pinned"])
    assert held["b_median_ms"] == _held_median(logs["pageable"])
    assert held["ratio"] == pytest.approx(held["b_median_ms"] / held["a_median_ms"])
    assert held["ci_low"] > 1
    assert j["winner"] == "pinned" and j["verdict"].startswith("pinned cut mutex_held ")
    assert "throughput +" in j["verdict"]
    assert j["a"]["label"] == "pinned" and j["b"]["label"] == "pageable"
    p = j["prediction"]
    assert p["from"].endswith("pageable.log") and p["against"] == "pinned"
    assert abs(p["held_error"]) < 0.25  # the generator's pinned upload is ~50 GB/s + ~40 ms of NTT


def test_compare_is_reproducible_with_a_seed_and_changes_with_another(logs):
    args = ("compare", logs["pinned"], logs["pageable"], "--json", "--bootstrap", "300")
    a = json.loads(run(*args, "--seed", "4").stdout)
    b = json.loads(run(*args, "--seed", "4").stdout)
    c = json.loads(run(*args, "--seed", "5").stdout)
    assert a == b
    assert a["components"]["mutex_held"]["ci_low"] != c["components"]["mutex_held"]["ci_low"]


def test_compare_console_and_html(logs, tmp_path):
    html = tmp_path / "report.html"
    r = run("compare", logs["pageable"], logs["pinned"], "--html", html, "--bootstrap", "300", "--abc-bytes", "1.5G")
    assert r.exit_code == 0, r.stderr
    assert "Verdict: pinned cut mutex_held" in r.stdout
    assert "Components (ms)" in r.stdout and "What-if" in r.stdout
    assert r.stderr == f"gpuscope: wrote {html}\n"
    text = html.read_text()
    assert text.count("data:image/png;base64,") == 2 and "pinned cut mutex_held" in text


def test_compare_without_upload_size_says_why_no_prediction(logs):
    r = run("compare", logs["pinned"], EXAMPLES / "article_excerpt.log", "--json", "--bootstrap", "200")
    assert r.exit_code == 0, r.stderr
    j = json.loads(r.stdout)
    assert j["prediction"]["available"] is False and "abc-bytes" in j["prediction"]["reason"]


def test_compare_modes_runs_both_on_the_cpu_reference(tmp_path):
    r = run("compare", "pinned", "pageable", "--backend", "cpu", "--log-n", "6", "--partitions", "2",
            "--out-root", tmp_path, "--json", "--bootstrap", "200")
    assert r.exit_code == 0, r.stderr
    j = json.loads(r.stdout)
    assert j["a"]["mode"] == "pinned" and j["b"]["mode"] == "pageable"
    assert sorted(p.name.split("-")[-1] for p in tmp_path.iterdir()) == ["pageable", "pinned"]
    assert any("CPU reference" in n for n in j["notes"])
    assert "running pinned" in r.stderr and "running pageable" in r.stderr


@pytest.mark.parametrize(
    "args, code, msg",
    [
        (("compare", "/nonexistent/a.log", "/nonexistent/b.log"), 3, "no such file"),
        (("compare", "A", "B", "--bootstrap", "5"), 2, "--bootstrap"),
        (("plot", EXAMPLES / "article_excerpt.log", "-o", "x.png"), 4, "nothing to draw: the input has no time stamps"),
        (("export", EXAMPLES / "article_excerpt.log"), 2, "--perfetto"),
    ],
)
def test_bad_input_one_line_and_exit_code(args, code, msg):
    r = run(*args)
    assert r.exit_code == code
    assert r.stdout == ""
    assert r.stderr.count("\n") == 1 and r.stderr.startswith("gpuscope: ") and msg in r.stderr


def test_plot_daemon_log(tmp_path):
    out = tmp_path / "t.png"
    r = run("plot", EXAMPLES / "cuzk_daemon.log", "-o", out, "--end", "30")
    assert r.exit_code == 0, r.stderr
    assert r.stderr == ""
    assert r.stdout.startswith(f"wrote {out} (") and "no samples" in r.stdout
    data = out.read_bytes()
    assert data[:8] == PNG_MAGIC and len(data) > 20_000


def test_plot_unwritable_output(tmp_path):
    r = run("plot", EXAMPLES / "cuzk_daemon.log", "-o", tmp_path / "no" / "such" / "dir.png")
    assert r.exit_code == 6 and r.stdout == "" and "cannot write the PNG" in r.stderr


def test_export_daemon_log_has_a_slice_per_phase_per_worker(tmp_path):
    out = tmp_path / "trace.json"
    r = run("export", EXAMPLES / "cuzk_daemon.log", "--perfetto", out)
    assert r.exit_code == 0, r.stderr
    assert r.stderr == "" and "open it in ui.perfetto.dev" in r.stdout
    tr = json.loads(out.read_text())
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in tr["traceEvents"] if e["name"] == "thread_name"}
    per_worker = {}
    for e in tr["traceEvents"]:
        if e["ph"] == "X":
            assert {"ph", "ts", "dur", "pid", "tid", "name"} <= set(e)
            per_worker.setdefault(names[(e["pid"], e["tid"])], set()).add(e["args"]["phase"])
    for w in ("worker 0", "worker 1"):  # no h2d field: ntt_kernels is drawn as what it is, upload + NTT
        assert {"lock_wait", "ntt_kernels", "coset_intt_sync", "msm", "batch_add", "tail_msm"} <= per_worker[w]
    assert per_worker["synthesis 0"] == {"synth"}


def test_help_has_examples():
    for cmd in ("compare", "plot", "export"):
        r = run(cmd, "--help")
        assert r.exit_code == 0 and "Example: gpuscope " + cmd in r.stdout


@pytest.fixture(scope="module")
def rundir(logs, tmp_path_factory):
    """A run directory around the pageable log: meta.json and NVML samples that follow its
    phases (slow RX during uploads, fast RX and busy SMs during compute)."""
    from gpuscope.analysis.evidence.log.attribution import display_phases
    from gpuscope.sources import open_source

    d = tmp_path_factory.mktemp("run") / "20261130-140000-pageable"
    d.mkdir()
    (d / "timing.log").write_text(logs["pageable"].read_text())
    (d / "meta.json").write_text(json.dumps({
        "schema_version": 1, "mode": "pageable", "line_rate_gbs": 55.0, "status": "complete",
        "workload": {"mode": "pageable", "h2d_bytes_per_partition": 1610612736, "workers_per_gpu": 2,
                     "synth_threads": 2, "gpus": [0]}}))
    ph, _ = display_phases(open_source(d))
    t = np.arange(ph["t_start"].min(), ph["t_end"].max(), 0.02)
    rx, sm = np.full(t.size, 0.3), np.zeros(t.size)
    for r in ph.itertuples():
        m = (t >= r.t_start) & (t < r.t_end)
        if r.phase in ("h2d", "ntt_kernels"):
            rx[m] = 1.2
        elif r.phase in ("msm", "batch_add", "tail_msm"):
            rx[m], sm[m] = 45.0, 0.92
    import pandas as pd

    pd.DataFrame({"t_wall": t, "t_mono": t - t[0], "gpu": 0, "rx_gbs": rx, "tx_gbs": 0.2,
                  "sm_active": sm}).to_csv(d / "samples.csv", index=False)
    return d


def test_compare_with_a_run_directory_uses_meta_and_samples(logs, rundir):
    r = run("compare", logs["pinned"], rundir, "--json", "--bootstrap", "300")
    assert r.exit_code == 0, r.stderr
    j = json.loads(r.stdout)
    b = j["b"]
    assert b["label"] == "pageable" and b["mode"] == "pageable"
    assert b["bytes_per_partition"] == 1610612736 and b["upload_gbs"] > 0
    assert b["pcie_per_phase"]["h2d"]["rx_gbs_median"] == pytest.approx(1.2)
    assert b["pcie_per_phase"]["msm"]["sm_active_median"] == pytest.approx(0.92)
    w = j["prediction"]["whatif"]
    assert w["line_rate_gbs"] == 55.0 and w["line_rate_source"] == "meta"
    assert w["bytes_source"] == "run meta.json" and w["workers"] == 2 and w["synth_threads"] == 2
    assert j["prediction"]["from"] == str(rundir)


def test_plot_and_export_draw_the_samples(rundir, tmp_path):
    fig_path, trace_path = tmp_path / "r.png", tmp_path / "r.json"
    r = run("plot", rundir, "-o", fig_path)
    assert r.exit_code == 0 and "samples" in r.stdout and "no samples" not in r.stdout
    assert fig_path.read_bytes()[:8] == PNG_MAGIC
    r = run("export", rundir, "--perfetto", trace_path)
    assert r.exit_code == 0, r.stderr
    tr = json.loads(trace_path.read_text())
    cs = [e for e in tr["traceEvents"] if e["ph"] == "C"]
    assert {e["name"] for e in cs} == {"PCIe GB/s", "SM active %"}
    assert max(e["args"]["rx_gbs"] for e in cs if e["name"] == "PCIe GB/s") == 45.0
    assert "pageable host memory" in tr["metadata"]["title"]


def test_a_json_compare_of_two_logs_loads_no_pandas():
    """compare --json of two daemon logs (the run figures, the per-component bootstrap and the
    pinned what-if with its replay) reads the parser's columns: no DataFrame, no pandas
    (0.25 CPU-s of import that issue 21's 3x-one-analyze budget cannot afford)."""
    probe = ("import sys, io, contextlib; from gpuscope.cli import main\n"
             "buf = io.StringIO()\n"
             "with contextlib.redirect_stdout(buf):\n"
             f"    try: main(['compare', {str(EXAMPLES / 'cuzk_daemon.log')!r}, "
             f"{str(EXAMPLES / 'article_excerpt.log')!r}, '--abc-bytes', '1.5GiB', '--json'])\n"
             "    except SystemExit as e: assert not e.code, e.code\n"
             "doc = __import__('json').loads(buf.getvalue())\n"
             "print(doc['prediction'].get('available', True), 'pandas' in sys.modules, file=sys.stderr)")
    p = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, cwd=REPO)
    assert p.returncode == 0, p.stderr
    assert p.stderr.strip().splitlines()[-1] == "True False"

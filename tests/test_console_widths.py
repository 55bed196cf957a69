"""Console reports on 80- and 120-column terminals (issue 13): names never wrap inside a word
(they break after `.`, `_`, `(`, or between CamelCase humps), nothing is cut off with an
ellipsis, no line is wider than the terminal, and what bold says (a ratio's interval that
excludes 1) is also said in text, so it survives a pipe."""

from __future__ import annotations

import io
import json
from types import SimpleNamespace

import pytest
from rich.console import Console
from typer.testing import CliRunner

from gpuscope.cli import app
from gpuscope.reports.safe_text import _LEVELS, LiteralTable, name
from tests.conftest import DATA, EXAMPLES

RUNS = DATA / "h200_foreign" / "runs"
SOURCES = {
    "cuzk": (EXAMPLES / "cuzk_daemon.log", ["--records", "-v"]),
    "article": (EXAMPLES / "article_excerpt.log", ["--records", "-v", "--what-if", "--abc-bytes", "1.5G"]),
    "lines": (RUNS / "copy_pageable", ["--records", "-v"]),
    "trace": (DATA / "h200_foreign" / "traces" / "train_slow.json.gz", ["-v"]),
    "samples": (RUNS / "train_slow" / "samples.csv", ["-v"]),
    "c8": (DATA / "h200_contention" / "pageable-c8", ["--records"]),
}


def _run(width: int, *args) -> str:
    r = CliRunner().invoke(app, [str(a) for a in args], env={"COLUMNS": str(width)})
    assert r.exit_code == 0, r.stderr
    return r.stdout


def _names_whole(out: str, names) -> None:
    """Each name's pieces (the finest places it may break) stand whole on one line."""
    lines = out.splitlines()
    for n in names:
        for piece in _LEVELS[-1].findall(n):
            piece = piece.strip()
            if piece:
                assert any(piece in line for line in lines), (n, piece)


@pytest.mark.parametrize("width", [80, 120])
@pytest.mark.parametrize("key", list(SOURCES))
def test_analyze_fits_the_terminal_and_keeps_names_whole(key, width):
    path, opts = SOURCES[key]
    out = _run(width, "analyze", path, *opts)
    doc = json.loads(_run(width, "analyze", path, "--json"))
    # nothing cut off, but a kernel's name shortened by design (top_kernels' short_name; whole in --json)
    shortened = [k["short_name"] for k in (doc["trace"] or {}).get("top_kernels") or [] if "…" in k["short_name"]]
    assert all(any(s in line for s in shortened) for line in out.splitlines() if "…" in line)
    assert max(len(line) for line in out.splitlines()) <= width
    names = list((doc["log"] or {}).get("components") or {})
    names += [p["phase"] for p in (doc["trace"] or {}).get("phases") or [] if isinstance(p, dict)]
    _names_whole(out, names)


def test_long_component_names_break_between_words_at_80_columns():
    out = _run(80, "analyze", EXAMPLES / "cuzk_daemon.log")
    assert "gpu_timing." in out and "total_overhead" in out and "fail_check" in out
    assert "fail_che\n" not in out and "total_ov\n" not in out


def test_tenure_table_whole_at_80_columns():
    out = _run(80, "analyze", EXAMPLES / "article_excerpt.log", "--records")
    table = out[out.index("Tenures"):]
    header = next(line for line in table.splitlines() if line.lstrip().startswith("#"))
    assert header.split() == ["#", "lines", "gpus", "held", "h2d", "gpu", "stall", "other", "wait", "note"]
    assert "inconsistent (+521)" in table  # on one line, not cut
    assert "gpu = gpu_compute, stall = cpu_stall" in table


def test_trace_phase_names_break_at_camel_case_humps():
    out = _run(80, "analyze", DATA / "h200_foreign" / "traces" / "train_slow.json.gz")
    assert "SingleProcessDataLoader" in out or "SingleProcessDataLoaderIter" in out
    assert "DataLoa\n" not in out and "evalua\n" not in out


@pytest.mark.parametrize("width", [80, 120])
def test_compare_marks_the_intervals_that_exclude_1_in_text(width, monkeypatch):
    monkeypatch.chdir(DATA / "h200_contention")  # paths as short as a user types them, in any checkout
    a, b = "pageable-c8", "pinned-c8"
    out = _run(width, "compare", a, b)  # CliRunner: no terminal, no colour, so no bold
    assert "…" not in out and max(len(line) for line in out.splitlines()) <= width
    assert "*: the 95% interval excludes 1" in out
    rows = {line.split()[0]: line for line in out.splitlines() if line.startswith(" ") and len(line.split()) > 6}
    assert rows["mutex_held"].rstrip().endswith("*") and rows["h2d"].rstrip().endswith("*")
    assert not rows["msm_invoke"].rstrip().endswith("*")
    # an interval that excludes 1 never shows a bound that rounds to 1.00
    assert "0.58-0.997" in rows["total_start_fn"]
    assert "---" not in out  # an unknown interval is "-"
    assert f"A = pageable: {a}" in out  # the sources above the tables, not a column


def test_compare_of_another_program_speaks_of_steps():
    out = _run(80, "compare", RUNS / "copy_pageable", RUNS / "copy_pinned")
    run = out[out.index("Run"):]
    assert "complete steps" in run and "throughput (steps/min)" in run and "partitions" not in run
    assert "tenures" not in out and "GPU lock" not in run
    assert "PCIe RX outside the phases" in run and "(none)" not in run
    assert "GPM SM activity" in out and "gpm_sm_active" not in out


def test_run_table_fits_80_columns():
    from gpuscope.reports.run_console import render_run

    cfg = SimpleNamespace(mode="pageable", log_n=24, partitions=16, workers=2, gpus=[0], synth_threads=4,
                          contention=8, verify=True)
    summary = {"partitions_done": 16, "wall_s": 24.53, "partitions_per_s": 0.652, "h2d_bytes": 16 * 2**31,
               "h2d_s": 10.4, "h2d_gbs": 3.3, "h2d_share_of_held": 0.55, "verified": 16,
               "host_memory": {"registrations": 16, "register_s": 0.41, "unregister_s": 0.12}}
    outcome = SimpleNamespace(path="runs/20261130-134343-pageable-with-a-long-name", status="complete",
                              result=SimpleNamespace(summary=lambda: summary), notes=["a note"], analysis=None)
    buf = io.StringIO()
    render_run(cfg, "gpu", outcome, Console(file=buf, width=80, color_system=None))
    out = buf.getvalue()
    assert "…" not in out and max(len(line) for line in out.splitlines()) <= 80
    for s in ("16 done in 24.53 s", "= 3.3 GB/s", "16/16 partitions verified", "8 contention"):
        assert s in out.replace("\n", " ").replace("  ", " ") or s in out


def test_name_cells_never_fold_a_word_when_a_break_exists():
    t = LiteralTable()
    t.add_column("component")
    t.add_column("x" * 55, no_wrap=True)
    for n in ("gpu_timing.total_overhead", "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"):
        t.add_row(name(n), "1")
    buf = io.StringIO()
    Console(file=buf, width=80, color_system=None).print(t)
    out = buf.getvalue()
    assert "gpu_timing." in out and "total_overhead" in out
    assert "Single" in out and "Process" in out and "DataLoa\n" not in out

"""Benchmark tables (Google Benchmark, nccl-tests, criterion: parsers/log/benchtable.py) read as
what they are: a table of time per benchmark or per message size, never steps. Each corpus
case with `table` in tests/data/corpus/expected.toml: its tool, columns, rows, first row and
summary; `gpuscope analyze` shows it (console and --json `benchmark_table`) with the
statement that no steps, split or idle diagnosis come from it; every command that needs
steps refuses it (exit 4) with what it is."""

from __future__ import annotations

import json
import tomllib

import pytest
from typer.testing import CliRunner

from gpuscope import parsers
from gpuscope.cli import app
from gpuscope.errors import NoDataError
from gpuscope.parsers.log.benchtable import STATEMENT, read_bench_table
from gpuscope.parsers.log.logparse import read_table
from gpuscope.sources import open_source
from tests.conftest import DATA

EXPECTED = tomllib.loads((DATA / "corpus" / "expected.toml").read_text())
BENCH_TOOLS = {"google_benchmark", "nccl_tests", "criterion"}  # (the summary tables: tests/test_summary_tables.py)
TABLES = sorted(c for c, w in EXPECTED.items() if w.get("table") in BENCH_TOOLS)
runner = CliRunner()


def _table(case: str):
    with pytest.raises(NoDataError, match="measurements, not timed steps") as e:
        parsers.parse_log(DATA / case)  # (a table is no log: refused with what it is, exit 4)
    assert e.value.exit_code == 4
    t = read_table(DATA / case)
    assert t is not None
    return t


def _dash(xs):
    return ["-" if x is None else x for x in xs]


def test_every_table_tool_has_cases():
    assert {EXPECTED[c]["table"] for c in TABLES} == BENCH_TOOLS


@pytest.mark.parametrize("case", TABLES)
def test_each_table_reads_as_expected(case):
    want, t = EXPECTED[case], _table(case)
    assert t.tool == want["table"]
    assert [c["name"] for c in t.columns] == want["table_columns"]
    assert len(t.rows) == want["table_rows"] and len(t.errors) == want.get("table_errors", 0)
    first = want["table_first"]
    r = t.rows[0]
    assert r["name"] == first["name"] and _dash(r["units"]) == first["units"]
    got = _dash(r["values"])
    assert len(got) == len(first["values"])
    for g, w in zip(got, first["values"], strict=True):
        assert g == (pytest.approx(w, rel=1e-6) if isinstance(w, float) else w)
    if "table_summary" in want:
        assert {s["name"]: s["value"] for s in t.summary} == want["table_summary"]
    if "table_aggregates" in want:
        assert [r.get("aggregate", "") for r in t.rows] == want["table_aggregates"]
    assert all(len(r["values"]) == len(t.columns) == len(r["units"]) for r in t.rows)


@pytest.mark.parametrize("case", TABLES)
def test_analyze_shows_the_table_and_says_what_it_is(case):
    r = runner.invoke(app, ["analyze", str(DATA / case)], env={"COLUMNS": "120"})
    assert r.exit_code == 0, r.stderr
    out = r.stdout
    assert "benchmark table, not timed steps" in out and "no diagnosis of GPU idle" in out
    assert "Record time split" not in out and "Diagnosis" not in out and "Bounds" not in out
    assert EXPECTED[case]["table_first"]["name"] in out
    j = runner.invoke(app, ["analyze", str(DATA / case), "--json"])
    assert j.exit_code == 0, j.stderr
    doc = json.loads(j.stdout)
    # a benchmark tool's table: the table part alone, every other part null (no log of zeros)
    assert doc["source"]["kind"] == "benchmark_table" and doc["version"] == 2
    assert {k for k, v in doc.items() if v is not None and k not in ("version", "source", "findings")} == {"table"}
    bt = doc["table"]
    assert bt["tool"] == EXPECTED[case]["table"] and bt["statement"] == STATEMENT
    assert len(bt["rows"]) == EXPECTED[case]["table_rows"]


@pytest.mark.parametrize("cmd", [["compare", "{c}", "{c}"], ["plot", "{c}", "-o", "{tmp}/x.png"]])
def test_commands_that_need_steps_refuse_a_table_with_what_it_is(cmd, tmp_path):
    case = str(DATA / "corpus/nccl_tests/all_reduce_perf.txt")
    r = runner.invoke(app, [a.format(c=case, tmp=tmp_path) for a in cmd])
    assert r.exit_code == 4
    assert "nccl-tests table" in r.stderr and "measurements, not timed steps" in r.stderr


def test_html_or_csv_of_a_table_is_a_usage_error(tmp_path):
    r = runner.invoke(app, ["analyze", str(DATA / "corpus/criterion/fib.txt"), "--csv", str(tmp_path)])
    assert r.exit_code == 2 and "--json gives the table" in r.stderr


def test_a_forced_format_reads_lines_as_asked():
    """--format names the reading: the table is not looked for (its cells are no timing lines)."""
    with pytest.raises(NoDataError) as e:
        parsers.parse_log(DATA / "corpus/google_benchmark/memcpy.txt", "lines")
    assert "no timing lines found" in str(e.value) and "shows it as the benchmark table" not in str(e.value)


def test_a_table_is_a_source_returned_not_raised(tmp_path):
    """issue 31: the readers' `table` entry opens a benchmark table as a source of its own; the
    analysis holds its table part and nothing else (no log of zeros, no finding); a log whose
    head names nccl-tests beside its own steps (what would make the table reader fire falsely)
    opens as the log."""
    from gpuscope.analysis import analyze

    case = DATA / "corpus/nccl_tests/all_reduce_perf.txt"
    src = open_source(case)
    assert src.kind == "table" and src.table is not None and src.log is None and src.trace is None
    a = analyze(src)
    assert a.table is src.table and a.log is None and a.trace is None and a.samples is None
    assert a.findings == [] and a.evidence is None and a.kind == "benchmark_table"
    doc = a.document()
    assert doc["table"] is not None and doc["table"]["tool"] == "nccl_tests" and doc["log"] is None
    assert doc["source"]["model"] is None and doc["source"]["options"] is None
    with pytest.raises(NoDataError, match="nccl-tests table.*measurements, not timed steps"):
        src.not_a_table()
    steps = "".join(f"step {i} data_ms={10 + i % 3} compute_ms={40 + i % 5} step_ms={52 + i % 7}\n" for i in range(40))
    mixed = tmp_path / "train.log"
    mixed.write_text(case.read_text() + steps)
    src = open_source(mixed)
    assert src.kind == "log" and src.table is None and src.log is not None and src.log.complete_records == 40
    with pytest.raises(NoDataError, match="no timing lines"):  # --format: read as lines, no table looked for
        open_source(case, fmt="lines")


def test_a_table_inside_other_text_and_damage():
    # a header without rows is no table; a damaged JSON report is refused, never read as lines
    assert read_bench_table("Benchmark   Time   CPU   Iterations\n-----\n") is None
    bad = '{\n  "context": {"date": "x"},\n  "benchmarks": [\n    {"name": "BM_a", "real_time": 2.5, "time_unit": "ns",'
    with pytest.raises(NoDataError, match="could not be read whole"):
        parsers.parse_log(bad + "\n", None)
    # a criterion benchmark whose name is too long for its line: the name on the line above
    t = read_bench_table("a_very_long_benchmark_group/with_a_long_name\n                        time:   [1.0 ms 1.1 ms 1.2 ms]\n")
    assert t is not None and t.rows[0]["name"] == "a_very_long_benchmark_group/with_a_long_name"
    # Google Benchmark's tabular counters (--benchmark_counters_tabular) and a _BigO row
    text = ("------\nBenchmark  Time  CPU  Iterations   Bytes  Items\n------\n"
            "BM_a/8   2.51 ns   2.50 ns   1000   3.2G/s   1.5k/s\nBM_a_BigO   0.31 N   0.30 N\n")
    t = read_bench_table(text)
    assert [c["name"] for c in t.columns] == ["time", "cpu", "iterations", "Bytes", "Items"]
    assert t.rows[0]["values"][3:] == [3.2e9, 1.5e3] and t.rows[1]["aggregate"] == "BigO"


def test_a_table_beside_the_log_s_own_timing_lines_leaves_the_steps_read():
    """A training log that ran nccl-tests first: the steps are read, the table is not taken
    for the log (its rows are no timing lines)."""
    table = (DATA / "corpus/nccl_tests/all_reduce_perf.txt").read_text()
    steps = "".join(f"step {i} data_ms={10 + i % 3} compute_ms={40 + i % 5} step_ms={52 + i % 7}\n" for i in range(40))
    p = parsers.parse_log(table + steps, None)
    assert int(p.records["complete"].sum()) == 40 and set(p.components["component"]) == {"data", "compute", "step"}


def test_criterion_s_throughput_and_the_rest_of_its_report():
    text = ("Benchmarking parse/1024: Warming up for 3.0000 s\n"
            "parse/1024              time:   [1.2000 ms 1.2100 ms 1.2200 ms]\n"
            "                        thrpt:  [839.34 MiB/s 846.28 MiB/s 853.33 MiB/s]\n"
            "                 change: [-1.0% +0.2% +1.4%] (p = 0.71 > 0.05)\n"
            "                        No change in performance detected.\n"
            "Found 3 outliers among 100 measurements (3.00%)\n  3 (3.00%) high mild\n")
    t = read_bench_table(text)
    assert [c["name"] for c in t.columns][3:] == ["thrpt.low", "thrpt.estimate", "thrpt.high"]
    assert t.rows[0]["values"] == [1.2, 1.21, 1.22, 839.34, 846.28, 853.33] and t.rows[0]["units"][3] == "MiB/s"
    with pytest.raises(NoDataError, match="criterion"):
        parsers.parse_log(text, None)
    assert read_table(text) is not None


@pytest.mark.parametrize("width", [40, 60, 80, 120])
@pytest.mark.parametrize("case", TABLES)
def test_no_cell_is_cut_short_nor_dropped_at_any_width(case, width):
    """At 80 columns nccl-tests' size 134217728 printed as `1342177…` (another number) and the
    text columns (type, redop) vanished: every cell is shown whole, in a further table that
    repeats the size or name where the columns do not fit."""
    from rich.console import Console

    from gpuscope.reports.bench_console import bench_tables, cell

    doc = _table(case).to_json()
    console = Console(width=width, record=True, file=open("/dev/null", "w"))  # noqa: SIM115
    for t in bench_tables(doc, width):
        console.print(t)
    out = console.export_text()
    assert "…" not in out
    assert max(len(line) for line in out.splitlines()) <= width
    words = set(out.split())
    for r in doc["rows"][:50]:
        for i, v in enumerate(r["values"]):
            unit = None if doc["columns"][i].get("unit") else (r.get("units") or [None] * (i + 1))[i]
            for w in cell(v, unit).split():
                assert w in words, (w, r)

"""Summary tables (parsers/log/sumtable.py, parsers/log/sumnsys.py): `nsys stats` (text and
CSV), torch.profiler's key_averages().table(), nvprof, Lightning's SimpleProfiler and markdown
tables with units, read as the tables they are: units from the header or each cell, a number
with no unit anywhere a plain number, never a duration; shown by `gpuscope analyze` (console
and --json `benchmark_table`), refused (exit 4, with what they are) where steps are needed.
The corpus cases are real pastes (tests/data/corpus/expected.toml); every figure asserted is
checked against arithmetic over the text as printed, written here, not gpuscope's output."""

from __future__ import annotations

import json
import re
import tomllib

import pytest
from typer.testing import CliRunner

from gpuscope import parsers
from gpuscope.cli import app
from gpuscope.errors import NoDataError
from gpuscope.parsers.log.benchtable import read_bench_table
from gpuscope.parsers.log.logparse import read_table
from gpuscope.parsers.log.sumtable import STATEMENT, headless_rows, read_summary_table
from tests.conftest import DATA

EXPECTED = tomllib.loads((DATA / "corpus" / "expected.toml").read_text())
TOOLS = {"nsys_stats", "torch_profiler", "nvprof", "lightning_profiler", "markdown_table"}
CASES = sorted(c for c, w in EXPECTED.items() if w.get("table") in TOOLS)
runner = CliRunner()


def _table(case: str):
    with pytest.raises(NoDataError, match="measurements, not timed steps") as e:
        parsers.parse_log(DATA / case)
    assert e.value.exit_code == 4
    t = read_table(DATA / case)
    assert t is not None
    return t


def _dash(xs):
    return ["-" if x is None else x for x in xs]


def test_every_summary_tool_has_real_cases():
    assert {EXPECTED[c]["table"] for c in CASES} == TOOLS
    assert sum(EXPECTED[c]["table"] == "nsys_stats" for c in CASES) >= 8
    nsys = [c for c in EXPECTED if "/nsys_stats/" in c]
    assert len(nsys) >= 10  # (read as tables, or refused with the true reason)


@pytest.mark.parametrize("case", CASES)
def test_each_summary_reads_as_expected(case):
    want, t = EXPECTED[case], _table(case)
    assert t.tool == want["table"] and t.statement == STATEMENT
    assert [c["name"] for c in t.columns] == want["table_columns"]
    assert len(t.rows) == want["table_rows"]
    first, r = want["table_first"], t.rows[0]
    assert r["name"] == first["name"] and _dash(r["units"]) == first["units"]
    for g, w in zip(_dash(r["values"]), first["values"], strict=True):
        assert g == (pytest.approx(w, rel=1e-9) if isinstance(w, float) else w)
    for part in [{"columns": t.columns, "rows": t.rows}, *t.sections]:
        assert all(len(x["values"]) == len(part["columns"]) == len(x["units"]) for x in part["rows"])
    if "table_sections" in want:
        got = [t.section.get("report") or t.section.get("title", "")]
        assert got + [s["report"] or s["title"] for s in t.sections] == want["table_sections"]
    skipped = [n for n in t.notes if "without a header line skipped" in n]
    assert skipped == ([f"{want['table_headless']} table(s) without a header line skipped (their columns and units "
                        "cannot be told)"] if "table_headless" in want else [])


def test_a_number_with_no_unit_anywhere_is_no_duration():
    """nvbench's `ms`/`us` axes and an old nsys kernel table's `Average` (no unit printed):
    plain numbers; the cells and headers that name a unit are times."""
    md = {c["name"]: c for c in _table("corpus/markdown/nvbench_summaries.txt").columns}
    assert md["ms"]["kind"] == md["us"]["kind"] == "number" and md["Duration"]["kind"] == "time"
    assert md["Samples"]["kind"] == "text" and md["Noise"]["kind"] == "percent"
    old = {c["name"]: c for c in _table("corpus/nsys_stats/fp16_kernels_locale.txt").columns}
    assert old["Average"]["kind"] == "number" and old["Total Time"]["kind"] == "time"
    torch = {c["name"]: c for c in _table("corpus/torch_profiler/rocm_conv2d.txt").columns}
    assert torch["CUDA Mem"]["kind"] == "size" and torch["Self CUDA"]["kind"] == "time"
    md = read_summary_table("| stage | time (ms) | calls |\n|---|---|---|\n| load | 1,250.5 | 10 |\n| forward | 30.1 | 10 |\n")
    assert md is not None and md.tool == "markdown_table" and [r["name"] for r in md.rows] == ["load", "forward"]
    assert [(c["name"], c["kind"], c["unit"]) for c in md.columns] == [("time", "time", "ms"), ("calls", "count", "")]
    assert md.rows[0]["values"] == [1250.5, 10]
    # a `|` table with no unit anywhere is not read as a summary (counts, scores)
    assert read_summary_table("| model | params | acc |\n|---|---|---|\n| a | 12 | 0.9 |\n| b | 30 | 0.8 |\n") is None


def _rows(case: str) -> list[list[str]]:
    """The rows of an nsys text table as printed: the cells between runs of two spaces."""
    out = []
    for ln in (DATA / case).read_text().split("\n"):
        cells = re.split(r"\s{2,}", ln.strip())
        if len(cells) >= 8 and re.fullmatch(r"[\d.,]+", cells[0]):
            out.append(cells)
    return out


@pytest.mark.parametrize("case", ["corpus/nsys_stats/timemachine_api_stats.txt", "corpus/nsys_stats/sycl_cudaapisum.txt"])
def test_the_api_summary_gives_the_host_blocking_share(case):
    rows = _rows(case)
    total = {r[-1]: int(r[1].replace(",", "")) for r in rows}
    blocking = sum(v for k, v in total.items() if k in ("cudaMemcpy", "cudaStreamSynchronize", "cudaEventSynchronize",
                                                         "cudaDeviceSynchronize"))
    t = _table(case)
    s = next(s for s in t.summary if s["name"] == "host-blocking CUDA API calls")
    assert s["value"] == pytest.approx(100.0 * blocking / sum(total.values()), abs=0.05) and s["unit"] == "%"
    assert "not of the run" in " ".join(t.notes)  # (a share of the API time, never of the step)


def test_the_kernel_summary_gives_the_kernel_total_never_a_busy_fraction():
    text = (DATA / "corpus/nsys_stats/fp16_kernels_locale.txt").read_text()
    want = sum(int(m.group(1).replace(" ", "")) for m in re.finditer(r"^\s+\d+,\d\s{2}(\d{1,3}(?: \d{3})+)\s", text, re.M))
    t = _table("corpus/nsys_stats/fp16_kernels_locale.txt")
    s = next(s for s in t.summary if s["name"].startswith("GPU kernel time"))
    assert s["value"] == pytest.approx(want * 1e-9, abs=1e-6) and s["unit"] == "s"
    assert "not a busy fraction" in " ".join(t.notes) and all(x["unit"] != "%" for x in t.summary)
    assert "read: numbers in a locale's digits" in " ".join(t.notes)


NSYS = """\
[6/8] Executing 'cuda_gpu_kern_sum' stats report

 Time (%)  Total Time (ns)  Instances   Avg (ns)    Med (ns)   Min (ns)  Max (ns)  StdDev (ns)     Name
 --------  ---------------  ---------  ----------  ----------  --------  --------  -----------  ----------
     70.0      120,000,000        100  1,200,000.0  1,200,000.0  1,100,000  1,300,000     50,000.0  gemm_kernel
     30.0       51,428,571        200    257,142.9    257,000.0    250,000    270,000      3,000.0  relu_kernel

[7/8] Executing 'cuda_gpu_mem_time_sum' stats report

 Time (%)  Total Time (ns)  Count   Avg (ns)    Med (ns)   Min (ns)   Max (ns)   StdDev (ns)           Operation
 --------  ---------------  -----  ----------  ----------  --------  ----------  -----------  ----------------------------
     90.0      400,000,000    100  4,000,000.0  4,000,000.0  3,900,000  4,100,000     10,000.0  [CUDA memcpy Host-to-Device]
     10.0       44,444,444    100    444,444.4    444,000.0    440,000    450,000      1,000.0  [CUDA memcpy Device-to-Host]

[8/8] Executing 'cuda_gpu_mem_size_sum' stats report

 Total (MB)  Count  Avg (MB)  Med (MB)  Min (MB)  Max (MB)  StdDev (MB)           Operation
 ----------  -----  --------  --------  --------  --------  -----------  ----------------------------
  3,355.443    100    33.554    33.554    33.554    33.554        0.000  [CUDA memcpy Host-to-Device]
     41.943    100     0.419     0.419     0.419     0.419        0.000  [CUDA memcpy Device-to-Host]
"""


def test_a_copy_summary_gives_rates_by_direction_and_says_the_memory_kind_is_missing(tmp_path):
    t = read_bench_table(NSYS)
    assert t is not None and t.tool == "nsys_stats"
    assert [t.section["report"]] + [s["report"] for s in t.sections] == ["cuda_gpu_kern_sum", "cuda_gpu_mem_time_sum",
                                                                         "cuda_gpu_mem_size_sum"]
    rate = {s["direction"]: s["value"] for s in t.summary if s.get("direction")}
    assert rate["Host-to-Device"] == pytest.approx(3355.443e6 / 0.4 / 1e9, abs=1e-3)  # 8.389 GB/s
    assert rate["Device-to-Host"] == pytest.approx(41.943e6 / 0.044444444 / 1e9, abs=1e-3)
    notes = " ".join(t.notes)
    assert "pinned or pageable" in notes and "nsys export --type sqlite" in notes and "--line-rate" in notes
    assert "read: MB as 10^6 bytes" in notes
    kern = next(s for s in t.summary if s["name"].startswith("GPU kernel time"))
    assert kern["value"] == pytest.approx(0.171428571, abs=1e-6) and "(300 launches of 2 kernels)" == kern["verdict"]
    f = tmp_path / "stats.txt"
    f.write_text(NSYS)
    r = runner.invoke(app, ["analyze", str(f), "--line-rate", "25"], env={"COLUMNS": "160"})
    assert r.exit_code == 0, r.stderr
    out = " ".join(r.stdout.split())
    assert "Host-to-Device copies: 8.389 GB/s" in out and "34% of the 25 GB/s line rate" in out
    assert "cuda_gpu_mem_size_sum" in out and "summary table, not timed steps" in out
    assert "Diagnosis" not in out and "pin" not in out.replace("pinned or pageable", "")  # (no advice: no evidence)
    r = runner.invoke(app, ["analyze", str(f), "--line-rate", "10"], env={"COLUMNS": "160"})
    out = " ".join(r.stdout.split())
    assert "84% of the 10 GB/s line rate" in out and out.count("below half") == 1  # (only D2H is below half)
    j = runner.invoke(app, ["analyze", str(f), "--json"])
    doc = json.loads(j.stdout)["table"]
    assert doc["tool"] == "nsys_stats" and len(doc["sections"]) == 2 and doc["section"]["report"] == "cuda_gpu_kern_sum"


CSV = """\
Processing [report1.sqlite] with [/opt/nvidia/nsight-systems/2023.4.1/host-linux-x64/reports/cuda_api_sum.py]...
Time (%),Total Time (ns),Num Calls,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Name
60.5,600000,10,60000.0,60000.0,59000,61000,500.0,cudaDeviceSynchronize
39.5,394000,1000,394.0,390.0,300,900,20.0,cudaLaunchKernel

Processing [report1.sqlite] with [/opt/nvidia/nsight-systems/2023.4.1/host-linux-x64/reports/cuda_gpu_kern_sum.py]...
Time (%),Total Time (ns),Instances,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Name
100.0,900000,1000,900.0,900.0,800,1000,10.0,"void add<float>(int, float *, float *)"
"""


def test_the_csv_form_reads_as_the_same_tables():
    t = read_bench_table(CSV)
    assert t is not None and t.tool == "nsys_stats" and t.section["report"] == "cuda_api_sum"
    assert [c["name"] for c in t.columns][:3] == ["Time (%)", "Total Time", "Num Calls"]
    assert t.rows[0]["values"][1] == 600000 and t.rows[0]["units"][1] == "ns"
    assert t.sections[0]["rows"][0]["name"] == "void add<float>(int, float *, float *)"
    share = next(s for s in t.summary if s["name"] == "host-blocking CUDA API calls")
    assert share["value"] == pytest.approx(100.0 * 600000 / 994000, abs=0.05)


def test_rows_without_their_header_are_refused_for_that():
    """A paste cut short (rows, no header): no number read as a time, and the reason said; a
    log of `name 12.3ms 4.5ms ...` lines (no share, no grouped thousands) is no such paste."""
    with pytest.raises(NoDataError, match="without its header"):
        parsers.parse_log(DATA / "corpus/nsys_stats/ik_llama_api_rows.txt")
    steps = "".join(f"step {i} 12.{i}ms 4.5ms 3.2ms 1.1ms 0.5ms\n" for i in range(6))
    assert not headless_rows(steps)
    piped = "".join(f"step {i} | loss 1.2{i} | data 12.{i} ms | fwd 30.1 ms | tokens 1,024 | mfu 45.1%\n" for i in range(9))
    assert not headless_rows(piped) and read_summary_table(piped) is None  # (labelled values: a log)
    p = parsers.parse_log(piped, name="train.log")
    assert len(p.records) == 9


def test_a_log_holding_a_profiler_table_after_its_steps_is_read_for_its_steps():
    """A training log that prints torch.profiler's table at its end is read as the log it is
    (the table is a small part of it); the table alone would be shown as a table."""
    table = (DATA / "corpus/torch_profiler/matmul_self_cuda.txt").read_text()
    log = "".join(f"step {i}: data 12.{i} ms, compute 80.{i} ms, total 93.{i} ms\n" for i in range(40)) + table
    p = parsers.parse_log(log, name="train.log")
    assert len(p.records) >= 30


def test_commands_that_need_steps_refuse_a_summary_with_what_it_is(tmp_path):
    case = str(DATA / "corpus/nsys_stats/sycl_cudaapisum.txt")
    r = runner.invoke(app, ["compare", case, case])
    assert r.exit_code == 4 and "nsys stats" in r.stderr and "measurements, not timed steps" in r.stderr


@pytest.mark.parametrize("case", CASES)
def test_analyze_shows_each_summary(case):
    r = runner.invoke(app, ["analyze", str(DATA / case)], env={"COLUMNS": "200"})
    assert r.exit_code == 0, r.stderr
    assert "summary table, not timed steps" in r.stdout and "Diagnosis" not in r.stdout
    assert EXPECTED[case]["table_first"]["name"][:30] in r.stdout.replace("\n", " ") or case.endswith("stumpy_gpu_activities.txt")
    j = runner.invoke(app, ["analyze", str(DATA / case), "--json"])
    assert j.exit_code == 0, j.stderr
    doc = json.loads(j.stdout)
    assert doc["source"]["kind"] == "benchmark_table" and doc["table"]["tool"] == EXPECTED[case]["table"]
    assert len(doc["table"]["rows"]) == EXPECTED[case]["table_rows"] and doc["table"]["statement"] == STATEMENT


def test_nested_timers_are_said_never_summed():
    """torch.profiler's total columns and Lightning's actions nest: a note says so, and no
    summary line adds them up (the Lightning report's own `Total` row is printed as is)."""
    t = _table("corpus/lightning/simple_profiler_fspbt.txt")
    assert "never summed" in " ".join(t.notes) and t.summary == []
    t = _table("corpus/torch_profiler/rocm_conv2d.txt")
    assert "more than once" in " ".join(t.notes) and t.summary == []
    footer = (DATA / "corpus/torch_profiler/matmul_self_cuda.txt").read_text() + "Self CPU time total: 528.456ms\n"
    t = read_bench_table(footer)
    assert t is not None and t.summary == [{"name": "Self CPU time total", "value": 528.456, "unit": "ms", "verdict": ""}]
    assert [r["name"] for r in t.rows] == ["aten::matmul", "aten::mm"]  # (the footer is no row)


NVTX = """\
 ** NVTX Range Summary (nvtx_sum):

 Time (%)  Total Time (ns)  Instances   Avg (ns)    Med (ns)   Min (ns)  Max (ns)  StdDev (ns)   Style          Range
 --------  ---------------  ---------  ----------  ----------  --------  --------  -----------  -------  ----------------
     60.0      300,000,000         10  30,000,000  30,000,000  29,000,000  31,000,000    500,000.0  PushPop  :train step
     40.0      200,000,000         10  20,000,000  20,000,000  19,000,000  21,000,000    400,000.0  PushPop  :load batch
"""


def test_an_nvtx_summary_keeps_its_style_and_names_its_ranges():
    """The range's name (with a space) is the row's name; Style is a text column; the
    totals are shown as printed and no summary line adds nested ranges up."""
    t = read_bench_table(NVTX)
    assert t is not None and t.tool == "nsys_stats" and t.section["report"] == "nvtx_sum"
    assert [r["name"] for r in t.rows] == [":train step", ":load batch"]
    style = next(k for k, c in enumerate(t.columns) if c["name"] == "Style")
    assert t.columns[style]["kind"] == "text" and t.rows[0]["values"][style] == "PushPop"
    assert t.rows[1]["values"][1] == 200000000 and t.summary == []


NVPROF = """\
==1234== Profiling result:
            Type  Time(%)      Time     Calls       Avg       Min       Max  Name
 GPU activities:   60.00%  600.00ms       100  6.0000ms  5.0000ms  7.0000ms  [CUDA memcpy HtoD]
                   40.00%  400.00ms       100  4.0000ms  3.0000ms  5.0000ms  scale(float*, int)
      API calls:   90.00%  1.00000s       200  5.0000ms  1.0000us  10.000ms  cudaMemcpy
                   10.00%  100.00ms         1  100.00ms  100.00ms  100.00ms  cudaMalloc
"""


def test_an_nvprof_summary_carries_each_row_s_type():
    """The type is printed on a group's first row only: later rows keep it; each time cell
    keeps its own unit (`1.00000s` beside `600.00ms`)."""
    t = read_bench_table(NVPROF)
    assert t is not None and t.tool == "nvprof"
    assert [(r["name"], r["values"][0]) for r in t.rows] == [
        ("[CUDA memcpy HtoD]", "GPU activities"), ("scale(float*, int)", "GPU activities"),
        ("cudaMemcpy", "API calls"), ("cudaMalloc", "API calls")]
    assert t.rows[2]["values"][2] == 1.0 and t.rows[2]["units"][2] == "s" and t.rows[0]["units"][2] == "ms"


NSIGHT = DATA.parents[1].parent / "shared" / "data" / "nsight" / "h100_2gpu_1s.sqlite"


def _stats_text_of(db) -> tuple[str, dict[str, tuple[int, int, int]]]:
    """What `nsys stats` prints for a real export's copies (memops by time, then by size),
    written here from an SQL query of its own: (text, {direction: (count, ns, bytes)})."""
    import sqlite3

    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as con:
        got = {label: (n, ns, nb) for label, n, ns, nb in con.execute(
            "SELECT e.label, count(*), sum(m.end - m.start), sum(m.bytes) FROM CUPTI_ACTIVITY_KIND_MEMCPY m "
            "JOIN ENUM_CUDA_MEMCPY_OPER e ON e.id = m.copyKind GROUP BY e.label")}
    whole = sum(ns for _, ns, _ in got.values())
    t = [" ** CUDA GPU MemOps Summary (by Time) (cuda_gpu_mem_time_sum):", "",
         " Time (%)  Total Time (ns)  Count  Avg (ns)  Operation", " --------  ---------------  -----  --------  ---------"]
    t += [f" {100 * ns / whole:8.1f}  {ns:15,}  {n:5,}  {ns / n:8,.1f}  [CUDA memcpy {label}]" for label, (n, ns, _) in got.items()]
    t += ["", " ** CUDA GPU MemOps Summary (by Size) (cuda_gpu_mem_size_sum):", "",
          " Total (MB)  Count  Avg (MB)  Operation", " ----------  -----  --------  ---------"]
    t += [f" {nb / 1e6:10,.3f}  {n:5,}  {nb / n / 1e6:8,.3f}  [CUDA memcpy {label}]" for label, (n, _, nb) in got.items()]
    return "\n".join(t) + "\n", got


@pytest.mark.skipif(not NSIGHT.exists(), reason="../shared/data/nsight (the real Nsight exports) is absent here")
def test_a_stats_table_of_a_real_capture_gives_the_rates_its_sqlite_does():
    """The copies of a real 2-GPU H100 capture, printed as nsys stats would: each direction's
    rate is its bytes over its time as the export holds them (an SQL query here); the table
    cannot tell its 446 pinned from its 4 pageable uploads, and says what would."""
    text, got = _stats_text_of(NSIGHT)
    t = read_bench_table(text)
    assert t is not None and t.tool == "nsys_stats"
    rate = {s["direction"]: s["value"] for s in t.summary if s.get("direction")}
    n, ns, nb = got["Host-to-Device"]
    assert rate["Host-to-Device"] == pytest.approx(nb / ns, rel=1e-4)  # (bytes per ns: GB/s)
    assert rate["Device-to-Device"] == pytest.approx(got["Device-to-Device"][2] / got["Device-to-Device"][1], rel=1e-4)
    assert "pinned or pageable" in " ".join(t.notes) and "nsys export --type sqlite" in " ".join(t.notes)


def test_copy_directions_old_and_new_names_and_unified_memory_apart():
    from gpuscope.parsers.log.sumnsys import direction

    assert direction("[CUDA memcpy HtoD]") == direction("[CUDA memcpy Host-to-Device]") == "Host-to-Device"
    assert direction("[CUDA memcpy PtoP]") == "Peer-to-Peer" and direction("[CUDA memset]") == "memset"
    assert (direction("[CUDA Unified Memory memcpy HtoD]") == direction("[CUDA memcpy Unified Host-to-Device]")
            == "Unified Memory Host-to-Device")


def test_a_row_cut_short_is_counted_and_skipped():
    """The timemachine paste's real last line (`2.1  66,836,774  8`, cut mid-row): skipped and
    said, never read with its missing cells as zeros."""
    text = (DATA / "corpus/nsys_stats/timemachine_api_stats.txt").read_text() + "      2.1       66,836,774     8\n"
    t = read_bench_table(text)
    assert t is not None and len(t.rows) == 7 and "1 row(s) cut short skipped" in " ".join(t.notes)


def test_a_program_log_before_its_stats_names_them_when_it_has_no_timing_line():
    """`nsys profile --stats=true ./app`: the app's own lines first; where they hold no timing
    line, the refusal names the summary the text holds (read alone, it is shown)."""
    app_out = "".join(f"worker {i % 4}: loaded shard {i} of 64 from /data/train-{i:05d}.bin\n" for i in range(60))
    with pytest.raises(NoDataError, match="no timing lines found.*it looks like an Nsight Systems `nsys stats` summary"):
        parsers.parse_log(app_out + NSYS, name="nsys.out")

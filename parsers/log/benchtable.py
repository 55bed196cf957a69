"""Benchmark tables: the output of a benchmark tool, a table of measurements per benchmark
or per message size, read as what it is, never as timed steps (parsers/log/formats.py names
the tools: google_benchmark, nccl_tests, criterion).

A table has no steps, no record whose time splits into parts and no GPU idle time to
explain: each cell is the tool's own summary of many iterations (a mean time per iteration,
a bandwidth, a count). `read_bench_table(text)` gives a BenchTable or None;
`logparse.read_table` reads an input's, which gpuscope/sources/readers.py makes a source of
its own (kind `table`), `gpuscope analyze` shows it (reports/bench_console.py, the `table`
part of --json, documented in docs/ANALYZE.md), and `parse_log` refuses it (a NoDataError
saying what it is, `not_steps`: exit 4 wherever steps are needed).

How each tool prints (read from their sources; the code here is ours):

- Google Benchmark's console reporter: a dashed line, the header `Benchmark  Time  CPU
  Iterations` (then `UserCounters...`, or the counters' names with --benchmark_counters_tabular),
  a dashed line, and a row per run: the name padded to the longest, the wall time and its
  unit, the CPU time and its unit (ns, us, ms, s; `%` for a _cv aggregate; a complexity
  `N^2` for a _BigO row, `%` for _RMS, both without iterations), the iteration count, then
  `name=value[unit]` counters (or tabular cells) and a label. A run that failed prints
  `ERROR OCCURRED: '...'` or `SKIPPED: '...'`. Aggregates of repetitions end in `_mean`,
  `_median`, `_stddev`, `_cv`. Its context (date, CPU, caches, load average) goes to stderr.
- Google Benchmark's JSON reporter (--benchmark_format=json): {"context": {...},
  "benchmarks": [{"name", "run_type", "aggregate_name", "iterations", "real_time",
  "cpu_time", "time_unit", counters..., "error_message"}, ...]}.
- nccl-tests (all_reduce_perf, ...): `#` comment lines (its settings, the devices), a header
  `#  size  count  type  redop  root  time  algbw  busbw  #wrong  time  algbw  busbw
  #wrong` under an `out-of-place  in-place` line and over a units line `(B) (elements)
  (us) (GB/s) (GB/s)`, the columns right-aligned (a unit ends where its column's name
  does); a row per message size (`N/A` where errors are not checked, the out-of-place
  cells left blank where only in-place ran); `# Out of bounds values : 0 OK` and `# Avg bus
  bandwidth : 62.598` after the table. `time` is the mean time of one collective over the
  test's iterations, in us; `cputime` with -C 1.
- criterion: `<name>  time:   [<low> <unit> <estimate> <unit> <high> <unit>]` (the name on a
  line of its own when long), `thrpt:  [...]` where a throughput is set, `change: [...]`
  against the last run: low/estimate/high are a confidence interval of one time per iteration.
"""

from __future__ import annotations

import json
import re

from gpuscope.parsers.log.lazyre import LazyPattern
from gpuscope.parsers.log.sumtable import read_summary_table
from gpuscope.parsers.log.tabledoc import MAX_ROWS, STATEMENT, BenchTable  # noqa: F401 (theirs, read here)

_ANSI = LazyPattern(r"\x1b\[[\d;]*[A-Za-z]")
_NUM = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"


def not_steps(name: str, table: BenchTable) -> str:
    """What a command that needs timed steps says of a benchmark table (exit 4)."""
    return (f"{name} is {table.kind or table.what}: measurements, not timed steps "
            "(`gpuscope analyze` shows it as the benchmark table it is)")


def read_bench_table(text: str) -> BenchTable | None:
    """The benchmark table a text is, or None."""
    text = _ANSI.sub("", text)
    stripped = text.lstrip()
    if stripped.startswith("{") and '"benchmarks"' in text:
        return _google_json(stripped)
    for reader in (_google_console, _nccl, _criterion):
        t = reader(text.split("\n"))
        if t is not None and (t.rows or t.errors):
            return t
    return read_summary_table(text)  # (a profiler's summary: nsys stats, torch.profiler, nvprof, ...)


_CR_OTHER = LazyPattern(r"^(?:Benchmarking |Found \d+ outliers|\s+\d+ \([\d.]+%\) (?:high|low) (?:mild|severe)|"
                       r"\s+change: |\s*(?:No change in performance|Change within noise|Performance has))")


def share_of_table(text: str, table: BenchTable) -> float:
    """The share of a text's non-blank lines that are its table's (its header, context,
    rows, failed runs, summaries, progress): a log that only holds a table beside its own
    timing lines (a training log that ran nccl-tests first) is read for its steps."""
    lines = [ln for ln in _ANSI.sub("", text).split("\n") if ln.strip()]
    if not lines or table.tool == "google_benchmark" and text.lstrip().startswith("{"):
        return 1.0
    if table.own_lines:
        return min(1.0, table.own_lines / len(lines))
    if table.tool == "nccl_tests":
        mine = sum(1 for ln in lines if ln.startswith("#") or re.match(r"^\s*\d+\s+\d+\s+\S+\s+\S+\s+-?\d+\s", ln))
    elif table.tool == "criterion":
        mine = sum(1 for ln in lines if _CR_LINE.match(ln.rstrip()) or _CR_OTHER.match(ln))
        mine += len(table.rows)  # (a long name on a line of its own)
    else:
        at = next(i for i, ln in enumerate(lines) if _GB_HEADER.match(ln.strip()))
        mine = min(at, 30) + sum(1 for ln in lines[at:] if _GB_HEADER.match(ln.strip()) or set(ln.strip()) <= {"-"}
                                 or _GB_ROW.match(ln.strip()) or _GB_FAILED.match(ln.strip()))
    return min(1.0, mine / len(lines))


def looks_like_google_json(head: str) -> bool:
    """The head of a Google Benchmark JSON report (read before any line is: its
    `"real_time": 85.0` lines would otherwise read as seconds)."""
    h = head.lstrip()
    return h.startswith("{") and '"context"' in h[:200] and '"benchmarks"' in h and '"time_unit"' in h


def _cell(v: float | int | str | None, unit: str | None) -> tuple:
    return v, unit


def _row(name: str, cells: list[tuple], kind: str = "") -> dict:
    r = {"name": name, "values": [c[0] for c in cells], "units": [c[1] for c in cells]}
    if kind:
        r["aggregate"] = kind
    return r


# -- Google Benchmark ----------------------------------------------------------------------

_GB_HEADER = LazyPattern(r"^Benchmark\s+Time\s+CPU\s+Iterations(?P<tail>.*)$")
_GB_ROW = LazyPattern(rf"^(?P<name>\S+)\s+(?P<t>{_NUM}) (?P<tu>\S+)\s+(?P<c>{_NUM}) (?P<cu>\S+)"
                     rf"(?:\s+(?P<it>\d+))?(?P<rest>.*)$")
_GB_FAILED = LazyPattern(r"^(?P<name>\S+)\s+(?P<how>ERROR OCCURRED|SKIPPED): '(?P<msg>.*)'\s*$")
_GB_COUNTER = LazyPattern(rf"^(?P<k>[^=\s]+)=(?P<v>{_NUM})(?P<u>[kKMGTPEZYmunpfazy]?)(?P<i>i?)(?P<per>/s|s|%)?$")
_GB_COLUMNS = ({"name": "time", "kind": "time", "unit": "", "of": "wall time per iteration"},
               {"name": "cpu", "kind": "time", "unit": "", "of": "CPU time per iteration"},
               {"name": "iterations", "kind": "count", "unit": "", "of": "iterations run"})
_AGGREGATES = ("mean", "median", "stddev", "cv", "BigO", "RMS")
_TIME_UNITS = ("ns", "us", "ms", "s")
# HumanReadableNumber's prefixes: SI (k, M, G, ...; m, u, n, ... below 1), IEC with an `i` (Ki, Mi, ...)
_BIG, _SMALL = "kMGTPEZY", "munpfazy"


def _scale(prefix: str, iec: str) -> float:
    if not prefix:
        return 1.0
    if prefix in _SMALL:
        return 1e-3 ** (_SMALL.index(prefix) + 1)
    k = "KMGTPEZY".index(prefix) if iec else _BIG.index(prefix) if prefix in _BIG else -1
    return (1024.0 if iec else 1000.0) ** (k + 1) if k >= 0 else 1.0


def _aggregate(name: str) -> str:
    tail = name.rsplit("_", 1)[-1] if "_" in name else ""
    return tail if tail in _AGGREGATES else ""


def _google_console(lines: list[str]) -> BenchTable | None:
    found = next(((i, m) for i, ln in enumerate(lines) if (m := _GB_HEADER.match(ln.strip())) is not None), None)
    if found is None:
        return None
    at, head = found
    tail = head.group("tail").split()
    tabular = [] if tail == ["UserCounters..."] else tail
    t = BenchTable("google_benchmark", "a Google Benchmark table: wall and CPU time per iteration of each "
                   "benchmark, with its iteration count")
    t.header = [ln.strip() for ln in lines[:at] if ln.strip() and not set(ln.strip()) <= {"-"}][:20]
    counters: dict[str, str] = {c: "" for c in tabular}
    raw: list[tuple[str, list[tuple], dict[str, tuple], str]] = []
    for ln in lines[at + 1:]:
        s = ln.strip()
        if not s or set(s) <= {"-"} or _GB_HEADER.match(s):
            continue
        f = _GB_FAILED.match(s)
        if f is not None:
            t.errors.append({"name": f.group("name"), "message": f"{f.group('how').lower()}: {f.group('msg')}"})
            continue
        m = _GB_ROW.match(s)
        if m is None or len(raw) >= MAX_ROWS:
            continue
        name, agg = m.group("name"), _aggregate(m.group("name"))
        cells = [_cell(float(m.group("t")), m.group("tu")), _cell(float(m.group("c")), m.group("cu")),
                 _cell(int(m.group("it")) if m.group("it") else None, None)]
        extra = _gb_counters(m.group("rest").split(), tabular, counters)
        raw.append((name, cells, extra, agg))
    t.columns = list(_GB_COLUMNS)
    t.columns += [{"name": c, "kind": {"/s": "rate", "s": "time"}.get(per, "count"), "unit": "", "of": "a user counter"}
                  for c, per in counters.items()]
    for name, cells, extra, agg in raw:
        t.rows.append(_row(name, cells + [extra.get(c, (None, None)) for c in counters], agg))
    return t


def _gb_counters(toks: list[str], tabular: list[str], seen: dict[str, str]) -> dict[str, tuple]:
    """A row's counters: `name=value[unit]` tokens, or the tabular cells in the header's order."""
    out: dict[str, tuple] = {}
    if tabular:
        toks = [(f"{c}={v}") for c, v in zip(tabular, toks, strict=False)]
    for tok in toks:
        m = _GB_COUNTER.match(tok)
        if m is None:
            continue  # (the run's label)
        per = m.group("per") or ""  # (`/s`: a rate; `s`: its inverse, seconds per item)
        seen.setdefault(m.group("k"), per)
        out[m.group("k")] = (float(m.group("v")) * _scale(m.group("u"), m.group("i")), per or None)
    return out


_GB_KEYS = frozenset(("name", "family_index", "per_family_instance_index", "run_name", "run_type", "repetitions",
                      "repetition_index", "threads", "aggregate_name", "aggregate_unit", "iterations", "real_time",
                      "cpu_time", "time_unit", "label", "error_occurred", "error_message", "skipped", "skip_message",
                      "big_o", "cpu_coefficient", "real_coefficient", "rms"))


def _google_json(text: str) -> BenchTable | None:
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError):
        return None
    runs = doc.get("benchmarks") if isinstance(doc, dict) else None
    if not isinstance(runs, list) or not isinstance(doc.get("context"), dict):
        return None
    t = BenchTable("google_benchmark", "a Google Benchmark JSON report: wall and CPU time per iteration of each "
                   "benchmark, with its iteration count")
    ctx = doc["context"]
    t.header = [f"{k}: {ctx[k]}" for k in ("date", "host_name", "executable", "num_cpus", "mhz_per_cpu",
                                           "library_version") if isinstance(ctx.get(k), str | int | float)]
    counters = [k for r in runs if isinstance(r, dict) for k, v in r.items()
                if k not in _GB_KEYS and isinstance(v, int | float) and not isinstance(v, bool)]
    counters = list(dict.fromkeys(counters))
    t.columns = list(_GB_COLUMNS)
    t.columns += [{"name": c, "kind": "rate" if c.endswith("_per_second") else "count", "unit": "", "of": "a user counter"}
                  for c in counters]
    for r in runs[:MAX_ROWS]:
        if not isinstance(r, dict) or not isinstance(r.get("name"), str):
            continue
        if r.get("error_occurred") or r.get("skipped"):
            t.errors.append({"name": r["name"], "message": str(r.get("error_message") or r.get("skip_message") or "")})
            continue
        unit = r.get("time_unit") if r.get("aggregate_unit", "time") == "time" else "%"
        cells = [_cell(_num(r.get("real_time", r.get("real_coefficient"))), unit),
                 _cell(_num(r.get("cpu_time", r.get("cpu_coefficient"))), unit),
                 _cell(_num(r.get("iterations")), None)]
        cells += [_cell(_num(r.get(c)), "/s" if c.endswith("_per_second") else None) for c in counters]
        t.rows.append(_row(r["name"], cells, str(r.get("aggregate_name") or "")))
    return t


def _num(v) -> float | int | None:
    return v if isinstance(v, int | float) and not isinstance(v, bool) else None


# -- nccl-tests ----------------------------------------------------------------------------

_NCCL_SUMMARY = LazyPattern(rf"^#\s*(?P<name>Out of bounds values|Avg bus bandwidth)\s*:\s*(?P<v>{_NUM})\s*(?P<verdict>\w*)")
_NCCL_UNITS = {"Avg bus bandwidth": "GB/s", "Out of bounds values": ""}
_NCCL_OF = {"size": "message size", "count": "elements", "time": "mean time of one collective over the iterations",
            "cputime": "mean CPU time of one collective", "algbw": "algorithm bandwidth (size / time)",
            "busbw": "bus bandwidth (algbw times the collective's factor)", "#wrong": "wrong elements (the data check)"}
_NCCL_KIND = {"size": "size", "count": "count", "type": "text", "redop": "text", "root": "count", "time": "time",
              "cputime": "time", "algbw": "bandwidth", "busbw": "bandwidth", "#wrong": "count", "i_min": "time",
              "i_max": "time", "i_p99": "time", "i_cv%": "percent", "timestamp": "text"}


def _nccl(lines: list[str]) -> BenchTable | None:
    at = next((i for i, ln in enumerate(lines) if ln.startswith("#") and _is_nccl_header(ln)), None)
    if at is None:
        return None
    t = BenchTable("nccl_tests", "an nccl-tests table: time and bandwidth of one collective per message size")
    t.header = [ln[1:].strip() for ln in lines[:at]
                if ln.startswith("#") and ln[1:].strip() and "out-of-place" not in ln][:40]
    names = [(m.group(0), m.end()) for m in re.finditer(r"\S+", lines[at][1:])]
    units_line = lines[at + 1][1:] if at + 1 < len(lines) and lines[at + 1].startswith("#") else ""
    units = {m.end(): m.group(0).strip("()") for m in re.finditer(r"\S+", units_line)}
    group = "out_of_place"
    for k, (nm, end) in enumerate(names):
        g = "" if k < 5 else group
        if k >= 5 and nm in ("time", "cputime") and any(c["name"].endswith(f".{nm}") for c in t.columns):
            group = g = "in_place"
        t.columns.append({"name": f"{g}.{nm}" if g else nm, "kind": _NCCL_KIND.get(nm, "text"),
                          "unit": units.get(end, ""), "of": _NCCL_OF.get(nm, nm), **({"group": g} if g else {})})
    for ln in lines[at + 2:]:
        s = ln.strip()
        m = _NCCL_SUMMARY.match(s)
        if m is not None:
            t.summary.append({"name": m.group("name"), "value": float(m.group("v")),
                              "unit": _NCCL_UNITS[m.group("name")], "verdict": m.group("verdict")})
        elif s and not s.startswith("#") and s[0].isdigit() and len(t.rows) < MAX_ROWS:
            r = _nccl_row(s.split(), t.columns)
            if r is not None:
                t.rows.append(r)
    return t


def _is_nccl_header(line: str) -> bool:
    w = line[1:].split()
    return w[:5] == ["size", "count", "type", "redop", "root"] and "algbw" in w and "busbw" in w


def _nccl_row(toks: list[str], columns: list[dict]) -> dict | None:
    n = len(columns)
    if len(toks) < 5:
        return None
    body = toks[5:]
    per_group = (n - 5) // 2
    if len(toks) < n and len(body) == per_group:  # (in-place only: the out-of-place cells left blank)
        body = ["-"] * per_group + body
    cells = []
    for c, tok in zip(columns, toks[:5] + body, strict=False):
        if c["kind"] == "text" or tok in ("N/A", "-"):
            cells.append(_cell(tok if c["kind"] == "text" else None, c["unit"] or None))
            continue
        try:
            cells.append(_cell(float(tok) if any(ch in tok for ch in ".eE") else int(tok), c["unit"] or None))
        except ValueError:
            return None
    return _row(toks[0], cells)


# -- criterion -----------------------------------------------------------------------------

_CR_LINE = LazyPattern(rf"^(?P<name>.*?)\s*(?P<what>time|thrpt):\s+\[(?P<lo>{_NUM}) (?P<lu>\S+) (?P<est>{_NUM}) "
                      rf"(?P<eu>\S+) (?P<hi>{_NUM}) (?P<hu>[^\]\s]+)\]")


def _criterion(lines: list[str]) -> BenchTable | None:
    t = BenchTable("criterion", "a criterion report: low, estimate and high of each benchmark's time per "
                   "iteration (a confidence interval)")
    rows: dict[str, dict] = {}
    last = ""
    for ln in lines:
        m = _CR_LINE.match(ln.rstrip())
        if m is None:
            if ln.strip() and not ln.startswith(" ") and not ln.startswith(("Benchmarking", "Found ")):
                last = ln.strip()  # (a long name, printed on a line of its own)
            continue
        name = last = m.group("name").strip() or last  # (thrpt: under its time line, no name)
        r = rows.setdefault(name, {"name": name, "values": [None] * 6, "units": [None] * 6})
        k = 0 if m.group("what") == "time" else 3
        r["values"][k:k + 3] = [float(m.group(x)) for x in ("lo", "est", "hi")]
        r["units"][k:k + 3] = [m.group(x) for x in ("lu", "eu", "hu")]
        if len(rows) >= MAX_ROWS:
            break
    if not rows:
        return None
    t.columns = [{"name": f"{w}.{s}", "kind": "time" if w == "time" else "rate", "unit": "",
                  "of": f"{w} per iteration, {s}"}
                 for w in ("time", "thrpt") for s in ("low", "estimate", "high")]
    if all(r["values"][3] is None for r in rows.values()):  # (no throughput set)
        t.columns = t.columns[:3]
        for r in rows.values():
            r["values"], r["units"] = r["values"][:3], r["units"][:3]
    t.rows = list(rows.values())
    return t

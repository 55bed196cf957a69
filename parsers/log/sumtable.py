"""Summary tables: a profiler's table of totals per kernel, copy, API call or action, read as
what it is (a BenchTable of parsers/log/benchtable.py, shown by `gpuscope analyze` as the
benchmark tables are), never as timed steps.

Each cell is a sum or a statistic over many events of the whole capture: no steps, no
held-time split, no idle time. A number is a time, a size or a share only when its column's
header (`Total Time (ns)`, `Total (MB)`, `Time (%)`, `Mean duration (s)`) or its own cell
(`890.805us`, `768.26ms`, `12.50%`) says so; a number with no unit anywhere is a plain number
(kind `number`), never a duration. What the tools print (read from their output; ours):

- Nsight Systems `nsys stats` (and `nsys profile --stats=true`): per report a title
  (`** CUDA GPU Kernel Summary (cuda_gpu_kern_sum):`, `[4/7] Executing 'cudaapisum' stats
  report`, older `CUDA API Statistics:`), a header whose names carry their unit, a rule of
  dashes per column, rows with thousands separators and the name last (kernels, copies
  `[CUDA memcpy Host-to-Device]`, older `[CUDA memcpy HtoD]`, API calls, NVTX ranges, OS
  runtime calls); `--format csv`: the same columns, comma-separated.
- torch.profiler's `key_averages().table()`: rules, a header (`Name  Self CPU %  Self CPU
  CPU total %  CPU total  CPU time avg  Self CUDA ...  # of Calls`), rows with a unit in
  each time cell, `Self CPU time total: 195.526ms` after it.
- nvprof's summary: `Type  Time(%)  Time  Calls  Avg  Min  Max  Name`, rows `GPU
  activities:  45.12%  768.26ms  ...  [CUDA memcpy HtoD]`, `API calls:` rows.
- Lightning's SimpleProfiler report and markdown tables: `|`-separated cells under a header
  whose names carry a unit (`Mean duration (s) | Total time (s)`); a `|` table with no unit
  anywhere is not read here.

A locale's digits (`803 151,0`, `19,0`) are read as such and said. Rows pasted without their
header (no rule, no names: `0.2  4,362,860  1 ...`) are refused for that (`headless_rows`):
which column is which, in what unit, cannot be told. A row cut short is counted, not read.

parsers/log/sumnsys.py turns an nsys summary into its totals (copies by direction, kernel
time, host-blocking API calls)."""

from __future__ import annotations

import re

from gpuscope.parsers.log.lazyre import LazyPattern
from gpuscope.parsers.log.sumnsys import summarize
from gpuscope.parsers.log.tabledoc import MAX_ROWS, SIZE_UNITS, TIME_UNITS, BenchTable

STATEMENT = ("a summary table, not timed steps: each row sums or summarizes many events of the whole "
             "capture; no steps, no held-time split and no diagnosis of GPU idle time come from it")
_UNIT = r"ns|us|\u00b5s|ms|sec|s|%|B|KB|MB|GB|KiB|MiB|GiB|b|Kb|Mb|Gb"
_HEAD_UNIT = LazyPattern(rf"\s*\(\s*({_UNIT})\s*\)\s*$|\s+(%)$")
_CELL = LazyPattern(rf"^([-+]?(?:\d{{1,3}}(?:,\d{{3}})+|\d+)(?:\.\d*)?(?:[eE][-+]?\d+)?|[-+]?\.\d+)\s*({_UNIT})?$")
_LOCALE = LazyPattern(rf"^([-+]?(?:\d{{1,3}}(?: \d{{3}})+(?:,\d+)?|\d+,\d{{1,2}}))\s*({_UNIT})?$")
_RULE = LazyPattern(r"^\s*-{2,}(?:\s+-{2,})+\s*$")
_TITLE = LazyPattern(r"^\s*\*\*\s*(?P<title>.*?)\s*\((?P<report>\w+)\):\s*$|"
                    r"^\s*\[\d+/\d+\] Executing '(?P<report2>\w+)' stats report|"
                    r"^\s*(?:Running|Processing) \[(?:[^\]]*\] with \[)?[^\]]*/(?P<report3>\w+)\.py\b|^\s*(?P<title2>[A-Z][\w ()/-]*Statistics[^:]*):\s*$")
_GATES = {"ruled": LazyPattern(r"^\s*-{2,}(?:\s+-{2,})+\s*$", re.M),
          "csv": LazyPattern(r"^[^\n]*\((?:ns|%|MB|KiB)\),", re.M),
          "nvprof": LazyPattern(r"Time\(%\)\s+Time\s+Calls"),
          "piped": LazyPattern(rf"\|[^|\n]*(?:\(\s*(?:{_UNIT})\s*\)|\s%\s*\||\d\s*(?:{_UNIT})\s*\|)")}
_NAME_HEADS = ("name", "operation", "range", "action", "kernel", "function")
_COUNT_HEADS = ("instances", "count", "num calls", "calls", "# of calls", "number of calls", "operations")
_NVPROF_HEAD = LazyPattern(r"^\s*(?:Type\s+)?Time\(%\)\s+Time\s+Calls\s+Avg\s+Min\s+Max\s+Name\s*$")
_NVPROF_TYPE = LazyPattern(r"^\s*(GPU activities|API calls):")
_TORCH_FOOT = LazyPattern(rf"^\s*(Self (?:CPU|CUDA|XPU|MPS) time total):\s*({_CELL.pattern[1:-1]})\s*$")


def cell(text: str) -> tuple[float | int | str | None, str | None]:
    """A cell as printed: (number, its own unit or None), or (text, None); `-` is no value."""
    s = text.strip()
    if s in ("", "-", "N/A", "nan"):
        return None, None
    m = _CELL.match(s)
    if m is None:
        m = _LOCALE.match(s)  # (space-grouped thousands, a decimal comma: `803 151,0`, `19,0`)
        if m is None:
            return s, None
        num = m.group(1).replace(" ", "").replace(",", ".")
        return (float(num) if "." in num else int(num)), m.group(2)
    num = m.group(1).replace(",", "")
    v: float | int = int(num) if re.fullmatch(r"[-+]?\d+", num) else float(num)
    return v, m.group(2)


def head(text: str) -> tuple[str, str]:
    """A header's name and the unit it names (`Total Time (ns)` -> (`Total Time`, `ns`)); a
    share keeps its sign in the name (`Time (%)`, `Self CPU %`: `Time` is another column)."""
    s = " ".join(text.split())
    m = _HEAD_UNIT.search(s)
    if m is None:
        return s, ""
    unit = m.group(1) or m.group(2)
    return (s if unit == "%" else s[:m.start()].strip() or s), unit


def kind_of(name: str, unit: str, cells: list[tuple]) -> str:
    """time | percent | size | count | number | text: from the header's unit, else every
    cell's own, else the header's name (a count); a number with no unit is a `number`."""
    units = {u for v, u in cells if v is not None and not isinstance(v, str)}
    texts = all(isinstance(v, str) for v, _ in cells if v is not None)
    u = unit or (units.pop() if len(units) == 1 else "")
    if texts and not unit and not units:
        return "text"
    if u in TIME_UNITS or units and units <= set(TIME_UNITS):
        return "time"
    if u == "%" or name.endswith("%"):
        return "percent"
    if u in SIZE_UNITS:
        return "size"
    if name.lower() in _COUNT_HEADS:
        return "count"
    return "number"


def _is_name(name: str) -> bool:
    return name.lower() in _NAME_HEADS


class _Section:
    """One table being read: its title, report name, header names and units, raw rows."""

    def __init__(self, names: list[str], title: str = "", report: str = ""):
        self.title, self.report = title, report
        parsed = [head(n) for n in names]
        self.names = [n for n, _ in parsed]
        self.units = [u for _, u in parsed]
        self.rows: list[list[str]] = []
        self.lines = 0  # (its lines in the text: title, header, rules, rows)
        self.damaged = 0  # (rows cut short: a cell missing)

    def table(self, tool: str, what: str) -> dict | None:
        """The section as a BenchTable document part: the name column (Name, Operation,
        Range, Action; else the first column where it is text) names each row; with none,
        the first cell names the row and stays a column (nvbench's `ms` axis)."""
        if not self.rows:
            return None
        n = len(self.names)
        cells = [[cell(r[k]) if k < len(r) else (None, None) for k in range(n)] for r in self.rows]
        kinds = [kind_of(self.names[k], self.units[k], [c[k] for c in cells]) for k in range(n)]
        at = next((k for k in range(n) if _is_name(self.names[k])), None)
        if at is None and kinds[0] == "text":
            at = 0
        keep = [k for k in range(n) if k != at]  # (no name column: the first cell names a row, and stays)
        own = [any(c[k][1] for c in cells) for k in range(n)]  # (a unit in the cells: each cell says its own)
        columns = [{"name": self.names[k], "kind": kinds[k], "unit": "" if own[k] else self.units[k],
                    "of": f"{self.names[k]} as {tool} printed it"} for k in keep]
        rows = []
        for r, cs in zip(self.rows, cells, strict=True):
            name = " ".join(r[at if at is not None else 0].split()) if r else ""
            rows.append({"name": name, "values": [cs[k][0] for k in keep],
                         "units": [cs[k][1] or self.units[k] or None for k in keep]})
        return {"title": self.title, "report": self.report, "what": what, "columns": columns, "rows": rows}


def _title_above(lines: list[str], at: int) -> tuple[str, str]:
    """The title and report name printed above a table's header (within 4 lines)."""
    for ln in reversed(lines[max(0, at - 4):at]):
        m = _TITLE.match(ln)
        if m is not None:
            title = m.group("title") or m.group("title2") or ""
            return title, m.group("report") or m.group("report2") or m.group("report3") or ""
    return "", ""


def _regions(rule: str) -> list[tuple[int, int]]:
    """Each column's stretch of a line, from a rule of dashes: from the end of the column
    before to the end of its dashes (a cell right- or left-aligned under them); the last
    column to the end of the line (a long name runs past its dashes)."""
    ends = [m.end() for m in re.finditer(r"-+", rule)]
    out = [(0 if k == 0 else ends[k - 1], e) for k, e in enumerate(ends)]
    out[-1] = (out[-1][0], 1 << 20)
    return out


def _split(line: str, regions: list[tuple[int, int]]) -> list[str]:
    """A line's cells: split at runs of two or more spaces where that gives one per column
    (a header's names, a row's cells, however aligned), else cut by the columns' stretches."""
    parts = re.split(r"\s{2,}|\t", line.strip())
    if len(parts) == len(regions):
        return parts
    return [line[a:b].strip() for a, b in regions]


def _headless(lines: list[str]) -> tuple[int, int]:
    """Rules of dashes over rows of numbers with no header above (a paste cut short): how
    many, and their lines (the rule and its rows: the table's, though unreadable)."""
    n = held = 0
    for i, ln in enumerate(lines[:-1]):
        if _RULE.match(ln) and (i == 0 or _header(lines[i - 1], _regions(ln)) is None):
            row = lines[i + 1].split()
            if row and isinstance(cell(row[0])[0], int | float) and not _RULE.match(lines[i + 1]):
                n += 1
                held += 1 + next((k for k, x in enumerate(lines[i + 1:]) if not x.strip()), len(lines) - i - 1)
    return n, held


def _header(line: str, regions: list[tuple[int, int]]) -> list[str] | None:
    names = _split(line, regions)
    if not all(names[:-1]) or any(not isinstance(cell(n)[0], str) for n in names if n):
        return None
    return names


def _ruled(lines: list[str]) -> list[_Section]:
    """Tables under a rule of dashes (nsys stats, torch.profiler): the header is the line
    above the rule (its cells no numbers); the rows follow until a blank line or a rule."""
    out = []
    for i, ln in enumerate(lines):
        if not _RULE.match(ln) or i == 0:
            continue
        regions = _regions(ln)
        names = _header(lines[i - 1], regions)
        if names is None:
            continue
        sec = _Section(names, *_title_above(lines, i - 1))
        sec.lines = 2 + bool(sec.title or sec.report)
        for row in lines[i + 1:]:
            if not row.strip() or _RULE.match(row) or len(sec.rows) >= MAX_ROWS or _TORCH_FOOT.match(row):
                break
            cells = _split(row, regions)
            if sum(1 for c in cells if _numeric(c)) < min(2, len(cells) - 1):
                break  # (a line of another shape ends the table: a footer, a prompt)
            sec.lines += 1
            if not all(cells):
                sec.damaged += 1  # (a row cut short, a paste's last line: counted, never read in part)
                continue
            sec.rows.append(cells)
        out.append(sec)
    return out


def _csv(lines: list[str]) -> list[_Section]:
    """`nsys stats --format csv`: a header of names with their units, then rows until a
    line of another shape (a quoted name may hold commas)."""
    import csv  # (a CSV summary only: every log's detection imports this module)

    out: list[_Section] = []
    i = 0
    while i < len(lines):
        ln = lines[i]
        i += 1
        if ln.count(",") < 2 or not re.search(r"\((?:ns|%|MB|KiB)\)", ln):
            continue
        names = next(csv.reader([ln]))
        sec = _Section(names, *_title_above(lines, i - 1))
        sec.lines = 1 + bool(sec.title or sec.report)
        while i < len(lines) and lines[i].count(",") >= len(names) - 1 and len(sec.rows) < MAX_ROWS:
            sec.rows.append(next(csv.reader([lines[i]])))
            sec.lines += 1
            i += 1
        out.append(sec)
    return out


def _nvprof(lines: list[str]) -> list[_Section]:
    """nvprof's summary: rows under `Type Time(%) Time Calls Avg Min Max Name` (the type
    printed on a group's first row only), until a blank or `==` line."""
    out: list[_Section] = []
    for i, ln in enumerate(lines):
        if not _NVPROF_HEAD.match(ln):
            continue
        sec = _Section(["Type", *ln.split()[-7:]], "nvprof summary")
        sec.lines = 1 if out else 1 + sum(1 for x in lines if re.match(r"^==\d+== ", x))  # (its `==pid==` lines)
        kind = ""
        for row in lines[i + 1:]:
            if not row.strip() or row.lstrip().startswith("==") or len(sec.rows) >= MAX_ROWS:
                break
            m = _NVPROF_TYPE.match(row)
            if m is not None:
                kind, row = m.group(1), row[m.end():]
            toks = row.split()
            if len(toks) < 7:
                break
            sec.rows.append([kind, *toks[:6], " ".join(toks[6:])])
            sec.lines += 1
        if not any(r[0] for r in sec.rows):  # (no type printed: no such column)
            sec.names, sec.units, sec.rows = sec.names[1:], sec.units[1:], [r[1:] for r in sec.rows]
        out.append(sec)
    return out


def _piped(lines: list[str]) -> list[_Section]:
    """`|`-separated tables (Lightning's SimpleProfiler, markdown): the first `|` line whose
    cells are names is the header; rows of as many cells follow (rules between them skipped)."""
    out: list[_Section] = []
    sec: _Section | None = None
    for ln in lines:
        s = ln.strip()
        if sec is not None and (not s or set(s) <= set("-=+|: ")):
            if not s and sec.rows:
                sec = None
            elif sec is not None:
                sec.lines += 1
            continue
        if s.count("|") < 1 or sec is None and any(ch.isdigit() for ch in s):
            sec = None  # (no `|`, or no header: a header names, it holds no digits)
            continue
        cells = [c.strip() for c in s.strip("|").split("|")]
        if sec is not None and len(cells) == len(sec.names):
            if len(sec.rows) < MAX_ROWS:
                sec.rows.append(cells)
            sec.lines += 1
            continue
        if all(c and isinstance(cell(c)[0], str) for c in cells) and len(cells) >= 2:
            sec = _Section(cells)
            sec.lines = 1
            out.append(sec)
        else:
            sec = None
    return [s for s in out if any(s.units) or any(cell(c)[1] for r in s.rows for c in r)]


_WHAT = {"nsys_stats": "an Nsight Systems `nsys stats` summary: totals and statistics per kernel, copy, API call or "
                       "range over the whole capture (units from the headers)",
         "torch_profiler": "a torch.profiler `key_averages().table()`: self and total CPU/CUDA time per operator "
                           "over the profiled steps (a unit in each cell)",
         "nvprof": "an nvprof summary: share, total and per-call time of each GPU activity and API call",
         "lightning_profiler": "a Lightning profiler report: mean and total time per action (units from the header)",
         "markdown_table": "a table whose header or cells give a time unit: read as a table, not as timed steps"}


def _tool_of(reader: str, sec: _Section) -> str | None:
    names = " ".join(sec.names).lower()
    if reader == "nvprof":
        return "nvprof"
    if reader == "ruled" and ("self cpu" in names or "cpu total" in names or "self cuda" in names):
        return "torch_profiler"
    if reader == "csv" or sec.report or "ns" in sec.units or any("[CUDA " in " ".join(r) for r in sec.rows[:50]):
        return "nsys_stats" if reader in ("ruled", "csv") else None
    if reader == "piped":
        return "lightning_profiler" if "action" in names and "duration" in names else "markdown_table"
    return None


def read_summary_table(text: str) -> BenchTable | None:
    """The summary table(s) a text is, or None: one tool's sections (the tool whose tables
    hold most of the text's lines); the first section is the table, the others `sections`."""
    lines = text.split("\n")
    found: dict[str, list[_Section]] = {}
    for reader, read in (("ruled", _ruled), ("csv", _csv), ("nvprof", _nvprof), ("piped", _piped)):
        if reader == "ruled" and "-  -" not in text or not _GATES[reader].search(text):  # (most logs hold none)
            continue
        for sec in read(lines):
            tool = _tool_of(reader, sec)
            if tool is not None and sec.rows:
                found.setdefault(tool, []).append(sec)
    if not found:
        return None
    tool = max(found, key=lambda k: sum(s.lines for s in found[k]))
    parts = [p for s in found[tool] if (p := s.table(tool, _WHAT[tool])) is not None]
    t = BenchTable(tool, _WHAT[tool])
    t.statement = STATEMENT
    t.own_lines = sum(s.lines for s in found[tool])
    t.columns, t.rows = parts[0]["columns"], parts[0]["rows"]
    t.section = {"title": parts[0]["title"], "report": parts[0]["report"]}
    t.sections = parts[1:]
    if any(_LOCALE.match(c.strip()) and not _CELL.match(c.strip()) for s in found[tool] for r in s.rows for c in r):
        t.notes.append("read: numbers in a locale's digits (space-grouped thousands, a decimal comma: `803 151,0`)")
    damaged = sum(s.damaged for s in found[tool])
    if damaged:
        t.notes.append(f"{damaged} row(s) cut short skipped (a cell missing: a paste's last line)")
    skipped, held = _headless(lines) if tool == "nsys_stats" else (0, 0)
    t.own_lines += held
    if skipped:
        t.notes.append(f"{skipped} table(s) without a header line skipped (their columns and units cannot be told)")
    for ln in lines:
        m = _TORCH_FOOT.match(ln)
        if m is not None:
            v, u = cell(m.group(2))
            t.summary.append({"name": m.group(1), "value": v, "unit": u or "", "verdict": ""})
            t.own_lines += 1
    if tool in _NESTED:
        t.notes.append(_NESTED[tool])
    summarize(t)
    return t


# what a reader of the table must not do with it (each a sum that counts time twice)
_NESTED = {"torch_profiler": "`Self` columns exclude an operator's children, `total` columns include them: a sum of "
                             "totals counts nested operators more than once; CUDA time is the GPU's, beside the CPU's",
           "lightning_profiler": "the actions nest (run_training_epoch holds run_training_batch, which holds "
                                 "training_step ...): their times are no parts of one whole, never summed"}


HEADLESS = ("rows of a profiler's summary table without its header (nsys stats, torch.profiler: a paste cut "
            "short): which column is which, and in what unit, cannot be told, so no number is read as a time; "
            "paste the table with its header line")
_GROUPED = LazyPattern(r"^\d{1,3}(?:,\d{3})+(?:\.\d+)?$")


def _numeric(tok: str) -> bool:
    v = cell(tok)[0]
    return v is not None and not isinstance(v, str)


_SHARE_OR_GROUPED = LazyPattern(r"\d%|\d,\d{3}\b")
_UNITS = frozenset(TIME_UNITS) | frozenset(SIZE_UNITS)
_TOKEN = LazyPattern(rf"[-+]?\d[\d.,]*(?:{_UNIT})?")


def _longest_run(toks: list[str]) -> list[str]:
    """The longest run of number tokens side by side (a unit after a space stays in it)."""
    best: list[str] = []
    run: list[str] = []
    for t in toks:
        if t.lstrip("+-")[:1].isdigit() and _TOKEN.fullmatch(t) or run and t in _UNITS:
            run.append(t)
        elif run:
            best, run = (run if len(run) > len(best) else best), []
    return run if len(run) > len(best) else best


def headless_rows(text: str) -> bool:
    """Whether a text is mostly rows of a summary table with no header: three or more lines
    holding a run of five or more numbers side by side beside a name, one of them a share
    (`76.96%`) or grouped by thousands (`29,190,202`): a row whose columns nothing names. A
    log's labelled values (`step 1 | loss 1.2 | data 12.0 ms | ... 45.1%`) are no such run, nor
    `step 1 12.3ms 4.5ms ...` (neither a share nor grouped thousands)."""
    lines = [ln for ln in text.split("\n", 2000)[:2000] if ln.strip()][:400]  # (a paste: its head tells)
    if not _SHARE_OR_GROUPED.search("\n".join(lines)):
        return False  # (a cheap look first: no share, no grouped thousands)
    rows = 0
    for ln in lines:
        toks = ln.split()
        if sum(1 for t in toks if t.lstrip("+-")[:1].isdigit()) < 5:
            continue
        run = _longest_run(toks)
        if len(run) >= 5 and len(run) < len(toks) and any(t.endswith("%") or _GROUPED.match(t) for t in run):
            rows += 1  # (five numbers side by side, and a name beside them)
    return rows >= 3 and rows + sum(1 for ln in lines if _RULE.match(ln)) >= 0.5 * len(lines)


def looks_like_summary(head: str) -> bool:
    """Whether a log's head is a summary table (read, or refused for its missing header)."""
    return read_summary_table(head) is not None or headless_rows(head)


def summary_kind(head: str) -> str | None:
    """What a summary table in a log's head is (a refusal names it: `nsys profile --stats=true`
    output after a program's own lines, which hold no timing line), else None."""
    t = read_summary_table(head)
    return t.what if t is not None else None

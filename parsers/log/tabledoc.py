"""The document of a table of measurements (BenchTable): a benchmark tool's
(parsers/log/benchtable.py) or a profiler's summary (parsers/log/sumtable.py), shown by
`gpuscope analyze` (reports/bench_console.py, the `benchmark_table` key of --json)."""

from __future__ import annotations

from dataclasses import dataclass, field

STATEMENT = ("a benchmark table, not timed steps: each row is the tool's own summary of many iterations; "
             "no steps, no held-time split and no diagnosis of GPU idle time come from it")
MAX_ROWS = 100_000
# a unit a table prints, in seconds or bytes (its header's or each cell's)
TIME_UNITS = {"ns": 1e-9, "us": 1e-6, "\u00b5s": 1e-6, "ms": 1e-3, "s": 1.0, "sec": 1.0}
SIZE_UNITS = {"B": 1.0, "KB": 1e3, "MB": 1e6, "GB": 1e9, "KiB": 1024.0, "MiB": 1024.0 ** 2, "GiB": 1024.0 ** 3,
              "b": 1.0, "Kb": 1024.0, "Mb": 1024.0 ** 2, "Gb": 1024.0 ** 3}  # (torch.profiler < 1.10 printed b/Kb/Mb/Gb)


@dataclass
class BenchTable:
    """One tool's table: its columns (name, kind: time | bandwidth | rate | count | size |
    percent | number (no unit printed: never a time) | text | complexity, and the group of a repeated column: nccl's out-of-place /
    in-place), its rows (a name, a value per column: a number, a text or None, and a unit
    per cell where the tool prints one), and what it printed around them."""

    tool: str
    what: str
    columns: list[dict] = field(default_factory=list)
    rows: list[dict] = field(default_factory=list)
    header: list[str] = field(default_factory=list)  # the tool's settings as it printed them
    summary: list[dict] = field(default_factory=list)  # {name, value, unit, verdict}
    errors: list[dict] = field(default_factory=list)  # {name, message}: runs that failed or were skipped
    notes: list[str] = field(default_factory=list)
    statement: str = STATEMENT
    # a summary table of several reports (parsers/log/sumtable.py: nsys stats): the first one's
    # title and report name, and the further ones {title, report, what, columns, rows}
    section: dict = field(default_factory=dict)
    sections: list[dict] = field(default_factory=list)
    own_lines: int = 0  # (the text's lines that are the table's, where its reader counted them)
    kind: str = ""  # what a refusal calls the input (formats.table_kind's words, else `what`): not in JSON

    def to_json(self) -> dict:
        doc: dict = {"tool": self.tool, "what": self.what, "statement": self.statement, "columns": self.columns,
                     "rows": self.rows, "header": self.header, "summary": self.summary, "errors": self.errors,
                     "notes": self.notes}
        if self.section or self.sections:
            doc |= {"section": self.section, "sections": self.sections}
        return doc

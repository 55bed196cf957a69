"""The three back-ends that read a log's chunks, behind one interface (`ChunkScanner`).

`chunk_scanner(py)` picks one per format, in this one place:

- `PyScanner` (here): every line read in Python, one at a time (cuzk, condensed, kv and lines
  when the compiled module is not built, or GPUSCOPE_PURE_SCANNER=1). It is also the reference
  the other two hand their odd lines back to, and the reader of a log's last line.
- `NativeScan` (parsers/log/native.py): cuzk, condensed and kv read in C (parsers/_scan.c),
  which hands back the lines it does not read itself.
- `ShapeScan` (parsers/log/lines/replay.py): the `lines` format; the C splitter gives each
  line's shape, the plan the Python reader made for a shape is replayed over all its lines in
  numpy.

All three give the same Scan for the same chunks (tests/test_scanner_paths.py and the lines
parity tests); `parse_log` (logparse.scan_input) feeds chunks and asks for the result without
knowing which back-end it holds.
"""

from __future__ import annotations

from typing import Protocol

from gpuscope.parsers.log import cuzk, kv
from gpuscope.parsers.log import scan as sc
from gpuscope.parsers.log.detect import has_marker
from gpuscope.parsers.log.formats import NATIVE
from gpuscope.parsers.log.lines import read as freeform
from gpuscope.parsers.log.lines.replay import ShapeScan
from gpuscope.parsers.log.linetime import LineTimes
from gpuscope.parsers.log.native import NativeScan
from gpuscope.parsers.log.prefix import PrefixClock
from gpuscope.parsers.log.reader import Chunk
from gpuscope.parsers.log.scan import compiled_scanner

CUT_REASON = "last line without its newline ends in a number: possibly cut while written, not read"


class ChunkScanner(Protocol):
    """What scan_input asks of a back-end."""

    def feed(self, chunk: Chunk) -> bool:
        """Read one chunk (not the log's last line: PyScanner.tail reads that); whether one
        of its lines holds a CuZK or condensed marker (looked for only in the `lines` format,
        the one a log's head alone may choose: detect.detect_head)."""
        ...

    def result(self, tail: sc.Scan | None) -> sc.Scan:
        """The whole log's Scan, the last line's (`tail`) at its end."""
        ...


def chunk_scanner(py: PyScanner) -> ChunkScanner:
    """The back-end for py's format: the compiled one where it is built, else `py` itself."""
    native = compiled_scanner() if py.fmt in NATIVE or py.fmt == "lines" else None
    if native is None:
        return py
    if py.fmt == "lines":
        return ShapeScan(native, py, py.errors)
    return NativeScan(native, py.fmt, py.held, py, py.errors)


class PyScanner:
    """The Python scanners over one log's chunks (every line read in Python)."""

    def __init__(self, fmt: str, held: str, tables: sc.Tables, errors: str = "replace"):
        self.fmt, self.held, self.tables, self.errors = fmt, held, tables, errors
        self.clock = PrefixClock()
        self.state = freeform.State(held) if fmt == "lines" else None
        self.scans: list[sc.Scan] = []

    def new_scan(self) -> sc.Scan:
        return sc.Scan(LineTimes(self.clock))

    def read(self, lines: list[str], first: int, *, lineno=None, scan: sc.Scan | None = None) -> sc.Scan:
        """Read `lines` (numbered from `first`, or lineno[i]) into `scan` (a new one)."""
        s = scan if scan is not None else self.new_scan()
        fmt = self.fmt
        if fmt == "cuzk":
            idx = [i for i, ln in enumerate(lines) if "CUZK_" in ln or "TIMELINE," in ln or "_TIMING " in ln]
            return cuzk.scan_cuzk(lines, idx, self.held, first, lineno=lineno, s=s)
        if fmt == "lines":
            return freeform.scan_lines(lines, self.held, first, state=self.state, scan=s)
        idx = [i for i, ln in enumerate(lines) if "=" in ln]
        return kv.scan_kv(lines, idx, self.held, strict=(fmt == "condensed"), source=fmt, first=first,
                          lineno=lineno, s=s)

    def feed(self, chunk: Chunk) -> bool:
        s = self.read(sc.split_lines(chunk.text(self.errors)), chunk.first)
        s.finalize(self.tables)
        self.scans.append(s)
        return self.fmt == "lines" and has_marker(chunk.buf)

    def result(self, tail: sc.Scan | None) -> sc.Scan:
        return sc.Scan.concat([*self.scans, *([tail] if tail is not None else [])], self.tables)

    def tail(self, raw: str, ln: int, may_be_cut: bool = True) -> sc.Scan:
        """The last line, without its newline (`raw`: its text as read)."""
        s = self.new_scan()
        line = raw[:-1] if raw.endswith("\r") else raw
        if may_be_cut and possibly_cut(raw):
            probe = self.read([line], ln)  # is it a timing line at all?
            if probe.timing_lines:
                s.skip(ln, CUT_REASON, line)
        else:
            self.read([line], ln, scan=s)
        s.finalize(self.tables)
        return s


def possibly_cut(raw: str) -> bool:
    """A last line without its newline whose last number may have lost digits: its last
    non-blank character is a digit or a '.' (a trailing \\r means the line was written whole)."""
    if raw.endswith("\r"):
        return False
    t = raw.rstrip()
    return bool(t) and (t[-1].isdigit() or t[-1] == ".")

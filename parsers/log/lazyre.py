"""A regular expression compiled when first used.

The two table readers (parsers/log/benchtable.py, parsers/log/sumtable.py) hold 23 patterns for
inputs most runs never meet (a benchmark's table, a profiler's summary); the detection imports
them for every log, and compiling them cost ~8 ms of every start-up, a 12-line log's analyze
included (docs/BENCHMARKS.md, "Start-up"). A LazyPattern compiles on its first match. Not for a
pattern matched on every line of a large log: each use pays one more call.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable


class LazyPattern:
    """re.compile(pattern, flags), made at the first match, search, fullmatch or sub."""

    __slots__ = ("pattern", "flags", "_compiled")

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self.pattern, self.flags = pattern, flags
        self._compiled: re.Pattern[str] | None = None

    def compiled(self) -> re.Pattern[str]:
        if self._compiled is None:
            self._compiled = re.compile(self.pattern, self.flags)
        return self._compiled

    def match(self, string: str, pos: int = 0, endpos: int = sys.maxsize) -> re.Match[str] | None:
        return self.compiled().match(string, pos, endpos)

    def fullmatch(self, string: str, pos: int = 0, endpos: int = sys.maxsize) -> re.Match[str] | None:
        return self.compiled().fullmatch(string, pos, endpos)

    def search(self, string: str, pos: int = 0, endpos: int = sys.maxsize) -> re.Match[str] | None:
        return self.compiled().search(string, pos, endpos)

    def sub(self, repl: str | Callable[[re.Match[str]], str], string: str, count: int = 0) -> str:
        return self.compiled().sub(repl, string, count)

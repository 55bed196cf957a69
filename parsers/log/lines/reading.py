"""The types the `lines` reader's modules share, below them all (no import of the package):
a line's LineReading, and the reader's State as the modules that line.py calls see it
(ReaderState: line.State has it; fields.py's _NoWhole has the WholeKeys part)."""

from __future__ import annotations

from typing import Any, Protocol

LineReading = tuple | str | None  # a line's reading (line.read_line): its tuple, a damage reason or None


class WholeKeys(Protocol):
    """What finding a line's whole reads: the held key and each key's key_info."""

    held: str | None

    def info(self, key: str) -> Any: ...


class ReaderState(WholeKeys, Protocol):
    """line.State: what one scan remembers across lines (its documentation is there)."""

    unit_keys: set[str]
    seconds_assumed: dict[str, str]
    ms_assumed: set[str]
    known: dict[str, str]
    covering: set[str]
    mllog_open: dict
    tree: Any

    def word(self, token: str) -> Any: ...

    def by_stamps(self, name: str, number: float) -> str: ...

    def scratch(self) -> ReaderState: ...

    def tokens(self, text: str) -> list[str] | None: ...

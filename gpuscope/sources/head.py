"""`Head`: what one input's first bytes say, read once, for every reader's sniff
(gpuscope/sources/readers.py) and then for the reader that opens it.

    with read_head(path) as head:      # a path, "-" for standard input, a folder
        head.raw                        # the first 64 KiB as stored (a plain file's only read)
        head.plain()                    # the whole content, gunzipped and as UTF-8

A regular file is opened once: its head is read from that open, and a reader that needs the
whole content reads the rest from there (`stored`, `plain`); a plain file (no gzip, no UTF-16)
is handed to its reader by its path instead, read in chunks, never whole. Standard input, a
pipe and a zero-size file (/proc) are read whole at once (`stream`).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from gpuscope.errors import InputError, NoDataError, read_error
from gpuscope.parsers.limits import (
    gunzip,
    is_zero_size_file,
    read_path,
    read_stream,
    readable_file,
    utf8,
    utf16_bom,
)

STDIN = "-"
GZIP_MAGIC = b"\x1f\x8b"
UTF8_BOM = b"\xef\xbb\xbf"
HEAD = 4096  # the text a samples header is looked for in
FIRST = HEAD * 16  # the bytes every sniff sees (a trace's or a Prometheus answer's opening)


@dataclass
class Head:
    path: Path
    kind: str                 # file (a regular file, read from its path) | stream (held whole) | dir
    raw: bytes = b""          # the first FIRST bytes as stored (gzip, UTF-16 and all)
    cap: str = "log"          # parsers.limits' cap for the whole content (log | samples)
    _file: BinaryIO | None = field(default=None, repr=False)   # a file's one open, for the rest
    _whole: bytes | None = field(default=None, repr=False)     # a stream's bytes, read at once
    _stored: bytes | None = field(default=None, repr=False)
    _plain: bytes | None = field(default=None, repr=False)

    @property
    def is_dir(self) -> bool:
        return self.kind == "dir"

    @property
    def gz(self) -> bool:
        return self.raw[:2] == GZIP_MAGIC

    @property
    def by_path(self) -> bool:
        """A regular file whose bytes are its text (no gzip, no UTF-16): its reader reads it by
        its path, in chunks (the log parser, the samples.csv reader, the Nsight reader)."""
        return self.kind == "file" and not self.gz and not utf16_bom(self.raw)

    def stored(self) -> bytes:
        """The whole content as stored, UTF-16 re-encoded as UTF-8 (a BOM dropped), not gunzipped:
        a gzip trace is read up to a cut, which gunzip refuses."""
        if self._stored is None:
            if self._whole is not None:
                data = self._whole
            else:
                assert self._file is not None, f"{self.path}: no content to read"
                try:
                    data = read_stream(self._file, self.cap, self.path, first=self.raw)
                except (OSError, ValueError) as e:
                    raise read_error(self.path, e) from None
            self._stored = utf8(data)
        return self._stored

    def plain(self) -> bytes:
        """The whole content as UTF-8 text bytes: gunzipped (a damaged gzip file refused)."""
        if self._plain is None:
            data = self.stored()
            if data[:2] == GZIP_MAGIC:
                out, cut = gunzip(data, self.cap, self.path)
                if cut:  # a log or a capture cut short is refused (a trace is read up to its cut)
                    raise InputError(f"{self.path}: a damaged gzip file (it ends before its end-of-stream marker)")
                data = utf8(out)
            self._plain = data
        return self._plain

    def first(self) -> bytes:
        """The first bytes of the content as stored (a plain file's head: nothing more is read)."""
        return self.raw if self.by_path else self.stored()[:FIRST]

    def plain_first(self) -> bytes:
        """The first bytes of the text (a gzip file's: gunzipped, whole), a UTF-8 BOM dropped as
        `plain` drops it: a samples file a Windows tool wrote was read as a log when named by its
        path (its header's first word hidden behind the BOM) and as samples from standard input."""
        return self.raw.removeprefix(UTF8_BOM) if self.by_path else self.plain()[:FIRST]

    def text(self) -> str:
        """The first HEAD bytes of the text, decoded (where a samples header is looked for)."""
        return self.plain_first()[:HEAD].decode("utf-8", errors="replace")


@contextmanager
def read_head(path: str | os.PathLike[str], cap: str = "log") -> Iterator[Head]:
    """The head of what the user named; a regular file stays open while the head is used (its
    reader reads the rest from the same open). Raises InputError / NoDataError with one line."""
    if str(path) == STDIN:
        yield _stream(Path("<stdin>"), _read_stdin(), cap)
        return
    p = Path(path)
    if p.is_dir():
        yield Head(p, "dir", cap=cap)
        return
    if not p.exists():
        raise InputError(f"no such file or directory: {p}")
    if readable_file(p) == "fifo" or is_zero_size_file(p):  # a pipe, a /proc file: read as a stream
        yield _stream(p, read_path(p, cap), cap)
        return
    try:
        f = open(p, "rb")  # noqa: SIM115 - closed below, its errors mapped apart from the reading's
    except (OSError, ValueError) as e:
        raise read_error(p, e) from None
    with f:
        try:
            raw = f.read(FIRST)
        except (OSError, ValueError) as e:
            raise read_error(p, e) from None
        yield Head(p, "file", raw, cap, f)


def _stream(p: Path, data: bytes, cap: str) -> Head:
    return Head(p, "stream", data[:FIRST], cap, _whole=data)


def _read_stdin() -> bytes:
    """Standard input within the log cap; NUL bytes in its first block end the reading there
    (`analyze - < /dev/zero` is refused at once, not after gigabytes), unless it is gzip or
    UTF-16/32 text with its BOM (read as the same file named by its path is)."""
    f = sys.stdin.buffer
    try:
        head = f.read(FIRST)
        if head[:2] != GZIP_MAGIC and not utf16_bom(head) and b"\x00" in head[:8192]:
            raise NoDataError("<stdin> looks binary (NUL bytes), not a text log")
        return read_stream(f, "log", "<stdin>", first=head)
    except OSError as e:
        raise read_error("<stdin>", e) from None

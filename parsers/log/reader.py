"""A log's bytes, read in chunks that end at a line end, so a 200 MB log never sits in memory
as text plus copies of it: at most one chunk (CHUNK bytes, or one line when a line is
longer) is held at a time besides what the scan keeps.

`LogInput` is a path, bytes (a file's content, standard input) or a str (text given by a
caller, encoded back to UTF-8). `chunks()` yields (buffer, number of its first line, its
newline count); a last line without its newline comes alone, flagged (the parsers read it
as possibly cut: parsers/log/logparse.py).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from gpuscope.errors import NoDataError
from gpuscope.parsers.limits import cap, too_big

CHUNK = 16 << 20
BINARY_PROBE = 8192
UTF8_BOM = b"\xef\xbb\xbf"
MAX_LINE = 64 << 20  # a longer line is no timing log's (the buffer never grows past it)


@dataclass
class Chunk:
    buf: bytes | bytearray | memoryview
    first: int          # number of its first line (1-based)
    newlines: int       # "\n" in it (its lines, when it ends with one)
    tail: bool = False  # the last line of the log, without its newline
    end: int = 0        # bytes of the input read through this chunk (progress)

    def text(self, errors: str) -> str:
        return str(self.buf, "utf-8", errors)


class LogInput:
    """What parse_log reads: `name` (for messages and ParsedLog.source), `size` in bytes,
    `errors` (how to decode: `replace` for bytes and files, `surrogatepass` for a str)."""

    def __init__(self, name: str, *, path: str | os.PathLike[str] | None = None, data: bytes | None = None,
                 errors: str = "replace"):
        self.name = name
        self.path: Any = path  # (set when data is None)
        self.data = data
        self.errors = errors
        # a str given by a caller is whole; bytes and files may be cut while being written
        self.may_be_cut = errors != "surrogatepass"
        if data is not None and data[:3] == UTF8_BOM:  # not part of the first line
            self.data = data = data[3:]
        if data is not None:
            self.size = len(data)
        elif path is not None:
            self.size = os.stat(path).st_size
        else:
            raise ValueError("LogInput: a path or data")

    @classmethod
    def from_text(cls, text: str, name: str) -> LogInput:
        return cls(name, data=text.encode("utf-8", "surrogatepass"), errors="surrogatepass")

    def head(self, n: int) -> bytes:
        if self.data is not None:
            return bytes(self.data[:n])
        with open(self.path, "rb") as f:
            return f.read(n)

    def blocks(self, size: int | None = None) -> Iterator[bytes | memoryview]:
        """The raw bytes in blocks (no line alignment)."""
        size = size or CHUNK
        if self.data is not None:
            mv = memoryview(self.data)
            for i in range(0, len(mv), size):
                yield mv[i:i + size]
            return
        with open(self.path, "rb") as f:
            while True:
                b = f.read(size)
                if not b:
                    return
                yield b

    def chunks(self, size: int | None = None) -> Iterator[Chunk]:
        """Line-aligned chunks, in order; the last line without its newline comes alone."""
        size = size or CHUNK
        if self.data is not None:
            yield from self._chunks_of_bytes(self.data, size)
            return
        # one buffer, refilled in place: a chunk is a view of it, valid until the next one is
        # asked for (the part after the last line end moves to the front); a line longer than
        # the buffer gets a bigger one (never a resize while a view may be alive)
        buf = bytearray(size + 4096)
        keep = first = done = 0
        first = 1
        limit = cap("log")
        with open(self.path, "rb") as f:
            while True:
                if keep > MAX_LINE:
                    raise NoDataError(f"{self.name}: a line longer than {MAX_LINE >> 20} MiB at line {first} "
                                      "(not a text timing log)")
                if done > limit:
                    raise too_big(self.name, "log", limit)
                if len(buf) - keep < size // 2 + 1:
                    bigger = bytearray(2 * len(buf))
                    bigger[:keep] = buf[:keep]
                    buf = bigger
                got = f.readinto(memoryview(buf)[keep:])
                if not got:
                    break
                if not done and buf[:3] == UTF8_BOM:  # not part of the first line
                    buf[:got - 3] = buf[3:got]
                    got -= 3
                    done += 3
                done += got
                end = keep + got
                cut = buf.rfind(b"\n", keep, end)
                if cut < 0:  # no line end in what came: one long line goes on
                    keep = end
                    continue
                nl = buf.count(b"\n", 0, cut + 1)
                yield Chunk(memoryview(buf)[:cut + 1], first, nl, end=done - (end - cut - 1))
                first += nl
                rest = end - cut - 1
                buf[:rest] = buf[cut + 1:end]
                keep = rest
        if keep:
            yield Chunk(bytes(buf[:keep]), first, 0, tail=True, end=done)

    def _chunks_of_bytes(self, data: bytes, size: int) -> Iterator[Chunk]:
        mv = memoryview(data)
        n = len(data)
        pos, first = 0, 1
        while pos < n:
            end = data.rfind(b"\n", pos, min(n, pos + size))
            if end < 0:
                end = data.find(b"\n", pos + size)
            if end < 0:  # the rest is the last line, without its newline
                yield Chunk(mv[pos:], first, 0, tail=True, end=n)
                return
            nl = data.count(b"\n", pos, end + 1)
            yield Chunk(mv[pos:end + 1], first, nl, end=end + 1)
            first += nl
            pos = end + 1


def looks_binary(head: bytes) -> bool:
    return b"\x00" in head[:BINARY_PROBE]

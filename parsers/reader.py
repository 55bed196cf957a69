"""A log's bytes, read in chunks that end at a line end, so a 200 MB log never sits in memory
as text plus copies of it: at most one chunk (CHUNK bytes, or one line when a line is
longer) is held at a time besides what the scan keeps.

`LogInput` is a path, bytes (a file's content, standard input) or a str (text given by a
caller, encoded back to UTF-8). `chunks()` yields (buffer, number of its first line, its
newline count); a last line without its newline comes alone, flagged (the parsers read it
as possibly cut: parsers/logparse.py).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass

CHUNK = 16 << 20
BINARY_PROBE = 8192


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

    def __init__(self, name: str, *, path: str | os.PathLike | None = None, data: bytes | None = None,
                 errors: str = "replace"):
        self.name = name
        self.path = path
        self.data = data
        self.errors = errors
        # a str given by a caller is whole; bytes and files may be cut while being written
        self.may_be_cut = errors != "surrogatepass"
        if data is not None:
            self.size = len(data)
        else:
            self.size = os.stat(path).st_size

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
        first = 1
        done = 0
        carry = bytearray()
        with open(self.path, "rb") as f:
            while True:
                b = f.read(size)
                if not b:
                    break
                done += len(b)
                cut = b.rfind(b"\n")
                if cut < 0:  # no line end in this block: one long line goes on
                    carry += b
                    continue
                if carry:
                    carry += memoryview(b)[:cut + 1]
                    buf, nl = bytes(carry), carry.count(b"\n")
                else:
                    buf, nl = memoryview(b)[:cut + 1], b.count(b"\n", 0, cut + 1)
                carry = bytearray(memoryview(b)[cut + 1:])
                yield Chunk(buf, first, nl, end=done - len(carry))
                first += nl
        if carry:
            yield Chunk(bytes(carry), first, 0, tail=True, end=done)

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

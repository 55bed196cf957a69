"""What an input may cost: a size cap per kind of input, a ratio guard for gzip, and the one
way every reader gets bytes from a path or a stream within them (docs/CLI.md, "Input limits").

A tiny file must not cost gigabytes: a 4 MB gzip of newlines unpacks to 4 GiB, `/dev/zero`
never ends, a FIFO without a writer never answers. So:

- `cap(kind)`: the most bytes one input of that kind may hold (decompressed), from
  `GPUSCOPE_MAX_<KIND>` (`2G`, `512M`, `0` for no cap) or the default in CAPS.
- `read_path(path, kind)`: a file's bytes within the cap. A regular file is read as it is
  (a /proc file, whose size reads 0, too); a FIFO is waited on for at most FIFO_WAIT_S
  seconds (`GPUSCOPE_FIFO_WAIT`) for its first byte, then read to its end; a device, a socket
  or anything else is refused. `read_stream(f, kind, where)`: standard input the same way.
- `gunzip(data, kind, where)`: decompressed in steps, never more than the cap and never at a
  ratio above `GPUSCOPE_MAX_GZIP_RATIO` (default RATIO) once past RATIO_FLOOR bytes: a
  decompression bomb is refused after reading a few MB of it, not after filling memory.

Every refusal is an InputError (exit 3) naming the input, the cap and the variable that
raises it.
"""

from __future__ import annotations

import os
import select
import stat
import time
import zlib
from pathlib import Path
from typing import BinaryIO

from gpuscope.errors import InputError, read_error

GIB = 1 << 30
MIB = 1 << 20
# the most bytes (after decompression) of one input of each kind; GPUSCOPE_MAX_<KIND> overrides
CAPS = {
    "log": 4 * GIB,        # a timing log (read in chunks from a file; whole from stdin or .gz)
    "trace": 2 * GIB,      # a profiler trace (decoded whole)
    "samples": 1 * GIB,    # samples.csv, nvidia-smi dmon / query-gpu output
    "spans": 1 * GIB,      # a run directory's spans.csv
    "json": 64 * MIB,      # meta.json, summary.json
    "prometheus": 1 * GIB,  # a Prometheus query result (decoded series by series into columns)
    "model": 1 * MIB,      # a --model TOML file
}
RATIO = 250          # decompressed / compressed: real logs and traces compress 5-50x
RATIO_FLOOR = 64 * MIB  # the ratio guard applies past this much output
FIFO_WAIT_S = 10.0
STEP = 4 * MIB       # bytes decompressed or read per step
_UNITS = {"": 1, "K": 1 << 10, "M": MIB, "G": GIB, "T": 1 << 40}


def env_name(kind: str) -> str:
    return f"GPUSCOPE_MAX_{kind.upper()}"


def _env_number(name: str, default: float, *, sized: bool) -> float:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    text = raw.upper().removesuffix("B").removesuffix("I") if sized else raw
    unit = text[-1:] if sized and text[-1:] in _UNITS else ""
    digits = text[:-1] if unit else text
    if not digits.isascii() or not digits.replace(".", "", 1).isdigit():
        raise InputError(f"{name}={raw!r}: not a size (a number with K, M, G or T, or 0 for none)"
                         if sized else f"{name}={raw!r}: not a number")
    value = float(digits) * _UNITS[unit]
    return float("inf") if value == 0 else value


def cap(kind: str) -> float:
    """The size cap of an input kind in bytes (inf: none)."""
    return _env_number(env_name(kind), CAPS[kind], sized=True)


def ratio() -> float:
    return _env_number("GPUSCOPE_MAX_GZIP_RATIO", RATIO, sized=False)


def size_words(n: float) -> str:
    if n >= GIB:
        return f"{n / GIB:g} GiB"
    if n >= MIB:
        return f"{n / MIB:g} MiB"
    return f"{int(n)} bytes"


def too_big(where: object, kind: str, limit: float, verb: str = "holds") -> InputError:
    return InputError(f"{where} {verb} more than {size_words(limit)}, the cap for a {kind} input "
                      f"(set {env_name(kind)}=<size>, or 0 for no cap, to read it)")


def check_size(where: object, kind: str, size: int) -> None:
    limit = cap(kind)
    if size > limit:
        raise too_big(where, kind, limit)


def file_kind(path: str | os.PathLike[str]) -> str:
    """'file', 'fifo' or what it is that gpuscope does not read ('a directory', 'a device', ...);
    the stat errors as one InputError line."""
    try:
        m = os.stat(path).st_mode
    except (OSError, ValueError) as e:
        raise read_error(path, e) from None
    if stat.S_ISREG(m):
        return "file"
    if stat.S_ISFIFO(m):
        return "fifo"
    if stat.S_ISDIR(m):
        return "a directory"
    if stat.S_ISCHR(m) or stat.S_ISBLK(m):
        return "a device"
    if stat.S_ISSOCK(m):
        return "a socket"
    return "not a regular file"


def readable_file(path: str | os.PathLike[str], what: str = "") -> str:
    """'file' or 'fifo'; anything else refused with one line (exit 3)."""
    k = file_kind(path)
    if k in ("file", "fifo"):
        return k
    raise InputError(f"{what}{path} is {k}, not a file gpuscope can read")


def read_path(path: str | os.PathLike[str], kind: str, *, where: object = None) -> bytes:
    """The bytes of a regular file or a FIFO, within the kind's cap (not decompressed)."""
    where = path if where is None else where
    k = readable_file(path)
    try:
        if k == "fifo":
            return _read_fifo(path, kind, where)
        with open(path, "rb") as f:
            return read_stream(f, kind, where)
    except (OSError, ValueError) as e:
        raise read_error(where, e) from None


def _read_fifo(path: str | os.PathLike[str], kind: str, where: object) -> bytes:
    """A named pipe: opened without blocking, its first byte (or its writer's close) awaited
    at most FIFO_WAIT_S seconds, then read to its end."""
    wait = _env_number("GPUSCOPE_FIFO_WAIT", FIFO_WAIT_S, sized=False)
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        deadline = time.monotonic() + (wait if wait != float("inf") else 1e12)
        first = b""
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise InputError(f"{where} is a named pipe and nothing was written to it within "
                                 f"{wait:g} s (set GPUSCOPE_FIFO_WAIT=<seconds> to wait longer)")
            r, _, _ = select.select([fd], [], [], min(left, 0.2))
            if not r:
                continue
            try:
                first = os.read(fd, STEP)
            except BlockingIOError:
                continue
            if first:
                break
            time.sleep(0.05)  # no writer yet (EOF without one): keep waiting until the deadline
        os.set_blocking(fd, True)
        with os.fdopen(os.dup(fd), "rb") as f:
            return read_stream(f, kind, where, first=first)
    finally:
        os.close(fd)


def read_stream(f: BinaryIO, kind: str, where: object, *, first: bytes = b"") -> bytes:
    """All of a stream within the kind's cap (standard input, a pipe, a file)."""
    limit = cap(kind)
    parts = [first] if first else []
    n = len(first)
    while True:
        b = f.read(STEP)
        if not b:
            break
        n += len(b)
        if n > limit:
            raise too_big(where, kind, limit)
        parts.append(b)
    return b"".join(parts)


def gunzip(data: bytes, kind: str, where: object) -> tuple[bytes, bool]:
    """(decompressed bytes, truncated) of gzip data, member after member (garbage after a
    complete member ends it), in steps of STEP bytes; refused (InputError) past the kind's cap
    or at a ratio above the guard once past RATIO_FLOOR bytes."""
    limit, most = cap(kind), ratio()
    out: list[bytes] = []
    total = 0
    view = memoryview(data)
    pos = 0
    truncated = False
    while pos < len(view):
        d = zlib.decompressobj(wbits=31)
        rest = view[pos:]
        tail: bytes | memoryview = rest
        try:
            while not d.eof:
                piece = d.decompress(tail, STEP)
                tail = d.unconsumed_tail
                if piece:
                    out.append(piece)
                    total += len(piece)
                    _guard(where, kind, total, pos + len(rest) - len(tail), limit, most)
                elif not tail:
                    break
        except zlib.error as e:
            if out:  # garbage after complete members
                break
            raise InputError(f"{where}: corrupt gzip data ({e})") from None
        if not d.eof:
            truncated = True
            try:
                out.append(d.flush())
            except zlib.error:
                pass
            break
        pos += len(rest) - len(d.unused_data)
        while pos < len(view) and view[pos] == 0:
            pos += 1
    return b"".join(out), truncated


def _guard(where: object, kind: str, total: int, used: int, limit: float, most: float) -> None:
    if total > limit:
        raise too_big(where, kind, limit, verb="unpacks to")
    if total > RATIO_FLOOR and total > most * max(used, 1):
        raise InputError(f"{where} unpacks to more than {most:g} times its compressed size "
                         f"(a decompression bomb?); set GPUSCOPE_MAX_GZIP_RATIO=<ratio> to read it")


BOMS = ((b"\xef\xbb\xbf", "utf-8"), (b"\xff\xfe\x00\x00", "utf-32-le"), (b"\x00\x00\xfe\xff", "utf-32-be"),
        (b"\xff\xfe", "utf-16-le"), (b"\xfe\xff", "utf-16-be"))


def _wide(data: bytes, bom: bytes, enc: str) -> bool:
    """UTF-16/32 text behind its BOM, not bytes that merely start like one: most code units
    of the first few KB are ASCII (their high bytes NUL), as in any log or capture."""
    unit = 4 if "32" in enc else 2
    body = data[len(bom):len(bom) + 4096]
    n = len(body) // unit
    if n == 0:
        return False
    hi = slice(1, None, unit) if enc.endswith("le") else slice(0, None, unit)
    return body[hi].count(0) >= 0.6 * n


def utf16_bom(head: bytes) -> bool:
    """The head of UTF-16 or UTF-32 text (with its BOM)."""
    return any(head.startswith(bom) and enc != "utf-8" and _wide(head, bom, enc) for bom, enc in BOMS)


def utf8(data: bytes) -> bytes:
    """The bytes as UTF-8 without a byte-order mark: a UTF-8 BOM dropped (it cost a log its
    first line and a capture its time axis), UTF-16 or UTF-32 text with a BOM (what Windows
    tools write) re-encoded (undecodable units replaced); anything else as it is."""
    for bom, enc in BOMS:
        if data.startswith(bom):
            if enc == "utf-8":
                return data[len(bom):]
            if _wide(data, bom, enc):
                return data[len(bom):].decode(enc, errors="replace").encode("utf-8")
    return data


def read_input(path: str | os.PathLike[str], kind: str, *, where: object = None) -> tuple[bytes, bool]:
    """A file's content, decompressed when it is gzip: (bytes, truncated gzip)."""
    where = path if where is None else where
    data = read_path(path, kind, where=where)
    if data[:2] == b"\x1f\x8b":
        data, cut = gunzip(data, kind, where)
        return utf8(data), cut
    return utf8(data), False


def is_zero_size_file(path: str | os.PathLike[str]) -> bool:
    """A regular file whose size reads 0 (empty, or a /proc file that holds text anyway)."""
    try:
        st = os.stat(Path(path))
    except (OSError, ValueError):
        return False
    return stat.S_ISREG(st.st_mode) and st.st_size == 0

"""Every file gpuscope writes for the user (HTML, PNG, Perfetto, CSV) goes through `write`:

- never over an input of the same command (`note_input` records what a command reads: a
  file by its device and inode, so a hard link or another spelling is caught too; a run
  directory as a whole, so no file already in it is written over): UsageError, exit 2;
- never through a symbolic link it did not make (the last part of the path is checked with
  lstat and the file is created with O_NOFOLLOW); a link to a terminal, a pipe or /dev/null
  (`-o /dev/stdout`) is written to directly, since nothing can be lost there;
- never blocked for ever: a named pipe without a reader is waited on as long as an input
  FIFO is (GPUSCOPE_FIFO_WAIT), then a one-line error;
- never half-written: the bytes go to a new temporary file beside the target (O_EXCL),
  flushed to disk, then renamed over it in one step, so a full disk leaves the old file as it
  was and no partial one (ResourceError, exit 6).

`reset()` forgets the inputs (each command starts with it: gpuscope.cli._common).
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

from gpuscope.errors import ResourceError, UsageError

_files: set[tuple[int, int]] = set()
_dirs: list[Path] = []


def reset() -> None:
    _files.clear()
    _dirs.clear()


def note_input(path: str | os.PathLike[str] | None) -> None:
    """Record a path this command reads (a file, or a directory whose files it reads)."""
    if path is None or str(path) in ("", "-"):
        return
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return
    if stat.S_ISDIR(st.st_mode):
        _dirs.append(Path(os.path.realpath(path)))
    elif stat.S_ISREG(st.st_mode):
        _files.add((st.st_dev, st.st_ino))


def _is_input(p: Path, st: os.stat_result | None) -> bool:
    if st is not None and (st.st_dev, st.st_ino) in _files:
        return True
    if st is None:
        return False
    real = Path(os.path.realpath(p))
    return any(real == d or d in real.parents for d in _dirs)


def stream_target(p: str | os.PathLike[str]) -> bool:
    """A terminal, a pipe, /dev/null: written to in place (no rename can happen there, and no
    suffix says a format: plot writes PNG there)."""
    try:
        m = os.stat(p).st_mode
    except OSError:
        return False
    return stat.S_ISCHR(m) or stat.S_ISFIFO(m)


def check_target(path: str | os.PathLike[str], what: str, option: str = "") -> Path:
    """The path, once it is known that writing `what` there loses nothing (else a UsageError)."""
    p = Path(path)
    label = f"{option} {p}" if option else str(p)
    if str(path) == "":
        raise UsageError(f"{option or what}: an empty file name")
    if stream_target(p):
        return p
    try:
        lst = os.lstat(p)
    except FileNotFoundError:
        lst = None
    except (OSError, ValueError) as e:
        raise UsageError(f"{label}: cannot write {what} there ({getattr(e, 'strerror', None) or e})") from None
    if lst is not None and stat.S_ISLNK(lst.st_mode):
        raise UsageError(f"{label} is a symbolic link: gpuscope does not write {what} through a link "
                         "(name the file itself)")
    if lst is not None and not stat.S_ISREG(lst.st_mode):
        raise UsageError(f"{label} exists and is not a regular file: not written")
    if _is_input(p, lst):
        raise UsageError(f"{label} is an input of this command: writing {what} there would destroy it "
                         "(name another file)")
    return p


def _pieces(data: bytes | str | Iterable[str]) -> Iterator[bytes]:
    """`data` as bytes, a piece at a time: text made as it is written (an export of a million
    events) is never held whole."""
    if isinstance(data, bytes | str):
        yield data.encode("utf-8") if isinstance(data, str) else data
        return
    for chunk in data:
        yield chunk.encode("utf-8")


def write(path: str | os.PathLike[str], data: bytes | str | Iterable[str], what: str, option: str = "") -> Path:
    """Write `data` (bytes, text, or text in pieces) to `path` whole or not at all (see the
    module's docstring)."""
    p = check_target(path, what, option)
    if stream_target(p):
        try:
            with os.fdopen(_open_stream(p, what), "wb") as f:
                for raw in _pieces(data):
                    f.write(raw)
        except BrokenPipeError:
            raise  # its reader left (`-o /dev/stdout | head`): a quiet end, not a failure
        except OSError as e:
            raise _cannot(p, what, e) from None
        return p
    tmp = p.with_name(f".{p.name[:200]}.{os.urandom(4).hex()}.tmp")  # within NAME_MAX beside a long name (os.urandom: secrets' import is base64, hashlib and hmac, ~5 ms)
    try:
        old_mode = stat.S_IMODE(os.lstat(p).st_mode)
    except OSError:
        old_mode = None
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o666)
    except (OSError, ValueError) as e:
        raise _cannot(p, what, e) from None
    try:
        with os.fdopen(fd, "wb") as f:
            for raw in _pieces(data):
                f.write(raw)
            f.flush()
            os.fsync(f.fileno())
        if old_mode is not None:
            os.chmod(tmp, old_mode)
        os.replace(tmp, p)
    except BaseException as e:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(e, OSError):
            raise _cannot(p, what, e) from None
        raise
    return p


FIFO_WAIT_S = 10.0  # = parsers/limits.py's FIFO_WAIT_S (this layer is below it; a test holds them equal)


def fifo_wait_s() -> float:
    """GPUSCOPE_FIFO_WAIT as parsers/limits.py reads it (seconds, 0 for no limit); a value that
    is not a number leaves the default (the input side, if any, says why)."""
    raw = os.environ.get("GPUSCOPE_FIFO_WAIT", "").strip()
    try:
        v = float(raw) if raw.isascii() and raw.replace(".", "", 1).isdigit() else FIFO_WAIT_S
    except ValueError:
        v = FIFO_WAIT_S
    return float("inf") if v == 0 else v


def _open_stream(p: Path, what: str) -> int:
    """A descriptor to write to a terminal, /dev/null or a pipe. A named pipe no process reads
    blocked `open` for ever: it is opened without blocking, and a reader awaited at most the
    inputs' FIFO wait (GPUSCOPE_FIFO_WAIT, parsers/limits.py), then a ResourceError (exit 6)."""
    if not stat.S_ISFIFO(os.stat(p).st_mode):
        return os.open(p, os.O_WRONLY)
    wait = fifo_wait_s()
    deadline = time.monotonic() + min(wait, 1e12)
    while True:
        try:
            fd = os.open(p, os.O_WRONLY | os.O_NONBLOCK)
            break
        except OSError as e:
            if e.errno != errno.ENXIO:  # (ENXIO: no reader yet)
                raise
        if time.monotonic() >= deadline:
            raise ResourceError(f"cannot write {what} to {p}: a named pipe that no process opened for "
                                f"reading within {wait:g} s (set GPUSCOPE_FIFO_WAIT=<seconds> to wait longer)")
        time.sleep(0.05)
    os.set_blocking(fd, True)
    return fd


def _cannot(p: Path, what: str, e: OSError | ValueError) -> ResourceError:
    why = getattr(e, "strerror", None) or str(e)
    kept = " (the file there, if any, is left as it was)" if getattr(e, "errno", None) in (
        errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO) else ""
    return ResourceError(f"cannot write {what} to {p}: {why}{kept}")

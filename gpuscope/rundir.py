"""Run directories (docs/ARCHITECTURE.md "Run directory"): create, write incrementally, read back.

Writing is built to survive Ctrl-C, a crash and a full disk:
- meta.json is written at start (status "running") and replaced atomically (tmp + rename);
- samples.csv and timing.log are appended and flushed at least every 0.5 s;
- a write error (disk full, directory removed) is reported once through `on_error`, the
  writer stops, and what was already written stays readable.

The appending writers (samples.csv, timing.log, spans.csv) are gpuscope.rundir_writers; they
stay importable from here.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import socket
import stat
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeGuard

from gpuscope.clock import CLOCK, Clock
from gpuscope.errors import EXIT_INTERRUPTED, InputError, NoDataError, ResourceError, UsageError
from gpuscope.parsers.limits import read_path, utf8
from gpuscope.rundir_writers import SamplesWriter, SpansWriter, TimingLogWriter
from gpuscope.schemas import SAMPLE_COLUMNS, SPAN_COLUMNS, empty_samples  # noqa: F401 - the run files' columns, named here too

SCHEMA_VERSION = 1

META = "meta.json"
TIMING_LOG = "timing.log"
SAMPLES = "samples.csv"
SPANS = "spans.csv"
SUMMARY = "summary.json"

ErrorHook = Callable[[str], None]


def default_path(mode: str, root: str | os.PathLike[str] = "runs", now: float | None = None) -> Path:
    stamp = datetime.fromtimestamp(now if now is not None else time.time()).strftime("%Y%m%d-%H%M%S")
    return Path(root) / f"{stamp}-{mode}"


CLAIM = ".gpuscope-run"  # made with O_EXCL in a run directory: whoever makes it owns the directory
RUN_FILES = (META, TIMING_LOG, SAMPLES, SPANS, SUMMARY)


def _not_writable(p: Path, e: OSError) -> ResourceError:
    return ResourceError(f"cannot write run directory {p}: {e.strerror or e}")


def _write_claim(p: Path) -> None:
    """Create p/CLAIM with O_EXCL (pid, host, time inside). FileExistsError when another
    process claimed `p` first; other OSErrors: `p` cannot be written."""
    fd = os.open(p / CLAIM, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        os.write(fd, (json.dumps({"pid": os.getpid(), "host": socket.gethostname(),
                                  "claimed": iso_now()}) + "\n").encode())
    finally:
        os.close(fd)


def _claimed_by(p: Path) -> str:
    """' (pid N on HOST)' from a claim file, '' when it cannot be read."""
    c = _claim(p)
    pid = c.get("pid") if c else None
    if not _is_pid(pid) or not isinstance(c.get("host"), str):  # type: ignore[union-attr]
        return ""
    return f" (pid {pid} on {c['host'][:64]})"  # type: ignore[index]


MAX_CLAIM_BYTES = 4096  # a claim is one short JSON line (pid, host, time)
MAX_PID = 1 << 22       # Linux's largest pid_max: a pid beyond it is damage, not a process


def _is_pid(pid: object) -> TypeGuard[int]:
    return type(pid) is int and 0 < pid <= MAX_PID


def _claim(p: Path) -> dict[str, Any] | None:
    """The claim file's content, None when it is absent, empty or unreadable. Read as meta.json
    is: a regular file only (a FIFO in its place is not waited on, a link to /dev/zero not read
    without end: opened without blocking and checked before reading), at most MAX_CLAIM_BYTES."""
    try:
        fd = os.open(p / CLAIM, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except (OSError, ValueError):
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        data = os.read(fd, MAX_CLAIM_BYTES + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    if len(data) > MAX_CLAIM_BYTES:
        return None
    try:
        c = json.loads(data.decode("utf-8"))
    except (ValueError, RecursionError):
        return None
    return c if isinstance(c, dict) else None


def recorder_alive(p: Path) -> tuple[int | None, bool | None]:
    """(pid, alive) of the process that claimed the run directory: alive None when it cannot
    be told (no claim, an unreadable one, a pid out of range, another host)."""
    c = _claim(p)
    pid = c.get("pid") if c else None
    if not _is_pid(pid) or c.get("host") != socket.gethostname():  # type: ignore[union-attr]
        return (pid if _is_pid(pid) else None), None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return pid, False
    except OSError:  # PermissionError: it exists, as another user's
        return pid, True
    return pid, True


def running_note(p: Path) -> str:
    """What to say of a run directory whose meta.json still says `running`."""
    pid, alive = recorder_alive(p)
    if alive is False:
        return (f"{p}: meta.json says 'running' but its recorder (pid {pid}) is gone: the recording was cut "
                "off (killed, or its machine stopped); what it wrote before is analyzed")
    if alive:
        return f"{p}: still being recorded (pid {pid}): read as far as it is written"
    return (f"{p}: meta.json says 'running' and the recorder state is unknown (its claim file {CLAIM} is "
            "missing, unreadable or of another host): the recording may be cut off")


STALE_EMPTY_CLAIM_S = 5.0


def _take_empty_claim(p: Path) -> bool:
    """Take over a claim file left empty for more than STALE_EMPTY_CLAIM_S (its writer died
    between making it and writing it, which refused the directory for good): under an
    exclusive lock on it, checked again, then written with our claim. False: not stale, or
    another process is taking it (it is refused as taken)."""
    import fcntl

    f = p / CLAIM
    try:
        fd = os.open(f, os.O_RDWR | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        st = os.fstat(fd)
        if st.st_size or time.time() - st.st_mtime <= STALE_EMPTY_CLAIM_S or os.stat(f).st_ino != st.st_ino:
            return False
        os.write(fd, (json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "claimed": iso_now(),
                                  "took_over": "an empty claim"}) + "\n").encode())
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


def _claim_default(base: Path) -> Path:
    """The first of base, base-2, base-3, ... that this process's mkdir makes."""
    try:
        base.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise _not_writable(base, e) from None
    n = 1
    while True:
        p = base if n == 1 else base.with_name(f"{base.name}-{n}")
        n += 1
        try:
            p.mkdir()
            _write_claim(p)
            return p
        except FileExistsError:
            continue  # made (or, within a moment, claimed) by another run: the next name
        except OSError as e:
            raise _not_writable(p, e) from None


def _claim_named(p: Path) -> None:
    """Make `p`, or claim it when it exists and is empty; UsageError when it is in use."""
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise _not_writable(p, e) from None
    try:
        p.mkdir()
    except FileExistsError:
        if _refuse_if_in_use(p):
            return  # an empty claim its writer never filled: now ours
    except OSError as e:
        raise _not_writable(p, e) from None
    try:
        _write_claim(p)
    except FileExistsError:
        raise UsageError(f"--out {p} is taken by another gpuscope run{_claimed_by(p)}: "
                         "choose a new directory") from None
    except OSError as e:
        raise _not_writable(p, e) from None


def _refuse_if_in_use(p: Path) -> bool:
    """An existing --out may be claimed only when it is an empty directory (True: it held
    only an empty claim, now ours)."""
    if not p.is_dir():
        raise UsageError(f"--out {p} exists and is not a directory: choose a new directory")
    try:
        names = sorted(os.listdir(p))
    except OSError as e:
        raise _not_writable(p, e) from None
    if any(n in names for n in RUN_FILES):
        raise UsageError(f"--out {p} already holds a run: choose a new directory")
    if names == [CLAIM] and _take_empty_claim(p):
        return True
    if CLAIM in names:
        raise UsageError(f"--out {p} is taken by another gpuscope run{_claimed_by(p)}: "
                         "choose a new directory")
    if names:
        raise UsageError(f"--out {p} is not empty ({len(names)} entries, e.g. {names[0]!r}): "
                         "choose a new or an empty directory")
    return False


class RunDir:
    """One run directory being written. Create with `RunDir.create(...)`."""

    def __init__(self, path: Path, on_error: ErrorHook | None = None) -> None:
        self.path = path
        self._on_error = on_error
        self._reported = False
        self.failed_writes: list[str] = []
        self._meta: dict[str, Any] = {}
        self._meta_lock = threading.Lock()

    @classmethod
    def create(cls, path: str | os.PathLike[str] | None = None, *, mode: str = "record",
               root: str | os.PathLike[str] = "runs", on_error: ErrorHook | None = None) -> RunDir:
        """Claim a new run directory (parents are made), atomically: two gpuscope processes never
        get the same one.

        `path=None`: `root/<YYYYmmdd-HHMMSS>-<mode>`, or the first free `-2`, `-3`, ... after
        it; a name is taken by the `mkdir` that makes it (never one that exists already).
        A named `path` is made if absent; a directory that exists is claimed only when empty,
        by creating the claim file (CLAIM) in it with O_EXCL. The claim file stays: it marks
        the directory as a run's.

        UsageError (exit 2): an empty `path` (it would be the current directory), a path that
        is not a directory, holds a run, is claimed by another gpuscope, or is not empty.
        ResourceError: it cannot be made or written."""
        if path is None:
            p = _claim_default(default_path(mode, root))
        else:
            if not str(path).strip():
                raise UsageError("--out: an empty path names the current directory: give a directory for the run")
            p = Path(path)
            _claim_named(p)
        return cls(p, on_error)

    # -- errors ---------------------------------------------------------------------------
    def report(self, what: str, e: BaseException) -> None:
        """Report a write error once per run directory."""
        self.failed_writes.append(what)  # every one (record and run: the status says the directory is cut)
        if self._reported:
            return
        self._reported = True
        msg = f"cannot write {what} in {self.path}: {getattr(e, 'strerror', None) or e}; continuing without it"
        if self._on_error is not None:
            self._on_error(msg)

    # -- meta.json ------------------------------------------------------------------------
    def write_meta(self, **fields: Any) -> bool:
        """Merge `fields` into meta.json and replace the file atomically. False if it failed."""
        with self._meta_lock:
            self._meta.update(fields)
            self._meta.setdefault("schema_version", SCHEMA_VERSION)
            data = json.dumps(_jsonable(self._meta), indent=2, sort_keys=True) + "\n"
            tmp = self.path / f".{META}.tmp"
            try:
                with open(tmp, "w", encoding="utf-8") as f:
                    f.write(data)
                    f.flush()
                    os.fsync(f.fileno())
                os.replace(tmp, self.path / META)
                return True
            except OSError as e:
                self.report(META, e)
                try:
                    tmp.unlink()
                except OSError:
                    pass
                return False

    def mark_interrupted(self, notes: list[str], exit_code: int = EXIT_INTERRUPTED) -> None:
        """meta.json status `interrupted` (with `exit_code`, `ended`, `notes`), safe in a signal
        handler: it never blocks.

        If the meta lock is taken, its holder is the main thread this handler interrupted (only
        the main thread writes meta.json), so it will never finish: write our own temp file and
        replace meta.json atomically; its half-written temp file is simply left unused."""
        fields = {"status": "interrupted", "exit_code": exit_code, "ended": iso_now(), "notes": notes}
        if self._meta_lock.acquire(blocking=False):
            self._meta_lock.release()
            self.write_meta(**fields)
            return
        try:
            data = {**self.meta, **fields}
            tmp = self.path / f".{META}.sigint.tmp"
            with open(tmp, "w", encoding="utf-8") as f:
                f.write(json.dumps(data, indent=2, sort_keys=True, default=str) + "\n")
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.path / META)
        except (OSError, TypeError, ValueError):
            pass  # the previous meta.json stays, whole

    @property
    def meta(self) -> dict[str, Any]:
        return dict(self._meta)

    def samples_writer(self) -> SamplesWriter:
        return SamplesWriter(self.path / SAMPLES, self)

    def timing_log(self, clock: Clock = CLOCK) -> TimingLogWriter:
        return TimingLogWriter(self.path / TIMING_LOG, self, clock)

    def spans_writer(self, clock: Clock = CLOCK) -> SpansWriter:
        return SpansWriter(self.path / SPANS, clock, self)

    def write_json(self, name: str, obj: Any) -> bool:
        tmp = self.path / f".{name}.tmp"
        try:
            tmp.write_text(json.dumps(_jsonable(obj), indent=2, sort_keys=True) + "\n", encoding="utf-8")
            os.replace(tmp, self.path / name)
            return True
        except OSError as e:
            with contextlib.suppress(OSError):  # no half-written temporary left behind (a full disk)
                tmp.unlink()
            self.report(name, e)
            return False


# -- reading ------------------------------------------------------------------------------

def _require_dir(path: str | os.PathLike[str]) -> Path:
    p = Path(path)
    if not p.is_dir():
        raise InputError(f"not a run directory: {p}")
    return p


def _regular_file(p: Path) -> bool:
    """True for a regular file; False when absent. Anything else (a FIFO, a device, a
    folder) is an InputError: reading a FIFO would block forever."""
    if not p.exists():
        return False
    if not p.is_file():
        raise InputError(f"{p} is not a regular file")
    return True


def read_meta(path: str | os.PathLike[str]) -> dict[str, Any]:
    """meta.json of a run directory; {} when absent. Bad JSON, JSON that is not an object,
    or JSON nested too deeply to read -> InputError."""
    p = _require_dir(path) / META
    if not _regular_file(p):
        return {}
    return read_json_object(p)


def read_json_object(p: Path) -> dict[str, Any]:
    """A run directory's JSON file (meta.json, summary.json) as an object, read within the json
    cap (a file of gigabytes is none of them), a BOM dropped; bad JSON, JSON nested too deeply or
    not an object -> InputError."""

    try:
        data = json.loads(utf8(read_path(p, "json")).decode("utf-8"))
    except RecursionError:
        raise InputError(f"unreadable {p}: nested too deeply") from None
    except (OSError, ValueError) as e:
        raise InputError(f"unreadable {p}: {getattr(e, 'strerror', None) or e}") from None
    if not isinstance(data, dict):
        raise InputError(f"unreadable {p}: a JSON {type(data).__name__}, not an object")
    return data


def read_samples(path: str | os.PathLike[str]):
    """samples.csv of a run directory (or the csv itself) as a DataFrame with fixed dtypes:
    parsers.read_samples_csv (malformed rows and a torn last row dropped and counted in
    df.attrs["malformed_rows"]); a missing or empty file -> an empty frame with the columns."""
    from gpuscope.parsers.samples import read_samples_csv  # (pandas: imported only when reading)

    p = Path(path)
    if p.is_dir():
        p = p / SAMPLES
    if not _regular_file(p):
        return empty_samples()
    try:
        return read_samples_csv(p)
    except NoDataError:
        return empty_samples()


def _jsonable(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, float) and (math.isnan(obj) or math.isinf(obj)):
        return None
    if isinstance(obj, Path):
        return str(obj)
    if hasattr(obj, "item") and callable(obj.item):  # numpy scalars
        try:
            return _jsonable(obj.item())
        except (TypeError, ValueError):
            return str(obj)
    return obj


def host_info() -> dict[str, Any]:
    return {"hostname": socket.gethostname(), "cpus": os.cpu_count(), "pid": os.getpid()}


def iso_now() -> str:
    return datetime.now(tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")

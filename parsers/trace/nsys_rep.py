"""Nsight Systems input, by what the user named: an SQLite export (read by
gpuscope.parsers.trace.nsys_sqlite) or a `.nsys-rep` report, exported to SQLite with the `nsys`
on the PATH (run quietly, its output kept for the error message) (once: the export is kept beside the report, or in a temporary folder where that
folder is not writable, and reused while it is newer than the report)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpuscope.errors import InputError, UsageError
from gpuscope.parsers.trace.tracefile import is_sqlite

if TYPE_CHECKING:
    from gpuscope.parsers.trace.kineto import TraceFrames

REP_SUFFIX = ".nsys-rep"
EXPORT_TIMEOUT_S = 1800


def is_nsys(p: Path) -> bool:
    """A .nsys-rep report (by its name: its container format is NVIDIA's) or an SQLite file (by
    its first 16 bytes; no reader imported, so opening a log loads neither pandas nor sqlite3)."""

    return p.name.endswith(REP_SUFFIX) or is_sqlite(p)


def export_command(rep: Path, out: Path) -> list[str]:
    return ["nsys", "export", "--type", "sqlite", "--force-overwrite", "true", "--output", str(out), str(rep)]


def _exported(rep: Path) -> Path:
    """The SQLite export of a report: the cached one when newer than the report, else made now."""
    beside = rep.with_name(rep.name[: -len(REP_SUFFIX)] + ".sqlite")
    try:
        if beside.is_file() and beside.stat().st_mtime >= rep.stat().st_mtime:
            return beside
    except OSError:
        pass
    import shutil  # (these three only to export a report: every other start-up would pay their imports)
    import subprocess
    import tempfile

    if shutil.which("nsys") is None:
        raise UsageError(f"{rep}: a .nsys-rep report needs Nsight Systems to read; `nsys` is not on the PATH: "
                         f"run `nsys export --type sqlite -o {beside} {rep}` and give gpuscope {beside}")
    out = beside if os.access(rep.parent, os.W_OK) else Path(tempfile.mkdtemp(prefix="gpuscope-nsys-")) / beside.name
    try:
        done = subprocess.run(export_command(rep, out), capture_output=True, text=True, timeout=EXPORT_TIMEOUT_S,
                              check=False)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise InputError(f"{rep}: `nsys export` failed ({e})") from None
    if done.returncode != 0 or not out.is_file():
        last = (done.stderr or done.stdout or "").strip().splitlines()[-1:] or ["no output"]
        raise InputError(f"{rep}: `nsys export` failed (exit {done.returncode}: {last[0][:200]})")
    return out


def read_nsys(p: Path, progress: Any = None) -> TraceFrames:
    """A report or its SQLite export read; `progress(rows read, rows in all)` while it reads."""
    from gpuscope.parsers.trace.nsys_sqlite import read_nsys_sqlite

    if p.name.endswith(REP_SUFFIX):
        frames = read_nsys_sqlite(_exported(p), progress)
        frames.notes.append(f"read through its SQLite export {frames.files[0]}")
        frames.source = str(p)
        return frames
    return read_nsys_sqlite(p, progress)

"""One exception type for every domain error, mapped to exit codes in one place (cli.main).

Exit codes (documented in docs/CLI.md):
    0   success
    1   the job ran but failed (verification mismatch, analysis could not finish)
    2   usage error (bad option value, unknown format/mode); typer uses 2 as well
    3   input not found or unreadable (missing file, directory without a timing log)
    4   input has no usable timing data (empty, binary, no timing lines)
    5   GPU / NVML / CuPy needed but not available
    6   out of a resource (device memory, pinned memory, disk)
    130 interrupted (Ctrl-C)
`record` exits with its child's exit code.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_INPUT = 3
EXIT_NO_DATA = 4
EXIT_NO_GPU = 5
EXIT_RESOURCE = 6
EXIT_INTERRUPTED = 130


class GpuscopeError(Exception):
    """A domain error: printed as one line `gpuscope: <message>` and exits with `exit_code`."""

    exit_code = EXIT_FAILED

    def __init__(self, message: str, *, exit_code: int | None = None, hint: str | None = None):
        super().__init__(message)
        if exit_code is not None:
            self.exit_code = exit_code
        self.hint = hint

    def one_line(self) -> str:
        msg = " ".join(str(self).split())
        if self.hint:
            msg += f" ({' '.join(self.hint.split())})"
        return msg


class UsageError(GpuscopeError):
    exit_code = EXIT_USAGE


class InputError(GpuscopeError):
    """Missing or unreadable input."""

    exit_code = EXIT_INPUT


def read_error(path: object, e: OSError | ValueError) -> InputError:
    """The one line for a file that could not be read (every reader raises it `from None`)."""
    if isinstance(e, FileNotFoundError):
        return InputError(f"{path}: no such file")
    if isinstance(e, PermissionError):
        return InputError(f"{path}: permission denied")
    if isinstance(e, IsADirectoryError):
        return InputError(f"{path} is a directory")
    if isinstance(e, ValueError):  # e.g. a NUL byte in the name
        return InputError(f"{str(path)[:80]!r} is not a usable file name")
    return InputError(f"{path}: cannot read ({e.strerror or e})")


class NoDataError(GpuscopeError):
    """The input was read but holds nothing gpuscope can use."""

    exit_code = EXIT_NO_DATA


class NoGpuError(GpuscopeError):
    exit_code = EXIT_NO_GPU


class ResourceError(GpuscopeError):
    exit_code = EXIT_RESOURCE


class VerificationError(GpuscopeError):
    exit_code = EXIT_FAILED

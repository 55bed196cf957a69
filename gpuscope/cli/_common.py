"""Shared plumbing for CLI commands: error mapping, consoles, option parsing helpers."""

from __future__ import annotations

import functools
import os
import sys
import traceback
from collections.abc import Callable
from typing import Any, TypeVar

import typer

from gpuscope.errors import EXIT_FAILED, EXIT_INTERRUPTED, GpuscopeError

F = TypeVar("F", bound=Callable[..., Any])


def say(message: str) -> None:
    """Print `gpuscope: message` on stderr, flushed (notes and progress; errors use fail)."""
    sys.stderr.write(f"gpuscope: {message}\n")
    sys.stderr.flush()


def fail(message: str, code: int) -> typer.Exit:
    """Print `gpuscope: message` on stderr and return the Exit to raise."""
    say(message)
    return typer.Exit(code)


def handle_errors(fn: F) -> F:
    """Turn domain errors into one stderr line and an exit code; never a traceback.

    Set GPUSCOPE_DEBUG=1 to see the traceback of an unexpected error.
    """

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except typer.Exit:
            raise
        except GpuscopeError as e:
            raise fail(e.one_line(), e.exit_code) from None
        except KeyboardInterrupt:
            raise fail("interrupted", EXIT_INTERRUPTED) from None
        except BrokenPipeError:
            # stdout closed early (e.g. `| head`): not an error worth a message.
            try:
                sys.stdout = open(os.devnull, "w")  # noqa: SIM115
            except OSError:
                pass
            raise typer.Exit(0) from None
        except Exception as e:  # a bug: still one line, unless debugging
            if os.environ.get("GPUSCOPE_DEBUG"):
                traceback.print_exc()
            raise fail(
                f"internal error: {type(e).__name__}: {' '.join(str(e).split())[:300]} "
                "(set GPUSCOPE_DEBUG=1 for the traceback)",
                EXIT_FAILED,
            ) from None

    return wrapper  # type: ignore[return-value]


def write_file(path: str, data: bytes | str, what: str) -> None:
    """Write a report file (PNG, trace, HTML); an unwritable path is a UsageError naming it."""
    from pathlib import Path

    from gpuscope.errors import UsageError

    p = Path(path)
    try:
        if isinstance(data, str):
            p.write_text(data, encoding="utf-8")
        else:
            p.write_bytes(data)
    except OSError as e:
        raise UsageError(f"cannot write {what} to {p}: {e.strerror or e}") from None


def stdout_console():
    from rich.console import Console

    return Console(highlight=False, soft_wrap=False)


def stderr_console():
    from rich.console import Console

    return Console(stderr=True, highlight=False)

"""Shared plumbing for CLI commands: error mapping, consoles, option parsing helpers.

No typer at import: the fast analyze path (gpuscope/cli/fast.py) shares the error mapping
without loading it."""

from __future__ import annotations

import contextlib
import errno
import functools
import os
import signal
import sys
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, TypeVar

from gpuscope import _interrupted_now
from gpuscope.allocator import gc_paused
from gpuscope.errors import (
    EXIT_FAILED,
    EXIT_INPUT,
    EXIT_INTERRUPTED,
    EXIT_RESOURCE,
    GpuscopeError,
    InputError,
    UsageError,
)

if TYPE_CHECKING:
    import typer

    from gpuscope.sources import Source

F = TypeVar("F", bound=Callable[..., Any])


def say(message: str) -> None:
    """Print `gpuscope: message` on stderr, flushed (notes and progress; errors use fail).
    What the message quotes from an input (a path, a line, a name) is shown literally: its
    control characters made visible (reports.safe_text), so none reaches the terminal, and a
    line feed in it (a file name may hold one) too: every message is one line."""
    # (lazy: ~18 ms, which the silent --json path never spends)
    from gpuscope.reports.safe_text import visible

    sys.stderr.write(f"gpuscope: {visible(message)}\n")  # one line: a line feed in a path shown too
    sys.stderr.flush()


def say_samples_damage(src) -> None:
    """One stderr line when the source's samples file had values or rows gpuscope could not
    read (gpuscope.sources.Source.samples_read): what was dropped and why."""
    sr = getattr(src, "samples_read", None)
    if sr and sr.get("note"):
        say(f"{sr['file']}: {sr['note']}")
    say_warnings(src)


def say_warnings(src) -> None:
    """The source's warnings (gpuscope.sources.Source.warnings), each once."""
    ws = getattr(src, "warnings", None) or []
    for w in ws:
        say(w)
    ws.clear()


def fail(message: str, code: int) -> typer.Exit:
    """Print `gpuscope: message` on stderr and return the typer.Exit to raise."""
    import typer

    say(message)
    return typer.Exit(code)


@contextlib.contextmanager
def quiet_libraries():
    """Library warnings (numpy's RuntimeWarning over a NaN, matplotlib's UserWarning about a
    glyph) are not gpuscope's voice: dropped while a command runs, so stderr holds only
    `gpuscope:` lines; GPUSCOPE_DEBUG=1 shows them. What they would warn about is the
    analysis' own business (a value it cannot use is counted as damage, not warned about)."""
    import warnings

    if os.environ.get("GPUSCOPE_DEBUG"):
        yield
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


_OWN_PROCESS = False  # main() runs as gpuscope's own process (not inside a caller's, a test's)
_SIGINT_SEEN = False  # a Ctrl-C came while a command's own code ran (interrupt_unwinds)


@contextlib.contextmanager
def loading_for_good():
    """Modules imported inside for the rest of the process (what plot, export and --html draw
    with: pandas, the reports), without cyclic collections while they load, then, the first
    time, frozen (gc.freeze): their ~10^5 long-lived objects are never rescanned by a later
    collection (~0.05 CPU-s of a 10^6-line log's export). Once per process: a test process
    running many commands freezes its heap once, not each command's garbage."""
    import gc

    try:
        with gc_paused():
            yield
    finally:
        if not _FROZE:
            _FROZE.append(True)
            gc.freeze()


_FROZE: list[bool] = []  # (loading_for_good froze the heap already)


def interrupt_unwinds(signum, frame):  # a signal handler's arguments
    """Ctrl-C while a command runs: a KeyboardInterrupt that unwinds its code, and a note that
    it came. A library may turn that KeyboardInterrupt into another error (numpy's C import
    into "PyCapsule_Import could not import module"), or swallow it: the note keeps the answer
    "interrupted" (error_exit_code) whatever the exception says."""
    global _SIGINT_SEEN
    _SIGINT_SEEN = True
    raise KeyboardInterrupt


def sigint_seen() -> bool:
    return _SIGINT_SEEN


def _interrupt_main_once_out(busy: list[bool]) -> None:
    """Send the Ctrl-C again once the hook has returned: tripped while the hook (Python code)
    still ran, it would be raised inside it and be ignored once more."""
    import _thread
    import time

    while busy[0]:
        time.sleep(0.001)
    _thread.interrupt_main()


def ctrl_c_never_swallowed(hook_args) -> None:
    """sys.unraisablehook of gpuscope's own process. A KeyboardInterrupt raised where Python
    can only ignore it (a weakref callback of importlib's module locks, a __del__) printed
    "Exception ignored in ..." and the command went on as if no Ctrl-C had come (then said
    "stdin is empty", exit 4): it is noted and sent again, to unwind the command. Any other
    exception a library's cleanup ignored is not gpuscope's voice (GPUSCOPE_DEBUG=1 shows it)."""
    global _SIGINT_SEEN
    if isinstance(hook_args.exc_value, KeyboardInterrupt):
        import threading

        _SIGINT_SEEN = True
        busy = [True]
        threading.Thread(target=_interrupt_main_once_out, args=(busy,), daemon=True).start()
        busy[0] = False  # the last step: nothing checks for a signal between it and the return
    elif os.environ.get("GPUSCOPE_DEBUG"):
        sys.__unraisablehook__(hook_args)


def interrupts_end_now(own: bool = False) -> None:
    """From here on, Ctrl-C ends the process at once with exit 130 (gpuscope.cli.main sets
    this first, `own`; handle_errors and the fast path hand Ctrl-C back to the command's code,
    as a KeyboardInterrupt that unwinds, while it runs, and set it again after). A process
    that only calls a command (a test runner) keeps its own Ctrl-C."""
    global _OWN_PROCESS
    _OWN_PROCESS = _OWN_PROCESS or own
    if not _OWN_PROCESS:
        return
    try:
        if signal.getsignal(signal.SIGINT) in (signal.default_int_handler, interrupt_unwinds):
            signal.signal(signal.SIGINT, _interrupted_now)
    except ValueError:  # not the main thread (a test runner's worker): leave it
        pass


def interrupts_unwind() -> None:
    global _SIGINT_SEEN
    try:
        if signal.getsignal(signal.SIGINT) is _interrupted_now:
            _SIGINT_SEEN = False
            signal.signal(signal.SIGINT, interrupt_unwinds)
    except ValueError:
        pass


def error_exit_code(e: BaseException) -> int:
    """Say the one stderr line for an error a command raised and give its exit code (what
    handle_errors maps; never a traceback unless GPUSCOPE_DEBUG=1 for a bug)."""
    if isinstance(e, KeyboardInterrupt) or _SIGINT_SEEN:  # whatever a library made of the Ctrl-C
        say("interrupted")
        return EXIT_INTERRUPTED
    if isinstance(e, GpuscopeError):
        say(e.one_line())
        return e.exit_code
    if isinstance(e, MemoryError):  # anywhere: a resource ran out, not a bug (exit 6, one line)
        say("out of memory: the input needs more memory than this process may use (a smaller input, "
            "or a larger memory limit)")
        return EXIT_RESOURCE
    if isinstance(e, BrokenPipeError):
        _quiet_stdout()  # stdout closed early (e.g. `| head`): not an error worth a message
        return 0
    if isinstance(e, OSError) and e.errno in PATH_ERRNOS:
        # a path the user gave that no file can have (a name too long, a loop of links):
        # whichever check first touched it, the answer is the path and why (exit 3)
        name = str(e.filename) if e.filename is not None else "a path"
        say(f"{name if len(name) <= 120 else name[:60] + '...' + name[-40:]}: {e.strerror or e}")
        return EXIT_INPUT
    if isinstance(e, OSError):
        if e.errno not in OUTPUT_ERRNOS:
            if os.environ.get("GPUSCOPE_DEBUG"):
                import traceback  # (imported only here: a few ms of every start-up otherwise)

                traceback.print_exc()
            say(f"internal error: OSError: {e} (set GPUSCOPE_DEBUG=1 for the traceback)")
            return EXIT_FAILED
        _quiet_stdout()  # a full disk or a dead terminal: say so once, on stderr
        say(f"cannot write the output: {e.strerror or e}")
        return EXIT_RESOURCE
    if os.environ.get("GPUSCOPE_DEBUG"):  # a bug: still one line, unless debugging
        import traceback

        traceback.print_exc()
    say(f"internal error: {type(e).__name__}: {' '.join(str(e).split())[:300]} "
        "(set GPUSCOPE_DEBUG=1 for the traceback)")
    return EXIT_FAILED


def handle_errors(fn: F) -> F:
    """Turn domain errors into one stderr line and an exit code; never a traceback.

    Set GPUSCOPE_DEBUG=1 to see the traceback of an unexpected error.
    """

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        import typer  # (loaded by then: a typer command runs this)

        from gpuscope import safe_output  # (lazy: ~30 ms, `secrets`, which --help never needs)

        safe_output.reset()
        interrupts_unwind()
        try:
            with quiet_libraries():
                return fn(*args, **kwargs)
        except typer.Exit:
            raise
        except (Exception, KeyboardInterrupt) as e:
            raise typer.Exit(error_exit_code(e)) from None
        finally:
            interrupts_end_now()

    return wrapper  # type: ignore[return-value]


# stdout or a report file that cannot take what is written: out of a resource (exit 6)
OUTPUT_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO}
PATH_ERRNOS = {errno.ENAMETOOLONG, errno.ELOOP}


def _quiet_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush raises nothing more."""
    try:
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115
    except OSError:
        pass


def emit(doc: Any, *, sort_keys: bool = False) -> None:
    """Every verb's --json: one JSON document on stdout, pretty, NaN/inf as null (analysis.core.clean;
    allow_nan=False guarantees valid JSON), flushed."""
    from gpuscope.reports.jsonout import json_text

    sys.stdout.write(json_text(doc, sort_keys=sort_keys) + "\n")
    sys.stdout.flush()


def write_file(path: str, data: bytes | str | Iterable[str], what: str) -> None:
    """Write a report file (PNG, trace, HTML) whole or not at all, never over an input of the
    command nor through a link (gpuscope.safe_output: UsageError, exit 2); a path that cannot
    be written is a ResourceError naming it (exit 6, as for a full disk)."""
    from gpuscope import safe_output  # (lazy: ~30 ms, `secrets`, which --help never needs)

    safe_output.write(path, data, what)


def stdout_console():
    """The console of stdout. A reader that closes the pipe early (`| head -1`) ends the
    command quietly with exit 0: rich's own handling exits 1 (SystemExit), so its hook here
    points stdout at /dev/null and raises BrokenPipeError, which error_exit_code maps to 0."""
    from rich.console import Console

    class _StdoutConsole(Console):
        def on_broken_pipe(self) -> None:
            self.quiet = True
            try:
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, sys.stdout.fileno())
            except (OSError, ValueError):
                pass
            raise BrokenPipeError(32, "stdout closed")

    return _StdoutConsole(highlight=False, soft_wrap=False, emoji=False)


def source_title(source: Source, records: int | None = None) -> str:
    """The timeline title of an opened source (gpuscope.sources.Source: its name, mode, records,
    size), in the words of reports.titles.timeline_title."""
    from gpuscope.reports.titles import timeline_title

    return timeline_title(source.name, mode=source.meta.mode, records=records, log_n=source.meta.log_n,
                          units=source.model.vocabulary.units, unit=source.model.vocabulary.unit,
                          steps_per_record=source.log.steps_per_record if source.log is not None else 1)


def open_to_draw(verb: str, source: str, output: str, **options: Any) -> Source:
    """open_source for the verbs that draw one timeline (plot, export). A folder of several runs
    (a `runs/` folder, or ranks' run directories: analyze compares them side by side) has no one
    timeline: refused with what to pass, instead of "a directory without a timing log"."""
    from gpuscope.reports.safe_text import visible
    from gpuscope.sources import open_source

    try:
        return open_source(source, **options).not_a_table()
    except InputError:
        from gpuscope.ranks_run import rank_inputs

        runs = rank_inputs(source)
        if not runs:
            raise
        names = ", ".join(visible(r.name) for r in runs[:4]) + (f", ... ({len(runs)} in all)" if len(runs) > 4 else "")
        raise UsageError(f"{visible(source)} holds {len(runs)} runs ({names}); {verb} draws one run's timeline: "
                         f"pass one of them (gpuscope {verb} {visible(runs[0])} {output}); "
                         f"`gpuscope analyze {visible(source)}` puts them side by side") from None

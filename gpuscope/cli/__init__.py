"""The typer CLI: thin commands that wire parsers -> gpuscope.analysis -> reports.

Each command lives in its own module in this package and registers itself on `app`, which
is built when first asked for (`gpuscope.cli.app`, `main()`), importing the command modules
in the order of `gpuscope --help` (the three verbs first). Heavy imports (pandas, cupy,
pynvml) happen inside the commands, so `--help` stays fast; `gpuscope analyze ...` in its
usual forms runs without typer at all (gpuscope/cli/fast.py).
"""

from __future__ import annotations

import importlib
import os
import signal
import sys

# (each loaded on every command line: the fast analyze path's tables and the shared plumbing,
# none of them loads typer)
from gpuscope.cli import fast
from gpuscope.cli._common import ctrl_c_never_swallowed, interrupts_end_now, sigint_seen
from gpuscope.cli.streams import tolerant_output

COMMANDS = ("run", "analyze", "compare", "record", "watch", "bandwidth", "info", "plot", "export", "bench")


def _app():
    # (lazy: typer, 0.15 s of start-up, which the fast analyze path never loads)
    from gpuscope.cli.app import app

    for name in COMMANDS:  # each registers itself on `app` when imported
        importlib.import_module(f"gpuscope.cli.{name}")
    globals()["app"] = app  # (importing gpuscope.cli.app bound the submodule to this name)
    return app


def __getattr__(name: str):
    if name == "app":
        return _app()
    raise AttributeError(f"module 'gpuscope.cli' has no attribute {name!r}")


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point. Ctrl-C at any moment ends it with one line and exit 130:
    outside a command's own code at once (interrupts_end_now), inside it as a
    KeyboardInterrupt that the command's error handling turns into that line."""
    tolerant_output()  # a terminal that cannot encode a character gets a stand-in, not an error
    if argv is None:  # the process is gpuscope's own (a caller passing argv keeps its handler)
        interrupts_end_now(own=True)
        sys.unraisablehook = ctrl_c_never_swallowed
    try:
        _main(argv)
    except KeyboardInterrupt:
        sys.stderr.write("gpuscope: interrupted\n")
        _end(argv, 130)
        sys.exit(130)
    except SystemExit as e:
        _end(argv, 0 if e.code is None else e.code if isinstance(e.code, int) else 1)  # (sys.exit(): 0)
        raise
    _end(argv, 0)


def _end(argv: list[str] | None, code: int) -> None:
    """A Ctrl-C that came while the command ran ends gpuscope's own process here, with the
    command's code, its output flushed. Not through the interpreter's own exit: CPython 3.11
    marks a KeyboardInterrupt raised inside exec() of a string (dataclasses and namedtuple
    build their methods so) as unhandled even when it was caught, and then kills the process
    by SIGINT at its very end, after gpuscope said "interrupted" and chose 130."""
    if argv is not None:
        return
    _done_with_stop_signals()
    if not sigint_seen():
        return
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)


def _done_with_stop_signals() -> None:
    """The command is done and its code chosen: a stop signal from here on is ignored. The
    interpreter's own exit puts each signal with a Python handler back to its default before it
    tears the modules down (tens of ms), and a SIGHUP or SIGTERM there killed `gpuscope run`
    by that signal after it had finished (its meta.json complete, exit -1 for 0)."""
    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        try:
            signal.signal(s, signal.SIG_IGN)
        except (ValueError, OSError):  # not the main thread
            pass


def _main(argv: list[str] | None) -> None:
    words = list(sys.argv[1:] if argv is None else argv)
    if not os.environ.get("GPUSCOPE_DEBUG"):
        code = fast.run(words)
        if code is not None:
            if code:
                sys.exit(code)
            return
    app = _app()
    app(args=argv, prog_name="gpuscope")

"""gpuscope: profile and diagnose GPU pipelines (where the time under the GPU lock goes)."""

# Ctrl-C from the package's first statements: the handler goes in before anything else runs
# (a KeyboardInterrupt in the few steps that decide whether this process is gpuscope's own
# printed a traceback through this file), and comes out again below when it is not.
# _signal, the built-in C module: `import signal` builds its enums first (~5 ms of window).
import _signal  # type: ignore[import-not-found]  # noqa: I001 (first, before sys)


def _interrupted_now(signum, frame):  # a signal handler's arguments
    """Ctrl-C outside a command's own code (starting up, parsing options, on the way out): one
    line and exit 130 at once, never an import's KeyboardInterrupt traceback (gpuscope.cli._common
    hands Ctrl-C back to a command while it runs)."""
    import os

    try:
        os.write(2, b"gpuscope: interrupted\n")
    finally:
        os._exit(130)


_EARLY = _signal.getsignal(_signal.SIGINT) is _signal.default_int_handler
if _EARLY:
    _signal.signal(_signal.SIGINT, _interrupted_now)

import sys  # noqa: E402


def _own_process() -> bool:
    """Whether this interpreter runs gpuscope itself: the console script (argv[0] gpuscope)
    or `python -m gpuscope` (argv[0] is '-m' while the package is imported; orig_argv has
    the module's name after it)."""
    if sys.argv[:1] and sys.argv[0].replace("\\", "/").rsplit("/", 1)[-1] in ("gpuscope", "gpuscope.exe"):
        return True
    orig = getattr(sys, "orig_argv", [])
    return sys.argv[:1] == ["-m"] and "-m" in orig and orig[orig.index("-m") + 1:][:1] == ["gpuscope"]


def _stopped_now(signum, frame):  # a signal handler's arguments
    """SIGTERM or SIGHUP before a command sets its own handling (record and run stop their
    work cleanly; others have nothing to clean): one line and 128+N, as Ctrl-C is 130, not
    a silent death while the interpreter is still importing."""
    import os

    try:
        os.write(2, f"gpuscope: stopped by {'SIGHUP' if signum == 1 else 'SIGTERM'}\n".encode())
    finally:
        os._exit(128 + signum)


if _own_process():
    for _sig in (_signal.SIGTERM, _signal.SIGHUP):
        if _signal.getsignal(_sig) == _signal.SIG_DFL:
            _signal.signal(_sig, _stopped_now)
elif _EARLY and _signal.getsignal(_signal.SIGINT) is _interrupted_now:
    _signal.signal(_signal.SIGINT, _signal.default_int_handler)  # a caller's process: its own Ctrl-C

from gpuscope import _layout  # noqa: E402 (after the Ctrl-C handler: importing it takes time)

__version__ = "0.1.0"

_layout.install()  # a source checkout run without the installed mapping: see gpuscope/_layout.py

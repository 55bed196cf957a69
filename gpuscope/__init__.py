"""gpuscope: profile and diagnose GPU pipelines (where the time under the GPU lock goes)."""

import sys


def _interrupted_now(signum, frame):  # a signal handler's arguments
    """Ctrl-C outside a command's own code (starting up, parsing options, on the way out): one
    line and exit 130 at once, never an import's KeyboardInterrupt traceback (gpuscope.cli._common
    hands Ctrl-C back to a command while it runs)."""
    import os

    try:
        os.write(2, b"gpuscope: interrupted\n")
    finally:
        os._exit(130)


_interrupted_now.gpuscope_interrupt = True  # type: ignore[attr-defined]
if sys.argv[:1] and sys.argv[0].replace("\\", "/").rsplit("/", 1)[-1] in ("gpuscope", "gpuscope.exe"):
    import signal

    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _interrupted_now)

from gpuscope import _layout  # noqa: E402 (after the Ctrl-C handler: importing it takes time)

__version__ = "0.1.0"

_layout.install()  # a source checkout run without the installed mapping: see gpuscope/_layout.py

"""The typer CLI: thin commands that wire parsers -> gpuscope.analysis -> reports.

Each command lives in its own module in this package and registers itself on `app`, which
is built when first asked for (`gpuscope.cli.app`, `main()`), importing the command modules
in the order of `gpuscope --help` (the three verbs first). Heavy imports (pandas, cupy,
pynvml) happen inside the commands, so `--help` stays fast; `gpuscope analyze ...` in its
usual forms runs without typer at all (gpuscope/cli/fast.py).
"""

from __future__ import annotations

import os
import sys

COMMANDS = ("run", "analyze", "compare", "record", "watch", "bandwidth", "info", "plot", "export", "bench")


def _app():
    import importlib

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
    from gpuscope.cli._common import interrupts_end_now

    if argv is None:  # the process is gpuscope's own (a caller passing argv keeps its handler)
        interrupts_end_now(own=True)
    try:
        _main(argv)
    except KeyboardInterrupt:
        sys.stderr.write("gpuscope: interrupted\n")
        sys.exit(130)


def _main(argv: list[str] | None) -> None:
    words = list(sys.argv[1:] if argv is None else argv)
    if not os.environ.get("GPUSCOPE_DEBUG"):
        from gpuscope.cli import fast

        code = fast.run(words)
        if code is not None:
            if code:
                sys.exit(code)
            return
    app = _app()
    app(args=argv, prog_name="gpuscope")

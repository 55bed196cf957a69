"""The typer CLI: thin commands that wire parsers -> gpuscope.analysis -> reports.

Each command lives in its own module in this package and registers itself on `app`.
Heavy imports (pandas, cupy, pynvml) happen inside the commands, so `--help` stays fast.
"""

from __future__ import annotations

import os
import sys

from gpuscope.cli.app import app

# Command modules register themselves on `app` when imported; the import order is the order
# of `gpuscope --help` (the three verbs first), hence the isort exemption in pyproject.toml.
from gpuscope.cli import run as _run  # noqa: E402,F401
from gpuscope.cli import analyze as _analyze  # noqa: E402,F401
from gpuscope.cli import compare as _compare  # noqa: E402,F401
from gpuscope.cli import record as _record  # noqa: E402,F401
from gpuscope.cli import bandwidth as _bandwidth  # noqa: E402,F401
from gpuscope.cli import info as _info  # noqa: E402,F401
from gpuscope.cli import plot as _plot  # noqa: E402,F401
from gpuscope.cli import export as _export  # noqa: E402,F401
from gpuscope.cli import bench as _bench  # noqa: E402,F401


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point."""
    if os.environ.get("GPUSCOPE_DEBUG"):
        app(args=argv, prog_name="gpuscope")
        return
    try:
        app(args=argv, prog_name="gpuscope")
    except KeyboardInterrupt:
        sys.stderr.write("gpuscope: interrupted\n")
        sys.exit(130)

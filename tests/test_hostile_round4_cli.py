"""Hostile input, round four (issue 34): the CLI, the terminal and `record` (classes 4, 5, 7, 8,
13, 14, 15, 19). Each test runs gpuscope the way a user meets it (a `python -m gpuscope`
process, or typer's CliRunner as tests/test_cli_*.py do) on inputs it writes itself."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from gpuscope.cli import app

from .conftest import EXAMPLES


def gpuscope(*args, env=None, timeout=60, cwd=None):
    """A `python -m gpuscope ...` process: (exit code, stdout, stderr) as text (bytes kept as
    surrogate escapes, so a test can see a raw byte that reached the terminal)."""
    full_env = {**os.environ, "PYTHONIOENCODING": "utf-8", **(env or {})}
    full_env.pop("GPUSCOPE_DEBUG", None)
    r = subprocess.run([sys.executable, "-m", "gpuscope", *map(os.fsdecode, args)], capture_output=True,
                       env=full_env, timeout=timeout, cwd=cwd)
    return (r.returncode, r.stdout.decode("utf-8", "surrogateescape"),
            r.stderr.decode("utf-8", "surrogateescape"))


def one_line(err: str) -> str:
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("gpuscope: "), err
    assert "Traceback" not in err and "internal error" not in err, err
    return lines[0]


# -- class 19: what typer refuses is one line and exit 2, as gpuscope's own usage errors ------

@pytest.mark.parametrize("args, words", [
    (("plot", "x.log", "-o", "a.png", "--start", "abc"), ("--start", "gpuscope plot -h")),
    (("plot", "x.log", "-o", "a.png", "--start"), ("--start", "requires an argument")),
    (("plot",), ("SOURCE", "gpuscope plot -h")),
    (("bogus",), ("bogus",)),
    (("--bogus",), ("--bogus",)),
    (("watch", "--window", "x"), ("--window",)),
    (("analyze", "x.log", "--line-rate", "fast"), ("--line-rate",)),  # (the fast path defers)
])
def test_typer_usage_errors_are_one_line_and_exit_2(args, words):
    """They used to be typer's four lines (Usage:, Try ..., blank, Error: ...)."""
    code, out, err = gpuscope(*args)
    line = one_line(err)
    assert code == 2 and out == ""
    assert all(w in line for w in words), line
    r = CliRunner().invoke(app, list(args))  # the same through typer's test runner
    assert r.exit_code == 2 and one_line(r.stderr) == line


def test_help_and_version_still_work():
    code, out, err = gpuscope("plot", "-h")
    assert code == 0 and out.startswith("Usage: gpuscope plot") and err == ""
    code, out, err = gpuscope("--version")
    assert code == 0 and out.startswith("gpuscope ")
    code, out, err = gpuscope()  # no arguments: the help, as before
    assert "Commands" in out + err and "Traceback" not in err

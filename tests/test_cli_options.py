"""The options that read a source (gpuscope/cli/options.py) are one set: each flag has the same
metavar and help in every command that opens a source (analyze, compare, plot, export)."""

from __future__ import annotations

import typer

from gpuscope.cli import app

SOURCE_COMMANDS = ("analyze", "compare", "plot", "export")
SHARED = {"--format", "--model", "--samples", "--trace", "--line-rate", "--abc-bytes", "--json", "--html"}


def _params(name: str) -> dict[str, tuple]:
    cmd = typer.main.get_command(app).commands[name]  # type: ignore[attr-defined]
    return {o: (p.metavar, p.help) for p in cmd.params for o in p.opts if o in SHARED}


def test_a_source_option_reads_the_same_in_every_command():
    seen: dict[str, set] = {}
    for name in SOURCE_COMMANDS:
        for flag, how in _params(name).items():
            seen.setdefault(flag, set()).add(how)
    assert set(seen) == SHARED
    assert {flag: len(v) for flag, v in seen.items() if len(v) > 1} == {}


def test_every_source_command_takes_the_format_and_the_model():
    for name in SOURCE_COMMANDS:
        assert {"--format", "--model"} <= set(_params(name)), name
    for name in ("analyze", "plot", "export"):
        assert {"--samples", "--trace"} <= set(_params(name)), name

"""`gpuscope analyze`, `plot` and `export` without typer: the command lines most runs use, read
here in a few microseconds instead of typer's 0.15 s (its pydantic layer), for the same outcome.

`run(argv)` handles `analyze|plot|export SOURCE [options]` when every word is one this reads
exactly as typer would: the options of that command (gpuscope/cli/analyze.py, plot.py,
export.py; their tables in gpuscope/cli/_fast_options.py, generated from the typer commands by
tools/gen_fast_options.py, so no option is written twice), each at most once, as `--opt value`
or `--opt=value`, a plain number for a numeric option (--line-rate, --start, --end), one
source, every required option given. Anything else (help, a typo, an option twice, a value
that starts with `-`, `--`, a missing `-o`) returns None and the typer application reads the
line, with its own messages and exit codes. tests/test_cli_fast.py runs both on the same
command lines.
"""

from __future__ import annotations

import re
from typing import Any

from gpuscope.cli import _fast_options, bounds
from gpuscope.cli._common import (
    error_exit_code,
    interrupts_end_now,
    interrupts_unwind,
    quiet_libraries,
)

# each command the fast path reads: its tables (tools/gen_fast_options.py renders them)
TABLES: dict[str, dict[str, Any]] = {"analyze": _fast_options.ANALYZE, "plot": _fast_options.PLOT, "export": _fast_options.EXPORT}

_NUMBER = re.compile(r"[0-9]+(\.[0-9]*)?([eE][+-]?[0-9]+)?|\.[0-9]+([eE][+-]?[0-9]+)?")


def parse(argv: list[str]) -> dict | None:
    """The keyword arguments of the command's work (analyze_run.run, draw_run.plot,
    draw_run.export) for these words, or None (typer reads them)."""
    if len(argv) < 2 or argv[0] not in TABLES:
        return None
    table = TABLES[argv[0]]
    arguments, flags, values, typed = table["arguments"], table["flags"], table["values"], table["typed"]
    if len(arguments) != 1:
        return None
    kw: dict = {}
    source = None
    words = argv[1:]
    i = 0
    while i < len(words):
        w = words[i]
        i += 1
        if w.startswith("-") and w != "-":
            name, eq, value = w.partition("=")
            if name in flags and not eq:
                key = flags[name]
                if key in kw:
                    return None
                kw[key] = True
                continue
            if name not in values:
                return None
            key = values[name]
            if key in kw:
                return None
            if not eq:
                if i >= len(words):
                    return None
                value = words[i]
                i += 1
            if value.startswith("-") or (not value and key != "fmt"):
                return None
            if key in typed:
                number = _number(typed[key], value)
                if number is None:
                    return None  # (typer reads it and says why: gpuscope.cli.bounds)
                kw[key] = number
            else:
                kw[key] = value
            continue
        if source is not None:
            return None
        source = w
    if source is None or any(key not in kw for key in table["required"]):
        return None
    return {arguments[0]: source, **kw}


def _number(typed: tuple[str, str | None], value: str) -> float | None:
    """A typed option's value as typer would pass it, or None: one this does not read (a type
    other than a plain float, a float with no bound, a value out of its bound)."""
    kind, bound = typed
    if kind != "float" or bound is None or not _NUMBER.fullmatch(value):
        return None
    return float(value) if getattr(bounds, bound).ok(value) else None


def _analyze(kw: dict) -> None:
    from gpuscope.allocator import for_long_inputs
    from gpuscope.cli import analyze_run

    for_long_inputs()  # (a million lines' arrays: freed pages reused, small pages faulted in)
    analyze_run.run(**kw)


def _draw(verb: str, kw: dict) -> None:
    from gpuscope.cli import draw_run

    getattr(draw_run, verb)(**kw)


# (lazy: the analysis and what it needs, loaded only once the words are the command's; every
# other command line pays nothing for them here)
RUNNERS = {"analyze": _analyze, "plot": lambda kw: _draw("plot", kw), "export": lambda kw: _draw("export", kw)}


def run(argv: list[str]) -> int | None:
    """Run `gpuscope analyze|plot|export` from these words and give its exit code; None: not handled."""
    kw = parse(argv)
    if kw is None:
        return None
    from gpuscope import safe_output

    safe_output.reset()
    interrupts_unwind()
    try:
        with quiet_libraries():
            RUNNERS[argv[0]](kw)
    except (Exception, KeyboardInterrupt) as e:
        return error_exit_code(e)
    finally:
        interrupts_end_now()
    return 0

"""`gpuscope analyze` without typer: the command line most runs use, read here in a few
microseconds instead of typer's 0.15 s (its pydantic layer), for the same outcome.

`run(argv)` handles `analyze SOURCE [options]` when every word is one this reads exactly as
typer would: the options of `gpuscope analyze` (gpuscope/cli/analyze.py; their tables in
gpuscope/cli/_analyze_options.py, generated from the typer command by
tools/gen_analyze_options.py, so no option is written twice), each at most once,
as `--opt value` or `--opt=value`, a plain number for --line-rate, one source. Anything else
(help, a typo, an option twice, a value that starts with `-`, `--`) returns None and the typer
application reads the line, with its own messages and exit codes. tests/test_cli_fast.py runs
both on the same command lines.
"""

from __future__ import annotations

import re

from gpuscope.cli import bounds
from gpuscope.cli._analyze_options import ARGUMENTS, FLAGS, TYPED, VALUES
from gpuscope.cli._common import (
    error_exit_code,
    interrupts_end_now,
    interrupts_unwind,
    quiet_libraries,
)

_NUMBER = re.compile(r"[0-9]+(\.[0-9]*)?([eE][+-]?[0-9]+)?|\.[0-9]+([eE][+-]?[0-9]+)?")


def parse(argv: list[str]) -> dict | None:
    """The keyword arguments of analyze_run.run for these words, or None (typer reads them)."""
    if len(argv) < 2 or argv[0] != "analyze" or len(ARGUMENTS) != 1:
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
            if name in FLAGS and not eq:
                key = FLAGS[name]
                if key in kw:
                    return None
                kw[key] = True
                continue
            if name not in VALUES:
                return None
            key = VALUES[name]
            if key in kw:
                return None
            if not eq:
                if i >= len(words):
                    return None
                value = words[i]
                i += 1
            if value.startswith("-") or (not value and key != "fmt"):
                return None
            if key in TYPED:
                number = _number(key, value)
                if number is None:
                    return None  # (typer reads it and says why: gpuscope.cli.bounds)
                kw[key] = number
            else:
                kw[key] = value
            continue
        if source is not None:
            return None
        source = w
    if source is None:
        return None
    return {ARGUMENTS[0]: source, **kw}


def _number(key: str, value: str) -> float | None:
    """A typed option's value as typer would pass it, or None: one this does not read (a type
    other than a plain float, a float with no bound, a value out of its bound)."""
    kind, bound = TYPED[key]
    if kind != "float" or bound is None or not _NUMBER.fullmatch(value):
        return None
    return float(value) if getattr(bounds, bound).ok(value) else None


def run(argv: list[str]) -> int | None:
    """Run `gpuscope analyze` from these words and give its exit code; None: not handled."""
    kw = parse(argv)
    if kw is None:
        return None
    # (lazy: the analysis and what it needs, loaded only once the words are analyze's; every
    # other command line pays nothing for them here)
    from gpuscope import safe_output
    from gpuscope.allocator import for_long_inputs
    from gpuscope.cli import analyze_run

    for_long_inputs()  # (a million lines' arrays: freed pages reused, small pages faulted in)
    safe_output.reset()
    interrupts_unwind()
    try:
        with quiet_libraries():
            analyze_run.run(**kw)
    except (Exception, KeyboardInterrupt) as e:
        return error_exit_code(e)
    finally:
        interrupts_end_now()
    return 0

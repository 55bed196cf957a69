"""What every command must do with any input (issue 22), checked in-process: run the CLI as
`gpuscope ARGS` would (gpuscope.cli.main, the fast path and typer alike), then `problems()`
lists what broke the contract:

- an exit code outside the documented ones for reading (0, 2, 3, 4, 6), or 1 (an internal
  error: the job "ran but failed" is never the answer to bad input);
- stderr lines that are not gpuscope's (`gpuscope: ...`, or the indented listing of -v), a
  traceback, a library warning;
- a raw control character in stdout or stderr (C0 but tab and newline, DEL, C1, bidi);
- a poisoned value read as a number (POISON: other scripts' digits, 98_765, 1e308 ...
  must never reach the output as 98765 or 1e+308);
- more than SLOW_S seconds for one small input.

Shared by tools/probe_hostile.py (thousands of generated inputs) and tests/test_hostile_fuzz.py
(Hypothesis)."""

from __future__ import annotations

import contextlib
import io
import re
import sys
import time
import warnings

ALLOWED = {0, 2, 3, 4, 6}
SLOW_S = 20.0
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
# numerals that are no numbers (issue 22) and what they must never become in an output
POISON_TEXT = ["\u0669\u0668\u0667\u0666\u0665", "\uff19\uff18\uff17\uff16\uff15", "9876543\U0001d7cf",
               "98_765", "98765..", "9876'5432", "1e308", "98765e300"]
#: a poisoned value in the output: its digits where a number starts (`0.5107987658` holds them by chance)
# (a number's digits stand alone: inside a name, `b_g98765e300_msm` from a poisoned key, they are text)
POISON_OUT = re.compile(r"(?<![\w.])98765|e\+30[0-9]|e\+29[0-9]")


class _Stdin:
    def __init__(self, data: bytes):
        self.buffer = io.BytesIO(data)

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        raise io.UnsupportedOperation("fileno")


def run_cli(argv: list[str], stdin: bytes | None = None) -> tuple[int, str, str, float]:
    """(exit code, stdout, stderr, seconds) of `gpuscope argv`, in this process."""
    from gpuscope.cli import main

    out, err = io.StringIO(), io.StringIO()
    old_in = sys.stdin
    t = time.monotonic()
    code = 0
    try:
        if stdin is not None:
            sys.stdin = _Stdin(stdin)  # type: ignore[assignment]
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), warnings.catch_warnings():
            warnings.simplefilter("default")  # what a user's interpreter would print
            try:
                main(list(argv))
            except SystemExit as e:
                code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    finally:
        sys.stdin = old_in
    return code, out.getvalue(), err.getvalue(), time.monotonic() - t


def problems(code: int, out: str, err: str, seconds: float, *, poisoned: bool = False) -> list[str]:
    found = []
    if code not in ALLOWED:
        found.append(f"exit {code}")
    for line in err.splitlines():
        if not line.strip():
            continue
        if not (line.startswith("gpuscope: ") or line.startswith("  line ")):
            found.append(f"not gpuscope's voice: {line[:160]!r}")
            break
    if "internal error" in err or "Traceback" in err:
        found.append("internal error: " + next((ln for ln in err.splitlines() if "internal" in ln or "Error" in ln),
                                               err[-160:])[:200])
    m = RAW.search(out) or RAW.search(err)
    if m:
        found.append(f"raw control character {m.group()!r} in the output")
    if poisoned and code == 0 and POISON_OUT.search(out):
        found.append(f"a poisoned value read as a number: {POISON_OUT.search(out).group()}")
    if seconds > SLOW_S:
        found.append(f"slow: {seconds:.1f} s")
    return found

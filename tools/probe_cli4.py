"""Round four of tools/probe_hostile.py for the CLI, the terminal and `record` (issue 34
classes 4, 7, 13, 14, 15, 19): generators mixed into tools/probe_gen3.Gen3's cases.

In-process cases (probe_gen3.Case), each checked by tests/hostile_check.problems (no internal
error, one `gpuscope:` voice, no raw control character) and by its own contract:
- numeric options with hostile values (nan, inf, 1e308, 0, -5, 1e400, 0x10, 1_000) on every
  command that takes one: exit 2 and no output file (class 14);
- command lines typer refuses (unknown options, missing values, words for numbers): exit 2,
  one line (class 19);
- plot of samples with nothing drawable, or a window that keeps nothing: exit 4 (class 13);
- names that are not UTF-8 for the source and the output of plot, export, --html (class 4);
- outputs that are named pipes without a reader (GPUSCOPE_FIFO_WAIT is short in the probe):
  exit 6, never a hang (class 15);
- `record` of a command printing DCS/SOS/PM/APC strings whose payload holds timing values,
  then `analyze` of the run: timing.log and the analysis keep none of it (class 7).
The terminal's encoding (class 5) and the record ladder's grandchildren (class 8) need their
own processes: tests/test_hostile_round4_cli.py.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from tests.hostile_check import run_cli
from tools.probe_gen3 import RUN, Case

REPO = Path(__file__).resolve().parents[1]
DAEMON = REPO / "examples" / "cuzk_daemon.log"
VALUES = ["nan", "inf", "-inf", "1e308", "-1e308", "0", "-5", "1e400", "0x10", "1_000", "1e-320", "+7", " 3"]
BAD = VALUES[:8]  # out of bounds for every option of watch and record (these would run otherwise)
NUMERIC = [  # (argv before the option, option, argv after)
    (["plot", str(DAEMON), "-o", "{out}.png"], "--start", []),
    (["plot", str(DAEMON), "-o", "{out}.png"], "--end", []),
    (["analyze", str(DAEMON)], "--line-rate", []),
    (["compare", str(DAEMON), str(DAEMON)], "--bootstrap", []),
    (["compare", str(DAEMON), str(DAEMON)], "--seed", []),
    (["watch"], "--window", []),
    (["watch"], "--refresh", []),
    (["watch"], "--interval", []),
    (["watch"], "--seconds", []),
    (["watch"], "--line-rate", []),
    (["record", "--out", "{out}_run"], "--interval", ["--", "true"]),
]
TYPOS = [["plot", str(DAEMON), "-o"], ["plot"], ["analyze", str(DAEMON), "--jsn"], ["bogus"], ["--bogus"],
         ["export", str(DAEMON), "--perfetto"], ["compare", str(DAEMON)], ["watch", "--gpus"],
         ["analyze", str(DAEMON), "--line-rate", "fast"], ["plot", str(DAEMON), "-o", "x.png", "--start", "soon"]]
CONTROL_STRINGS = ["\x1b_{p}\x1b\\", "\x1bP{p}\x1b\\", "\x1b^{p}\x1b\\", "\x1bX{p}\x1b\\", "\u009f{p}\u009c",
                   "\x1b_{p}\n{p}\n\x1b\\"]


class Cli4:
    """The generators (see the module doc); `gen` is the Gen3 whose random stream and folder
    they share."""

    def __init__(self, gen) -> None:
        self.g = gen

    def out(self) -> Path:
        return self.g.path("", "cli4_")

    def case(self) -> Case:
        return self.g.pick([self.numeric, self.numeric, self.typo, self.undrawable, self.bytes_name, self.fifo,
                            self.control_strings])()

    def numeric(self) -> Case:
        head, option, tail = self.g.pick(NUMERIC)
        out = self.out()
        value = self.g.pick(BAD if head[0] in ("watch", "record") else VALUES)
        form = [f"{option}={value}"] if self.g.r.random() < 0.5 else [option, value]
        argv = [w.format(out=out) for w in head] + form + tail
        png = Path(f"{out}.png")
        case = Case(f"cli4 numeric {option}", argv, output=png if argv[0] == "plot" else None)
        case.cleanup = _quiet_unlink(png)
        return case

    def typo(self) -> Case:
        return Case("cli4 typo", list(self.g.pick(TYPOS)))

    def undrawable(self) -> Case:
        f = self.g.path(".csv")
        col = self.g.pick(["temperature_c", "mem_used_mib", "clock_event_reasons"])
        rows = "".join(f"{100 + i * 0.5},0,{40 + i}\n" for i in range(self.g.r.randrange(1, 20)))
        f.write_text(f"t_wall,gpu,{col}\n{rows}")
        out = Path(f"{self.out()}.png")
        window = self.g.pick([[], ["--start=-50", "--end=-10"], ["--start", "0", "--end", "0.5"], ["--start", "1e6"]])
        return Case("cli4 undrawable", ["plot", str(f), "-o", str(out), *window], inputs=[f], output=out)

    def bytes_name(self) -> Case:
        raw = self.g.pick([b"d\x9b1m", b"x\xff\xfe", b"caf\xe9", b"\xc3\x28", b"a\x1b[2J\x9b"])
        src = os.fsencode(self.g.path(".log")) + raw
        with open(src, "wb") as f:
            f.write(DAEMON.read_bytes())
        out = os.fsdecode(os.fsencode(self.out()) + raw)
        argv = self.g.pick([["plot", os.fsdecode(src), "-o", out + ".png"],
                            ["analyze", os.fsdecode(src), "--html", out + ".html"],
                            ["export", os.fsdecode(src), "--perfetto", out + ".json"],
                            ["analyze", os.fsdecode(src)], ["analyze", os.fsdecode(src) + "gone"]])
        return Case("cli4 name not UTF-8", argv, inputs=[os.fsdecode(src)])

    def fifo(self) -> Case:
        p = self.out()
        os.mkfifo(p)
        argv = self.g.pick([["export", str(DAEMON), "--perfetto", str(p)], ["analyze", str(DAEMON), "--html", str(p)],
                            ["plot", str(DAEMON), "-o", str(p)], ["plot", str(RUN), "-o", str(p)]])
        case = Case("cli4 output fifo", argv)
        case.cleanup = _quiet_unlink(p)
        return case

    def control_strings(self) -> Case:
        payload = "step=9 step_ms=98765"
        lines = [self.g.pick(CONTROL_STRINGS).format(p=payload) for _ in range(self.g.r.randrange(1, 4))]
        text = "".join(f"step={i} step_ms=10\n" for i in range(5)) + "".join(f"a {s} b\n" for s in lines)
        out = self.g.path("_run")
        # recorded while the case is made (record passes the child's bytes through to its own
        # stdout, as a terminal must get them); the case is analyze of what it kept
        run_cli(["record", "--no-summary", "--out", str(out), "--", sys.executable, "-c",
                 f"import sys; sys.stdout.write({text!r})"])
        log = out / "timing.log"
        return Checked("cli4 record control strings", ["analyze", str(out), "--json"], poisoned=True,
                       check=lambda: (
            ["a control string's payload kept in timing.log"]
            if log.is_file() and "98765" in log.read_text(errors="replace") else []))


class Checked(Case):
    """A Case with one more contract: `check()` lists what broke it."""

    def __init__(self, kind: str, argv: list[str], *, check, **kw) -> None:
        super().__init__(kind, argv, **kw)
        self.check = check

    def after(self, code: int) -> list[str]:
        return self.check() + super().after(code)


def _quiet_unlink(p: Path):
    def unlink() -> None:
        try:
            os.unlink(p)
        except OSError:
            pass

    return unlink

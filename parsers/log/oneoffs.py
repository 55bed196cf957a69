"""One-off lines of a `lines` log: a time printed once about a phase of the run, or about the
run itself, is never a step and never a part of one (issue 33). Each reader takes (line,
State) and returns what parsers/log/lines/line.py read_line returns, or NOT_MINE; lines/line.py
tries them for a line holding one of GATES (digit-free, as the frameworks' gates).

- A compile or a warm-up: JAX's compile log (JAX_LOG_COMPILES: `Finished tracing +
  transforming f for jit in 2.24 sec`, `Finished jaxpr to MLIR module conversion jit(train) in
  2.19 sec`, `Finished XLA compilation of f in 1.27 sec`), torch.compile's users (`Compilation
  for generate_next_token takes: 2.45 sec`, torchtune; `Warmup run for quantized model takes:
  51.02 sec`; vLLM's `Compiling a graph for dynamic shape takes 41.40 s` and `torch.compile
  takes 47.72 s in total`): read under the phase's name and kept apart (no record, no part,
  never the whole: ONE_OFF_WHY in ParsedLog.not_parts); so is TensorFlow's model load
  (`SavedModel load for tags { serve }; Status: success. Took 8468104 microseconds.`). A line
  that prints such a time among a step's other times (`step 3 compile_ms=12 run_ms=30`) is no
  sentence of this shape: a part.
- bash's `time` (`real 0m0.057s`, `user ...`, `sys ...`): `real` is the command's wall time,
  the whole of its record; user and sys are CPU times over all threads (user > real on many
  cores), beside it, never parts: their lines are kept apart.
- Times of no step at all, no timing lines: cargo's build (`Finished release [optimized]
  target(s) in 0.58s`, before the program runs), `go test`'s package line (`ok  \\tpkg\\t4.963s`:
  the test binary's wall, around a benchmark table), and the NCCL watchdog's `ran for 138169
  milliseconds before timing out` (a collective that failed, the process killed: no step);
  cargo test's `has been running for over 60 seconds` notice and its `test result: ok. ...
  finished in 8270.24s` (the test binary's wall, around the bench it ran).
"""

from __future__ import annotations

import re

import numpy as np

from gpuscope.arrays import distinct
from gpuscope.parsers.log.lines.frameworks import NOT_MINE, _half_unit
from gpuscope.parsers.log.lines.vocabulary import LINES_ONLY, NAMED

ONE_OFF_WHY = "a one-off {what}, timed once before the steps it prepares: no step, no part of one and never a whole"
CPU_WHY = "CPU time over all threads (bash's time: user / sys beside real, the wall): never a part of the wall"
# the reasons (their openings) whose names' lines are kept apart: no records
APART = (ONE_OFF_WHY.partition("{")[0], CPU_WHY)

_NUM = r"(\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)"
_JAX = re.compile(r"\bFinished (tracing \+ transforming|jaxpr to MLIR module conversion|XLA compilation of) "
                  rf"\S+(?: for \w+)? in {_NUM} sec\b")
_JAX_NAMES = {"tracing + transforming": "tracing", "jaxpr to MLIR module conversion": "MLIR_conversion",
              "XLA compilation of": "XLA_compilation"}
# `<label> takes: 2.45 sec`, `<label> took 41.40 s [in total]`: the label's words, up to 8, after
# the logger's prefix (`[generate.py:99] `)
_SENTENCE = re.compile(r"((?:[A-Za-z_][\w.+-]* ){1,8})(?:takes|took):? " + _NUM
                       + r" ?(s|sec|secs|seconds|ms)\b( in total)?\.?\s*$")
# TensorFlow's SavedModel loader (tensorflow/cc/saved_model/loader.cc), once per model at start-up
_SAVEDMODEL = re.compile(r"\bSavedModel load for tags \{[^}]*\}; Status: \w+\. Took (\d+) microseconds\b")
_COMPILE = re.compile(r"(?i)compil|warm[ _-]?up|warming")
_UNIT = {"s": 1e3, "sec": 1e3, "secs": 1e3, "seconds": 1e3, "ms": 1.0}
_BASH_TIME = re.compile(r"^\s*(real|user|sys)\s+(\d+)m(\d+(?:\.\d+)?)s\s*$")
_NO_STEP = re.compile(r"\bFinished .*target\(s\) in (?:\d+m ?)?[\d.]+s\s*$|^(?:ok|FAIL)  \t\S+\t[\d.]+s\b"
                      r"|\bran for \d+ milliseconds before timing out\b"
                      r"|\bhas been running for over \d+ seconds\s*$|^test result: .*\bfinished in [\d.]+s\s*$")

GATES = ("Finished ", "SavedModel load", "ompil", "Warm", "warm", "real ", "real\t", "user ", "user\t", "sys ",
         "sys\t", "ok  \t", "FAIL\t", " milliseconds before timing out", "running for over", "test result:")


def maybe(line: str) -> bool:
    """A cheap test that holds for every line holding one of GATES."""
    return ("Finished " in line or "SavedModel" in line or "ompil" in line or "arm" in line or "real" in line
            or "user" in line or "sys" in line or "\t" in line or " before timing out" in line
            or "running for over" in line or "test result:" in line)


_NO_STEP_WHAT = (("target(s) in", "cargo's build time, before the program ran"),
                 ("ok  \t", "`go test`'s wall for the package, around its tests"),
                 ("FAIL\t", "`go test`'s wall for the package, around its tests"),
                 ("before timing out", "the NCCL watchdog's time before a collective timed out: a failure, the "
                                       "process taken down"),
                 ("running for over", "cargo test's notice that a test is still running"),
                 ("test result:", "cargo test's wall for the test binary, around its tests"))


def no_step_line(head: str) -> str | None:
    """`'<line>' (<what>)` for the first line of a log's head that prints a time of no step
    (cargo's build, go test's package line, a watchdog's timeout), else None: what a refusal
    of a log without timing lines quotes (parsers/log/logparse.py no_timing_lines)."""
    for line in head.split("\n", 2000)[:2000]:
        if _NO_STEP.search(line) is not None:
            what = next((w for gate, w in _NO_STEP_WHAT if gate in line), "no step")
            t = line.strip()
            return f"{t if len(t) <= 100 else t[:97] + '...'!r} ({what})"
    return None


def read_one_off(line: str, st):
    """A one-off line (the module's docstring), or NOT_MINE."""
    if _NO_STEP.search(line) is not None:
        return None
    m = _JAX.search(line)
    if m is not None:
        return _apart(st, _JAX_NAMES[m.group(1)], m.group(2), 1e3, "compile phase (JAX's compile log)")
    m = _SAVEDMODEL.search(line)
    if m is not None:
        return _apart(st, "SavedModel_load_time", m.group(1), 1e-3, "model load (TensorFlow's SavedModel loader)")
    m = _BASH_TIME.match(line)
    if m is not None:
        name, mins, secs = m.groups()
        ms = (int(mins) * 60 + float(secs)) * 1e3
        if name != "real":
            st.known[name] = CPU_WHY
        return [name], [ms], [], [], None, NAMED if name == "real" else -1, LINES_ONLY, _half_unit(secs, 1e3)
    m = _SENTENCE.search(line)
    if m is not None and _COMPILE.search(m.group(1)) is not None:
        words = m.group(1).split()
        what = "warm-up" if re.search(r"(?i)warm", m.group(1)) else "compile"
        total = " (its total over the start-up)" if m.group(4) else ""
        return _apart(st, "_".join(words), m.group(2), _UNIT[m.group(3)], what + total)
    return NOT_MINE


def _apart(st, name: str, num: str, factor: float, what: str):
    st.known[name] = ONE_OFF_WHY.format(what=what)
    return [name], [float(num) * factor], [], [], None, -1, LINES_ONLY, _half_unit(num, factor)


def apart_rows(known: dict[str, str], ncodes, uniq: list[str], row_of, counts, n: int, notes: list[str]):
    """Per row, whether it prints only one-off times or CPU times (APART): no records, never
    the whole; their names are ParsedLog.not_parts with why, and a note says so."""
    codes = [c for c, u in enumerate(uniq) if known.get(u, "").startswith(APART)]
    if not codes:
        return np.zeros(n, dtype=bool)
    hit = np.bincount(row_of[np.isin(ncodes, codes)], minlength=n)
    out = (hit == counts) & (counts > 0)
    for why, what in ((APART[0], "one-off phase(s), timed once (a compile, a warm-up, a model load)"),
                      (CPU_WHY, "CPU time(s) beside the wall (bash's user / sys)")):
        cs = [c for c in codes if known[uniq[c]].startswith(why)]
        k = int(out[distinct(row_of[np.isin(ncodes, cs)])].sum()) if cs else 0
        if k:
            names = ", ".join(uniq[c] for c in cs[:4]) + (", ..." if len(cs) > 4 else "")
            notes.append(f"{k} line(s) of {what} ({names}): no steps, no parts, never the whole")
    return out

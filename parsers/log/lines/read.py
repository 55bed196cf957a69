"""Timing lines as people print them (format `lines`), from any program.

    step=3 h2d_ms=231.7 compute_ms=647.2 step_ms=878.9 h2d_bytes=1610612736
    [epoch 0] step 12/40 loss: 6.9042 data: 131.2ms compute: 12.5ms step: 143.9ms
    iter 3: prep 48.211 ms, h2d 9.870 ms, kernel 20.004 ms, total 78.100 ms (printed_at=1764590000.1)
    Epoch 1 | batch 20 | loss 0.53 | fwd 12.1 ms | bwd 20.3 ms
    INFO step 7: data_time=0.120s compute_time=0.031s
    {"step": 3, "h2d_ms": 12.5}        epoch 3 took 1.2s        latency_us: 150

Fields: `key=value`, `key: value`, `key = value`, and `Label value` (a word followed by a
number). `| , ; ( ) [ ] { }` and quotes separate fields; a prefix time stamp is skipped.

Which numbers are times (components, milliseconds):
- a unit in the value (`12ms`, `0.3s`, `150us`, `2min`) or as the next word (`12 ms`,
  `1.2 seconds`), or in the key (`_ms`, `_us`, `_ns`, `_s`, `_sec`, `_msec`, `Ms` in
  camelCase, `time (ms): 12`); the value's unit wins over the key's;
- a bare number under a key that says time (`time`, `elapsed`, `latency`, `duration`,
  `took`, `runtime`, `wall`, `data_time`) is a duration only where its program's format
  documents the unit (linewords.seconds_by_format: seconds for Hugging Face's `*_runtime`,
  fairseq's `wall=`, detectron2/mmengine's `time:` beside `data_time:`, the ProgressMeter's
  `Time 0.25 (0.31)`; milliseconds for a zerolog line's `took=`) or where the lines' stamps
  agree with it in seconds (stampunit.py), said in ParsedLog.notes; elsewhere (`Duration:
  500`, `time=607.278`) it is no duration (issue 33);
- any other bare number is not a time: counters (`step`, `epoch`, `iter`, `batch`, ...),
  metrics (`loss`, `acc`, `lr`, ...), rates (`*_per_s`, `fps`, `throughput`), percentages,
  dates, versions and addresses are never components.

Quantities (ParsedLog.quantities, kept as printed): `*_bytes` / `bytes` keys; counters
(`step 12/40` keeps 12); any other integer in a `key=N` / `key: N` field (`ops=2000`).
A field `printed_at=`, `ts=`, `timestamp=` (or `time=`) holding epoch seconds (or
milliseconds) is the line's own time: it replaces the prefix's arrival time as its stamp.

A timing line has at least one time (or a byte count). Lines without one (warnings, prose,
progress bars) are noise, not damage. Damage (the line is skipped and counted): a key
with a time unit whose value is not a number (`h2d_ms=12q`, `step_ms=`), a byte count
that is not a number, a negative time, and a cut line: the line's last field is a bare
number under a key that carried a unit in the value on earlier lines (`step: 143`).

Records (one per timing line, or per step): consecutive lines that print the same
counters (`step=3` on two lines) form one record, any other line is a record of its own.
A line whose shape (counter keys and component names) occurs once, and shares no
component with a shape that repeats, is not a record (a `Loaded model in 3.2s` line among
steps): its components get record -1, like CPU-side lines.

The whole (the record's held time, `ParsedLog.whole`): the held key when the caller names
one present in the log; else a field named like a whole (`total`, `step`, `iter`,
`iteration`, `batch`, `elapsed`, `wall`, `took`, `duration`, `time`, `latency`, and
`step_time`, `total_time` ...; with a unit, so `step=3` stays a counter); else a field
that equals the sum of at least two other times on the line, within rounding (half a
unit of the last printed digit per value) plus 1%, on at least half of the lines that
print it. The whole stays a component (statistics); a record without it gets the sum of
its parts as held time (`ParsedLog.whole_basis` says which), and so does one whose whole
is below the sum of its parts by no more than the printed rounding (86.0 + 829.0 against a
step of 914.9). A whole printed on a line of its own ends a record that takes the lines
before it (as in kv).
"""

from __future__ import annotations

import re

from gpuscope.parsers.log import scan as sc
from gpuscope.parsers.log.kv import read_kv
from gpuscope.parsers.log.lines.line import State, read_line
from gpuscope.parsers.log.lines.plan import whole_code
from gpuscope.parsers.log.lines.records import COVERS_NOTE, EVAL_AUX, KNOWN_NOTE, finish
from gpuscope.parsers.log.lines.vocabulary import EVAL, HAS_BYTES, LINES_ONLY, SUMMED, key_info
from gpuscope.parsers.log.stampunit import stamp_seconds
from gpuscope.parsers.log.words import RATE

__all__ = ["HAS_BYTES", "LINES_ONLY", "SUMMED", "State", "finish", "key_info", "read_line", "scan_lines", "sniff",
           "whole_code"]


# -- the scan ------------------------------------------------------------------------------

def scan_lines(lines: list[str], held: str | None, first: int = 1, *, state: State | None = None,
               scan: sc.Scan | None = None) -> sc.Scan:
    """Read every line; kinds are set afterwards by `finish` (records need the whole log).
    `state`: the State of the lines read before these (a log read in chunks), else a new one.
    A line holding carriage returns (a progress bar redrawn in place: tqdm, Lightning) is
    read as its pieces, each with the line's number."""
    scan = scan if scan is not None else sc.Scan()
    state = state if state is not None else State(held)
    for i, line in enumerate(lines):
        scan_line(scan, state, i + first, line)
    set_notes(scan, state)
    return scan


def scan_line(scan: sc.Scan, state: State, line_no: int, line: str) -> None:
    """One line of the log into `scan` (a line holding \r, or text written right after a bar's
    redraw, as its pieces)."""
    if "\r" in line or "it/s" in line or "s/it" in line:
        for piece in pieces(line):
            if piece.strip():
                _scan_one(scan, state, line_no, piece)
    else:
        _scan_one(scan, state, line_no, line)


# the end of a tqdm redraw: its rate and postfix, then `]` (`12/345 [00:07<06:50,  1.23s/it]`)
_BAR_END = re.compile(r"\d\s?\[[\d:]+(?:<[\d:?]+)?,\s*(?:\d+(?:\.\d+)?|\?)(?:it/s|s/it)(?:,(?:[^\[\]]|\[[^\]]*\])*)?\]")


def pieces(line: str) -> list[str]:
    """A line's pieces: its carriage-return redraws, and each redraw cut after a tqdm bar's
    closing `]` where other text follows on the same line: a logger writing after a redraw
    that ended in no newline (`... 1.23s/it][2023-06-21 07:39:09,625] [INFO] ... time (ms) |
    optimizer_step: 60.64`, huggingface/accelerate#1589); that text is a line of its own, read
    as one, and the bar a redraw of its own."""
    out = []
    for piece in line.split("\r"):
        m = _BAR_END.search(piece) if "it/s" in piece or "s/it" in piece else None  # (its rate holds one)
        while m is not None and piece[m.end():].strip():
            out.append(piece[:m.end()])
            piece = piece[m.end():]
            m = _BAR_END.search(piece)
        out.append(piece)
    return out


def set_notes(scan: sc.Scan, state: State) -> None:
    scan.notes = ([f"{n}\t{why}" for n, why in sorted(state.seconds_assumed.items())]
                  + [MS_NOTE + n for n in sorted(state.ms_assumed)]
                  + [f"{KNOWN_NOTE}{n}\t{why}" for n, why in sorted(state.known.items())]
                  + [COVERS_NOTE + n for n in sorted(state.covering)])


MS_NOTE = "ms:"  # (a name read as milliseconds by zerolog's convention, in Scan.notes)


def _scan_one(scan: sc.Scan, state: State, line_no: int, line: str) -> None:
    meta, aux = scan.meta, scan.aux
    if len(line) > sc.MAX_LINE:
        if read_line(line[:4096], state) is not None:
            scan.too_long(line_no, line)
        return
    if "TIMELINE," in line or "_TIMING " in line:
        rows = len(meta)
        if scan.common(line_no, line) is not None:
            aux += [-1] * ((len(meta) - rows) // 8)
            scan.tol += [0.0] * ((len(meta) - rows) // 8)
            return
    r = read_line(line, state)
    if r is None:
        return
    if type(r) is str:
        scan.skip(line_no, r, line)
        return
    names, values, qn, qv, stamp, code, flags, tol = r
    scan.timing_lines += 1
    row = len(meta) // 8
    if qn:
        scan.qrow += [row] * len(qn)
        scan.qnames += qn
        scan.qvalues += qv
    slot = scan.times.slot(line)
    if stamp is not None:
        scan.times.override(slot, stamp)
    meta += (line_no, slot, sc.K_GPU, -1, -1, -1, len(names), SRC_LINES)
    aux.append(code + EVAL_AUX if flags & EVAL else code)
    scan.tol.append(tol)
    scan.names += names
    scan.values += values


SRC_LINES = sc.SRC["lines"]

# a progress counter `i/N` (`Epoch: [0][ 10/500]`, `iteration 10/ 100`, `step 12/40`)
_PROGRESS = re.compile(r"(?<![\d.])(\d{1,9})\s?/\s{0,8}(\d{1,9})(?![\d.])")


def sampled_every(head: str, limit: int = 1000) -> tuple[int, str] | None:
    """(K, an example) when the lines' own `i/N` counter advances by the same K > 1 from one
    timing line to the next (a program printing every K-th step: the PyTorch examples'
    ProgressMeter prints every 10th batch, Megatron every log-interval): each line is one
    step in K. None when the counter advances by one, varies, or is not printed."""
    last: dict[int, int] = {}
    deltas: list[int] = []
    example = ""
    for line in head.split("\n", limit)[:limit]:
        # (the first counter with a word before it: a `12/01 10:00:12` date opens mmengine's lines)
        m = next((m for m in _PROGRESS.finditer(line) if any(c.isalpha() for c in line[: m.start()])), None)
        if m is None:
            continue
        i, n = int(m.group(1)), int(m.group(2))
        if n in last and i > last[n]:
            deltas.append(i - last[n])
            example = example or m.group(0)
        last[n] = i
    if len(deltas) < 2:
        return None
    k = max(set(deltas), key=deltas.count)
    if k <= 1 or deltas.count(k) * 4 < len(deltas) * 3:
        return None
    return k, example


def sniff(lines: list[str], held: str | None = None, scan_held: str | None = None) -> bool:
    """Format detection on a sample of a log that has no CuZK markers: True when these
    lines are read better as `lines` than as `kv` (see detect.py). scan_held: the held key
    the scan will read with (default `held`)."""
    st = State(held)
    # (as the scan will, by its held key: parsers/log/stampunit.py, which then reads them once)
    st.stamp_seconds = stamp_seconds(lines, held if scan_held is None else scan_held)
    votes_lines = votes_kv = 0
    for line in (p for ln in lines for p in pieces(ln)):
        if len(line) > 4096:
            line = line[:4096]
        r = read_line(line, st)
        k = read_kv(line, False, held or "") if "=" in line else None
        kv_names = set(k[0]) if k is not None and type(k) is not str else set()
        if held is not None and held in kv_names:
            return False  # the caller's held key is in the log: kv's records end at it
        if r is None or type(r) is str:
            if kv_names:
                votes_kv += 1  # kv reads times here (bare numbers under `key=`); lines does not
            continue
        names, _v, _qn, _qv, _stamp, code, flags, _tol = r
        if flags & LINES_ONLY:
            votes_lines += 1
        elif any(not _rate_only(n) for n in kv_names - set(names)):
            votes_kv += 1  # (a time per token, which lines keeps out as a rate, is no vote: TGIS's
            # `time_per_token=5.48ms ... total_time=1097.12ms` read as kv summed it beside its whole)
        elif code >= 0:
            votes_lines += 1  # kv would find no whole in it
        elif names and not kv_names:
            votes_lines += 1  # kv reads no time here at all (TGI's quoted `queue_time="161.454300714s"`)
    return votes_lines > 0 and votes_lines >= votes_kv


def _rate_only(name: str) -> bool:
    """A name of a time per something (`time_per_token`) that is no step's whole: a rate."""
    _name, _factor, cls, whole = key_info(name)
    return cls == RATE and not whole

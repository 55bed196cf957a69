"""CUZK_TIMING / CUZK_NTT_H lines (supraseal-c2 groth16_cuda.cu, groth16_ntt_h.cu).

Tenure grouping itself happens afterwards, vectorised (parsers/log/tenures.py); this module
only classifies each line: `mutex_wait_ms` lines open a tenure, held lines
(`mutex_held_ms`) close it, `gpu_tid=` lines and CUZK_NTT_H lines sit inside it, every
other CUZK_TIMING line (prep_msm, b_g2_msm, async_dealloc, split_vectors, ...) comes from
a CPU thread that can print anywhere and is tied to no tenure (record -1).

Keys ending in `_ms` are times (components); `*_bytes` keys and the count keys of
parsers.model.COUNT_QUANTITIES (num_circuits) are quantities, kept as printed and tied to
their line like its components; other unit-less keys are ignored.
"""

from __future__ import annotations

from typing import Any

from gpuscope.parsers.log import scan as sc
from gpuscope.parsers.log.fields import first_repeat, number, repeated
from gpuscope.parsers.log.linetime import NO_PREFIX_TIMELINE
from gpuscope.parsers.log.parsed import is_quantity_key
from gpuscope.parsers.log.timeline_events import read_timeline
from gpuscope.parsers.numbers import MAX_MS, duration_damage, quantity_damage

TIMING = "CUZK_TIMING:"
NTT_H = "CUZK_NTT_H:"
OPEN_KEYS = ("mutex_wait", "pre_lock_cpu")
INFO = "info"


def read_fields(rest: str, ntt: bool):
    """Fields after the marker -> (names, values_ms, gpu_tid, quantity names, quantity
    values), INFO, or a reason string. A negative time and a key printed twice are damage."""
    toks = rest.split()
    if "=" not in rest:
        # "d_a_cache allocated 512 MiB on gpu 0", "set pool release threshold ..." are
        # informational; a marker with (almost) nothing after it is a cut-off line
        return INFO if len(toks) >= 3 else "timing marker without fields (truncated?)"
    names: list[str] = []
    values: list[float] = []
    qnames: list[str] = []
    qvalues: list[float] = []
    gpu_tid = -1
    for t in toks:
        k, eq, v = t.partition("=")
        if not eq or not k:
            return f"unreadable field {t[:40]!r}"
        if ntt:
            if not v.endswith("ms"):
                return f"{k[:30]}: value {v[:20]!r} lacks its ms unit (truncated?)"
            x = number(v[:-2])
            if (why := duration_damage(k, v, x)) is not None:
                return why
            assert x is not None  # (duration_damage refused None)
            names.append(k)
            values.append(x)
            continue
        x = number(v)
        if x is None:
            return f"{k[:30]}: value {v[:20]!r} is not a number"
        if k.endswith("_ms"):
            if (why := duration_damage(k, v, x)) is not None:
                return why
            names.append(k[:-3])
            values.append(x)
        elif k == "gpu_tid":
            if x < 0 or x != int(x) or x > 1 << 20:
                return f"gpu_tid {v[:20]!r} is not a GPU index"
            if gpu_tid >= 0:
                return repeated("gpu_tid")
            gpu_tid = int(x)
        elif is_quantity_key(k):
            bad = quantity_damage(k, v, x)
            if bad is not None:
                return bad
            qnames.append(k)
            qvalues.append(x)
        elif not k.isidentifier():
            return f"unreadable field {t[:40]!r}"
    if not names and not qnames:
        return "timing line without a time value"
    twice = first_repeat(names) or first_repeat(qnames)
    if twice is not None:
        return repeated(twice)
    return names, values, gpu_tid, qnames, qvalues


def _kind(names: list[str], tid: int, held: str) -> tuple[int, int]:
    """(line kind, index of the held value or -1) of a CUZK_TIMING line."""
    if not names:  # quantities only
        return (sc.K_GPU if tid >= 0 else sc.K_FREE), -1
    if names[0] in OPEN_KEYS:
        return sc.K_OPEN, -1
    if held in names:
        return sc.K_HELD, names.index(held)
    return (sc.K_GPU if tid >= 0 else sc.K_FREE), -1


def _shape(keys: tuple[str, ...], held: str):
    """What a CUZK_TIMING line with these keys is: (names, picks, tid_at, kind, held_at,
    all_ms, quantities) or None; quantities: ((name, pick), ...), empty for most lines."""
    names, picks, tid_at, qnames, qpicks = [], [], -1, [], []
    for i, k in enumerate(keys):
        if k.endswith("_ms") and len(k) > 3 and k.isidentifier():
            names.append(k[:-3])
            picks.append(i)
        elif k == "gpu_tid" and tid_at < 0:
            tid_at = i
        elif is_quantity_key(k):
            qnames.append(k)
            qpicks.append(i)
        elif not k.isidentifier() or k == "gpu_tid":
            return None
        # other numeric keys without a time unit are neither times nor kept quantities
    if not names and not qnames:
        return None
    if first_repeat(names) is not None or first_repeat(qnames) is not None:
        return None  # a key printed twice: damage, read_fields says so
    kind, held_at = _kind(names, tid_at, held)
    all_ms = len(picks) == len(keys)
    return names, tuple(picks), tid_at, kind, held_at, all_ms, tuple(zip(qnames, qpicks, strict=True))


def _slow_timing(s: sc.Scan, ln: int, line: str, j: int, held: str):
    """A CUZK_TIMING line the fast path does not read, in full: (names, values, gpu_tid,
    kind, held index), or None (informational, or damage: skipped)."""
    r = read_fields(line[j + 12:], False)
    if r is INFO:
        return None
    if type(r) is str:
        s.skip(ln, r, line)
        return None
    names, vals, tid, qnames, qvals = r
    kind, held_at = _kind(names, tid, held)
    if qnames:
        s.qrow += [len(s.meta) // 8] * len(qnames)
        s.qnames += qnames
        s.qvalues += qvals
    return names, vals, tid, kind, held_at


def _other_line(s: sc.Scan, ln: int, line: str) -> None:
    """A line of a CuZK log that is no CUZK_TIMING / CUZK_NTT_H line: a cut marker (damage),
    a TIMELINE line, or a tracing line."""
    if "CUZK_TIMING:" in line:  # marker without its space: cut or damaged
        r = read_fields(line[line.find(TIMING) + 12:], False)
        if r is not INFO:
            s.skip(ln, r if type(r) is str else "CUZK_TIMING: without a space", line)
        return
    j = line.find("TIMELINE,")
    if j < 0:
        s.common(ln, line)
        return
    r = read_timeline(line[j + 9:])
    if type(r) is str:
        s.skip(ln, r, line)
        return
    s.timing_lines += 1
    s.timeline.append((ln, s.times.slot(line, NO_PREFIX_TIMELINE), *r))


def _quantities(s: sc.Scan, quants, vs: list[str]) -> None:
    """A fast line's quantities (h2d_bytes=, num_circuits=), tied to its meta row."""
    row = len(s.meta) // 8
    for qn, k in quants:
        s.qrow.append(row)
        s.qnames.append(qn)
        s.qvalues.append(float(vs[k]))


def _ntt_line(s: sc.Scan, ln: int, line: str) -> tuple[list, list] | None:
    """A line that is no CUZK_TIMING line: a CUZK_NTT_H line's (names, times), else None (the
    line was another kind, or skipped)."""
    j = line.find(NTT_H)
    if j < 0:
        _other_line(s, ln, line)
        return None
    r = read_fields(line[j + 11:], True)
    if type(r) is str:  # (INFO too: not a timing line)
        if r is not INFO:
            s.skip(ln, r, line)
        return None
    names, vals, _, _, _ = r  # (no quantities: every CUZK_NTT_H field is a time)
    return names, vals


def scan_cuzk(lines: list[str], idx, held: str, first: int = 1, *, lineno=None,
              s: sc.Scan | None = None) -> sc.Scan:
    """Read lines[i] for i in idx (line number i + first, or lineno[i] when given), into `s`
    (a new Scan when None)."""
    s = s if s is not None else sc.Scan()
    times = s.times
    tvals = times.values
    iso = times.iso
    ts_slow = times.clock.ts
    NAN = float("nan")
    meta = s.meta
    names_all = s.names
    values_all = s.values
    held_list = s.held
    shapes: dict[tuple[str, ...], Any] = {}  # (0 when not yet seen, None when no fast shape)
    K_NTT = sc.K_NTT
    MAX = sc.MAX_LINE
    timing_n = 0
    for i in idx:
        line = lines[i]
        ln = i + first if lineno is None else lineno[i]
        if len(line) > MAX:
            s.too_long(ln, line)
            continue
        j = line.find("CUZK_TIMING: ")
        if j >= 0:
            rest = line[j + 13:]
            toks = rest.replace("=", " ").split()
            keys = tuple(toks[0::2])
            shape = shapes.get(keys, 0)
            if shape == 0:
                shape = shapes[keys] = _shape(keys, held)
            vs = toks[1::2]
            digits = "".join(vs)
            fast = shape is not None and len(toks) == 2 * rest.count("=") and digits.isdigit() and digits.isascii()
            if fast:
                names, picks, tid_at, kind, held_at, all_ms, quants = shape
                tid = int(vs[tid_at]) if tid_at >= 0 and len(vs[tid_at]) < 7 else -1
                if all_ms:
                    vals = list(map(float, vs))
                    if max(vals) > MAX_MS:
                        fast = False  # damage: read_fields words it
                elif tid_at >= 0 and tid < 0:
                    fast = False
                else:
                    vals = [float(vs[k]) for k in picks]
                    if (vals and max(vals) > MAX_MS) or (quants and any(len(vs[k]) > 15 for _, k in quants)):
                        fast = False
                    elif quants:  # rare: h2d_bytes=, num_circuits= (tied to this line's meta row)
                        _quantities(s, quants, vs)
            if not fast:  # slow path: informational lines, damage, decimals, odd keys
                slow = _slow_timing(s, ln, line, j, held)
                if slow is None:
                    continue
                names, vals, tid, kind, held_at = slow
            if kind == sc.K_HELD:
                held_list.append((len(meta) // 8, vals[held_at]))
        else:
            ntt = _ntt_line(s, ln, line)
            if ntt is None:
                continue
            names, vals = ntt
            kind = K_NTT
            tid = -1
        timing_n += 1
        # the line's time slot (inline LineTimes.slot: this loop is the hot path)
        slot = len(tvals)
        if line[10:11] == "T" and line[4:5] == "-":
            sp = line.find(" ")
            tvals.append(iso(line[:sp] if sp > 0 else line))
        else:
            c = line[:1]
            tvals.append(NAN if c == "C" or c == " " or c == "" else ts_slow(line))
        meta += (ln, slot, kind, tid, -1, -1, len(names), 0 if kind != K_NTT else 1)
        names_all += names
        values_all += vals
    s.timing_lines += timing_n
    return s

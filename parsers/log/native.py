"""The compiled scanner (parsers/_scan.c) over one log's chunks, and the merge of what it
read with the lines it handed back to Python.

The C scanner reads the lines it is certain of; every other line (damage, non-ASCII text,
odd keys or numbers, an unusual time prefix) comes back as a byte range and is read by the
Python scanner (scanners.PyScanner), and the two results are merged in line order, so the
frames are those of a scan in Python alone. Times the C scanner cannot read (a journald or
kubectl prefix) come back as (slot, line) and are read with the same clock as Python's.
"""

from __future__ import annotations

import numpy as np

from gpuscope.parsers.log import scan as sc

FORMAT_CODES = {"cuzk": 0, "condensed": 1, "kv": 2}


def _a(buf, dtype, width: int = 0) -> np.ndarray:
    a = np.frombuffer(buf, dtype=dtype)
    return a.reshape(-1, width) if width else a


class NativeScan:
    def __init__(self, module, fmt: str, held: str, py, errors: str):
        self.scanner = module.Scanner(FORMAT_CODES[fmt], held.encode("utf-8", "surrogatepass"))
        self.py = py  # scanners.PyScanner: the lines handed back, the tail, the tables
        self.tables: sc.Tables = py.tables
        self.errors = errors
        self.times = py.new_scan().times  # the clock of the Python scanner, for the times handed back
        self.names = np.zeros(0, dtype=np.int32)   # C name code -> code in tables.names
        self.qnames = np.zeros(0, dtype=np.int32)
        self.strings: list[str] = []               # C string code -> TIMELINE event / job id
        self.scans: list[sc.Scan] = []
        self.handed_back = False

    def _codes(self, old: np.ndarray, new: list[str], names: sc.Names) -> np.ndarray:
        if not new:
            return old
        return np.concatenate([old, np.asarray([names.code(n) for n in new], dtype=np.int32)])

    def feed(self, chunk) -> bool:
        """Read one chunk (no marker is looked for: cuzk, condensed and kv are never chosen by a
        log's head alone)."""
        buf = chunk.buf
        d = self.scanner.feed(buf, chunk.first)
        self.names = self._codes(self.names, d["names"], self.tables.names)
        self.qnames = self._codes(self.qnames, d["qnames"], self.tables.qnames)
        self.strings += d["strings"]
        s = sc.Scan()
        s.final = True
        s.times = None
        s.tables = self.tables
        s.meta = _a(d["meta"], np.int64, 8)
        s.codes = self.names[_a(d["codes"], np.int32)]
        s.values = _a(d["values"], np.float64)
        s.held = (_a(d["held_row"], np.int64), _a(d["held_val"], np.float64))
        s.qrow = _a(d["qrow"], np.int64)
        s.qcodes = self.qnames[_a(d["qcode"], np.int32)]
        s.qvalues = _a(d["qval"], np.float64)
        s.aux = np.zeros(0, dtype=np.int64)
        s.tol = np.zeros(0, dtype=np.float64)
        s.ts = _a(d["ts"], np.float64)
        strings = np.asarray(self.strings, dtype=object)
        s.timeline = {
            "line": _a(d["tl_line"], np.int64), "slot": _a(d["tl_slot"], np.int64),
            "offset_ms": _a(d["tl_off"], np.float64), "event": strings[_a(d["tl_event"], np.int32)],
            "job_id": strings[_a(d["tl_job"], np.int32)], "partition": _a(d["tl_part"], np.int64),
            "worker": _a(d["tl_worker"], np.int64), "synth_ms": _a(d["tl_synth"], np.float64),
            "gpu_ms": _a(d["tl_gpu"], np.float64),
        }
        s.timing_lines = d["timing_lines"]
        pyts = _a(d["pyts"], np.int64, 4)
        if len(pyts):  # times of prefixes the C scanner does not read
            mv = memoryview(buf)
            ts_of, iso = self.times.ts_of, self.times.iso
            for slot, kind, a, b in pyts.tolist():
                line = str(mv[a:b], "ascii")
                if kind == 1:
                    sp = line.find(" ")
                    s.ts[slot] = iso(line[:sp] if sp > 0 else line)
                else:
                    s.ts[slot] = ts_of(line)
        punt = _a(d["punt"], np.int64, 3)
        if len(punt):
            self.handed_back = True
            mv = memoryview(buf)
            lines = [str(mv[a:b], "utf-8", self.errors) for _, a, b in punt.tolist()]
            p = self.py.read(lines, 0, lineno=punt[:, 0].tolist())
            p.finalize(self.tables)
            s = interleave(s, p)
        self.scans.append(s)
        return False

    def result(self, tail: sc.Scan | None) -> sc.Scan:
        out = sc.Scan.concat([*self.scans, *([tail] if tail is not None else [])], self.tables)
        if self.handed_back:
            first_appearance(out)
        return out


def interleave(c: sc.Scan, p: sc.Scan) -> sc.Scan:
    """The rows of two scans of disjoint lines of one chunk, merged in line order."""
    c.skip_line += p.skip_line
    c.skip_reason += p.skip_reason
    c.skip_text += p.skip_text
    c.timing_lines += p.timing_lines
    if not len(p.meta) and not len(p.timeline["line"]):
        return c
    base = len(c.ts)
    out = sc.Scan()
    out.final, out.times, out.tables = True, None, c.tables
    out.skip_line, out.skip_reason, out.skip_text = c.skip_line, c.skip_reason, c.skip_text
    out.timing_lines = c.timing_lines
    out.ts = np.concatenate([c.ts, p.ts])
    pm = p.meta.copy()
    pm[:, 1] += base
    meta = np.concatenate([c.meta, pm])
    order = np.argsort(meta[:, 0], kind="stable")
    counts = meta[:, 6]
    starts = np.concatenate(([0], np.cumsum(counts)[:-1])).astype(np.int64)
    new_counts = counts[order]
    new_starts = np.concatenate(([0], np.cumsum(new_counts)[:-1])).astype(np.int64)
    take = np.repeat(starts[order] - new_starts, new_counts) + np.arange(int(new_counts.sum()))
    out.values = np.concatenate([c.values, p.values])[take]
    out.codes = np.concatenate([c.codes, p.codes])[take]
    out.meta = meta[order]
    inv = np.empty(len(meta), dtype=np.int64)
    inv[order] = np.arange(len(meta))
    nc = len(c.meta)
    hrow = inv[np.concatenate([c.held[0], p.held[0] + nc])]
    hval = np.concatenate([c.held[1], p.held[1]])
    ho = np.argsort(hrow, kind="stable")
    out.held = (hrow[ho], hval[ho])
    qrow = inv[np.concatenate([c.qrow, p.qrow + nc])]
    qo = np.argsort(qrow, kind="stable")
    out.qrow = qrow[qo]
    out.qcodes = np.concatenate([c.qcodes, p.qcodes])[qo]
    out.qvalues = np.concatenate([c.qvalues, p.qvalues])[qo]
    out.aux = np.zeros(0, dtype=np.int64)
    out.tol = np.zeros(0, dtype=np.float64)
    tl = {k: np.concatenate([c.timeline[k], p.timeline[k] + base if k == "slot" else p.timeline[k]])
          for k in c.timeline}
    to = np.argsort(tl["line"], kind="stable")
    out.timeline = {k: v[to] for k, v in tl.items()}
    return out


def first_appearance(s: sc.Scan) -> None:
    """Renumber the name codes in order of first appearance in the log, without names that
    never appear (the C scanner met them on lines it handed back)."""
    for attr, table in (("codes", "names"), ("qcodes", "qnames")):
        codes = getattr(s, attr)
        names: sc.Names = getattr(s.tables, table)
        if not len(names):
            continue
        new, order = sc.first_codes(codes, len(names))  # (O(n): no sort of the codes)
        setattr(s, attr, new.astype(np.int32, copy=False) if len(codes) else codes)
        fresh = sc.Names(names.list[i] for i in order.tolist())
        setattr(s.tables, table, fresh)

"""CUZK_TIMING / CUZK_NTT_H lines (supraseal-c2 groth16_cuda.cu, groth16_ntt_h.cu) and the
grouping of their values into GPU-lock tenures.

Grouping (docs/ARCHITECTURE.md): a tenure runs from a `mutex_wait_ms` line to the next
held line (`mutex_held_ms`). GPU-region lines in between (CUZK_NTT_H, `gpu_tid=` lines)
belong to it: the lock keeps other workers' GPU lines out. CPU-side lines (prep_msm,
b_g2_msm, async_dealloc, split_vectors, ...) can land anywhere and are never attributed to
a tenure (record -1). The k-th CUZK_NTT_H line of a tenure belongs to GPU k.
"""

from __future__ import annotations

from parsers.builder import Components, Records
from parsers.fields import number

TIMING = "CUZK_TIMING:"
NTT_H = "CUZK_NTT_H:"
OPEN_KEYS = ("mutex_wait", "pre_lock_cpu")
COUNT_KEYS = frozenset(("gpu_tid", "num_circuits"))
INFO = "info"


def read_fields(rest: str, ntt: bool):
    """Fields after the marker -> (names, values_ms, gpu_tid), INFO, or a reason string."""
    toks = rest.split()
    if "=" not in rest:
        # "d_a_cache allocated 512 MiB on gpu 0", "set pool release threshold ..." are
        # informational; a marker with (almost) nothing after it is a cut-off line
        return INFO if len(toks) >= 3 else "timing marker without fields (truncated?)"
    names: list[str] = []
    values: list[float] = []
    gpu_tid = -1
    for t in toks:
        k, eq, v = t.partition("=")
        if not eq or not k:
            return f"unreadable field {t[:40]!r}"
        if ntt:
            if not v.endswith("ms"):
                return f"{k}: value {v[:20]!r} lacks its ms unit (truncated?)"
            x = number(v[:-2])
            if x is None:
                return f"{k}: value {v[:20]!r} is not a number"
            names.append(k)
            values.append(x)
            continue
        x = number(v)
        if x is None:
            return f"{k}: value {v[:20]!r} is not a number"
        if k.endswith("_ms"):
            names.append(k[:-3])
            values.append(x)
        elif k == "gpu_tid":
            if x < 0 or x != int(x):
                return f"gpu_tid {v[:20]!r} is not a GPU index"
            gpu_tid = int(x)
        elif k not in COUNT_KEYS and not k.isidentifier():
            return f"unreadable field {t[:40]!r}"
    if not names:
        return "timing line without a time value"
    return names, values, gpu_tid


class Tenures:
    """Sequential state machine over CUZK lines; appends to Components and Records."""

    def __init__(self, comps: Components, recs: Records, held: str):
        self.comps = comps
        self.recs = recs
        self.held = held
        self.cur = -1  # open tenure id, -1 when none

    def _attach(self, ln: int, ts: float) -> int:
        if self.cur < 0:  # GPU-region line with no wait line seen (log cut, or damaged)
            self.cur = self.recs.open(ln, ts)
        else:
            self.recs.touch(self.cur, ln, ts)
        return self.cur

    def ntt_h(self, ln: int, ts: float, names, values) -> None:
        rec = self._attach(ln, ts)
        gpu = self.recs.n_ntt[rec]
        self.recs.n_ntt[rec] = gpu + 1
        self.comps.add(ln, ts, rec, gpu, "CUZK_NTT_H", -1, -1, names, values)

    def timing(self, ln: int, ts: float, names, values, gpu_tid: int) -> None:
        held = self.held
        if names[0] in OPEN_KEYS or (len(names) > 1 and names[1] in OPEN_KEYS):
            # a new tenure; one still open lost its held line (damage or cut log)
            rec = self.cur = self.recs.open(ln, ts)
        elif held in names:
            rec = self._attach(ln, ts)
            self.recs.held[rec] = values[names.index(held)]
            self.recs.complete[rec] = True
            self.cur = -1
        elif gpu_tid >= 0:
            rec = self._attach(ln, ts)
            self.recs.gpu_tids[rec].add(gpu_tid)
        else:
            self.comps.add(ln, ts, -1, -1, "CUZK_TIMING", -1, -1, names, values)
            return
        self.comps.add(ln, ts, rec, gpu_tid, "CUZK_TIMING", -1, -1, names, values)

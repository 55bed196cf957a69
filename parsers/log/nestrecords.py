"""Records of a `lines` log whose times nest across lines (parsers/log/lines/records.py asks once
the whole and the not-parts are known): a timer tree's roots, each the whole of its own tree
(parsers/log/lines/trees.py), and lines printing only times nested in others printed on other
lines (DeepSpeed's micro-step timers beside the global ones, parsers/log/notparts.py)."""

from __future__ import annotations

import numpy as np


def tree_roots(known: dict[str, str], ncodes, uniq: list[str], whole: str, notes: list[str], is_whole, root_why: str):
    """Per value, whether it is a timer tree's root (`root_why`: parsers/log/lines/trees.py ROOT_WHY): in a
    log of trees of several roots (`preprocess` beside `prove`) each root is the whole of its
    own tree's record, never the first root's alone (the others' records had been their
    children's sum, or no record at all)."""
    roots = [c for c, u in enumerate(uniq) if known.get(u) == root_why]
    if len(roots) < 2:
        return is_whole
    notes.append(f"timer trees of {len(roots)} roots ({', '.join(uniq[c] for c in roots[:4])}): each root is the "
                 f"whole of its own tree's record ({whole!r}, the most printed, names the whole)")
    return np.isin(ncodes, roots)


def nested_only(why: dict[str, str], ncodes, uniq: list[str], row_of, gid, ng: int, notes: list[str]):
    """Per group, whether it prints only times nested in others printed on other lines
    (DeepSpeed's micro-step timers beside the global ones, ZeRO's optimizer timers inside
    `step`): no step of its own, its times are inside another record's."""
    nested = np.asarray([why.get(u, "").startswith("nested in ") for u in uniq], dtype=bool)
    if ng == 0 or not nested.any():
        return np.zeros(ng, dtype=bool)
    vg = gid[row_of]
    ok = vg >= 0
    has = np.bincount(vg[ok], minlength=ng) > 0
    out = has & (np.bincount(vg[ok], weights=(~nested[ncodes[ok]]).astype(np.float64), minlength=ng) == 0)
    if out.any():
        notes.append(f"{int(out.sum())} line(s) print only times nested in others printed on other lines "
                     "(a micro-step's timers beside the step's): no steps of their own")
    return out

"""Parts printed in parentheses after a time (`held=274ms (copy=167ms gpu=107ms)`): they belong
to the value before them and are never counted beside it (issue 33, class 0).

- When the value before the parentheses names a lock's tenure (`held`, `lock`, `mutex`,
  `tenure`, `hold`), it is the record's whole: the parts in its parentheses make up its
  split, and the times printed beside it on the line (`synth=460ms wait=0ms`) lie outside
  it (a lock's wait, the host's work before the lock): never parts of the held time.
- Any other value before parentheses keeps its place as a part; the times in its
  parentheses are nested in it (`compute=100ms (fwd=40ms bwd=60ms)`): never summed beside it.

Parts whose sum exceeds the value before them are no parts of it (left as read). What is
decided is said per name through the reader's State (`known`: name -> why), as a
framework's reader says it, and lands in ParsedLog.not_parts (`outside ...` or `nested
in ...`). False-positive guard (tests/test_linenest.py): a percentage or a rate in the
parentheses (`fwd 12ms (38%)`, `1.2s (2.5 it/s)`) holds no time and changes nothing; a
`compute=` value with parentheses never becomes a whole.
"""

from __future__ import annotations

import re

from gpuscope.parsers.log.lines.fields import Line
from gpuscope.parsers.log.lines.reading import LineReading, ReaderState
from gpuscope.parsers.log.lines.vocabulary import HELD, LINES_ONLY, NAMED, PAREN
from gpuscope.rolewords import LOCK_WORDS, WAIT_WORDS  # (tenure words; wait words: `lock_wait`)

_LOCKISH = re.compile(r"held|hold|lock|mutex|tenure", re.IGNORECASE)  # (a cheap look before reading names)
OUTSIDE = "outside "  # (the start of an outside name's reason: gpuscope/rolemodel.py reads it)
NESTED = "nested in "


def _words(name: str) -> list[str]:
    return [w for w in name.lower().replace("-", "_").replace(".", "_").split("_") if w]


def is_lock_name(name: str) -> bool:
    """Whether a name says it is a lock's held time (`held`, `mutex_held`, `lock_ms`)."""
    return any(w in LOCK_WORDS for w in _words(name))


def _names_of(text: str, state: ReaderState) -> list[str] | None:
    """The time names a fragment of a line reads as (a scratch reading: `state` unchanged)."""
    toks = state.tokens(text)
    if toks is None:
        return []
    r = Line(toks, state.scratch(), None).read()
    return list(r[0]) if r is not None and type(r) is tuple else None


def _groups(message: str) -> list[tuple[str, str]]:
    """(text before, text inside) of each parenthesized group that follows a number."""
    out = []
    at = message.find("(")
    while at >= 0:
        end = message.find(")", at)
        if end < 0:
            break
        before = message[:at].rstrip()
        inner = message[at + 1:end]
        tail = before[-12:].rstrip("µμabcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ").rstrip()
        if tail[-1:].isdigit() and "(" not in inner and any(c.isdigit() for c in inner):
            out.append((before, inner))
        at = message.find("(", end)
    return out


def nest(message: str, reading: LineReading, state: ReaderState):
    """The `reading` of a line (read_line's tuple) with its parenthesized parts placed: the
    whole's code set to a lock tenure's (PAREN), the nested and outside names said in
    `state.known`. `reading` as is when the line has none."""
    if "(" not in message or type(reading) is not tuple:
        return reading
    names, values, qn, qv, stamp, code, flags, tol = reading
    found = []
    for before, inner in _groups(message):
        head, kids = _names_of(before, state), _names_of(inner, state)
        if not head or not kids:
            continue
        p = len(head) - 1
        if list(names[p:p + 1 + len(kids)]) != [head[-1], *kids]:
            continue
        if sum(values[p + 1:p + 1 + len(kids)]) > values[p] * 1.01 + tol:
            continue  # (more than the value: no parts of it)
        found.append((p, kids))
    if not found:
        return reading
    whole = code // 4 if code >= 0 and code % 4 in (HELD, NAMED) else -1
    if len(found) == 1 and whole in (-1, found[0][0]) and is_lock_name(names[found[0][0]]):
        p, kids = found[0]
        inside = {names[p], *kids}
        for nm in names:
            if nm not in inside:
                state.known.setdefault(nm, f"{OUTSIDE}{names[p]!r} (printed beside the lock's tenure, not in its "
                                        "parentheses): not part of its time")
        return names, values, qn, qv, stamp, p * 4 + PAREN, flags | LINES_ONLY, tol
    for p, kids in found:
        for k in kids:
            state.known.setdefault(k, f"{NESTED}{names[p]!r} (printed in parentheses after it): never counted "
                                   "beside it")
    return names, values, qn, qv, stamp, code, flags | LINES_ONLY, tol  # (kv drops them)


def _is_tenure(name: str) -> bool:
    """A lock's held time (`held`, `lock_held`, `tenure_ms`), not its wait (`lock_wait`)."""
    words = _words(name)
    return any(w in LOCK_WORDS for w in words) and not any(w in WAIT_WORDS for w in words)


def tenure(message: str, reading: LineReading, state: ReaderState):
    """The `reading` of a line whose lock tenure is printed without parentheses, its parts
    after it (`wait_ms=296 held_ms=278 h2d_ms=169 gpu_ms=108`, `mutex wait 227 ms, held 270 ms:
    h2d 161 ms, gpu 107 ms`): the tenure is the line's whole (code PAREN: by the words), the
    times after it its parts, the times before it outside it (a lock's wait, the host's work
    before the lock). Only when the line has one tenure name, no other field named like a
    whole, and the times after it fit in it (within 1% and the printed rounding); a tenure
    printed last, with no parts, only beside a wait (`lock_wait=234ms held=263ms`). `reading` as
    is otherwise (false-fire guards: tests/test_lock_tenure_words.py)."""
    if type(reading) is not tuple or not _LOCKISH.search(message):
        return reading
    names, values, qn, qv, stamp, code, flags, tol = reading
    if code >= 0 and code % 4 in (HELD, PAREN):
        return reading  # (the held key asked for, or parentheses already placed its parts)
    at = [j for j, nm in enumerate(names) if _is_tenure(nm)]
    if len(at) != 1 or len(names) < 2:
        return reading
    p = at[0]
    if code >= 0 and code // 4 != p:
        return reading  # (another field is named like the whole: `total=`)
    before = names[:p]
    if p == len(names) - 1 and not any(w in WAIT_WORDS for nm in before for w in _words(nm)):
        return reading
    if sum(values[p + 1:]) > values[p] * 1.01 + tol:
        return reading  # (more than the tenure: no parts of it)
    for nm in before:
        state.known.setdefault(nm, f"{OUTSIDE}{names[p]!r} (printed before the lock's tenure, not after it): not "
                                "part of its time")
    return names, values, qn, qv, stamp, p * 4 + PAREN, flags | LINES_ONLY, tol

"""Finding candidate lines fast: substring search over the whole text (C speed), touching
only the lines that hold a marker. Nothing here is a regular expression, so a 10 MB line
costs one linear pass."""

from __future__ import annotations

MAX_LINE = 64 * 1024  # longer lines are not parsed (a marker in them is reported as skipped)


def count_lines(text: str) -> int:
    if not text:
        return 0
    n = text.count("\n")
    return n if text.endswith("\n") else n + 1


def candidate_lines(text: str, markers: tuple[str, ...]) -> list[tuple[int, int, int]]:
    """(line_no 1-based, start, end) of every line holding one of `markers`, in order."""
    spans: dict[int, int] = {}
    find = text.find
    rfind = text.rfind
    n = len(text)
    for marker in markers:
        p = find(marker)
        while p >= 0:
            s = rfind("\n", 0, p) + 1
            e = find("\n", p)
            if e < 0:
                e = n
            spans[s] = e
            p = find(marker, e + 1)
    out = []
    count = text.count
    ln = 1
    prev = 0
    for s in sorted(spans):
        ln += count("\n", prev, s)
        prev = s
        out.append((ln, s, spans[s]))
    return out

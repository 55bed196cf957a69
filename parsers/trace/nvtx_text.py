"""An NVTX range's text told apart: torch.autograd.profiler.emit_nvtx's operator ranges from
annotations. Pure: SQL pieces and their decoding.

emit_nvtx opens a range around each operator call, "aten::mm, op_id = 345" or "aten::mm, seq = 12,
op_id = 345[, sizes = ...]": one distinct text per row (the ids), 48.8M rows at 10M kernels, so
what is decided per row is decided in SQL, in C.

    nvtx_class(t) -> SQL   0: no "op_id" (an annotation); 1: emit_nvtx's canonical form (the name
                           without a comma: texts EMIT_NVTX matches); 2: another form holding
                           "op_id" (read, and decided by EMIT_NVTX)
    range_key(t) -> SQL    a short text per row with few distinct values that tells the class and
                           the operator name (the text to its first comma)
    decode_key(key) -> (class, name)   the same class and name nvtx_class and the name's SQL give
    by_text(expr, raw, t) -> SQL       expr on the row's own text, on t (its StringIds text) where NULL
    operator(name)                      an operator range's name without its ids

range_key: a text without ", seq = " comes cut after the character that follows its first
", op_id = " ("aten::mm, op_id = 3" for every aten::mm call without a sequence number), decided in
Python once per distinct key; a text with a sequence number (its digits in the middle: distinct per
row) comes as its class, decided in SQL, and name. The class of the cut text is the whole text's:
nvtx_class's compares read the text to the first comma (which is at or before the first ", op_id =
") and the character after that ", op_id = ", never a later one. Per row that is ~1/2 less of
SQLite's time on the NVTX table than computing class and name apart (its largest cost at 10M
kernels); cutting at the trailing digits instead (rtrim with a set of characters allocates per
call) gained half as much.
"""

from __future__ import annotations

import re
from typing import Any

# "aten::mm, seq = 12, op_id = 345[, sizes = ...]": a range emit_nvtx opens around each operator
EMIT_NVTX = re.compile(r"^([^,]+?),\s*(?:seq\s*=\s*\d+,\s*)?op_id\s*=\s*\d+.*$", re.S)
OP_ID = ", op_id = "


def operator(name: str) -> str:
    m = EMIT_NVTX.match(name)
    return m.group(1) if m else name


def nvtx_class(t: str) -> str:
    """SQL: the range's class (0, 1, 2: above). Fixed-place compares after the first comma, no
    pattern over the whole text (the cost is per row)."""
    f, o = f"instr({t}, ',')", f"instr({t}, '{OP_ID}')"
    digit = "BETWEEN '0' AND '9'"
    a = f"substr({t}, {f}, 10) = '{OP_ID}' AND substr({t}, {f} + 10, 1) {digit}"
    b = (f"substr({t}, {f}, 8) = ', seq = ' AND {o} > {f} + 8 AND substr({t}, {o} + 10, 1) {digit} AND "
         f"substr({t}, {f} + 8, {o} - {f} - 8) NOT GLOB '*[^0-9]*'")
    return f"(CASE WHEN instr({t}, 'op_id') = 0 THEN 0 WHEN {f} > 1 AND (({a}) OR ({b})) THEN 1 ELSE 2 END)"


def name_sql(t: str) -> str:
    """SQL: an operator range's name, its text to the first comma ('' without one)."""
    return f"substr({t}, 1, instr({t}, ',') - 1)"


def range_key(t: str) -> str:
    """SQL: 'a' + the text up to the character after its first ", op_id = " (the whole text without
    one), or (with ", seq = ") 'b' + its class + its name; NULL for a NULL text."""
    o = f"instr({t}, '{OP_ID}')"
    return (f"(CASE WHEN instr({t}, ', seq = ') = 0 THEN 'a' || (CASE WHEN {o} = 0 THEN {t} ELSE substr({t}, 1, {o} + 10) END) "
            f"ELSE 'b' || {nvtx_class(t)} || {name_sql(t)} END)")


def decode_key(key: object) -> tuple[int, str | None]:
    """(class, name) of a range_key: nvtx_class's and name_sql's of the row's text (NULL: 2, None)."""
    if not isinstance(key, str) or not key:
        return 2, None
    if key[0] == "b":
        return int(key[1]), key[2:]
    v = key[1:]
    f = v.find(",")
    name = v[:f] if f >= 0 else ""
    if "op_id" not in v:
        return 0, name
    # (the form nvtx_class's first compare takes: the first comma opens ", op_id = " and a digit
    # follows; its second needs ", seq = ", sent as 'b')
    return (1 if f > 0 and v[f:f + 10] == OP_ID and "0" <= v[f + 10:f + 11] <= "9" else 2), name


def by_text(expr: Any, raw: str, t: str) -> str:
    """expr(text) on the row's own text column (the usual case, cheap), expr(t) where it is NULL."""
    return f"(CASE WHEN {raw} IS NOT NULL THEN {expr(raw)} ELSE {expr(t)} END)"

"""The PTX Montgomery products of cuda/field_ptx.cuh, executed by a small PTX interpreter.

No GPU here, so the inline-asm text itself is run instruction by instruction (mad/madc lo/hi with
the carry flag, add/addc, mul, neg) and compared with Python ints. The carry flag is undefined at
the start of every asm statement: reading it before an instruction of the same statement set it
fails the test, so no chain may rely on a carry crossing statements; so does a carry that is set
and never read, or a result that overflows 32 bits without a carry out (the products drop top
carries that the bound a < p makes zero: this checks it on every input). The SOS product (checked
bit for bit on an H200) runs through the same interpreter as a check of the interpreter.
"""

from __future__ import annotations

import random
import re
import sys
from pathlib import Path

import pytest

from gpuscope.workload.field import FR

HEADER = Path(__file__).resolve().parents[1] / "gpuscope" / "workload" / "cuda" / "field_ptx.cuh"
M32 = (1 << 32) - 1
P = FR.p
R = 1 << 256
_ASM = re.compile(r'asm\("(.*?)"\s*:(.*?)\);', re.S)
_OPERAND = re.compile(r'"(\+r|=r|r)"\(([a-z]+)\[(\d+)\]\)')


def _function(name: str) -> str:
    text = HEADER.read_text()
    start = text.index(f" {name}(")
    return text[start : text.index("\n}\n", start)]


def _statements(name: str) -> list[tuple[list[str], list[tuple[str, int]]]]:
    out = []
    for body, operands in _ASM.findall(_function(name)):
        lines = [ln.strip() for ln in body.replace("\\n", "\n").replace("\\t", "").split("\n") if ln.strip()]
        out.append((lines, [(arr, int(k)) for _, arr, k in _OPERAND.findall(operands)]))
    return out


def _accessors(ops, local, arrays):
    def ref(tok: str):
        tok = tok.strip().rstrip(";")
        if tok.startswith("%"):
            return ops[int(tok[1:])]
        return tok

    def get(tok: str) -> int:
        r = ref(tok)
        if isinstance(r, tuple):
            return arrays[r[0]][r[1]]
        if r in local:
            return local[r]
        return int(r, 0)

    def put(tok: str, v: int) -> None:
        r = ref(tok)
        assert 0 <= v <= M32
        if isinstance(r, tuple):
            arrays[r[0]][r[1]] = v
        else:
            local[r] = v

    return ref, get, put


def run(name: str, arrays: dict[str, list[int]], wrap_ok: bool = False) -> None:
    """Execute the asm statements of `name` on `arrays` (C array name -> limbs), in place.
    `wrap_ok`: the last instruction of a braced statement may drop its carry (fr_sub_ptx adds p
    back after a borrow: that carry is the 2^256 the borrow took)."""
    for lines, ops in _statements(name):
        assert len(ops) <= 30
        local: dict[str, int] = {}
        cc = None  # carry flag: undefined at every statement's start

        ref, get, put = _accessors(ops, local, arrays)

        for ln in lines:
            if ln in ("{", "}"):
                continue
            if ln.startswith(".reg"):
                local[ln.split()[-1].rstrip(";")] = 0
                continue
            op, args = ln.split(None, 1)
            a = [x.strip() for x in args.rstrip(";").split(",")]
            parts = op.split(".")
            base, flags = parts[0], set(parts[1:])
            uses_cc = base in ("madc", "addc", "subc")
            if uses_cc:
                assert cc is not None, f"{name}: carry read before it is set in its statement: {ln}"
            cin = cc if uses_cc else 0
            if base in ("mul", "mad", "madc"):
                prod = get(a[1]) * get(a[2])
                part = prod >> 32 if "hi" in flags else prod & M32
                total = part + (get(a[3]) if base != "mul" else 0) + cin
            elif base in ("add", "addc"):
                total = get(a[1]) + get(a[2]) + cin
            elif base in ("sub", "subc"):  # the flag holds the borrow
                diff = get(a[1]) - get(a[2]) - cin
                total = (diff & M32) | ((1 << 32) if diff < 0 else 0)
            elif base == "and":
                total = get(a[1]) & get(a[2])
            elif base == "neg":
                total = (-get(a[1])) & M32
            else:
                raise AssertionError(f"instruction not emulated: {ln}")
            put(a[0], total & M32)
            if "cc" in flags:
                # a chain start overwrites the flag: a carry set and never read would be lost
                assert uses_cc or not cc, f"{name}: carry out dropped before: {ln}"
                cc = total >> 32
            else:
                if base not in ("neg", "and", "subc") and not (wrap_ok and ln == lines[-2]):
                    assert total >> 32 == 0, f"{name}: carry out dropped at: {ln}"
                if uses_cc:
                    cc = 0  # consumed
        assert not cc, f"{name}: carry left set at the end of a statement"


def limbs(x: int, n: int = 8) -> list[int]:
    return [(x >> (32 * i)) & M32 for i in range(n)]


def value(v: list[int]) -> int:
    return sum(x << (32 * i) for i, x in enumerate(v))


def cios(a: int, b: int) -> int:
    arrays = {"a": limbs(a), "b": limbs(b), "e": [0] * 8, "o": [0] * 8}
    run("fr_mul_cios", arrays)
    return value(arrays["e"])


def sos(a: int, b: int) -> int:
    arrays = {"a": limbs(a), "b": limbs(b), "t": [0] * 17}
    run("fr_mul_ptx", arrays)
    return value(arrays["t"][8:])


RINV = pow(R, -1, P)


def _cases(seed: str, count: int) -> list[tuple[int, int]]:
    rng = random.Random(seed)
    edge = [0, 1, 2, P - 1, P - 2, M32, (1 << 224) - 1, P >> 1, (P + 1) >> 1]
    out = [(x, y) for x in edge for y in edge + [R - 1]]
    out += [(rng.randrange(P), rng.randrange(P)) for _ in range(count)]
    out += [(rng.randrange(P), rng.randrange(R)) for _ in range(count // 4)]  # b need not be reduced
    # operands with long runs of ones / zeros in the limbs (carries rippling through whole chains)
    for _ in range(count // 4):
        x = sum((M32 if rng.random() < 0.5 else rng.choice([0, 1, M32 - 1])) << (32 * i) for i in range(8)) % P
        y = sum((M32 if rng.random() < 0.7 else 0) << (32 * i) for i in range(8))
        out.append((x, y))
    return out


@pytest.mark.parametrize("a,b", _cases("cios", 200))
def test_cios_product_matches_python(a, b):
    t = cios(a, b)
    assert t % P == a * b * RINV % P
    assert t < 2 * P  # one conditional subtraction (fp_reduce_once) fully reduces it


def test_sos_product_through_the_same_interpreter():
    for a, b in _cases("sos", 40):
        t = sos(a, b)
        assert t % P == a * b * RINV % P and t < 2 * P


def test_cios_statements_keep_carries_inside_and_use_few_operands():
    stmts = _statements("fr_mul_cios")
    assert len(stmts) == 9  # 8 rounds + the merge
    for lines, ops in stmts:
        assert len(ops) <= 30
        first = next(ln for ln in lines if ln not in ("{", "}") and not ln.startswith(".reg"))
        assert not first.split()[0].startswith(("madc", "addc"))


def test_cios_needs_fewer_instructions_than_sos():
    count = {name: sum(len([ln for ln in lines if ln[0] not in "{}."]) for lines, _ in _statements(name)) for name in ("fr_mul_cios", "fr_mul_ptx")}
    assert count["fr_mul_cios"] < count["fr_mul_ptx"] - 60


def test_interpreter_rejects_a_carry_crossing_statements(monkeypatch):
    bad = [(["madc.lo.cc.u32 %0, %1, %1, %0;"], [("e", 0), ("a", 0)])]
    monkeypatch.setattr(sys.modules[__name__], "_statements", lambda name: bad)
    with pytest.raises(AssertionError, match="carry read before"):
        run("x", {"e": [0], "a": [3]})


def test_a_mutated_product_is_caught(monkeypatch):
    good = _statements("fr_mul_cios")
    # round 3 reading the limb below where it should (o[2] shifted in as o[1])
    lines, ops = good[3]
    i = next(k for k, ln in enumerate(lines) if ln.startswith("madc.lo.cc.u32"))
    wrong = lines[i].rsplit(",", 1)[0] + ", 0;"
    mutated = [*good[:3], ([*lines[:i], wrong, *lines[i + 1 :]], ops), *good[4:]]
    monkeypatch.setattr(sys.modules[__name__], "_statements", lambda name: mutated)
    rng = random.Random(1)
    with pytest.raises(AssertionError):
        for _ in range(50):
            a, b = rng.randrange(P), rng.randrange(P)
            assert cios(a, b) % P == a * b * RINV % P


def _add_sub_cases() -> list[tuple[int, int]]:
    rng = random.Random("addsub")
    edge = [0, 1, 2, P - 1, P - 2, P >> 1, (P + 1) >> 1, M32, 1 << 254]
    return [(x, y) for x in edge for y in edge] + [(rng.randrange(P), rng.randrange(P)) for _ in range(300)]


def test_ptx_add_matches_python():
    for a, b in _add_sub_cases():
        arrays = {"a": limbs(a), "b": limbs(b), "s": [0] * 8, "d": [0] * 8, "bw": [0]}
        run("fr_add_ptx", arrays)
        assert arrays["bw"][0] in (0, M32)
        r = arrays["s"] if arrays["bw"][0] else arrays["d"]  # the caller's select (field.cuh)
        assert value(r) == (a + b) % P


def test_ptx_sub_matches_python():
    for a, b in _add_sub_cases():
        arrays = {"a": limbs(a), "b": limbs(b), "d": [0] * 8, "bw": [0]}
        run("fr_sub_ptx", arrays, wrap_ok=True)
        assert value(arrays["d"]) == (a - b) % P
        assert arrays["bw"][0] == (M32 if a < b else 0)


def test_sub_drops_its_carry_only_where_allowed():
    with pytest.raises(AssertionError, match="carry out dropped"):
        run("fr_sub_ptx", {"a": limbs(0), "b": limbs(1), "d": [0] * 8, "bw": [0]})

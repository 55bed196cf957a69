"""Generate gpuscope/workload/cuda/field_ptx.cuh: Montgomery multiplication with PTX carry chains.

    python3 tools/gen_field_ptx.py > gpuscope/workload/cuda/field_ptx.cuh

SOS form: the 2N-limb product row by row (mad.lo.cc / madc.lo.cc, then mad.hi.cc / madc.hi.cc,
each chain one asm statement so the carry flag never crosses statements), then N reduction
rounds t += (t[i] * INV mod 2^32) * p << 32i with the carries run to the top limb. The caller
does the final conditional subtraction. Each asm statement has at most 2N+3 <= 27 operands.

fr_mul_cios (used when GPUSCOPE_FR_CIOS is defined): CIOS with the even/odd split of Emmart et
al. (as in sppark's mont_t): products a[j]*b[i] with j even accumulate in `e` (limb k weighs
2^32k), with j odd in `o` (limb k weighs 2^32(k+1)), so the lo/hi halves of one row form one carry
chain with no propagation to the top; each round (one b[i], one asm statement, carries never leave
it) adds a*b[i], reduces with m = e[0]*INV and shifts by swapping the roles of e and o. Carries
out of the top limb are provably zero when a < 2^(32N-1) and p < 2^(32N-1): the running total
stays below 2^(32N+32) (see the test's bound check). Limbs of p equal to 0 or 1 become additions
instead of multiplications, INV = 2^32-1 a negation. Result < 2p when a < p; the caller
subtracts p once.
"""

from __future__ import annotations

import re
import sys

sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[1]))

from gpuscope.workload.field import FQ, FR, mont_inv32  # noqa: E402


def limbs(x: int, n: int) -> list[int]:
    return [(x >> (32 * i)) & 0xFFFFFFFF for i in range(n)]


def gen(name: str, p: int, n: int) -> str:
    inv = mont_inv32(p)
    pl = limbs(p, n)
    out = [f"__device__ __forceinline__ void {name}(u32* t, const u32* a, const u32* b) {{"]
    out.append(f"    // t[0..{2 * n}] must be zero on entry; on exit t[{n}..{2 * n}] = a*b/R (< 2p).")
    # product rows
    for i in range(n):
        regs = list(range(i, i + n + 2))  # t indices touched
        ops = {k: f"%{j}" for j, k in enumerate(regs)}
        a_ops = [f"%{len(regs) + j}" for j in range(n)]
        b_op = f"%{len(regs) + n}"
        lines = []
        for j in range(n):
            op = "mad.lo.cc.u32" if j == 0 else "madc.lo.cc.u32"
            lines.append(f"{op} {ops[i + j]}, {a_ops[j]}, {b_op}, {ops[i + j]};")
        lines.append(f"addc.cc.u32 {ops[i + n]}, {ops[i + n]}, 0;")
        lines.append(f"addc.u32 {ops[i + n + 1]}, {ops[i + n + 1]}, 0;")
        for j in range(n):
            op = "mad.hi.cc.u32" if j == 0 else "madc.hi.cc.u32"
            lines.append(f"{op} {ops[i + j + 1]}, {a_ops[j]}, {b_op}, {ops[i + j + 1]};")
        lines.append(f"addc.u32 {ops[i + n + 1]}, {ops[i + n + 1]}, 0;")
        outs = ", ".join(f'"+r"(t[{k}])' for k in regs)
        ins = ", ".join([f'"r"(a[{j}])' for j in range(n)] + [f'"r"(b[{i}])'])
        body = "\\n\\t".join(lines)
        out.append(f'    asm("{body}"\n        : {outs}\n        : {ins});')
    # reduction rounds
    for i in range(n):
        regs = list(range(i, 2 * n + 1))
        ops = {k: f"%{j}" for j, k in enumerate(regs)}
        lines = ["{", ".reg .u32 m;", f"mul.lo.u32 m, {ops[i]}, 0x{inv:08x};"]
        for j in range(n):
            op = "mad.lo.cc.u32" if j == 0 else "madc.lo.cc.u32"
            lines.append(f"{op} {ops[i + j]}, m, 0x{pl[j]:08x}, {ops[i + j]};")
        for k in range(i + n, 2 * n):
            lines.append(f"addc.cc.u32 {ops[k]}, {ops[k]}, 0;")
        lines.append(f"addc.u32 {ops[2 * n]}, {ops[2 * n]}, 0;")
        for j in range(n):
            op = "mad.hi.cc.u32" if j == 0 else "madc.hi.cc.u32"
            lines.append(f"{op} {ops[i + j + 1]}, m, 0x{pl[j]:08x}, {ops[i + j + 1]};")
        for k in range(i + n + 1, 2 * n):
            lines.append(f"addc.cc.u32 {ops[k]}, {ops[k]}, 0;")
        lines.append(f"addc.u32 {ops[2 * n]}, {ops[2 * n]}, 0;")
        lines.append("}")
        outs = ", ".join(f'"+r"(t[{k}])' for k in regs)
        body = "\\n\\t".join(lines)
        out.append(f'    asm("{body}"\n        : {outs});')
    out.append("}")
    return "\n".join(out)


def _mul_term(lo_hi: str, first: bool, last_no_cc: bool, d: str, m: str, c: int, acc: str) -> str:
    """d = lo/hi(m * c) + acc (+ carry), c a constant limb: 0 and 1 need no multiplication."""
    cc = "" if last_no_cc else ".cc"
    add = ("add" if first else "addc") + cc
    if c == 0 or (c == 1 and lo_hi == "hi"):
        return f"{add}.u32 {d}, {acc}, 0;"
    if c == 1:
        return f"{add}.u32 {d}, {acc}, {m};"
    op = ("mad" if first else "madc") + f".{lo_hi}{cc}"
    return f"{op}.u32 {d}, {m}, 0x{c:08x}, {acc};"


def cios_statements(p: int, n: int) -> list[tuple[list[str], list[str], list[str]]]:
    """fr_mul_cios as (ptx lines with C operand names in {braces}, outputs, inputs) per asm statement.

    Every output is "+r" (never an output that could share a register with an input); e/o are the
    accumulators (zeroed by the caller), a/b the operands; the result is left in e. Kept symbolic
    so tests can emulate exactly the PTX that is emitted."""
    assert n % 2 == 0
    pl = limbs(p, n)
    inv = mont_inv32(p)
    stmts = []
    for i in range(n):
        ename, oname = ("e", "o") if i % 2 == 0 else ("o", "e")
        ev = [f"{{{ename}[{k}]}}" for k in range(n)]
        od = [f"{{{oname}[{k}]}}" for k in range(n)]
        av = [f"{{a[{k}]}}" for k in range(n)]
        bi = f"{{b[{i}]}}"
        lines = ["{", ".reg .u32 m;"]
        if i == 0:
            for j in range(0, n, 2):
                lines += [f"mul.lo.u32 {od[j]}, {av[j + 1]}, {bi};", f"mul.hi.u32 {od[j + 1]}, {av[j + 1]}, {bi};"]
            for j in range(0, n, 2):
                lines += [f"mul.lo.u32 {ev[j]}, {av[j]}, {bi};", f"mul.hi.u32 {ev[j + 1]}, {av[j]}, {bi};"]
        else:
            # the previous round's e (its e[0] is 0) becomes o shifted down by two limbs; its e[1]
            # joins the new e[0]; the carry of that addition enters the shifted o at weight 1
            lines.append(f"add.cc.u32 {ev[0]}, {ev[0]}, {od[1]};")
            for j in range(0, n - 2, 2):
                lines += [
                    f"madc.lo.cc.u32 {od[j]}, {av[j + 1]}, {bi}, {od[j + 2]};",
                    f"madc.hi.cc.u32 {od[j + 1]}, {av[j + 1]}, {bi}, {od[j + 3]};",
                ]
            lines += [f"madc.lo.cc.u32 {od[n - 2]}, {av[n - 1]}, {bi}, 0;", f"madc.hi.u32 {od[n - 1]}, {av[n - 1]}, {bi}, 0;"]
            for j in range(0, n, 2):
                op_lo = "mad.lo.cc" if j == 0 else "madc.lo.cc"
                lines += [f"{op_lo}.u32 {ev[j]}, {av[j]}, {bi}, {ev[j]};", f"madc.hi.cc.u32 {ev[j + 1]}, {av[j]}, {bi}, {ev[j + 1]};"]
            lines.append(f"addc.u32 {od[n - 1]}, {od[n - 1]}, 0;")
        # reduction: m = e[0] * INV; o += m * p_odd (its carry out is zero), e += m * p_even
        lines.append(f"neg.s32 m, {ev[0]};" if inv == 0xFFFFFFFF else f"mul.lo.u32 m, {ev[0]}, 0x{inv:08x};")
        for j in range(1, n, 2):
            lines.append(_mul_term("lo", j == 1, False, od[j - 1], "m", pl[j], od[j - 1]))
            lines.append(_mul_term("hi", False, False, od[j], "m", pl[j], od[j]))
        for j in range(0, n, 2):
            lines.append(_mul_term("lo", j == 0, False, ev[j], "m", pl[j], ev[j]))
            lines.append(_mul_term("hi", False, False, ev[j + 1], "m", pl[j], ev[j + 1]))
        lines.append(f"addc.u32 {od[n - 1]}, {od[n - 1]}, 0;")
        lines.append("}")
        outs = [f'"+r"({x}[{k}])' for x in (ename, oname) for k in range(n)]
        ins = [f'"r"(a[{k}])' for k in range(n)] + [f'"r"(b[{i}])']
        stmts.append((lines, outs, ins))
    # after an even number of rounds the result is e[k] + o[k+1] (o[0] weighs 2^32 before the
    # final shift, and the last round's e[0] is 0)
    lines = ["add.cc.u32 {e[0]}, {e[0]}, {o[1]};"]
    lines += [f"addc.cc.u32 {{e[{k}]}}, {{e[{k}]}}, {{o[{k + 1}]}};" for k in range(1, n - 1)]
    lines.append(f"addc.u32 {{e[{n - 1}]}}, {{e[{n - 1}]}}, 0;")
    outs = [f'"+r"(e[{k}])' for k in range(n)]
    ins = [f'"r"(o[{k}])' for k in range(1, n)]
    stmts.append((lines, outs, ins))
    return stmts


def _bind(lines: list[str], outs: list[str], ins: list[str]) -> str:
    names = [x.split("(", 1)[1][:-1] for x in outs + ins]
    idx = {nm: f"%{k}" for k, nm in enumerate(names)}
    text = "\\n\\t".join(lines)
    return re.sub(r"\{([a-z]+\[\d+\])\}", lambda mt: idx[mt.group(1)], text)


def gen_cios(name: str, p: int, n: int) -> str:
    out = [f"__device__ __forceinline__ void {name}(u32* r, const u32* a, const u32* b) {{"]
    out.append(f"    // r = a*b/R < 2p for a < p (any b); see tools/gen_field_ptx.py. {n // 2 * 2} rounds + merge.")
    out.append(f"    u32 e[{n}], o[{n}];")
    out.append(f"#pragma unroll\n    for (int k = 0; k < {n}; k++) e[k] = o[k] = 0;  // operands are all \"+r\"")
    for lines, outs, ins in cios_statements(p, n):
        out.append(f'    asm("{_bind(lines, outs, ins)}"\n        : {", ".join(outs)}\n        : {", ".join(ins)});')
    out.append(f"#pragma unroll\n    for (int k = 0; k < {n}; k++) r[k] = e[k];")
    out.append("}")
    return "\n".join(out)


def addsub_statements(p: int, n: int) -> dict[str, list[tuple[list[str], list[str], list[str]]]]:
    """fr_add_ptx / fr_sub_ptx (p < 2^(32n-1), inputs < p), as cios_statements.

    add: s = a + b (no carry out), d = s - p and bw = 0 - borrow; the caller takes s when bw != 0.
    sub: d = a - b, bw = 0 - borrow, then d += p & bw in place (the carry out of that addition is
    the 2^(32n) that the borrow took: it is dropped on purpose)."""
    pl = limbs(p, n)
    sv = [f"{{s[{k}]}}" for k in range(n)]
    dv = [f"{{d[{k}]}}" for k in range(n)]
    av = [f"{{a[{k}]}}" for k in range(n)]
    bv = [f"{{b[{k}]}}" for k in range(n)]
    ab_ins = [f'"r"(a[{k}])' for k in range(n)] + [f'"r"(b[{k}])' for k in range(n)]
    add1 = [f"add.cc.u32 {sv[0]}, {av[0]}, {bv[0]};"]
    add1 += [f"addc.cc.u32 {sv[k]}, {av[k]}, {bv[k]};" for k in range(1, n - 1)]
    add1.append(f"addc.u32 {sv[n - 1]}, {av[n - 1]}, {bv[n - 1]};")
    add2 = [f"sub.cc.u32 {dv[0]}, {sv[0]}, 0x{pl[0]:08x};"]
    add2 += [f"subc.cc.u32 {dv[k]}, {sv[k]}, 0x{pl[k]:08x};" for k in range(1, n)]
    add2.append("subc.u32 {bw[0]}, 0, 0;")
    sub1 = [f"sub.cc.u32 {dv[0]}, {av[0]}, {bv[0]};"]
    sub1 += [f"subc.cc.u32 {dv[k]}, {av[k]}, {bv[k]};" for k in range(1, n)]
    sub1.append("subc.u32 {bw[0]}, 0, 0;")
    sub2 = ["{", ".reg .u32 m;"]
    for k in range(n):
        sub2.append(f"and.b32 m, {{bw[0]}}, 0x{pl[k]:08x};")
        op = "add.cc" if k == 0 else ("addc" if k == n - 1 else "addc.cc")
        sub2.append(f"{op}.u32 {dv[k]}, {dv[k]}, m;")
    sub2.append("}")
    d_out = [f'"+r"(d[{k}])' for k in range(n)]
    return {
        "fr_add_ptx": [
            (add1, [f'"+r"(s[{k}])' for k in range(n)], ab_ins),
            (add2, [*d_out, '"+r"(bw[0])'], [f'"r"(s[{k}])' for k in range(n)]),
        ],
        "fr_sub_ptx": [(sub1, [*d_out, '"+r"(bw[0])'], ab_ins), (sub2, d_out, ['"r"(bw[0])'])],
    }


def gen_addsub(p: int, n: int) -> str:
    out = []
    for name, stmts in addsub_statements(p, n).items():
        args = "u32* s, u32* d, u32* bw, const u32* a, const u32* b" if name.endswith("add_ptx") else "u32* d, u32* bw, const u32* a, const u32* b"
        what = "s = a + b, d = s - p, bw = ~0 if s < p" if name.endswith("add_ptx") else "d = a - b mod p, bw = ~0 if a < b"
        out.append(f"__device__ __forceinline__ void {name}({args}) {{")
        out.append(f"    // {what}; every output zeroed by the caller (operands are all \"+r\").")
        for lines, outs, ins in stmts:
            out.append(f'    asm("{_bind(lines, outs, ins)}"\n        : {", ".join(outs)}\n        : {", ".join(ins)});')
        out.append("}")
    return "\n".join(out)


def main() -> None:
    print("// GENERATED by tools/gen_field_ptx.py: do not edit. Montgomery products with PTX carry")
    print("// chains (device only); field.cuh uses them unless GPUSCOPE_PORTABLE_MUL is defined.")
    print("#pragma once")
    print("#if defined(__CUDA_ARCH__)")
    print(gen("fr_mul_ptx", FR.p, 8))
    print()
    print(gen("fq_mul_ptx", FQ.p, 12))
    print()
    print(gen_cios("fr_mul_cios", FR.p, 8))
    print()
    print(gen_addsub(FR.p, 8))
    print("#endif")


if __name__ == "__main__":
    main()

// Host emulation of the "fusedh"/"fast2" NTT variants (gpuscope/workload/cuda/ntt.cu with
// -DGPUSCOPE_NTT_R4 / _FUSED_H / _FULL_SCALE): the kernel's passes with the same index functions
// (ntt.cuh: ntt_quad, ntt_butterfly, ntt_elem_index) and the same order of field operations,
// driven by tests/test_ntt_r4_host.py. One command per stdin line, one answer line:
//   logn np (s0 S L)*np r4 hmode roots[logn] sbase sconst vectors...
// r4: 1 = radix-4 steps as in the kernel, 0 = radix-2 only; hmode: 1 = three input vectors a b c,
// the first pass reads a*b - c; output g times sconst * sbase^g (the n-entry scale table).
// Numbers are standard-form hex. Answer: the n outputs, or "ERR <what>" when the index math is
// inconsistent (a quad's elements or twiddles differ from the radix-2 butterflies they replace).
#include <iostream>
#include <string>
#include <vector>

#include "ntt.cuh"

static fr_t parse(const std::string& hex) {
    fr_t r = fp_zero<FrParams>();
    int nib = 0;
    for (int i = (int)hex.size() - 1; i >= 0 && nib < 64; i--, nib++) {
        char ch = hex[i];
        u32 v = (ch >= '0' && ch <= '9') ? ch - '0' : (ch | 32) - 'a' + 10;
        r.v[nib / 8] |= v << (4 * (nib % 8));
    }
    return fp_to_mont(r);
}

static std::string show(const fr_t& a) {
    fr_t s = fp_from_mont(a);
    static const char* d = "0123456789abcdef";
    std::string out;
    for (int i = 7; i >= 0; i--)
        for (int k = 7; k >= 0; k--) out += d[(s.v[i] >> (4 * k)) & 15];
    return out;
}

static fr_t read_fr() {
    std::string h;
    std::cin >> h;
    return parse(h);
}

int main() {
    int logn, np;
    while (std::cin >> logn >> np) {
        std::vector<int> plan(3 * np);
        for (int& v : plan) std::cin >> v;
        int r4, hmode;
        std::cin >> r4 >> hmode;
        std::vector<fr_t> roots(logn);
        for (auto& r : roots) r = read_fr();
        fr_t sbase = read_fr(), sconst = read_fr();
        const u64 n = 1ull << logn;
        std::vector<fr_t> tw(n), a(n), hb(n), hc(n), b(n);
        tw[0] = fp_one<FrParams>();
        for (u64 t = 1; t < n; t++) {
            int s = 63 - __builtin_clzll(t);
            tw[t] = fp_pow_u64(roots[s], t - (1ull << s));
        }
        for (auto& v : a) v = read_fr();
        if (hmode) {
            for (auto& v : hb) v = read_fr();
            for (auto& v : hc) v = read_fr();
        }
        std::string err;
        for (int p = 0; p < np && err.empty(); p++) {
            const int s0 = plan[3 * p], S = plan[3 * p + 1], L = plan[3 * p + 2];
            const u32 E = 1u << (S + L);
            std::vector<fr_t> sm(E);
            std::vector<int> seen(E);
            for (u32 blk = 0; blk < (u32)(n >> (S + L)); blk++) {
                u64 hi, lowblk;
                ntt_block_coords(blk, s0, L, &hi, &lowblk);
                for (u32 e = 0; e < E; e++) {
                    u64 g = ntt_elem_index(e, hi, lowblk, s0, S, L);
                    u64 src = p == 0 ? bitrev_host((u32)g, logn) : g;
                    fr_t x = a[src];
                    if (hmode && p == 0) x = fp_sub(fp_mul(x, hb[src]), hc[src]);
                    sm[e] = x;
                }
                int ls0 = 0;
                for (; r4 && ls0 + 1 < S; ls0 += 2) {
                    const int s = s0 + ls0;
                    std::fill(seen.begin(), seen.end(), 0);
                    for (u32 q = 0; q < (E >> 2); q++) {
                        u32 ta, tb, tc, td, e0, e1, e2, e3, f0, f1, f2, f3;
                        u64 ja, jb, jc, jd;
                        ntt_quad(q, ls0, L, &ta, &tb, &tc, &td);
                        ntt_butterfly(ta, ls0, s0, L, lowblk, &e0, &e1, &ja);
                        ntt_butterfly(tb, ls0, s0, L, lowblk, &e2, &e3, &jb);
                        ntt_butterfly(tc, ls0 + 1, s0, L, lowblk, &f0, &f2, &jc);
                        ntt_butterfly(td, ls0 + 1, s0, L, lowblk, &f1, &f3, &jd);
                        if (ja != jb || f0 != e0 || f1 != e1 || f2 != e2 || f3 != e3)
                            err = "quad " + std::to_string(q) + " of stage " + std::to_string(s);
                        for (u32 e : {e0, e1, e2, e3}) seen[e]++;
                        fr_t x0 = sm[e0], x1 = sm[e1], x2 = sm[e2], x3 = sm[e3];
                        const fr_t w = tw[(1ull << s) + ja];
                        x1 = fp_mul(x1, w);
                        x3 = fp_mul(x3, w);
                        const fr_t y0 = fp_add(x0, x1), y1 = fp_sub(x0, x1);
                        fr_t y2 = fp_add(x2, x3), y3 = fp_sub(x2, x3);
                        y2 = fp_mul(y2, tw[(2ull << s) + jc]);
                        y3 = fp_mul(y3, tw[(2ull << s) + jd]);
                        sm[e0] = fp_add(y0, y2);
                        sm[e2] = fp_sub(y0, y2);
                        sm[e1] = fp_add(y1, y3);
                        sm[e3] = fp_sub(y1, y3);
                    }
                    for (u32 e = 0; e < E; e++)
                        if (seen[e] != 1) err = "element " + std::to_string(e) + " not covered once";
                }
                for (int ls = ls0; ls < S; ls++)
                    for (u32 t = 0; t < E / 2; t++) {
                        u32 e0, e1;
                        u64 j;
                        ntt_butterfly(t, ls, s0, L, lowblk, &e0, &e1, &j);
                        fr_t u = sm[e0], v = sm[e1];
                        if (j != 0) v = fp_mul(v, tw[(1ull << (s0 + ls)) + j]);
                        sm[e0] = fp_add(u, v);
                        sm[e1] = fp_sub(u, v);
                    }
                for (u32 e = 0; e < E; e++) {
                    u64 g = ntt_elem_index(e, hi, lowblk, s0, S, L);
                    fr_t x = sm[e];
                    if (p == np - 1) x = fp_mul(x, fp_mul(fp_pow_u64(sbase, g), sconst));
                    b[g] = x;
                }
            }
            a.swap(b);
        }
        if (!err.empty()) {
            std::cout << "ERR " << err << "\n";
        } else {
            for (u64 i = 0; i < n; i++) std::cout << show(a[i]) << (i + 1 < n ? " " : "\n");
        }
        std::cout.flush();
    }
    return 0;
}

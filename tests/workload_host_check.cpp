// Host build of the CUDA field/curve/NTT/MSM helper code (gpuscope/workload/cuda/*.cuh), driven by
// tests/test_workload_cuda_host.py: one command per stdin line, numbers in hex (standard form),
// one answer line per command. Build: g++ -std=c++17 -O1 -I gpuscope/workload/cuda.
#include <cstdio>
#include <cstring>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "curve.cuh"
#include "msm.cuh"
#include "ntt.cuh"

template <class P>
static Fp<P> parse(const std::string& hex) {  // standard-form hex -> Montgomery
    Fp<P> r = fp_zero<P>();
    int nib = 0;
    for (int i = (int)hex.size() - 1; i >= 0 && nib < 8 * P::N; i--, nib++) {
        char ch = hex[i];
        u32 v = (ch >= '0' && ch <= '9') ? ch - '0' : (ch | 32) - 'a' + 10;
        r.v[nib / 8] |= v << (4 * (nib % 8));
    }
    return fp_to_mont(r);
}

template <class P>
static std::string show(const Fp<P>& a) {
    Fp<P> s = fp_from_mont(a);
    std::string out;
    char buf[16];
    for (int i = P::N - 1; i >= 0; i--) {
        snprintf(buf, sizeof buf, "%08x", s.v[i]);
        out += buf;
    }
    return out;
}

static std::string show_affine(const g1_affine& p) { return show(p.x) + " " + show(p.y); }

static void limbs_of(const std::string& hex, u32* k, int n) {
    for (int i = 0; i < n; i++) k[i] = 0;
    int nib = 0;
    for (int i = (int)hex.size() - 1; i >= 0 && nib < 8 * n; i--, nib++) {
        char ch = hex[i];
        u32 v = (ch >= '0' && ch <= '9') ? ch - '0' : (ch | 32) - 'a' + 10;
        k[nib / 8] |= v << (4 * (nib % 8));
    }
}

int main() {
    std::string line;
    while (std::getline(std::cin, line)) {
        std::istringstream in(line);
        std::string cmd;
        in >> cmd;
        if (cmd == "fr" || cmd == "fq") {
            std::string op, a, b;
            in >> op >> a >> b;
            if (cmd == "fr") {
                fr_t x = parse<FrParams>(a), y = parse<FrParams>(b.empty() ? "0" : b);
                fr_t r = op == "mul" ? fp_mul(x, y) : op == "add" ? fp_add(x, y) : op == "sub" ? fp_sub(x, y)
                       : op == "inv" ? fp_inv(x) : fp_neg(x);
                std::cout << show(r) << "\n";
            } else {
                fq_t x = parse<FqParams>(a), y = parse<FqParams>(b.empty() ? "0" : b);
                fq_t r = op == "mul" ? fp_mul(x, y) : op == "add" ? fp_add(x, y) : op == "sub" ? fp_sub(x, y)
                       : op == "inv" ? fp_inv(x) : fp_neg(x);
                std::cout << show(r) << "\n";
            }
        } else if (cmd == "g1add") {  // x1 y1 x2 y2 -> xyzz+xyzz, xyzz+affine
            std::string x1, y1, x2, y2;
            in >> x1 >> y1 >> x2 >> y2;
            g1_affine p{parse<FqParams>(x1), parse<FqParams>(y1)}, q{parse<FqParams>(x2), parse<FqParams>(y2)};
            g1_affine s1 = xyzz_to_affine(xyzz_add(xyzz_from_affine(p), xyzz_from_affine(q)));
            g1_affine s2 = xyzz_to_affine(xyzz_add_affine(xyzz_from_affine(p), q));
            std::cout << show_affine(s1) << " " << show_affine(s2) << " " << affine_on_curve(s1) << "\n";
        } else if (cmd == "g1mul") {  // x y k
            std::string x, y, k;
            in >> x >> y >> k;
            u32 kl[8];
            limbs_of(k, kl, 8);
            g1_affine p{parse<FqParams>(x), parse<FqParams>(y)};
            std::cout << show_affine(xyzz_to_affine(xyzz_mul_limbs(p, kl, 8))) << "\n";
        } else if (cmd == "digits") {  // k c W
            std::string k;
            int c, W;
            in >> k >> c >> W;
            u32 kl[8];
            limbs_of(k, kl, 8);
            int d[64];
            signed_digits(kl, c, W, d);
            for (int i = 0; i < W; i++) std::cout << d[i] << (i + 1 < W ? " " : "\n");
        } else if (cmd == "pscalar") {  // seed i (decimal)
            unsigned long long seed, i;
            in >> seed >> i;
            u32 k[8];
            point_scalar(seed, i, k);
            for (int j = 7; j >= 0; j--) printf("%08x", k[j]);
            printf("\n");
            fflush(stdout);
        } else if (cmd == "ntt") {
            // ntt logn npasses (s0 S L)*npasses roots[logn] values[n]: emulates the kernel's passes
            int logn, np;
            in >> logn >> np;
            std::vector<int> plan(3 * np);
            for (int& v : plan) in >> v;
            std::vector<fr_t> roots(logn);
            for (auto& r : roots) {
                std::string h;
                in >> h;
                r = parse<FrParams>(h);
            }
            u64 n = 1ull << logn;
            std::vector<fr_t> tw(n), a(n), b(n);
            tw[0] = fp_one<FrParams>();
            for (u64 t = 1; t < n; t++) {
                int s = 63 - __builtin_clzll(t);
                tw[t] = fp_pow_u64(roots[s], t - (1ull << s));
            }
            for (auto& v : a) {
                std::string h;
                in >> h;
                v = parse<FrParams>(h);
            }
            for (int p = 0; p < np; p++) {
                int s0 = plan[3 * p], S = plan[3 * p + 1], L = plan[3 * p + 2];
                u32 E = 1u << (S + L);
                u32 blocks = (u32)(n >> (S + L));
                std::vector<fr_t> sm(E);
                for (u32 blk = 0; blk < blocks; blk++) {
                    u64 hi, lowblk;
                    ntt_block_coords(blk, s0, L, &hi, &lowblk);
                    for (u32 e = 0; e < E; e++) {
                        u64 g = ntt_elem_index(e, hi, lowblk, s0, S, L);
                        sm[e] = a[p == 0 ? bitrev_host((u32)g, logn) : g];
                    }
                    for (int ls = 0; ls < S; ls++)
                        for (u32 t = 0; t < E / 2; t++) {
                            u32 e0, e1;
                            u64 j;
                            ntt_butterfly(t, ls, s0, L, lowblk, &e0, &e1, &j);
                            fr_t u = sm[e0], v = fp_mul(sm[e1], tw[(1ull << (s0 + ls)) + j]);
                            sm[e0] = fp_add(u, v);
                            sm[e1] = fp_sub(u, v);
                        }
                    for (u32 e = 0; e < E; e++) b[ntt_elem_index(e, hi, lowblk, s0, S, L)] = sm[e];
                }
                a.swap(b);
            }
            for (u64 i = 0; i < n; i++) std::cout << show(a[i]) << (i + 1 < n ? " " : "\n");
        } else {
            std::cout << "?\n";
        }
        std::cout.flush();
    }
    return 0;
}

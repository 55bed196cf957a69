// NTTs over BLS12-381 Fr: radix-2 Cooley-Tukey passes in shared memory, twiddle tables,
// pointwise kernels for the H = (a*b - c)/Z computation.
//
// Vectors are (n, 8) uint32 Montgomery limbs. One NTT of 2^k runs as a few passes; a pass applies
// S consecutive stages [s0, s0+S) to blocks of 2^(S+L) elements that share every index bit
// outside [s0, s0+S) except the L lowest (kept together so loads stay coalesced). The first pass
// reads its input in bit-reversed order (out of place), so the result is in natural order.
//
// Twiddles: tw[2^s + j] = w_{2^(s+1)}^j for j < 2^s (w the canonical root chain), one table for
// every size up to its build size; the inverse NTT uses the table of inverse roots.
#include "ntt.cuh"

__device__ __forceinline__ u32 bitrev_bits(u32 x, int bits) {
    return bits == 0 ? 0u : (__brev(x) >> (32 - bits));
}

// out[t] = roots[s]^(t - 2^s) for t in [1, 2^logmax), s = floor(log2 t). roots[s] = w_{2^(s+1)}.
extern "C" __global__ void fr_twiddle_table(u32* tw, int logmax, const u32* roots) {
    u64 t = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    u64 n = 1ull << logmax;
    if (t >= n) return;
    if (t == 0) {
        fp_store<FrParams>(tw, 0, fp_one<FrParams>());
        return;
    }
    int s = 63 - __clzll((long long)t);
    u64 j = t - (1ull << s);
    fr_t w = fp_load<FrParams>(roots, s);
    fp_store<FrParams>(tw, t, fp_pow_u64(w, j));
}

// out[i] = c * base^(i * stride) for i < count (tables for coset shifts and evaluation points).
extern "C" __global__ void fr_power_table(u32* out, u64 count, const u32* base, u64 stride,
                                          const u32* c) {
    u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= count) return;
    fr_t b = fp_load<FrParams>(base, 0);
    fr_t v = fp_pow_u64(b, i * stride);
    fp_store<FrParams>(out, i, fp_mul(v, fp_load<FrParams>(c, 0)));
}

// Shared-memory layout: limb l of block element e at smem[l * stride + e]. The base variant uses
// stride E (runtime); -DGPUSCOPE_NTT_FAST fixes it at NTT_SMEM_STRIDE (the host then always
// allocates 32 * NTT_SMEM_STRIDE bytes and keeps E <= it), so the 16 shared loads/stores of a
// butterfly use immediate offsets instead of one address computation each, and caps registers
// at 64 per thread (4 blocks of 256 threads per SM).
#if defined(GPUSCOPE_NTT_FAST)
#define NTT_SMEM_STRIDE 1024u
#define NTT_STRIDE(E) NTT_SMEM_STRIDE
#if defined(GPUSCOPE_NTT_R4) && !defined(GPUSCOPE_NTT_T128)
// four Fr values live per thread: 64 or 80 registers spill (ptxas), 96 do not
#ifndef NTT_R4_BLOCKS_PER_SM
#define NTT_R4_BLOCKS_PER_SM 2
#endif
#define NTT_BOUNDS __launch_bounds__(256, NTT_R4_BLOCKS_PER_SM)
#elif defined(GPUSCOPE_NTT_R4)
// 128-thread blocks (the host caps them, gpu.py): 5 per SM fit 102 registers, 20 warps per SM;
// 4 per SM (variant fast2s4) fit 128 registers, 16 warps
#ifndef NTT_T128_BLOCKS_PER_SM
#define NTT_T128_BLOCKS_PER_SM 5
#endif
#define NTT_BOUNDS __launch_bounds__(128, NTT_T128_BLOCKS_PER_SM)
#else
#define NTT_BOUNDS __launch_bounds__(256, 4)
#endif
#else
#define NTT_STRIDE(E) (E)
#define NTT_BOUNDS
#endif

// One pass of S radix-2 DIT stages. Launch: grid = 2^(logn - S - L) blocks,
// dynamic shared memory 32 * 2^(S+L) bytes, any blockDim.x that divides 2^(S+L-1).
// SCALE: multiply each output g by slo[g & (2^lobits - 1)] * shi[g >> lobits] on the way out
// (the 1/n and coset factors fused into the last pass); a separate instantiation, so the plain
// passes carry no branch for it. -DGPUSCOPE_NTT_FULL_SCALE: lobits >= logn means slo holds all n
// factors and shi is unused (one Fr product per element instead of two, 32 B more read).
// HIN: the input element is (in[i] * hb[i] - hc[i]) (the H pointwise step a*b - c fused into the
// first pass of the final coset iNTT, -DGPUSCOPE_NTT_FUSED_H; its 1/Z goes into the scale table).
template <bool SCALE, bool HIN>
__device__ __forceinline__ void ntt_pass(u32* out, const u32* in, int logn, int s0, int S, int L,
                                         const u32* tw, int bitrev_input, const u32* slo,
                                         const u32* shi, int lobits, const u32* hb, const u32* hc) {
    extern __shared__ u32 smem[];
    const u32 E = 1u << (S + L);
    const u32 half = E >> 1;
    const u32 ST = NTT_STRIDE(E);
    u64 hi, lowblk;
    ntt_block_coords(blockIdx.x, s0, L, &hi, &lowblk);

    for (u32 e = threadIdx.x; e < E; e += blockDim.x) {
        u64 g = ntt_elem_index(e, hi, lowblk, s0, S, L);
        u64 src = bitrev_input ? (u64)bitrev_bits((u32)g, logn) : g;
        fr_t x = fp_load<FrParams>(in, src);
        if (HIN) x = fp_sub(fp_mul(x, fp_load<FrParams>(hb, src)), fp_load<FrParams>(hc, src));
#pragma unroll
        for (int l = 0; l < 8; l++) smem[l * ST + e] = x.v[l];
    }
    int ls0 = 0;
#if defined(GPUSCOPE_NTT_R4)
    // two stages per shared-memory round trip: each thread holds four elements and runs two
    // independent butterflies per stage (ILP), with half the barriers and shared traffic
    for (; ls0 + 1 < S; ls0 += 2) {
        __syncthreads();
        const int s = s0 + ls0;
        for (u32 q = threadIdx.x; q < (E >> 2); q += blockDim.x) {
            u32 ta, tb, tc, td, e0, e1, e2, e3, ex;
            u64 ja, jc, jd;
            ntt_quad(q, ls0, L, &ta, &tb, &tc, &td);
            ntt_butterfly(ta, ls0, s0, L, lowblk, &e0, &e1, &ja);
            ntt_butterfly(tb, ls0, s0, L, lowblk, &e2, &e3, &ja);  // same twiddle as ta
            ntt_butterfly(tc, ls0 + 1, s0, L, lowblk, &ex, &ex, &jc);
            ntt_butterfly(td, ls0 + 1, s0, L, lowblk, &ex, &ex, &jd);
            // ordered so that few Fr values are live at once (the two products of each step are
            // independent: that is the ILP)
            fr_t x0, x1, x2, x3;
#pragma unroll
            for (int l = 0; l < 8; l++) {
                x1.v[l] = smem[l * ST + e1];
                x3.v[l] = smem[l * ST + e3];
            }
            {
                const fr_t w = fp_load<FrParams>(tw, (1ull << s) + ja);  // tw[2^s] = 1: no branch
                x1 = fp_mul(x1, w);
                x3 = fp_mul(x3, w);
            }
#pragma unroll
            for (int l = 0; l < 8; l++) {
                x0.v[l] = smem[l * ST + e0];
                x2.v[l] = smem[l * ST + e2];
            }
            const fr_t y0 = fp_add(x0, x1), y1 = fp_sub(x0, x1);
            fr_t y2 = fp_add(x2, x3), y3 = fp_sub(x2, x3);
            y2 = fp_mul(y2, fp_load<FrParams>(tw, (2ull << s) + jc));
            y3 = fp_mul(y3, fp_load<FrParams>(tw, (2ull << s) + jd));
            x0 = fp_add(y0, y2);
            x2 = fp_sub(y0, y2);
            x1 = fp_add(y1, y3);
            x3 = fp_sub(y1, y3);
#pragma unroll
            for (int l = 0; l < 8; l++) {
                smem[l * ST + e0] = x0.v[l];
                smem[l * ST + e1] = x1.v[l];
                smem[l * ST + e2] = x2.v[l];
                smem[l * ST + e3] = x3.v[l];
            }
        }
    }
#endif
    for (int ls = ls0; ls < S; ls++) {
        __syncthreads();
        const int s = s0 + ls;
        for (u32 t = threadIdx.x; t < half; t += blockDim.x) {
            u32 e0, e1;
            u64 j;
            ntt_butterfly(t, ls, s0, L, lowblk, &e0, &e1, &j);
            fr_t u, v;
#pragma unroll
            for (int l = 0; l < 8; l++) {
                u.v[l] = smem[l * ST + e0];
                v.v[l] = smem[l * ST + e1];
            }
            if (j != 0) v = fp_mul(v, fp_load<FrParams>(tw, (1ull << s) + j));
            fr_t x0 = fp_add(u, v);
            fr_t x1 = fp_sub(u, v);
#pragma unroll
            for (int l = 0; l < 8; l++) {
                smem[l * ST + e0] = x0.v[l];
                smem[l * ST + e1] = x1.v[l];
            }
        }
    }
    __syncthreads();
    for (u32 e = threadIdx.x; e < E; e += blockDim.x) {
        u64 g = ntt_elem_index(e, hi, lowblk, s0, S, L);
        fr_t x;
#pragma unroll
        for (int l = 0; l < 8; l++) x.v[l] = smem[l * ST + e];
        if (SCALE) {
#if defined(GPUSCOPE_NTT_FULL_SCALE)
            if (lobits >= logn)  // one factor per element (slo has n entries): one product, not two
                x = fp_mul(x, fp_load<FrParams>(slo, g));
            else
#endif
                x = fp_mul(x, fp_mul(fp_load<FrParams>(slo, g & ((1ull << lobits) - 1)),
                                     fp_load<FrParams>(shi, g >> lobits)));
        }
        fp_store<FrParams>(out, g, x);
    }
}

extern "C" __global__ void NTT_BOUNDS fr_ntt_pass(u32* out, const u32* in, int logn, int s0, int S, int L,
                                       const u32* tw, int bitrev_input) {
    ntt_pass<false, false>(out, in, logn, s0, S, L, tw, bitrev_input, nullptr, nullptr, 0, nullptr, nullptr);
}

extern "C" __global__ void NTT_BOUNDS fr_ntt_pass_scaled(u32* out, const u32* in, int logn, int s0, int S,
                                              int L, const u32* tw, int bitrev_input,
                                              const u32* slo, const u32* shi, int lobits) {
    ntt_pass<true, false>(out, in, logn, s0, S, L, tw, bitrev_input, slo, shi, lobits, nullptr, nullptr);
}

#if defined(GPUSCOPE_NTT_FUSED_H)
// First pass of H's final coset iNTT reading (a*b - c) straight from the three coset evaluations
// (no separate pointwise kernel); _scaled when that first pass is also the last (n <= 2^10).
extern "C" __global__ void NTT_BOUNDS fr_ntt_pass_h(u32* out, const u32* a, int logn, int s0, int S, int L,
                                         const u32* tw, int bitrev_input, const u32* b,
                                         const u32* c) {
    ntt_pass<false, true>(out, a, logn, s0, S, L, tw, bitrev_input, nullptr, nullptr, 0, b, c);
}

extern "C" __global__ void NTT_BOUNDS fr_ntt_pass_h_scaled(u32* out, const u32* a, int logn, int s0, int S,
                                                int L, const u32* tw, int bitrev_input,
                                                const u32* slo, const u32* shi, int lobits,
                                                const u32* b, const u32* c) {
    ntt_pass<true, true>(out, a, logn, s0, S, L, tw, bitrev_input, slo, shi, lobits, b, c);
}
#endif

// x[i] *= lo[i & (2^lobits - 1)] * hi[i >> lobits]: multiplies by c * g^i given
// lo[j] = c * g^j and hi[k] = g^(k * 2^lobits).
extern "C" __global__ void fr_scale_powers(u32* out, const u32* x, u64 n, const u32* lo,
                                           const u32* hi, int lobits) {
    u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    fr_t f = fp_mul(fp_load<FrParams>(lo, i & ((1ull << lobits) - 1)),
                    fp_load<FrParams>(hi, i >> lobits));
    fp_store<FrParams>(out, i, fp_mul(fp_load<FrParams>(x, i), f));
}

// out = (a*b - c) * zinv (pointwise, on the coset).
extern "C" __global__ void fr_h_pointwise(u32* out, const u32* a, const u32* b, const u32* c,
                                          u64 n, const u32* zinv) {
    u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    fr_t ab = fp_mul(fp_load<FrParams>(a, i), fp_load<FrParams>(b, i));
    fr_t d = fp_sub(ab, fp_load<FrParams>(c, i));
    fp_store<FrParams>(out, i, fp_mul(d, fp_load<FrParams>(zinv, 0)));
}

extern "C" __global__ void fr_mul_vec(u32* out, const u32* a, const u32* b, u64 n) {
    u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    fp_store<FrParams>(out, i, fp_mul(fp_load<FrParams>(a, i), fp_load<FrParams>(b, i)));
}

// mode 0: to Montgomery form (x * R), mode 1: out of Montgomery form (x / R).
extern "C" __global__ void fr_convert(u32* out, const u32* x, u64 n, int mode) {
    u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    fr_t v = fp_load<FrParams>(x, i);
    fp_store<FrParams>(out, i, mode == 0 ? fp_to_mont(v) : fp_from_mont(v));
}

// Partial sums of coeffs[i] * z^i (z^i = lo[i & mask] * hi[i >> lobits]): one per block,
// reduced on the host (used by the self-check to evaluate polynomials at random points).
extern "C" __global__ void fr_eval_partial(u32* partial, const u32* coeffs, u64 n, const u32* lo,
                                           const u32* hi, int lobits) {
    __shared__ u32 acc[256 * 8];
    fr_t s = fp_zero<FrParams>();
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
        fr_t zi = fp_mul(fp_load<FrParams>(lo, i & ((1ull << lobits) - 1)),
                         fp_load<FrParams>(hi, i >> lobits));
        s = fp_add(s, fp_mul(fp_load<FrParams>(coeffs, i), zi));
    }
#pragma unroll
    for (int l = 0; l < 8; l++) acc[l * 256 + threadIdx.x] = s.v[l];
    for (int w = blockDim.x / 2; w > 0; w >>= 1) {
        __syncthreads();
        if (threadIdx.x < w) {
            fr_t a, b;
#pragma unroll
            for (int l = 0; l < 8; l++) {
                a.v[l] = acc[l * 256 + threadIdx.x];
                b.v[l] = acc[l * 256 + threadIdx.x + w];
            }
            a = fp_add(a, b);
#pragma unroll
            for (int l = 0; l < 8; l++) acc[l * 256 + threadIdx.x] = a.v[l];
        }
    }
    if (threadIdx.x == 0) {
        fr_t r;
#pragma unroll
        for (int l = 0; l < 8; l++) r.v[l] = acc[l * 256];
        fp_store<FrParams>(partial, blockIdx.x, r);
    }
}

// out[i] = x[i] * c (one constant).
extern "C" __global__ void fr_scale_const(u32* out, const u32* x, u64 n, const u32* c) {
    u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    fp_store<FrParams>(out, i, fp_mul(fp_load<FrParams>(x, i), fp_load<FrParams>(c, 0)));
}

// BLS12-381 prime fields on 32-bit limbs, Montgomery form: Fr (8 limbs) and Fq (12 limbs).
//
// Layout (shared with gpuscope/workload/field.py): little-endian uint32 limbs, every stored value
// fully reduced to [0, p), Montgomery form x*2^(32N) mod p. The code is __host__ __device__ and
// needs no headers, so it compiles under NVRTC (CuPy), nvcc for sm_90, and as host C++ (tests).
#pragma once

typedef unsigned int u32;
typedef unsigned long long u64;

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define HD __host__ __device__ __forceinline__
// Out-of-line on the device: Fq multiplication and the curve formulas are large, and inlining
// every call multiplies compile time (minutes) and code size for no speed.
#define HDN __host__ __device__ __noinline__
#else
#define HD inline
#define HDN inline
#endif

struct FrParams {
    static constexpr int N = 8;
    static constexpr u32 INV = 0xffffffffu;  // -p^-1 mod 2^32
    static HD u32 p(int i) {
        constexpr u32 v[8] = {0x00000001u, 0xffffffffu, 0xfffe5bfeu, 0x53bda402u,
                              0x09a1d805u, 0x3339d808u, 0x299d7d48u, 0x73eda753u};
        return v[i];
    }
    static HD u32 one(int i) {  // R mod p
        constexpr u32 v[8] = {0xfffffffeu, 0x00000001u, 0x00034802u, 0x5884b7fau,
                              0xecbc4ff5u, 0x998c4fefu, 0xacc5056fu, 0x1824b159u};
        return v[i];
    }
    static HD u32 r2(int i) {  // R^2 mod p
        constexpr u32 v[8] = {0xf3f29c6du, 0xc999e990u, 0x87925c23u, 0x2b6cedcbu,
                              0x7254398fu, 0x05d31496u, 0x9f59ff11u, 0x0748d9d9u};
        return v[i];
    }
};

struct FqParams {
    static constexpr int N = 12;
    static constexpr u32 INV = 0xfffcfffdu;
    static HD u32 p(int i) {
        constexpr u32 v[12] = {0xffffaaabu, 0xb9feffffu, 0xb153ffffu, 0x1eabfffeu,
                               0xf6b0f624u, 0x6730d2a0u, 0xf38512bfu, 0x64774b84u,
                               0x434bacd7u, 0x4b1ba7b6u, 0x397fe69au, 0x1a0111eau};
        return v[i];
    }
    static HD u32 one(int i) {
        constexpr u32 v[12] = {0x0002fffdu, 0x76090000u, 0xc40c0002u, 0xebf4000bu,
                               0x53c758bau, 0x5f489857u, 0x70525745u, 0x77ce5853u,
                               0xa256ec6du, 0x5c071a97u, 0xfa80e493u, 0x15f65ec3u};
        return v[i];
    }
    static HD u32 r2(int i) {
        constexpr u32 v[12] = {0x1c341746u, 0xf4df1f34u, 0x09d104f1u, 0x0a76e6a6u,
                               0x4c95b6d5u, 0x8de5476cu, 0x939d83c0u, 0x67eb88a9u,
                               0xb519952du, 0x9a793e85u, 0x92cae3aau, 0x11988fe5u};
        return v[i];
    }
};

template <class P>
struct Fp {
    u32 v[P::N];
};

typedef Fp<FrParams> fr_t;
typedef Fp<FqParams> fq_t;

template <class P>
HD Fp<P> fp_zero() {
    Fp<P> r;
#pragma unroll
    for (int i = 0; i < P::N; i++) r.v[i] = 0;
    return r;
}

template <class P>
HD Fp<P> fp_one() {
    Fp<P> r;
#pragma unroll
    for (int i = 0; i < P::N; i++) r.v[i] = P::one(i);
    return r;
}

template <class P>
HD bool fp_is_zero(const Fp<P>& a) {
    u32 acc = 0;
#pragma unroll
    for (int i = 0; i < P::N; i++) acc |= a.v[i];
    return acc == 0;
}

template <class P>
HD bool fp_eq(const Fp<P>& a, const Fp<P>& b) {
    u32 acc = 0;
#pragma unroll
    for (int i = 0; i < P::N; i++) acc |= a.v[i] ^ b.v[i];
    return acc == 0;
}

// r = t - p if t >= p (t given as N limbs plus a carry limb `hi`), else t.
template <class P>
HD void fp_reduce_once(Fp<P>& r, const u32* t, u32 hi) {
    u32 d[P::N];
    u64 borrow = 0;
#pragma unroll
    for (int i = 0; i < P::N; i++) {
        u64 s = (u64)t[i] - P::p(i) - borrow;
        d[i] = (u32)s;
        borrow = (s >> 32) & 1;
    }
    bool take = hi != 0 || borrow == 0;
#pragma unroll
    for (int i = 0; i < P::N; i++) r.v[i] = take ? d[i] : t[i];
}

// -DGPUSCOPE_FR_PTX_ADDSUB (the "fast" NTT variant): Fr addition and subtraction as PTX carry
// chains (field_ptx.cuh, generated; Fr is the only 8-limb field), device only; inputs < p.
#if defined(__CUDA_ARCH__) && defined(GPUSCOPE_FR_PTX_ADDSUB)
#define GPUSCOPE_FR_ADDSUB_PTX(N) ((N) == 8)
#else
#define GPUSCOPE_FR_ADDSUB_PTX(N) false
#endif
#include "field_ptx.cuh"

template <class P>
HD Fp<P> fp_add(const Fp<P>& a, const Fp<P>& b) {
#if defined(__CUDA_ARCH__) && defined(GPUSCOPE_FR_PTX_ADDSUB)
    if constexpr (GPUSCOPE_FR_ADDSUB_PTX(P::N)) {
        u32 s[8] = {0, 0, 0, 0, 0, 0, 0, 0}, d[8] = {0, 0, 0, 0, 0, 0, 0, 0}, bw[1] = {0};
        fr_add_ptx(s, d, bw, a.v, b.v);
        Fp<P> r;
#pragma unroll
        for (int i = 0; i < 8; i++) r.v[i] = bw[0] ? s[i] : d[i];
        return r;
    }
#endif
    u32 t[P::N];
    u64 c = 0;
#pragma unroll
    for (int i = 0; i < P::N; i++) {
        u64 s = (u64)a.v[i] + b.v[i] + c;
        t[i] = (u32)s;
        c = s >> 32;
    }
    Fp<P> r;
    fp_reduce_once<P>(r, t, (u32)c);
    return r;
}

template <class P>
HD Fp<P> fp_sub(const Fp<P>& a, const Fp<P>& b) {
#if defined(__CUDA_ARCH__) && defined(GPUSCOPE_FR_PTX_ADDSUB)
    if constexpr (GPUSCOPE_FR_ADDSUB_PTX(P::N)) {
        Fp<P> r;
        u32 bw[1] = {0};
#pragma unroll
        for (int i = 0; i < 8; i++) r.v[i] = 0;
        fr_sub_ptx(r.v, bw, a.v, b.v);
        return r;
    }
#endif
    u32 t[P::N];
    u64 borrow = 0;
#pragma unroll
    for (int i = 0; i < P::N; i++) {
        u64 s = (u64)a.v[i] - b.v[i] - borrow;
        t[i] = (u32)s;
        borrow = (s >> 32) & 1;
    }
    u32 mask = borrow ? 0xffffffffu : 0u;
    Fp<P> r;
    u64 c = 0;
#pragma unroll
    for (int i = 0; i < P::N; i++) {
        u64 s = (u64)t[i] + (P::p(i) & mask) + c;
        r.v[i] = (u32)s;
        c = s >> 32;
    }
    return r;
}

template <class P>
HD Fp<P> fp_neg(const Fp<P>& a) {
    return fp_is_zero(a) ? a : fp_sub(fp_zero<P>(), a);
}

template <class P>
HD Fp<P> fp_dbl(const Fp<P>& a) {
    return fp_add(a, a);
}


// Montgomery multiplication: on the device, Fr uses PTX carry chains (field_ptx.cuh, generated;
// measured 7% faster NTTs on an H200) and Fq the portable CIOS code (the PTX version measured 8%
// slower MSMs; -DGPUSCOPE_PTX_FQ selects it). The host, or -DGPUSCOPE_PORTABLE_MUL, uses portable
// CIOS (coarsely integrated operand scanning) for both. -DGPUSCOPE_FR_CIOS selects the even/odd
// CIOS carry-chain product for Fr (fewer carry propagations than the SOS form).
#if defined(GPUSCOPE_PTX_FQ)
#define GPUSCOPE_PTX_LIMBS(N) ((N) == 8 || (N) == 12)
#else
#define GPUSCOPE_PTX_LIMBS(N) ((N) == 8)
#endif
template <class P>
HD Fp<P> fp_mul_impl(const Fp<P>& a, const Fp<P>& b) {
    constexpr int N = P::N;
#if defined(__CUDA_ARCH__) && !defined(GPUSCOPE_PORTABLE_MUL)
#if defined(GPUSCOPE_FR_CIOS)
    // even/odd CIOS product (tools/gen_field_ptx.py): no carry runs to the top limb; needs a < p
    // (every stored value is), result < 2p. Selected by the "cios"/"fast" NTT variants.
    if constexpr (N == 8) {
        Fp<P> r;
        u32 w[N];
        fr_mul_cios(w, a.v, b.v);
        fp_reduce_once<P>(r, w, 0u);
        return r;
    } else
#endif
    if constexpr (GPUSCOPE_PTX_LIMBS(N)) {
        u32 w[2 * N + 1];
#pragma unroll
        for (int i = 0; i < 2 * N + 1; i++) w[i] = 0;
        if constexpr (N == 8)
            fr_mul_ptx(w, a.v, b.v);
        else
            fq_mul_ptx(w, a.v, b.v);
        Fp<P> r;
        fp_reduce_once<P>(r, w + N, w[2 * N]);
        return r;
    } else
#endif
    {
        u32 t[N + 2];
#pragma unroll
        for (int i = 0; i < N + 2; i++) t[i] = 0;
#pragma unroll
        for (int i = 0; i < N; i++) {
            u64 c = 0;
#pragma unroll
            for (int j = 0; j < N; j++) {
                u64 s = (u64)a.v[j] * b.v[i] + t[j] + c;
                t[j] = (u32)s;
                c = s >> 32;
            }
            u64 s = (u64)t[N] + c;
            t[N] = (u32)s;
            t[N + 1] = (u32)(s >> 32);
            u32 m = t[0] * P::INV;
            s = (u64)m * P::p(0) + t[0];
            c = s >> 32;
#pragma unroll
            for (int j = 1; j < N; j++) {
                s = (u64)m * P::p(j) + t[j] + c;
                t[j - 1] = (u32)s;
                c = s >> 32;
            }
            s = (u64)t[N] + c;
            t[N - 1] = (u32)s;
            t[N] = t[N + 1] + (u32)(s >> 32);
        }
        Fp<P> r;
        fp_reduce_once<P>(r, t, t[N]);
        return r;
    }
}

HDN fq_t fq_mul_outline(fq_t a, fq_t b) { return fp_mul_impl<FqParams>(a, b); }

template <class P>
HD Fp<P> fp_mul(const Fp<P>& a, const Fp<P>& b) {
    if constexpr (P::N == 12)
        return fq_mul_outline(a, b);
    else
        return fp_mul_impl<P>(a, b);
}

template <class P>
HD Fp<P> fp_sqr(const Fp<P>& a) {
    return fp_mul(a, a);
}

template <class P>
HD Fp<P> fp_to_mont(const Fp<P>& a) {
    Fp<P> r2;
#pragma unroll
    for (int i = 0; i < P::N; i++) r2.v[i] = P::r2(i);
    return fp_mul(a, r2);
}

template <class P>
HD Fp<P> fp_from_mont(const Fp<P>& a) {
    Fp<P> one = fp_zero<P>();
    one.v[0] = 1;
    return fp_mul(a, one);
}

// a^(p-2) (Fermat); 0 -> 0.
template <class P>
HDN Fp<P> fp_inv(Fp<P> a) {
    // exponent p - 2 (borrow propagated: Fr's lowest limb is 1), scanned from the top bit.
    u32 e_limbs[P::N];
    u64 borrow = 2;
    for (int i = 0; i < P::N; i++) {
        u64 s = (u64)P::p(i) - borrow;
        e_limbs[i] = (u32)s;
        borrow = (s >> 32) & 1;
    }
    Fp<P> acc = fp_one<P>();
    for (int i = P::N - 1; i >= 0; i--) {
        u32 e = e_limbs[i];
        for (int b = 31; b >= 0; b--) {
            acc = fp_sqr(acc);
            if ((e >> b) & 1) acc = fp_mul(acc, a);
        }
    }
    return acc;
}

// a^e for a small exponent (e < 2^64).
template <class P>
HD Fp<P> fp_pow_u64(const Fp<P>& a, u64 e) {
    Fp<P> acc = fp_one<P>();
    Fp<P> base = a;
    while (e) {
        if (e & 1) acc = fp_mul(acc, base);
        base = fp_sqr(base);
        e >>= 1;
    }
    return acc;
}

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
// 16-byte vector loads/stores of a whole element (elements are 32 or 48 bytes, 16-aligned).
template <class P>
__device__ __forceinline__ Fp<P> fp_load(const u32* base, u64 idx) {
    Fp<P> r;
    const uint4* src = reinterpret_cast<const uint4*>(base + idx * P::N);
#pragma unroll
    for (int k = 0; k < P::N / 4; k++) {
        uint4 q = src[k];
        r.v[4 * k] = q.x;
        r.v[4 * k + 1] = q.y;
        r.v[4 * k + 2] = q.z;
        r.v[4 * k + 3] = q.w;
    }
    return r;
}

template <class P>
__device__ __forceinline__ void fp_store(u32* base, u64 idx, const Fp<P>& a) {
    uint4* dst = reinterpret_cast<uint4*>(base + idx * P::N);
#pragma unroll
    for (int k = 0; k < P::N / 4; k++)
        dst[k] = make_uint4(a.v[4 * k], a.v[4 * k + 1], a.v[4 * k + 2], a.v[4 * k + 3]);
}
#endif

// G1 multi-scalar multiplication (Pippenger), batch_add and point generation for BLS12-381.
//
// MSM over n points with scalars (n, 8) in standard form (< r), window width c, W windows:
//   1. msm_count:   signed c-bit digits d in [-2^(c-1), 2^(c-1)]; count entries per bucket
//                   (bucket id = w * 2^(c-1) + |d| - 1; digit 0 has no bucket).
//   2. exclusive scan of the counts (host side, CuPy) -> bucket starts.
//   3. msm_scatter: counting sort: each (bucket, point) pair lands in its bucket's range as
//                   point index | sign << 31.
//   4. msm_chunk_sum: bucket sums in chunks of at most CH entries (one thread each), then the
//                   chunks' partial sums again in chunks, until one partial per bucket is left
//                   (msm_gather_buckets), so crowded buckets do not serialise on one thread.
//   5. msm_bucket_reduce: per window, segments of buckets reduced by running sums into
//                   sum_b (b+1) * B_b; then xyzz_reduce_rows adds segments per window.
//   6. msm_finish:  Horner over windows (c doublings each), result to affine.
#include "curve.cuh"
#include "msm.cuh"

#define MSM_MAX_WINDOWS 64

__device__ __forceinline__ void load_scalar(const u32* scalars, u64 i, u32* k) {
    const uint4* src = reinterpret_cast<const uint4*>(scalars + i * 8);
    uint4 a = src[0], b = src[1];
    k[0] = a.x; k[1] = a.y; k[2] = a.z; k[3] = a.w;
    k[4] = b.x; k[5] = b.y; k[6] = b.z; k[7] = b.w;
}

// Calls f(slot, entry) for each nonzero signed c-bit digit d of scalar i (thread i, not skipped):
// slot = the bucket of (window w, |d|) = w * 2^(c-1) + |d| - 1, entry = i with the sign of d in bit
// 31. The count and scatter passes of the bucket sort must see the same digits: both use this.
// skip (nullable): points whose byte is nonzero are left out (the tail MSM skips batch_add's).
template <typename F>
__device__ __forceinline__ void msm_for_each_digit(const u32* scalars, const unsigned char* skip,
                                                   u64 n, int c, int W, F f) {
    u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    if (skip && skip[i]) return;
    u32 k[8];
    load_scalar(scalars, i, k);
    int d[MSM_MAX_WINDOWS];
    signed_digits(k, c, W, d);
    const u32 nbw = 1u << (c - 1);
    for (int w = 0; w < W; w++) {
        if (d[w] == 0) continue;
        u32 mag = d[w] < 0 ? -d[w] : d[w];
        f(w * nbw + mag - 1, (u32)i | (d[w] < 0 ? 0x80000000u : 0u));
    }
}

extern "C" __global__ void msm_count(u32* counts, const u32* scalars, const unsigned char* skip,
                                     u64 n, int c, int W) {
    msm_for_each_digit(scalars, skip, n, c, W, [&](u32 slot, u32) { atomicAdd(&counts[slot], 1u); });
}

extern "C" __global__ void msm_scatter(u32* entries, u32* cursor, const u32* scalars,
                                       const unsigned char* skip, u64 n, int c, int W) {
    msm_for_each_digit(scalars, skip, n, c, W,
                       [&](u32 slot, u32 entry) { entries[atomicAdd(&cursor[slot], 1u)] = entry; });
}

// Bucket sums in chunks, so a bucket holding many entries (the top window's few buckets, or
// equal scalars) is summed by many threads. Chunk t belongs to bucket bucket_of[t] and covers
// items [starts[b] + (t - chunk_starts[b]) * CH, ...) up to CH of them, capped at starts[b + 1].
// mode 0: items are entries (point index | sign << 31) into affine points;
// mode 1: items are XYZZ partial sums from the previous level (contiguous per bucket).
extern "C" __global__ void msm_chunk_sum(u32* out, const u32* items, const u32* points,
                                         const u32* starts, const u32* chunk_starts,
                                         const u32* bucket_of, u32 nchunks, u32 CH, int mode) {
    u32 t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= nchunks) return;
    u32 b = bucket_of[t];
    u32 lo = starts[b] + (t - chunk_starts[b]) * CH;
    u32 hi = min(lo + CH, starts[b + 1]);
    g1_xyzz acc = xyzz_inf();
    if (mode == 0) {
        for (u32 k = lo; k < hi; k++) {
            u32 e = items[k];
            g1_affine p = affine_load(points, e & 0x7fffffffu);
            if (e >> 31) p.y = fp_neg(p.y);
            acc = xyzz_add_affine(acc, p);
        }
    } else {
        for (u32 k = lo; k < hi; k++) acc = xyzz_add(acc, xyzz_load(items, k));
    }
    xyzz_store(out, t, acc);
}

// buckets[b] = partial[starts[b]] when bucket b has one partial left, infinity when it has none.
extern "C" __global__ void msm_gather_buckets(u32* buckets, const u32* partial, const u32* starts,
                                              u32 nb) {
    u32 b = blockIdx.x * blockDim.x + threadIdx.x;
    if (b >= nb) return;
    g1_xyzz v = starts[b + 1] > starts[b] ? xyzz_load(partial, starts[b]) : xyzz_inf();
    xyzz_store(buckets, b, v);
}

// Per window w (blockIdx.y) and segment s (threads over blockIdx.x): buckets [s*len, (s+1)*len)
// of window w, digit of bucket b = b + 1. out[w * segs + s] = sum_b (b+1) * B_b over the segment,
// computed as running sums (tot = sum (b - lo + 1) B_b, run = sum B_b) plus lo * run.
extern "C" __global__ void msm_bucket_reduce(u32* out, const u32* buckets, u32 nbw, u32 segs) {
    u32 s = blockIdx.x * blockDim.x + threadIdx.x;
    u32 w = blockIdx.y;
    if (s >= segs) return;
    u32 len = nbw / segs;
    u32 lo = s * len;
    const u64 base = (u64)w * nbw;
    g1_xyzz run = xyzz_inf(), tot = xyzz_inf();
    for (int b = (int)(lo + len) - 1; b >= (int)lo; b--) {
        run = xyzz_add(run, xyzz_load(buckets, base + b));
        tot = xyzz_add(tot, run);
    }
    // tot += lo * run  (double-and-add over the bits of lo)
    g1_xyzz m = xyzz_inf();
    for (int bit = 31; bit >= 0; bit--) {
        m = xyzz_dbl(m);
        if ((lo >> bit) & 1) m = xyzz_add(m, run);
    }
    tot = xyzz_add(tot, m);
    xyzz_store(out, (u64)w * segs + s, tot);
}

// One halving step of a row-wise sum: buf[row*cols + i] += buf[row*cols + i + half], i < half.
extern "C" __global__ void xyzz_reduce_rows(u32* buf, u32 rows, u32 cols, u32 half) {
    u64 t = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= (u64)rows * half) return;
    u64 row = t / half, i = t % half;
    u64 a = row * cols + i;
    xyzz_store(buf, a, xyzz_add(xyzz_load(buf, a), xyzz_load(buf, a + half)));
}

// result = sum_w 2^(c*w) * win[w * stride] (Horner from the top window); written affine.
extern "C" __global__ void msm_finish(u32* out_affine, const u32* win, int W, int c, u32 stride) {
    if (blockIdx.x != 0 || threadIdx.x != 0) return;
    g1_xyzz acc = xyzz_load(win, (u64)(W - 1) * stride);
    for (int w = W - 2; w >= 0; w--) {
        for (int k = 0; k < c; k++) acc = xyzz_dbl(acc);
        acc = xyzz_add(acc, xyzz_load(win, (u64)w * stride));
    }
    affine_store(out_affine, 0, xyzz_to_affine(acc));
}

// batch_add: partial[t] = sum of selected points i = t, t + T, t + 2T, ... (T = total threads).
extern "C" __global__ void g1_batch_add_partial(u32* partial, const u32* points,
                                                const unsigned char* bitmap, u64 n) {
    u64 t = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    u64 T = (u64)gridDim.x * blockDim.x;
    g1_xyzz acc = xyzz_inf();
    for (u64 i = t; i < n; i += T)
        if (bitmap[i]) acc = xyzz_add_affine(acc, affine_load(points, i));
    xyzz_store(partial, t, acc);
}

extern "C" __global__ void g1_xyzz_to_affine(u32* out, const u32* in, u64 n) {
    u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    affine_store(out, i, xyzz_to_affine(xyzz_load(in, i)));
}

// table[w * 256 + d] = d * 2^(8w) * G (affine), w < 32, d < 256: the fixed-base comb table.
extern "C" __global__ void g1_gen_table(u32* table, const u32* gen_affine) {
    u32 t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= 32 * 256) return;
    u32 w = t >> 8, d = t & 255;
    u32 k[9] = {0, 0, 0, 0, 0, 0, 0, 0, 0};
    u32 bit = 8 * w;
    k[bit >> 5] = d << (bit & 31);
    g1_affine g = affine_load(gen_affine, 0);
    affine_store(table, t, xyzz_to_affine(xyzz_mul_limbs(g, k, 8)));
}

// out[i] = k_(start+i) * G = sum_w table[w][byte w of k].
extern "C" __global__ void g1_gen_points(u32* out, const u32* table, u64 seed, u64 start, u64 n) {
    u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    u32 k[8];
    point_scalar(seed, start + i, k);
    g1_xyzz acc = xyzz_inf();
    for (int w = 0; w < 32; w++) {
        u32 byte = (k[w >> 2] >> (8 * (w & 3))) & 255u;
        if (byte) acc = xyzz_add_affine(acc, affine_load(table, w * 256 + byte));
    }
    affine_store(out, i, xyzz_to_affine(acc));
}

// flags[i] = 1 if point i is on the curve (infinity counts as on it).
extern "C" __global__ void g1_on_curve(unsigned char* flags, const u32* points, u64 n) {
    u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    flags[i] = affine_on_curve(affine_load(points, i)) ? 1 : 0;
}

// flags[i] = 1 if r * P_i is infinity (subgroup membership; slow: one 255-bit ladder per point).
extern "C" __global__ void g1_in_subgroup(unsigned char* flags, const u32* points, u64 n) {
    u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    g1_affine p = affine_load(points, i);
    const u32 r[8] = {0x00000001u, 0xffffffffu, 0xfffe5bfeu, 0x53bda402u,
                      0x09a1d805u, 0x3339d808u, 0x299d7d48u, 0x73eda753u};
    flags[i] = (affine_on_curve(p) && xyzz_is_inf(xyzz_mul_limbs(p, r, 8))) ? 1 : 0;
}

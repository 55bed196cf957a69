// Scalar-side helpers of the MSM and the point generator, __host__ __device__ so the host test
// checks them against Python: signed window digits and the splitmix64 point scalars.
#pragma once
#include "field.cuh"

// All W signed c-bit digits of a 256-bit scalar (8 little-endian limbs):
// k = sum_i d_i 2^(c*i), d_i in [-2^(c-1), 2^(c-1)]. W must cover the scalar plus its last carry
// (W*c >= 256 for scalars < r < 2^255).
HD void signed_digits(const u32* k, int c, int W, int* out) {
    int carry = 0;
    for (int i = 0; i < W; i++) {
        int bit = i * c;
        int limb = bit >> 5, off = bit & 31;
        u64 word = (u64)(limb < 8 ? k[limb] : 0u) | ((u64)(limb + 1 < 8 ? k[limb + 1] : 0u) << 32);
        int raw = (int)((word >> off) & ((1ull << c) - 1));
        int d = raw + carry;
        if (d > (1 << (c - 1))) {
            d -= (1 << c);
            carry = 1;
        } else {
            carry = 0;
        }
        out[i] = d;
    }
}

HD u64 splitmix64(u64 seed, u64 ctr) {
    u64 z = seed + (ctr + 1) * 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

// k_i as 8 limbs: 254 bits of splitmix64 words 4i..4i+3, 0 -> 1 (as curve.point_scalars).
HD void point_scalar(u64 seed, u64 i, u32* k) {
    u32 acc = 0;
    for (int j = 0; j < 4; j++) {
        u64 w = splitmix64(seed, 4 * i + j);
        k[2 * j] = (u32)w;
        k[2 * j + 1] = (u32)(w >> 32);
    }
    k[7] &= 0x3fffffffu;
    for (int j = 0; j < 8; j++) acc |= k[j];
    if (acc == 0) k[0] = 1;
}

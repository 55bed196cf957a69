// Index arithmetic of one NTT pass, shared by the kernel (ntt.cu) and the host emulation that
// tests it on the CPU. A pass applies stages [s0, s0+S) to blocks of E = 2^(S+L) elements:
// element e of block (hi, lowblk) is global index
//     g = hi << (s0+S) | (e >> L) << s0 | lowblk << L | (e & (2^L - 1)),
// and butterfly t of local stage ls pairs elements e0, e1 = e0 + 2^(ls+L) with twiddle
// tw[2^(s0+ls) + j], j = g(e0) mod 2^(s0+ls).
#pragma once
#include "field.cuh"

HD u64 ntt_elem_index(u32 e, u64 hi, u64 lowblk, int s0, int S, int L) {
    u64 jj = (u64)(e >> L);
    return (hi << (s0 + S)) | (jj << s0) | (lowblk << L) | (u64)(e & ((1u << L) - 1));
}

HD void ntt_butterfly(u32 t, int ls, int s0, int L, u64 lowblk, u32* e0, u32* e1, u64* j) {
    u32 lo = t & ((1u << L) - 1);
    u32 bj = t >> L;
    u32 jlow = bj & ((1u << ls) - 1);
    u32 jj0 = ((bj >> ls) << (ls + 1)) | jlow;
    *e0 = (jj0 << L) | lo;
    *e1 = *e0 + (1u << (ls + L));
    *j = ((u64)jlow << s0) | (lowblk << L) | lo;
}

HD void ntt_block_coords(u32 b, int s0, int L, u64* hi, u64* lowblk) {
    int lowbits = s0 - L;
    *lowblk = b & ((1u << lowbits) - 1);
    *hi = (u64)(b >> lowbits);
}

HD u32 bitrev_host(u32 x, int bits) {
    u32 r = 0;
    for (int i = 0; i < bits; i++) r |= ((x >> i) & 1u) << (bits - 1 - i);
    return r;
}

// Radix-4 step (-DGPUSCOPE_NTT_R4): local stages ls and ls+1 at once on the four elements
// e, e+h, e+2h, e+3h (h = 2^(ls+L)), e = quad index q with two zero bits inserted at ls+L.
// Returns the radix-2 butterfly indices t (for ntt_butterfly) of the four butterflies:
// stage ls: ta on (e, e+h), tb on (e+2h, e+3h); stage ls+1: tc on (e, e+2h), td on (e+h, e+3h).
// ta and tb always get the same twiddle (they differ only above bit ls of the stage index).
HD u32 ntt_drop_bit(u32 e0, int p) {  // inverse of the zero-bit insertion in ntt_butterfly
    return ((e0 >> (p + 1)) << p) | (e0 & ((1u << p) - 1));
}

HD void ntt_quad(u32 q, int ls, int L, u32* ta, u32* tb, u32* tc, u32* td) {
    const int p = ls + L;
    const u32 h = 1u << p;
    const u32 e = ((q >> p) << (p + 2)) | (q & (h - 1));
    *ta = ntt_drop_bit(e, p);
    *tb = ntt_drop_bit(e + 2 * h, p);
    *tc = ntt_drop_bit(e, p + 1);
    *td = ntt_drop_bit(e + h, p + 1);
}

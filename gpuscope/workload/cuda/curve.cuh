// BLS12-381 G1 (y^2 = x^3 + 4 over Fq) in affine and XYZZ coordinates.
//
// Affine points are (x, y) in Montgomery form; (0, 0) is the point at infinity (it is not on the
// curve). XYZZ: x = X/ZZ, y = Y/ZZZ with ZZ^3 = ZZZ^2; ZZ == 0 is infinity. Formulas from the
// Explicit-Formulas Database (shortw/xyzz: madd-2008-s, add-2008-s, dbl-2008-s-1, mdbl-2008-s-1).
#pragma once
#include "field.cuh"

struct g1_affine {
    fq_t x, y;
};

struct g1_xyzz {
    fq_t X, Y, ZZ, ZZZ;
};

HD g1_xyzz xyzz_inf() {
    g1_xyzz r;
    r.X = fp_one<FqParams>();
    r.Y = fp_one<FqParams>();
    r.ZZ = fp_zero<FqParams>();
    r.ZZZ = fp_zero<FqParams>();
    return r;
}

HD bool xyzz_is_inf(const g1_xyzz& p) { return fp_is_zero(p.ZZ); }
HD bool affine_is_inf(const g1_affine& p) { return fp_is_zero(p.x) && fp_is_zero(p.y); }

HD g1_affine affine_neg(const g1_affine& p) {
    g1_affine r = p;
    r.y = fp_neg(p.y);
    return r;
}

HD g1_xyzz xyzz_from_affine(const g1_affine& p) {
    if (affine_is_inf(p)) return xyzz_inf();
    g1_xyzz r;
    r.X = p.x;
    r.Y = p.y;
    r.ZZ = fp_one<FqParams>();
    r.ZZZ = r.ZZ;
    return r;
}

// 2 * (x, y) for an affine, finite point (mdbl-2008-s-1, a = 0).
HDN g1_xyzz xyzz_dbl_affine(g1_affine p) {
    fq_t U = fp_dbl(p.y);
    fq_t V = fp_sqr(U);
    fq_t W = fp_mul(U, V);
    fq_t S = fp_mul(p.x, V);
    fq_t xx = fp_sqr(p.x);
    fq_t M = fp_add(fp_dbl(xx), xx);
    g1_xyzz r;
    r.X = fp_sub(fp_sqr(M), fp_dbl(S));
    r.Y = fp_sub(fp_mul(M, fp_sub(S, r.X)), fp_mul(W, p.y));
    r.ZZ = V;
    r.ZZZ = W;
    return r;
}

// dbl-2008-s-1 (a = 0). Infinity doubles to infinity (ZZ stays 0); y = 0 has no point on G1.
HDN g1_xyzz xyzz_dbl(g1_xyzz p) {
    fq_t U = fp_dbl(p.Y);
    fq_t V = fp_sqr(U);
    fq_t W = fp_mul(U, V);
    fq_t S = fp_mul(p.X, V);
    fq_t xx = fp_sqr(p.X);
    fq_t M = fp_add(fp_dbl(xx), xx);
    g1_xyzz r;
    r.X = fp_sub(fp_sqr(M), fp_dbl(S));
    r.Y = fp_sub(fp_mul(M, fp_sub(S, r.X)), fp_mul(W, p.Y));
    r.ZZ = fp_mul(V, p.ZZ);
    r.ZZZ = fp_mul(W, p.ZZZ);
    return r;
}

// p + q with q affine (madd-2008-s), all special cases handled.
HDN g1_xyzz xyzz_add_affine(g1_xyzz p, g1_affine q) {
    if (affine_is_inf(q)) return p;
    if (xyzz_is_inf(p)) return xyzz_from_affine(q);
    fq_t U2 = fp_mul(q.x, p.ZZ);
    fq_t S2 = fp_mul(q.y, p.ZZZ);
    fq_t Pp = fp_sub(U2, p.X);
    fq_t R = fp_sub(S2, p.Y);
    if (fp_is_zero(Pp)) {
        if (fp_is_zero(R)) return xyzz_dbl_affine(q);
        return xyzz_inf();
    }
    fq_t PP = fp_sqr(Pp);
    fq_t PPP = fp_mul(Pp, PP);
    fq_t Q = fp_mul(p.X, PP);
    g1_xyzz r;
    r.X = fp_sub(fp_sub(fp_sqr(R), PPP), fp_dbl(Q));
    r.Y = fp_sub(fp_mul(R, fp_sub(Q, r.X)), fp_mul(p.Y, PPP));
    r.ZZ = fp_mul(p.ZZ, PP);
    r.ZZZ = fp_mul(p.ZZZ, PPP);
    return r;
}

// p + q, both XYZZ (add-2008-s), all special cases handled.
HDN g1_xyzz xyzz_add(g1_xyzz p, g1_xyzz q) {
    if (xyzz_is_inf(q)) return p;
    if (xyzz_is_inf(p)) return q;
    fq_t U1 = fp_mul(p.X, q.ZZ);
    fq_t U2 = fp_mul(q.X, p.ZZ);
    fq_t S1 = fp_mul(p.Y, q.ZZZ);
    fq_t S2 = fp_mul(q.Y, p.ZZZ);
    fq_t Pp = fp_sub(U2, U1);
    fq_t R = fp_sub(S2, S1);
    if (fp_is_zero(Pp)) {
        if (fp_is_zero(R)) return xyzz_dbl(p);
        return xyzz_inf();
    }
    fq_t PP = fp_sqr(Pp);
    fq_t PPP = fp_mul(Pp, PP);
    fq_t Q = fp_mul(U1, PP);
    g1_xyzz r;
    r.X = fp_sub(fp_sub(fp_sqr(R), PPP), fp_dbl(Q));
    r.Y = fp_sub(fp_mul(R, fp_sub(Q, r.X)), fp_mul(S1, PPP));
    r.ZZ = fp_mul(fp_mul(p.ZZ, q.ZZ), PP);
    r.ZZZ = fp_mul(fp_mul(p.ZZZ, q.ZZZ), PPP);
    return r;
}

HDN g1_affine xyzz_to_affine(g1_xyzz p) {
    g1_affine r;
    if (xyzz_is_inf(p)) {
        r.x = fp_zero<FqParams>();
        r.y = fp_zero<FqParams>();
        return r;
    }
    // 1/ZZZ = 1/Z^3, 1/ZZ = ZZ * (1/ZZZ)^2 * ... : use one inversion of ZZZ:
    // x = X/ZZ = X * ZZZ^2/ZZ^3 ... simpler and exact: invert ZZ*ZZZ once.
    fq_t inv = fp_inv(fp_mul(p.ZZ, p.ZZZ));  // 1/(ZZ*ZZZ)
    fq_t inv_zz = fp_mul(inv, p.ZZZ);        // 1/ZZ
    fq_t inv_zzz = fp_mul(inv, p.ZZ);        // 1/ZZZ
    r.x = fp_mul(p.X, inv_zz);
    r.y = fp_mul(p.Y, inv_zzz);
    return r;
}

HD bool affine_on_curve(const g1_affine& p) {
    if (affine_is_inf(p)) return true;
    fq_t four = fp_dbl(fp_dbl(fp_one<FqParams>()));
    fq_t rhs = fp_add(fp_mul(fp_sqr(p.x), p.x), four);
    return fp_eq(fp_sqr(p.y), rhs);
}

// k * p for a scalar given as little-endian 32-bit limbs (nlimbs of them), double-and-add.
HDN g1_xyzz xyzz_mul_limbs(g1_affine p, const u32* k, int nlimbs) {
    g1_xyzz acc = xyzz_inf();
    for (int i = nlimbs - 1; i >= 0; i--) {
        for (int b = 31; b >= 0; b--) {
            acc = xyzz_dbl(acc);
            if ((k[i] >> b) & 1) acc = xyzz_add_affine(acc, p);
        }
    }
    return acc;
}

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
__device__ __forceinline__ g1_affine affine_load(const u32* base, u64 idx) {
    g1_affine r;
    r.x = fp_load<FqParams>(base, 2 * idx);
    r.y = fp_load<FqParams>(base, 2 * idx + 1);
    return r;
}
__device__ __forceinline__ void affine_store(u32* base, u64 idx, const g1_affine& p) {
    fp_store<FqParams>(base, 2 * idx, p.x);
    fp_store<FqParams>(base, 2 * idx + 1, p.y);
}
__device__ __forceinline__ g1_xyzz xyzz_load(const u32* base, u64 idx) {
    g1_xyzz r;
    r.X = fp_load<FqParams>(base, 4 * idx);
    r.Y = fp_load<FqParams>(base, 4 * idx + 1);
    r.ZZ = fp_load<FqParams>(base, 4 * idx + 2);
    r.ZZZ = fp_load<FqParams>(base, 4 * idx + 3);
    return r;
}
__device__ __forceinline__ void xyzz_store(u32* base, u64 idx, const g1_xyzz& p) {
    fp_store<FqParams>(base, 4 * idx, p.X);
    fp_store<FqParams>(base, 4 * idx + 1, p.Y);
    fp_store<FqParams>(base, 4 * idx + 2, p.ZZ);
    fp_store<FqParams>(base, 4 * idx + 3, p.ZZZ);
}
#endif

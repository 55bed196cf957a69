"""The GPU backend: launches the CUDA kernels (kernels.py) through CuPy.

Inputs may be numpy arrays (copied to the device) or CuPy arrays (used in place). Vector results
(compute_h, ntt, generate_points, ...) stay on the device as CuPy arrays; points come back as
numpy (2, 12) arrays. Twiddle and power tables are built on the device once and cached.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gpuscope import cuda
from gpuscope.errors import ResourceError, UsageError
from gpuscope.workload import curve, kernels, layout
from gpuscope.workload.field import FR, FR_GENERATOR, R_MOD, root_of_unity
from gpuscope.workload.gpu_plan import (
    NTT_BLOCK_LOG,
    NTT_LMAX,
    msm_window,
    msm_window_bits,
    ntt_plan,
)

LO_BITS = 12  # power tables: g^i = lo[i & 4095] * hi[i >> 12]
THREADS = 256
CHUNK0 = 128  # entries per thread in the first bucket-sum level
CHUNK = 32  # partial sums per thread in the later levels
NTT_MAX_THREADS = 256  # threads per NTT block (sweep on an H200: 256 ~6% faster than 512)
NTT_SMEM_STRIDE = 1024  # the "fast" variant's fixed shared-memory stride (cuda/ntt.cu), in elements
NTT_FAST_MAX_THREADS = 256  # its __launch_bounds__
NTT_T128_MAX_THREADS = 128  # the "fast2s" variant's (GPUSCOPE_NTT_T128)


def _blocks(n: int, threads: int = THREADS) -> int:
    return max(1, -(-n // threads))


class GpuBackend:
    name = "gpu"

    def __init__(self, defines: tuple[str, ...] | None = None, modules: tuple[str, ...] = ("ntt", "msm")) -> None:
        """`defines`: -D macros (default kernels.default_defines()); `modules`: compiled up front
        (the others on first use)."""
        self.cp = cuda.require("the gpu backend")
        self.defines = kernels.default_defines() if defines is None else tuple(defines)
        self._fixed_stride = "GPUSCOPE_NTT_FAST" in self.defines
        self._fixed_threads = NTT_T128_MAX_THREADS if "GPUSCOPE_NTT_T128" in self.defines else NTT_FAST_MAX_THREADS
        # compute_h composition (variants "fusedh", "fast2"): pointwise step inside the final
        # iNTT's first pass; coset factors from n-entry tables (one product per element)
        self._fused_h = "GPUSCOPE_NTT_FUSED_H" in self.defines
        self._full_scale = "GPUSCOPE_NTT_FULL_SCALE" in self.defines
        # NTT launch geometry (see gpu_plan.ntt_plan); tools/gpu_kernels_check.py --sweep times others
        self.ntt_block_log = NTT_BLOCK_LOG
        self.ntt_lmax = NTT_LMAX
        self.ntt_max_threads = NTT_MAX_THREADS
        self.ntt_plans: dict[int, list[tuple[int, int, int]]] = {}  # log_n -> passes (sweeps)
        self._twiddles: dict[bool, tuple[int, Any]] = {}
        self._powers: dict[tuple, Any] = {}
        self._gen_table = None
        for mod in modules:
            kernels.module(mod, self.defines)

    # ---- helpers ------------------------------------------------------------------------
    def _k(self, mod: str, name: str):
        return kernels.function(mod, name, self.defines)

    def _dev(self, x: Any):
        cp = self.cp
        return x if isinstance(x, cp.ndarray) else cp.asarray(np.ascontiguousarray(x))

    def _fr_const(self, value: int):
        return self.cp.asarray(FR.ints_to_limbs([value], mont=True))

    def _fr_in(self, x: Any, name: str, *, pow2: bool = True):
        n = layout.check_fr_vector(x, name, pow2=pow2)
        return self.cp.ascontiguousarray(self._dev(x)), n

    def _launch(self, mod: str, name: str, n: int, args: tuple, threads: int = THREADS) -> None:
        self._k(mod, name)((_blocks(n, threads),), (threads,), args)

    def synchronize(self) -> None:
        self.cp.cuda.Device().synchronize()

    def _alloc(self, shape, dtype=np.uint32):
        try:
            return self.cp.empty(shape, dtype=dtype)
        except self.cp.cuda.memory.OutOfMemoryError as e:
            raise ResourceError(f"out of device memory allocating {shape}") from e

    # ---- warm-up ------------------------------------------------------------------------
    def warm_up(self, log_n: int, seed: int = 0) -> None:
        """Run every kernel and CuPy helper a partition of 2^log_n uses once, at that size, so that
        a timed run does not pay for them in its first tenure. CuPy JIT-compiles its own kernels
        (cumsum, searchsorted, comparisons) on first use in a process, and some only at large
        sizes (a scan over the ~10^5 buckets of a 2^22 MSM takes another path than over a 2^10
        one's): measured on a fresh H200, a warm-up at 2^10 alone left 5.8 s in the first 2^22
        MSM. compute_h also builds its twiddle and coset tables per size (1-2 GiB at 2^24). The
        inputs are 2^min(log_n, 10) random values tiled to full size (valid Fr and curve points;
        repeated scalars only crowd the buckets, which the chunked bucket sums handle); the
        buffers return to CuPy's pool for the run. A long-lived prover is warm the same way."""
        cp = self.cp
        small = min(log_n, 10)
        m, reps = 1 << small, 1 << (log_n - small)
        rng = np.random.default_rng(seed)

        def full(x):
            x = cp.asarray(x)
            return cp.tile(x, (reps,) + (1,) * (x.ndim - 1))

        self.compute_h(*(full(layout.random_fr(m, rng)) for _ in range(3)))
        points = full(self.generate_points(m, seed + 1))
        scalars = full(layout.random_fr(m, rng))
        bitmap = full(rng.integers(0, 2, size=m, dtype=np.uint8))
        self.msm(points, scalars)
        self.batch_add(points, bitmap)
        self.tail_msm(points, scalars, bitmap)
        del points, scalars, bitmap
        self.synchronize()

    # ---- tables -------------------------------------------------------------------------
    def twiddles(self, log_n: int, inverse: bool):
        have = self._twiddles.get(inverse)
        if have is not None and have[0] >= log_n:
            return have[1]
        roots = [root_of_unity(s + 1) for s in range(log_n)]
        if inverse:
            roots = [pow(w, -1, R_MOD) for w in roots]
        d_roots = self.cp.asarray(FR.ints_to_limbs(roots, mont=True))
        tw = self._alloc((1 << log_n, 8))
        self._launch("ntt", "fr_twiddle_table", 1 << log_n, (tw, np.int32(log_n), d_roots))
        self._twiddles[inverse] = (log_n, tw)
        return tw

    def power_tables(self, n: int, base: int, c: int):
        """(lo, hi) with lo[j] = c*base^j (j < 4096), hi[k] = base^(4096k) (k < n/4096)."""
        key = (n, base, c)
        if key not in self._powers:
            nlo = min(n, 1 << LO_BITS)
            nhi = ((n - 1) >> LO_BITS) + 1
            lo, hi = self._alloc((nlo, 8)), self._alloc((nhi, 8))
            b = self._fr_const(base)
            self._launch("ntt", "fr_power_table", nlo, (lo, np.uint64(nlo), b, np.uint64(1), self._fr_const(c)))
            self._launch("ntt", "fr_power_table", nhi, (hi, np.uint64(nhi), b, np.uint64(1 << LO_BITS), self._fr_const(1)))
            if len(self._powers) > 16:
                self._powers.clear()
            self._powers[key] = (lo, hi)
        return self._powers[key]

    def scale_tables(self, n: int, base: int, c: int):
        """(lo, hi, lobits) for _ntt_raw's `scale`: c*base^g for output g. With the
        GPUSCOPE_NTT_FULL_SCALE kernels, lo holds all n factors (lobits = log2 n, hi unused: one
        product per element, n*32 bytes of device memory, cached); else power_tables, LO_BITS."""
        if not self._full_scale:
            return (*self.power_tables(n, base, c), LO_BITS)
        key = (n, base, c, "full")
        if key not in self._powers:
            lo = self._alloc((n, 8))
            self._launch("ntt", "fr_power_table", n, (lo, np.uint64(n), self._fr_const(base), np.uint64(1), self._fr_const(c)))
            if len(self._powers) > 16:
                self._powers.clear()
            self._powers[key] = (lo, lo)
        return (*self._powers[key], n.bit_length() - 1)

    # ---- NTT ----------------------------------------------------------------------------
    def _ntt_raw(self, x, log_n: int, inverse: bool, out=None, scale=None, h_in=None):
        """NTT, natural order in and out; `out` may be a scratch buffer (not x). `scale` = (lo, hi,
        lobits) tables multiplied in by the last pass (output g times lo[g & mask] * hi[g >> lobits],
        see scale_tables). `h_in` = (b, c): the input is x*b - c, read by the first pass (the
        fr_ntt_pass_h kernels of GPUSCOPE_NTT_FUSED_H; `out` must then be none of x, b, c)."""
        tw = self.twiddles(log_n, inverse)
        n = 1 << log_n
        out = self._alloc((n, 8)) if out is None else out
        plan = self.ntt_plans.get(log_n) or ntt_plan(log_n, block_log=self.ntt_block_log, lmax=self.ntt_lmax)
        for i, (s0, S, L) in enumerate(plan):
            E = 1 << (S + L)
            threads = min(E // 2, self.ntt_max_threads)
            smem = 32 * E
            if self._fixed_stride:  # shared memory laid out with a compile-time stride
                if E > NTT_SMEM_STRIDE:
                    raise UsageError(f"NTT block of {E} elements exceeds the fast variant's {NTT_SMEM_STRIDE}")
                threads, smem = min(threads, self._fixed_threads), 32 * NTT_SMEM_STRIDE
            src = x if i == 0 else out
            args: tuple[Any, ...] = (out, src, np.int32(log_n), np.int32(s0), np.int32(S), np.int32(L), tw, np.int32(1 if i == 0 else 0))
            name = "fr_ntt_pass_h" if h_in is not None and i == 0 else "fr_ntt_pass"
            if scale is not None and i == len(plan) - 1:
                name, args = name + "_scaled", (*args, scale[0], scale[1], np.int32(scale[2]))
            if name.startswith("fr_ntt_pass_h"):
                args = (*args, *h_in)
            k = self._k("ntt", name)
            k((n // E,), (threads,), args, shared_mem=smem)
        return out

    def ntt(self, values: Any, *, inverse: bool = False):
        x, n = self._fr_in(values, "values")
        log_n = n.bit_length() - 1
        scale = (*self.power_tables(n, 1, pow(n, -1, R_MOD)), LO_BITS) if inverse else None
        return self._ntt_raw(x, log_n, inverse, scale=scale)

    def compute_h(self, a: Any, b: Any, c: Any):
        (da, n), (db, nb), (dc, nc) = self._fr_in(a, "a"), self._fr_in(b, "b"), self._fr_in(c, "c")
        if not (n == nb == nc):
            raise UsageError("a, b and c must have the same length")
        log_n = n.bit_length() - 1
        n_inv = pow(n, -1, R_MOD)
        g, g_inv = FR_GENERATOR, pow(FR_GENERATOR, -1, R_MOD)
        scratch = self._alloc((n, 8))
        evals = []
        to_coset = self.scale_tables(n, g, n_inv)  # iNTT's 1/n and the coset shift g^i, fused
        for x in (da, db, dc):
            coeffs = self._ntt_raw(x, log_n, True, scale=to_coset)  # coefficients * g^i
            evals.append(self._ntt_raw(coeffs, log_n, False, out=scratch))
            scratch = coeffs  # reuse the coefficient buffer as the next scratch
        z_inv_int = pow((pow(g, n, R_MOD) - 1) % R_MOD, -1, R_MOD)
        if self._fused_h:  # (a*b - c) read by the first pass; 1/Z joins 1/n and g^-i in the table
            from_coset = self.scale_tables(n, g_inv, n_inv * z_inv_int % R_MOD)
            return self._ntt_raw(evals[0], log_n, True, out=scratch, scale=from_coset, h_in=(evals[1], evals[2]))
        z_inv = self._fr_const(z_inv_int)
        hc = scratch
        self._launch("ntt", "fr_h_pointwise", n, (hc, evals[0], evals[1], evals[2], np.uint64(n), z_inv))
        return self._ntt_raw(hc, log_n, True, out=evals[0], scale=self.scale_tables(n, g_inv, n_inv))

    def fr_mul(self, a: Any, b: Any):
        (da, n), (db, nb) = self._fr_in(a, "a", pow2=False), self._fr_in(b, "b", pow2=False)
        if n != nb:
            raise UsageError("a and b must have the same length")
        out = self._alloc((n, 8))
        self._launch("ntt", "fr_mul_vec", n, (out, da, db, np.uint64(n)))
        return out

    def to_standard(self, values: Any):
        x, n = self._fr_in(values, "values", pow2=False)
        out = self._alloc((n, 8))
        self._launch("ntt", "fr_convert", n, (out, x, np.uint64(n), np.int32(1)))
        return out

    def eval_poly(self, coeffs: Any, z: int) -> int:
        """sum coeffs[i] z^i (coeffs Montgomery, z a Python int) -> Python int."""
        x, n = self._fr_in(coeffs, "coeffs", pow2=False)
        lo, hi = self.power_tables(max(n, 1), z % R_MOD, 1)
        blocks = min(1024, _blocks(n))
        part = self._alloc((blocks, 8))
        self._k("ntt", "fr_eval_partial")((blocks,), (256,), (part, x, np.uint64(n), lo, hi, np.int32(LO_BITS)))
        return sum(FR.limbs_to_ints(part.get(), mont=True)) % R_MOD

    # ---- G1 -----------------------------------------------------------------------------
    def _points_scalars(self, points: Any, scalars: Any):
        n = layout.check_points(points)
        if layout.check_fr_vector(scalars, "scalars", pow2=False) != n:
            raise UsageError("points and scalars must have the same length")
        dp, ds = self.cp.ascontiguousarray(self._dev(points)), self.cp.ascontiguousarray(self._dev(scalars))
        if n and not bool(self._below_r(ds).all()):
            raise UsageError("scalars must be below r (standard form, reduced)")
        return dp, ds, n

    def _below_r(self, s):
        cp = self.cp
        r_limbs = FR.ints_to_limbs([R_MOD - 1], mont=False)[0]  # s < r  <=>  s <= r - 1
        lt = cp.zeros(s.shape[0], dtype=bool)
        eq = cp.ones(s.shape[0], dtype=bool)
        for limb in range(7, -1, -1):
            col = s[:, limb]
            lt |= eq & (col < int(r_limbs[limb]))
            eq &= col == int(r_limbs[limb])
        return lt | eq

    def _msm(self, dp, ds, n: int, skip=None) -> np.ndarray:
        cp = self.cp
        if n == 0:
            return np.zeros((2, 12), dtype=np.uint32)
        c = msm_window_bits(max(1, (n - 1).bit_length()))
        W = msm_window(c)
        nbw = 1 << (c - 1)
        nb = W * nbw
        skip_arg = skip if skip is not None else np.uint64(0)
        counts = cp.zeros(nb, dtype=cp.uint32)
        self._launch("msm", "msm_count", n, (counts, ds, skip_arg, np.uint64(n), np.int32(c), np.int32(W)))
        starts = cp.zeros(nb + 1, dtype=cp.uint32)
        cp.cumsum(counts, dtype=cp.uint32, out=starts[1:])
        total = int(starts[-1].get())
        entries = self._alloc(max(total, 1))
        cursor = starts[:-1].copy()
        self._launch("msm", "msm_scatter", n, (entries, cursor, ds, skip_arg, np.uint64(n), np.int32(c), np.int32(W)))
        buckets = self._bucket_sums(entries, starts, dp, nb)
        segs = min(nbw, 256)
        partial = self._alloc((W * segs, 4, 12))
        self._k("msm", "msm_bucket_reduce")(
            (_blocks(segs, 64), W), (min(64, segs),), (partial, buckets, np.uint32(nbw), np.uint32(segs))
        )
        self._reduce_rows(partial, W, segs)
        out = self._alloc((1, 2, 12))
        self._k("msm", "msm_finish")((1,), (1,), (out, partial, np.int32(W), np.int32(c), np.uint32(segs)))
        return out.get()[0]

    def _bucket_sums(self, entries, starts, dp, nb: int):
        """XYZZ sum per bucket, in chunks (CHUNK0 entries, then CHUNK partials) until one is left."""
        cp = self.cp
        k = self._k("msm", "msm_chunk_sum")
        items, mode, ch = entries, 0, CHUNK0
        while True:
            counts = starts[1:] - starts[:-1]
            if int(counts.max().get()) <= 1 and mode == 1:
                break
            nchunks_b = (counts + (ch - 1)) // ch
            chunk_starts = cp.zeros(nb + 1, dtype=cp.uint32)
            cp.cumsum(nchunks_b, dtype=cp.uint32, out=chunk_starts[1:])
            total = int(chunk_starts[-1].get())
            if total == 0:
                return self._gather(None, starts, nb)
            bucket_of = (cp.searchsorted(chunk_starts, cp.arange(total, dtype=cp.uint32), side="right") - 1).astype(cp.uint32)
            partial = self._alloc((total, 4, 12))
            k(
                (_blocks(total, 128),),
                (128,),
                (partial, items, dp, starts, chunk_starts, bucket_of, np.uint32(total), np.uint32(ch), np.int32(mode)),
            )
            items, starts, mode, ch = partial, chunk_starts, 1, CHUNK
        return self._gather(items, starts, nb)

    def _gather(self, partial, starts, nb: int):
        buckets = self._alloc((nb, 4, 12))
        src = partial if partial is not None else self._alloc((1, 4, 12))
        if partial is None:
            starts = self.cp.zeros(nb + 1, dtype=self.cp.uint32)
        self._launch("msm", "msm_gather_buckets", nb, (buckets, src, starts, np.uint32(nb)))
        return buckets

    def _reduce_rows(self, buf, rows: int, cols: int) -> None:
        half = cols // 2
        k = self._k("msm", "xyzz_reduce_rows")
        while half >= 1:
            k((_blocks(rows * half, 128),), (128,), (buf, np.uint32(rows), np.uint32(cols), np.uint32(half)))
            half //= 2

    def msm(self, points: Any, scalars: Any) -> np.ndarray:
        dp, ds, n = self._points_scalars(points, scalars)
        return self._msm(dp, ds, n)

    def _bitmap(self, bitmap: Any, n: int):
        layout.check_bitmap(bitmap, n)
        return self.cp.ascontiguousarray(self._dev(bitmap)).view(self.cp.uint8)

    def tail_msm(self, points: Any, scalars: Any, bitmap: Any) -> np.ndarray:
        dp, ds, n = self._points_scalars(points, scalars)
        return self._msm(dp, ds, n, skip=self._bitmap(bitmap, n))

    def batch_add(self, points: Any, bitmap: Any) -> np.ndarray:
        n = layout.check_points(points)
        dp = self.cp.ascontiguousarray(self._dev(points))
        bm = self._bitmap(bitmap, n)
        T = 1
        while T < min(n, 1 << 15):
            T *= 2
        partial = self._alloc((T, 4, 12))
        threads = min(T, 128)
        self._k("msm", "g1_batch_add_partial")((T // threads,), (threads,), (partial, dp, bm, np.uint64(n)))
        self._reduce_rows(partial, 1, T)
        out = self._alloc((1, 2, 12))
        self._k("msm", "g1_xyzz_to_affine")((1,), (1,), (out, partial, np.uint64(1)))
        return out.get()[0]

    def generate_points(self, n: int, seed: int):
        if n < 1:
            raise UsageError(f"number of points must be >= 1, got {n}")
        if self._gen_table is None:
            gen = self.cp.asarray(curve.points_to_limbs([curve.G1_GEN]))
            table = self._alloc((32 * 256, 2, 12))
            self._launch("msm", "g1_gen_table", 32 * 256, (table, gen), threads=128)
            self._gen_table = table
        out = self._alloc((n, 2, 12))
        self._launch(
            "msm", "g1_gen_points", n, (out, self._gen_table, np.uint64(seed & (2**64 - 1)), np.uint64(0), np.uint64(n)), threads=128
        )
        return out

    def on_curve(self, points: Any):
        n = layout.check_points(points)
        flags = self.cp.zeros(n, dtype=self.cp.uint8)
        self._launch("msm", "g1_on_curve", n, (flags, self._dev(points), np.uint64(n)))
        return flags

    def in_subgroup(self, points: Any):
        n = layout.check_points(points)
        flags = self.cp.zeros(n, dtype=self.cp.uint8)
        self._launch("msm", "g1_in_subgroup", n, (flags, self._dev(points), np.uint64(n)), threads=128)
        return flags


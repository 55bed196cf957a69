"""The one script sent to the GPU machine: compile, check at large sizes, time, print a table.

    PYTHONPATH=. python3 tools/gpu_kernels_check.py --sizes 20,22,24 --repeats 5 --out $OUT

Small-size bit-for-bit checks live in tests/test_workload_gpu.py (run it first with -m gpu).
Here: NTT round trips at 2^20 and 2^24, H at 2^24 through the self-check (random-point
identity), generated points on the curve / in the subgroup, MSM and batch_add + tail at 2^24
with the self-checks, batch_add + tail == MSM with the bitmap's scalars set to 1 (2^20), then
bench_kernels. Writes check.log and bench.json under --out; prints the table last.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gpuscope import cuda  # noqa: E402
from gpuscope.workload import backends, bench, curve, kernels, layout, selfcheck  # noqa: E402
from gpuscope.workload.field import FR  # noqa: E402

WHAT = "tools/gpu_kernels_check.py"


def compare_variants(log, check, rng) -> None:
    """PTX carry chains vs portable C++ products: bit-for-bit checks, then 2^24 timings."""
    import subprocess
    import tempfile

    from gpuscope.workload import reference
    from gpuscope.workload.gpu import GpuBackend

    cp = cuda.require(WHAT)
    cpu_pts = backends.get_backend("cpu").generate_points(64, 3)
    for label, defs in (("ptx", ()), ("portable", ("GPUSCOPE_PORTABLE_MUL",))):
        with tempfile.TemporaryDirectory() as d:
            try:
                kernels.build_cubins(d, defines=defs, modules=("ntt",))
                sass = subprocess.run(
                    f"cuobjdump -sass -fun fr_ntt_pass {d}/ntt-*.cubin | grep -c ' ;'",
                    shell=True, capture_output=True, text=True,
                ).stdout.strip()
                log(f"[{label}] fr_ntt_pass SASS instructions: {sass}")
            except Exception as e:  # informational only
                log(f"[{label}] nvcc/cuobjdump unavailable: {type(e).__name__}")
        b = GpuBackend(defs)
        for k in (8, 11, 14):
            x = layout.random_fr(1 << k, rng)
            xi = FR.limbs_to_ints(x, mont=True)
            ok = FR.limbs_to_ints(b.ntt(x).get(), mont=True) == reference.ntt(xi)
            ok &= FR.limbs_to_ints(b.ntt(x, inverse=True).get(), mont=True) == reference.intt(xi)
            check(f"[{label}] ntt/intt 2^{k} bit for bit", ok)
        n = 1 << 10
        a, bb = layout.random_fr(n, rng), layout.random_fr(n, rng)
        c = b.fr_mul(a, bb).get()
        h = b.compute_h(a, bb, c).get()
        ints = [FR.limbs_to_ints(v, mont=True) for v in (a, bb, c, h)]
        check(f"[{label}] compute_h 2^10 bit for bit", ints[3] == reference.compute_h(*ints[:3]))
        pts = b.generate_points(1 << 12, 3)
        check(f"[{label}] generated points == CPU", bool(np.array_equal(pts[:64].get(), cpu_pts)))
        sc = layout.random_fr(1 << 12, rng)
        sc[:3] = FR.ints_to_limbs([0, 1, FR.p - 1], mont=False)
        got = curve.limbs_to_point(b.msm(pts, sc))
        want = reference.msm(curve.limbs_to_points(pts.get()), FR.limbs_to_ints(sc, mont=False))
        check(f"[{label}] msm 2^12 == arkworks", got == want)
        n = 1 << 24
        x = cp.asarray(layout.random_fr(n, rng))
        y = cp.asarray(layout.random_fr(n, rng))
        z = b.fr_mul(x, y)
        t_ntt = bench.time_call(lambda b=b, x=x: b.ntt(x), 5)
        t_h = bench.time_call(lambda b=b, x=x, y=y, z=z: b.compute_h(x, y, z), 5)
        del x, y, z
        p24 = b.generate_points(n, 3)
        s24 = cp.asarray(layout.random_fr(n, rng))
        t_msm = bench.time_call(lambda b=b, p=p24, s=s24: b.msm(p, s), 3)
        del p24, s24
        cp.get_default_memory_pool().free_all_blocks()
        med = bench.statistics.median
        log(f"[{label}] 2^24: ntt {med(t_ntt):.2f} ms, compute_h {med(t_h):.2f} ms, msm {med(t_msm):.1f} ms")


def sweep_ntt(gpu, log, check, rng, log_n: int = 24) -> None:
    """NTT launch geometry: block size, low bits kept together, threads per block. Every config
    must give the default's output bit for bit; times are CUDA-event medians of 5."""
    cp = cuda.require(WHAT)
    x = cp.asarray(layout.random_fr(1 << log_n, rng))
    ref = gpu.ntt(x)
    saved = (gpu.ntt_block_log, gpu.ntt_lmax, gpu.ntt_max_threads)
    results = []
    for block_log in (9, 10):
        for lmax in (2, 3, 4):
            for threads in (128, 256, 512):
                if threads > (1 << (block_log - 1)):
                    continue
                gpu.ntt_block_log, gpu.ntt_lmax, gpu.ntt_max_threads = block_log, lmax, threads
                same = bool(cp.array_equal(gpu.ntt(x), ref))
                t = bench.statistics.median(bench.time_call(lambda: gpu.ntt(x), 5))
                results.append((t, block_log, lmax, threads, same))
                log(f"sweep ntt 2^{log_n} block 2^{block_log} lmax {lmax} threads {threads}: {t:.2f} ms {'same' if same else 'DIFFERENT'}")
    gpu.ntt_block_log, gpu.ntt_lmax, gpu.ntt_max_threads = saved
    check("ntt sweep configs agree", all(r[4] for r in results))
    best = min(results)
    log(f"sweep best: {best[0]:.2f} ms at block 2^{best[1]} lmax {best[2]} threads {best[3]} (default {saved})")


def candidate_plans(log_n: int, block_log: int = 10) -> list[list[tuple[int, int, int]]]:
    """Every 3-pass NTT plan of 2^log_n whose blocks fit 2^block_log elements: stage counts
    (a, b, c), each 4..block_log, and for the strided passes L (low bits kept together) of
    2, 3 or 4 where it fits."""
    out = []
    for a in range(4, block_log + 1):
        for b in range(4, block_log + 1):
            c = log_n - a - b
            if not 4 <= c <= block_log:
                continue
            for l1 in sorted({min(lv, a, block_log - b) for lv in (2, 3, 4)}):
                for l2 in sorted({min(lv, a + b, block_log - c) for lv in (2, 3, 4)}):
                    out.append([(0, a, 0), (a, b, l1), (a + b, c, l2)])
    return out


def sweep_plans(gpu, log, check, rng, log_n: int = 24, top: int = 4) -> None:
    """NTT pass plans at 2^log_n: every candidate must give the default plan's output bit for
    bit; forward NTT times (CUDA events, median of 5), then compute_h for the `top` fastest and
    the default (median of 7)."""
    from gpuscope.workload.gpu_plan import NTT_LMAX, ntt_plan

    cp = cuda.require(WHAT)
    x = cp.asarray(layout.random_fr(1 << log_n, rng))
    abc = [cp.asarray(layout.random_fr(1 << log_n, rng)) for _ in range(3)]
    default = ntt_plan(log_n)
    legacy = ntt_plan(log_n, lmin=NTT_LMAX)  # the rule before passes were saved with L = 2
    ref = gpu.ntt(x)
    ref_h = gpu.compute_h(*abc)
    rows = []
    plans = candidate_plans(log_n)
    plans += [p for p in (default, legacy) if p not in plans]
    for plan in plans:
        gpu.ntt_plans[log_n] = plan
        same = bool(cp.array_equal(gpu.ntt(x), ref))
        t = bench.statistics.median(bench.time_call(lambda: gpu.ntt(x), 5))
        rows.append((t, plan, same))
    rows.sort(key=lambda r: r[0])
    check(f"plan sweep 2^{log_n}: {len(rows)} plans agree", all(r[2] for r in rows))
    for t, plan, _ in rows[:8]:
        log(f"plan 2^{log_n} {[(S, L) for _, S, L in plan]}: ntt {t:.3f} ms")
    t_def = next(t for t, p, _ in rows if p == default)
    log(f"plan 2^{log_n} default {[(S, L) for _, S, L in default]}: ntt {t_def:.3f} ms")
    t_leg = next(t for t, p, _ in rows if p == legacy)
    log(f"plan 2^{log_n} legacy {[(S, L) for _, S, L in legacy]}: ntt {t_leg:.3f} ms")
    for plan in [p for _, p, _ in rows[:top]] + [default] + ([legacy] if legacy != default else []):
        gpu.ntt_plans[log_n] = plan
        same = bool(cp.array_equal(gpu.compute_h(*abc), ref_h))
        th = bench.statistics.median(bench.time_call(lambda: gpu.compute_h(*abc), 7))
        log(f"plan 2^{log_n} {[(S, L) for _, S, L in plan]}: compute_h {th:.2f} ms {'same' if same else 'DIFFERENT'}")
        check(f"compute_h with plan {plan} == default", same)
    gpu.ntt_plans.pop(log_n, None)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="20,22,24")
    ap.add_argument("--check-log", type=int, default=24)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--out", default=".")
    ap.add_argument("--skip-checks", action="store_true")
    ap.add_argument("--variants", action="store_true", help="check and time PTX vs portable Montgomery products")
    ap.add_argument("--sweep", action="store_true", help="time NTT launch geometries at 2^24")
    ap.add_argument("--sweep-plans", default="", help="log2 sizes (e.g. 22,24): time every 3-pass NTT plan")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    logf = open(out / "check.log", "w")  # noqa: SIM115

    def log(msg: str) -> None:
        line = f"[{time.strftime('%H:%M:%S')}] {msg}"
        print(line, flush=True)
        logf.write(line + "\n")
        logf.flush()

    cp = cuda.require(WHAT)
    dev = cp.cuda.Device()
    props = cp.cuda.runtime.getDeviceProperties(dev.id)
    log(f"device {props['name'].decode()} cc {dev.compute_capability} cupy {cp.__version__}")
    t0 = time.perf_counter()
    gpu = backends.get_backend("gpu")
    log(f"compile+load modules {time.perf_counter() - t0:.1f} s")
    for mod, names in (("ntt", ["fr_ntt_pass"]), ("msm", ["msm_chunk_sum", "g1_gen_points", "msm_count"])):
        for nm in names:
            f = kernels.function(mod, nm)
            log(f"  {nm}: regs {f.num_regs} local {f.local_size_bytes} B")
    failures = []
    rng = np.random.default_rng(int(time.time()))

    def check(name: str, ok: bool, extra: str = "") -> None:
        log(f"CHECK {name}: {'ok' if ok else 'FAILED'} {extra}")
        if not ok:
            failures.append(name)

    if args.variants:
        compare_variants(log, check, rng)
    if args.sweep:
        sweep_ntt(gpu, log, check, rng)
    for k in (int(v) for v in args.sweep_plans.split(",") if v.strip()):
        sweep_plans(gpu, log, check, rng, log_n=k)

    if not args.skip_checks:
        for k in (20, args.check_log):
            x = cp.asarray(layout.random_fr(1 << k, rng))
            check(f"ntt round trip 2^{k}", bool(cp.array_equal(gpu.ntt(gpu.ntt(x), inverse=True), x)))
            del x
        k = args.check_log
        n = 1 << k
        a, b = cp.asarray(layout.random_fr(n, rng)), cp.asarray(layout.random_fr(n, rng))
        c = gpu.fr_mul(a, b)
        h = gpu.compute_h(a, b, c)
        r = selfcheck.check_h(gpu, a, b, c, h, rng)
        check(f"H identity 2^{k}", r.ok, f"{r.checks} self-check {r.elapsed_ms:.0f} ms")
        c2 = c.copy()
        c2[17] = a[3]  # an unsatisfied system must fail the check
        r_bad = selfcheck.check_h(gpu, a, b, c2, gpu.compute_h(a, b, c2), rng)
        check("H check rejects unsatisfied system", not r_bad.ok)
        del a, b, c, c2, h
        cp.get_default_memory_pool().free_all_blocks()

        t = time.perf_counter()
        pts = gpu.generate_points(n, 5)
        gpu.synchronize()
        log(f"generate_points 2^{k}: {time.perf_counter() - t:.2f} s")
        check(f"points on curve 2^{k}", bool(gpu.on_curve(pts).all()))
        sample = cp.asarray(rng.choice(n, 256, replace=False))
        check("points in subgroup (256 sampled)", bool(gpu.in_subgroup(pts[sample]).all()))
        cpu_pts = backends.get_backend("cpu").generate_points(8, 5)
        check("points match CPU generator", bool(np.array_equal(pts[:8].get(), cpu_pts)))
        sc = cp.asarray(layout.random_fr(n, rng))
        sc[:3] = cp.asarray(FR.ints_to_limbs([0, 1, FR.p - 1], mont=False))
        t = time.perf_counter()
        res = gpu.msm(pts, sc)
        log(f"msm 2^{k}: {time.perf_counter() - t:.2f} s (first call)")
        r = selfcheck.check_msm(gpu, pts, sc, res, rng, sample=1024)
        check(f"MSM 2^{k} self-check", r.ok, f"{r.checks} {r.elapsed_ms:.0f} ms")
        bits = cp.asarray(rng.random(n) < 0.25)
        ba = gpu.batch_add(pts, bits)
        r = selfcheck.check_batch_add(gpu, pts, bits, ba, rng, sample=1024)
        check(f"batch_add 2^{k} self-check", r.ok, f"{r.checks} {r.elapsed_ms:.0f} ms")
        tail = gpu.tail_msm(pts, sc, bits)
        check(f"tail 2^{k} on curve/subgroup", all(selfcheck.check_point(tail).values()))
        m = 1 << 20
        one = cp.asarray(FR.ints_to_limbs([1], mont=False))
        sc1 = cp.where(bits[:m, None], one, sc[:m])
        full = curve.limbs_to_point(gpu.msm(pts[:m], sc1))
        split = curve.add(
            curve.limbs_to_point(gpu.batch_add(pts[:m], bits[:m])),
            curve.limbs_to_point(gpu.tail_msm(pts[:m], sc[:m], bits[:m])),
        )
        check("batch_add + tail == msm (2^20)", full == split)
        del pts, sc, bits
        cp.get_default_memory_pool().free_all_blocks()

    sizes = [int(s) for s in args.sizes.split(",") if s]
    rows = bench.bench_kernels(sizes, args.repeats, backend=gpu, log=lambda r: log(f"bench {r.kernel} 2^{r.log_n}: {r.median_ms:.2f} ms"))
    (out / "bench.json").write_text(json.dumps([r.to_dict() for r in rows], indent=2))
    print()
    print(f"{'kernel':<16}{'log n':>6}{'median ms':>12}{'min ms':>10}{'floor ms':>10}{'target':>8}")
    for r in rows:
        fl = "" if r.floor_ms is None else f"{r.floor_ms:.2f}"
        tg = "" if r.target_ms is None else f"{r.target_ms:.0f}"
        print(f"{r.kernel:<16}{r.log_n:>6}{r.median_ms:>12.2f}{r.min_ms:>10.2f}{fl:>10}{tg:>8}")
    print(f"checks failed: {failures or 'none'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

"""Check and time the NTT kernel variants (kernels.NTT_VARIANTS) in one GPU run, table last.

    PYTHONPATH=. python3 tools/gpu_ntt_variants.py --out $OUT

For each variant (kernels.NTT_VARIANTS; --variants to pick): compile
the ntt module, then check forward NTT and iNTT bit for bit against the Python reference at 2^10
and 2^12 on fresh random inputs, the forward + inverse round trip at 2^24, compute_h at 2^10 and
2^12 against the CPU backend, and ntt and compute_h at the largest timed size against the reference variant's
(the first listed variant that passed its checks: base when listed; base and fast agree bit for
bit, measured); then
time ntt, intt and compute_h at 2^22 and 2^24 (CUDA events, median of --repeats after one
warm-up). A variant that fails to compile or crashes is reported FAIL; the others still run.
Writes variants.log and variants.json under --out. Exit 0 when every variant passes, 1 when one
fails, 2 on an unknown variant, 5 (NoGpuError) without CuPy or a GPU. The default variant is
kernels.DEFAULT_NTT_VARIANT; GPUSCOPE_NTT_VARIANT overrides it per process.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import traceback
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gpuscope import cuda  # noqa: E402
from gpuscope.errors import NoGpuError  # noqa: E402
from gpuscope.workload import backends, kernels, layout, reference  # noqa: E402
from gpuscope.workload.field import FR  # noqa: E402

WHAT = "tools/gpu_ntt_variants.py"
CHECK_LOGS = (10, 12)
H_LOGS = (10, 12)  # 2^10: one NTT pass (the fused variants' fr_ntt_pass_h_scaled); 2^12: two
ROUND_TRIP_LOG = 24


def check_variant(name, defines, rng, log, cpu_h) -> tuple[list[str], dict]:
    """Bit-for-bit checks of one variant; returns (failed check names, info)."""
    cp = cuda.require(WHAT)

    from gpuscope.workload.gpu import GpuBackend

    t0 = time.perf_counter()
    gpu = GpuBackend(defines, modules=("ntt",))
    info = {"compile_s": round(time.perf_counter() - t0, 2)}
    kerns = ["fr_ntt_pass", "fr_ntt_pass_scaled"]
    if "GPUSCOPE_NTT_FUSED_H" in defines:
        kerns += ["fr_ntt_pass_h", "fr_ntt_pass_h_scaled"]
    for k in kerns:
        f = kernels.function("ntt", k, defines)
        info[k] = {"regs": f.num_regs, "local_bytes": f.local_size_bytes}
    log(f"[{name}] compile+load {info['compile_s']} s; fr_ntt_pass regs {info['fr_ntt_pass']['regs']} "
        f"local {info['fr_ntt_pass']['local_bytes']} B")
    failed = []

    def check(what: str, ok: bool) -> None:
        log(f"[{name}] CHECK {what}: {'ok' if ok else 'FAILED'}")
        if not ok:
            failed.append(what)

    for k in CHECK_LOGS:
        x = layout.random_fr(1 << k, rng)
        xi = FR.limbs_to_ints(x, mont=True)
        check(f"ntt 2^{k}", FR.limbs_to_ints(gpu.ntt(x).get(), mont=True) == reference.ntt(xi))
        check(f"intt 2^{k}", FR.limbs_to_ints(gpu.ntt(x, inverse=True).get(), mont=True) == reference.intt(xi))
    for a, b, c, want in cpu_h:
        check(f"compute_h 2^{len(a).bit_length() - 1} == cpu", bool(np.array_equal(gpu.compute_h(a, b, c).get(), want)))
    x = _gpu_random(1 << ROUND_TRIP_LOG, rng)
    check(f"round trip 2^{ROUND_TRIP_LOG}", bool(cp.array_equal(gpu.ntt(gpu.ntt(x), inverse=True), x)))
    del x
    return failed, {"gpu": gpu, **info}


def _gpu_random(n: int, rng):
    """Random Fr limb vectors (top limb below r's, so < r) on the device; uint32 draws, ~5x faster
    than layout.random_fr at 2^24."""
    cp = cuda.require(WHAT)
    x = rng.integers(0, 1 << 32, size=(n, 8), dtype=np.uint32)
    x[:, 7] %= np.uint32(layout.FR_TOP_LIMB)
    return cp.asarray(x)


def time_variant(name, gpu, data, repeats, log) -> dict:
    from gpuscope.workload import bench

    out = {}
    for k, (x, y, z) in data.items():
        for label, fn in (
            ("ntt", lambda x=x: gpu.ntt(x)),
            ("intt", lambda x=x: gpu.ntt(x, inverse=True)),
            ("compute_h", lambda x=x, y=y, z=z: gpu.compute_h(x, y, z)),
        ):
            times = bench.time_call(fn, repeats)
            med = statistics.median(times)
            out[f"{label} 2^{k}"] = round(med, 3)
            log(f"[{name}] {label} 2^{k}: median {med:.2f} ms (min {min(times):.2f})")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=".")
    ap.add_argument("--variants", default=",".join(kernels.NTT_VARIANTS), help="comma-separated, of " + ", ".join(kernels.NTT_VARIANTS))
    ap.add_argument("--sizes", default="22,24", help="log2 sizes to time")
    ap.add_argument("--repeats", type=int, default=7)
    args = ap.parse_args()
    names = [v for v in args.variants.split(",") if v]
    unknown = [v for v in names if v not in kernels.NTT_VARIANTS]
    if unknown:
        print(f"gpu_ntt_variants: unknown variant(s) {', '.join(unknown)}", file=sys.stderr)
        return 2
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    logf = open(out / "variants.log", "w")  # noqa: SIM115
    t_start = time.perf_counter()

    def log(msg: str) -> None:
        line = f"[{time.perf_counter() - t_start:6.1f}s] {msg}"
        print(line, flush=True)
        logf.write(line + "\n")
        logf.flush()

    try:
        cp = cuda.require(WHAT)
        cp.cuda.runtime.getDeviceCount()
    except Exception as e:  # no CuPy, no driver, no device
        err = NoGpuError(f"no usable GPU for the NTT variants ({type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''})")
        print(f"gpu_ntt_variants: {err}", file=sys.stderr)
        log(f"FAIL: {err}")
        return err.exit_code

    dev = cp.cuda.Device()
    props = cp.cuda.runtime.getDeviceProperties(dev.id)
    log(f"device {props['name'].decode()} cc {dev.compute_capability} cupy {cp.__version__}; default variant "
        f"{kernels.DEFAULT_NTT_VARIANT}, portable mul {'on' if 'GPUSCOPE_PORTABLE_MUL' in kernels.default_defines() else 'off'}")
    rng = np.random.default_rng(int(time.time()))
    cpu = backends.get_backend("cpu")
    cpu_h = []
    for k in H_LOGS:
        a, b = layout.random_fr(1 << k, rng), layout.random_fr(1 << k, rng)
        c = cpu.fr_mul(a, b)
        c[5] = a[9]  # an unsatisfied row: h is still defined and must match
        cpu_h.append((a, b, c, cpu.compute_h(a, b, c)))
    log("cpu compute_h reference ready")
    sizes = [int(s) for s in args.sizes.split(",") if s]
    data = {k: tuple(_gpu_random(1 << k, rng) for _ in range(3)) for k in sizes}
    portable = tuple(d for d in kernels.default_defines() if d == "GPUSCOPE_PORTABLE_MUL")

    results = {}
    ref_name, ref_out = None, None
    for name in names:
        res = {"status": "FAIL", "failed": [], "times": {}}
        results[name] = res
        try:
            failed, info = check_variant(name, portable + kernels.NTT_VARIANTS[name], rng, log, cpu_h)
            gpu = info.pop("gpu")
            res.update(info)
            res["failed"] = failed
            big = max(data)  # outputs at the largest size against the reference variant's, bit for bit
            x, y, z = data[big]
            outs = (gpu.ntt(x), gpu.compute_h(x, y, z))
            if ref_out is None and not failed:
                ref_name, ref_out = name, outs
                log(f"[{name}] reference for the 2^{big} comparisons of the variants after it")
            elif ref_out is not None:
                for what, got, want in zip(("ntt", "compute_h"), outs, ref_out, strict=True):
                    ok = bool(cp.array_equal(got, want))
                    log(f"[{name}] CHECK {what} 2^{big} == {ref_name}: {'ok' if ok else 'FAILED'}")
                    if not ok:
                        failed.append(f"{what} 2^{big} == {ref_name}")
            del outs
            res["times"] = time_variant(name, gpu, data, args.repeats, log)
            res["status"] = "PASS" if not failed else "FAIL"
            del gpu
        except Exception as e:  # one variant's failure must not stop the others
            res["failed"].append(f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
            log(f"[{name}] ERROR {res['failed'][-1]}")
            logf.write(traceback.format_exc())
        cp.get_default_memory_pool().free_all_blocks()

    (out / "variants.json").write_text(json.dumps(results, indent=2))
    cols = [f"{k} 2^{s}" for s in sizes for k in ("ntt", "intt", "compute_h")]
    print()
    print(f"{'variant':<8}{'result':>7}{'regs':>6}" + "".join(f"{c:>16}" for c in cols))
    for name, res in results.items():
        regs = res.get("fr_ntt_pass", {}).get("regs", "")
        row = "".join(f"{res['times'][c]:>16.2f}" if c in res["times"] else f"{'-':>16}" for c in cols)
        print(f"{name:<8}{res['status']:>7}{regs!s:>6}{row}")
        for f in res["failed"]:
            print(f"  {name} failed: {f}")
    print(f"(ms, median of {args.repeats}; total {time.perf_counter() - t_start:.0f} s)")
    return 0 if all(r["status"] == "PASS" for r in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())

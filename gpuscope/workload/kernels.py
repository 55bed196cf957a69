"""Loading the CUDA sources (package data) and compiling them once through CuPy.

The .cu files include their .cuh headers; `expand_source` inlines them with `#line` markers so
NVRTC's messages name the real file and line ("ntt.cu(42): error ..."). CuPy compiles for the
current device's architecture (sm_<major><minor> of cupy.cuda.Device().compute_capability) and
keeps the result in its kernel cache (~/.cupy/kernel_cache), so later processes load in
milliseconds. GPUSCOPE_CUBIN_DIR may point at cubins built ahead with nvcc (`build_cubins`),
named by a hash of the expanded source, so a stale cubin is never used.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import subprocess
from importlib import resources
from pathlib import Path

from gpuscope import cuda
from gpuscope.errors import GpuscopeError, UsageError

MODULES = {"ntt": "ntt.cu", "msm": "msm.cu"}
NVRTC_OPTIONS = ("-std=c++17",)
_WHAT = "compiling the workload's CUDA kernels"
_INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"\s*$')


def _read(name: str) -> str:
    return (resources.files("gpuscope.workload") / "cuda" / name).read_text(encoding="utf-8")


def expand_source(name: str, _seen: set[str] | None = None) -> str:
    """The source of `name` with its local includes inlined (each once), with #line markers."""
    seen = set() if _seen is None else _seen
    seen.add(name)
    out = [f'#line 1 "{name}"']
    for lineno, line in enumerate(_read(name).splitlines(), start=1):
        m = _INCLUDE.match(line)
        if m:
            inc = m.group(1)
            if inc not in seen:
                out.append(expand_source(inc, seen))
            out.append(f'#line {lineno + 1} "{name}"')
        elif line.strip() == "#pragma once":
            out.append("")
        else:
            out.append(line)
    return "\n".join(out)


def source_hash(module: str, defines: tuple[str, ...] = ()) -> str:
    h = hashlib.sha256(expand_source(MODULES[module]).encode())
    h.update(" ".join(_options(defines)).encode())
    return h.hexdigest()[:16]


def cubin_name(module: str, arch: str, defines: tuple[str, ...] = ()) -> str:
    return f"{module}-{source_hash(module, defines)}-{arch}.cubin"


def device_arch() -> str:
    return "sm_" + str(cuda.require(_WHAT).cuda.Device().compute_capability)


# NTT kernel variants (-D macros), chosen by GPUSCOPE_NTT_VARIANT; tools/gpu_ntt_variants.py checks
# and times each (figures: docs/BENCHMARKS.md "NTT variants"). "cios": even/odd CIOS Fr product
# (tools/gen_field_ptx.py); "stride": that plus a compile-time shared-memory stride and 64
# registers per thread in the NTT pass kernels; "fast": that plus Fr addition/subtraction as PTX
# carry chains; "fusedh": fast with compute_h's pointwise (a*b - c) read by the first pass of the
# final coset iNTT (1/Z folded into its scale table) and the coset scale factors from one n-entry
# table (one product per element, not two); "fast2": fusedh plus radix-4 steps in the NTT pass
# (two stages per shared-memory round trip, two independent butterflies per stage and thread;
# 2 blocks of 256 threads per SM); "fast2s": fast2 with 128-thread NTT blocks, 5 per SM (20 warps
# per SM instead of 16), the fastest on an H200 (H 2^24 39.1 ms, fast 43.3); "fast2s4": 4 blocks
# of 128 threads, 128 registers (slower: 40.5 ms).
_FAST = ("GPUSCOPE_FR_CIOS", "GPUSCOPE_NTT_FAST", "GPUSCOPE_FR_PTX_ADDSUB")
_FUSEDH = (*_FAST, "GPUSCOPE_NTT_FUSED_H", "GPUSCOPE_NTT_FULL_SCALE")
NTT_VARIANTS: dict[str, tuple[str, ...]] = {
    "base": (),
    "cios": ("GPUSCOPE_FR_CIOS",),
    "stride": ("GPUSCOPE_FR_CIOS", "GPUSCOPE_NTT_FAST"),
    "fast": _FAST,
    "fusedh": _FUSEDH,
    "fast2": (*_FUSEDH, "GPUSCOPE_NTT_R4"),
    "fast2s": (*_FUSEDH, "GPUSCOPE_NTT_R4", "GPUSCOPE_NTT_T128"),
    "fast2s4": (*_FUSEDH, "GPUSCOPE_NTT_R4", "GPUSCOPE_NTT_T128", "NTT_T128_BLOCKS_PER_SM=4"),
}
DEFAULT_NTT_VARIANT = "fast2s"  # the winner of tools/gpu_ntt_variants.py on an H200 (docs/BENCHMARKS.md)


def ntt_variant() -> str:
    """GPUSCOPE_NTT_VARIANT (a key of NTT_VARIANTS), DEFAULT_NTT_VARIANT when unset."""
    v = os.environ.get("GPUSCOPE_NTT_VARIANT", "").strip() or DEFAULT_NTT_VARIANT
    if v not in NTT_VARIANTS:
        raise UsageError(f"GPUSCOPE_NTT_VARIANT must be one of {', '.join(NTT_VARIANTS)}, got {v!r}")
    return v


def default_defines() -> tuple[str, ...]:
    """-D macros every build gets: GPUSCOPE_PORTABLE_MUL=1 in the environment selects the portable
    C++ Montgomery product instead of the PTX carry chains (for comparison and fallback);
    GPUSCOPE_NTT_VARIANT adds the NTT variant's macros (NTT_VARIANTS)."""
    portable = ("GPUSCOPE_PORTABLE_MUL",) if os.environ.get("GPUSCOPE_PORTABLE_MUL") == "1" else ()
    return portable + NTT_VARIANTS[ntt_variant()]


def _options(defines: tuple[str, ...]) -> tuple[str, ...]:
    return NVRTC_OPTIONS + tuple(f"-D{d}" for d in defines)


def _current_device() -> int:
    return cuda.require(_WHAT).cuda.runtime.getDevice()


def module(name: str, defines: tuple[str, ...] | None = None):
    """The compiled cupy.RawModule for `name` ("ntt" or "msm") on the current device.

    A loaded module belongs to one device's context, so the cache is per device: a pipeline
    with a worker set per GPU gets each GPU its own module (compiled once per process and
    device; NVRTC output is also cached on disk by CuPy)."""
    return _module(name, None if defines is None else tuple(defines), _current_device())


@functools.cache
def _module(name: str, defines: tuple[str, ...] | None, device: int):
    defines = default_defines() if defines is None else tuple(defines)
    cupy = cuda.require(_WHAT)
    cubin_dir = os.environ.get("GPUSCOPE_CUBIN_DIR")
    if cubin_dir:
        path = Path(cubin_dir) / cubin_name(name, device_arch(), defines)
        if path.is_file():
            return cupy.RawModule(path=str(path))
    mod = cupy.RawModule(code=expand_source(MODULES[name]), options=_options(defines))
    try:
        mod.compile()
    except cupy.cuda.compiler.CompileException as e:
        msg = next((ln for ln in str(e).splitlines() if "error" in ln), str(e).splitlines()[0])
        raise GpuscopeError(f"compiling the {name} kernels failed: {msg.strip()}") from e
    return mod


def function(mod: str, kernel: str, defines: tuple[str, ...] | None = None):
    """A kernel of module `mod`, loaded on the current device."""
    return _function(mod, kernel, None if defines is None else tuple(defines), _current_device())


@functools.cache
def _function(mod: str, kernel: str, defines: tuple[str, ...] | None, device: int):
    return _module(mod, defines, device).get_function(kernel)


def build_cubins(
    outdir: str | Path, arch: str = "sm_90", nvcc: str = "nvcc", defines: tuple[str, ...] = (), modules=None
) -> list[Path]:
    """Compile every module with nvcc to `outdir` (for GPUSCOPE_CUBIN_DIR); returns the paths."""
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, fname in MODULES.items():
        if modules is not None and name not in modules:
            continue
        src = outdir / f"{name}-expanded.cu"
        src.write_text(expand_source(fname))
        dst = outdir / cubin_name(name, arch, defines)
        subprocess.run(
            [nvcc, f"-arch={arch}", "-cubin", *_options(defines), "-o", str(dst), str(src)],
            check=True,
            capture_output=True,
            text=True,
        )
        paths.append(dst)
    return paths


if __name__ == "__main__":  # python -m gpuscope.workload.kernels OUTDIR [ARCH]
    import sys

    for p in build_cubins(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "sm_90"):
        print(p)

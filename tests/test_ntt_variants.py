"""The NTT kernel variants: selection (GPUSCOPE_NTT_VARIANT), launch limits, and that every
variant's ntt module compiles for sm_90 without spills (nvcc, when present)."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from gpuscope.errors import UsageError
from gpuscope.workload import gpu_plan, kernels


def test_variant_from_environment(monkeypatch):
    monkeypatch.delenv("GPUSCOPE_PORTABLE_MUL", raising=False)
    monkeypatch.delenv("GPUSCOPE_NTT_VARIANT", raising=False)
    assert kernels.ntt_variant() == kernels.DEFAULT_NTT_VARIANT
    assert kernels.default_defines() == kernels.NTT_VARIANTS[kernels.DEFAULT_NTT_VARIANT]
    monkeypatch.setenv("GPUSCOPE_NTT_VARIANT", "fast")
    assert kernels.default_defines() == ("GPUSCOPE_FR_CIOS", "GPUSCOPE_NTT_FAST", "GPUSCOPE_FR_PTX_ADDSUB")
    monkeypatch.setenv("GPUSCOPE_PORTABLE_MUL", "1")
    assert kernels.default_defines()[0] == "GPUSCOPE_PORTABLE_MUL"
    monkeypatch.setenv("GPUSCOPE_NTT_VARIANT", "turbo")
    with pytest.raises(UsageError, match="GPUSCOPE_NTT_VARIANT must be one of base, cios, stride, fast, fusedh, fast2, fast2s, fast2s4"):
        kernels.default_defines()


def test_variants_get_distinct_cubins():
    hashes = {kernels.source_hash("ntt", d) for d in kernels.NTT_VARIANTS.values()}
    assert len(hashes) == len(kernels.NTT_VARIANTS)


def test_default_plans_fit_the_fast_variants_shared_memory():
    from gpuscope.workload.gpu import NTT_FAST_MAX_THREADS, NTT_SMEM_STRIDE, NTT_T128_MAX_THREADS

    for log_n in range(1, 29):
        for _s0, S, L in gpu_plan.ntt_plan(log_n):
            assert 1 << (S + L) <= NTT_SMEM_STRIDE
    bounds = [int(t) for t in re.findall(r"__launch_bounds__\((\d+)", _ntt_cu())]
    assert bounds == [NTT_FAST_MAX_THREADS, NTT_T128_MAX_THREADS, NTT_FAST_MAX_THREADS]  # R4, R4+T128, fast
    assert f"NTT_SMEM_STRIDE {NTT_SMEM_STRIDE}u" in _ntt_cu()


def _ntt_cu() -> str:
    from importlib import resources

    return (resources.files("gpuscope.workload") / "cuda" / "ntt.cu").read_text()


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
@pytest.mark.parametrize("variant", list(kernels.NTT_VARIANTS))
def test_variant_compiles_without_spills(tmp_path, variant):
    src = tmp_path / "ntt.cu"
    src.write_text(kernels.expand_source("ntt.cu"))
    defs = [f"-D{d}" for d in kernels.NTT_VARIANTS[variant]]
    proc = subprocess.run(
        ["nvcc", "-arch=sm_90", "-cubin", "-std=c++17", *defs, "-Xptxas", "-v", "-o", str(tmp_path / "ntt.cubin"), str(src)],
        capture_output=True, text=True, timeout=240,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    info = proc.stderr
    defines = kernels.NTT_VARIANTS[variant]
    kerns = ["fr_ntt_pass", "fr_ntt_pass_scaled"]
    if "GPUSCOPE_NTT_FUSED_H" in defines:
        kerns += ["fr_ntt_pass_h", "fr_ntt_pass_h_scaled"]
    for kern in kerns:
        block = info[info.index(f"entry function '{kern}'"):]
        block = block[: block.index("Used") + 40]
        assert "0 bytes spill stores" in block
        regs = int(re.search(r"Used (\d+) registers", block).group(1))
        if "NTT_T128_BLOCKS_PER_SM=4" in defines:
            assert regs <= 128  # __launch_bounds__(128, 4)
        elif "GPUSCOPE_NTT_T128" in defines:
            assert regs <= 102  # __launch_bounds__(128, 5)
        elif "GPUSCOPE_NTT_R4" in defines:
            assert regs <= 128  # __launch_bounds__(256, 2)
        elif "GPUSCOPE_NTT_FAST" in defines:
            assert regs <= 64  # __launch_bounds__(256, 4)

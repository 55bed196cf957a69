"""`gpuscope info`: GPUs, driver/CUDA/NVML versions, CuPy, NVML capabilities, PCIe link, memlock."""

from __future__ import annotations

import resource
from typing import Any

import typer

from gpuscope.cli._common import emit, handle_errors, stdout_console
from gpuscope.cli.app import app


def _memlock() -> dict[str, Any]:
    soft, hard = resource.getrlimit(resource.RLIMIT_MEMLOCK)

    def v(x: int) -> int | None:
        return None if x == resource.RLIM_INFINITY else int(x)

    return {"soft_bytes": v(soft), "hard_bytes": v(hard), "unlimited": soft == resource.RLIM_INFINITY}


def collect() -> dict[str, Any]:
    """Everything `info` reports, as the --json object."""
    from gpuscope import __version__, cuda, native
    from gpuscope import nvml as nvml_mod
    from gpuscope.gpuinfo import describe_gpus

    info: dict[str, Any] = {"gpuscope_version": __version__, "nvml": {}, "gpus": [],
                            "cupy": cuda.describe(), "memlock": _memlock(),
                            "compiled": native.status()}
    nv = nvml_mod.get()
    if nv is None:
        info["nvml"] = {"available": False, "reason": nvml_mod.unavailable_reason()}
        return info
    info["nvml"] = {"available": True, **nv.system()}
    info["gpus"] = [g.for_info() for g in describe_gpus(nv, range(nv.device_count()))]
    info["nvml"]["missing_functions"] = nv.missing_functions
    return info


def _yn(b: bool) -> str:
    return "yes" if b else "no"


def _link(c: dict[str, Any]) -> str:
    now = f"Gen{c['link_gen_now'] or '?'} x{c['link_width_now'] or '?'}"
    mx = f"Gen{c['link_gen_max'] or '?'} x{c['link_width_max'] or '?'}"
    return f"{now} (max {mx})"


def render(info: dict[str, Any]) -> None:
    con = stdout_console()
    nv = info["nvml"]
    if not nv.get("available"):
        con.print(f"No NVIDIA GPU usable: {nv.get('reason')}.")
    else:
        con.print(f"Driver {nv.get('driver')}  CUDA (driver) {nv.get('cuda_driver')}  NVML {nv.get('nvml')}")
        if not info["gpus"]:
            con.print("NVML works but reports no GPU.")
    cp = info["cupy"]
    if cp["present"]:
        extra = f", CUDA runtime {cp.get('cuda_runtime')}, {cp.get('devices')} device(s)" if "cuda_runtime" in cp else ""
        con.print(f"CuPy {cp['version']}{extra}" + (f" ({cp['reason']})" if cp.get("reason") else ""))
    else:
        con.print(f"CuPy: not available ({cp['reason']}); `run` and `bandwidth` need it")
    ml = info["memlock"]
    con.print("memlock limit: " + ("unlimited" if ml["unlimited"] else f"{(ml['soft_bytes'] or 0) / 2**20:g} MiB")
              + " (RLIMIT_MEMLOCK)")
    con.print("compiled paths: " + ", ".join(f"{k} {v}" for k, v in info["compiled"].items()))
    if not info["gpus"]:
        return
    warnings = []
    for g in info["gpus"]:
        if "error" in g:
            con.print(f"GPU {g['index']}: stopped answering NVML ({g['error']})")
            continue
        c = g["capabilities"]
        mem = f", {g['memory_total_mib'] / 1024:.0f} GiB" if g.get("memory_total_mib") else ""
        con.print(f"GPU {g['index']}: {g['name']}{mem}, {g['uuid']}, bus {g.get('pci_bus_id')}")
        rate = f"link max {c['link_max_gbs']:.1f} GB/s theoretical" if c.get("link_max_gbs") else "rate unknown"
        if g.get("line_rate_gbs"):
            rate += f", {g['line_rate_gbs']:.1f} GB/s measured"
        flag = "  DOWNGRADED" if c["link_downgraded"] else ""
        con.print(f"  PCIe link: {_link(c)}; {rate}{flag}")
        srcs = ", ".join(f"{label} {_yn(c[k])}" for k, label in (
            ("gpm", "GPM"), ("pcie_counters", "PCIe byte counters"), ("utilization", "utilization"),
            ("memory", "memory"), ("power", "power"), ("clocks", "clocks")))
        con.print(f"  NVML: {srcs}")
        if c["link_downgraded"]:
            warnings.append(
                f"GPU {g['index']}: PCIe link at {_link(c)}. An idle GPU lowers its link speed to save "
                "power; if it stays below max under load (check with `gpuscope bandwidth`), H2D is capped "
                f"at ~{c['link_now_gbs'] or 0:.1f} GB/s instead of ~{c['link_max_gbs'] or 0:.1f}.")
    for w in warnings:
        con.print(f"warning: {w}")


@app.command(
    "info",
    help=(
        "Show the GPUs, driver, CUDA and NVML versions, CuPy, what NVML can measure on each GPU "
        "(GPM, PCIe byte counters, utilisation, power, clocks), the PCIe link now vs max (a "
        "downgraded link is flagged) and the memlock limit. Exits 0 also when there is no "
        "driver or GPU: it says so.\n\n"
        "Example: gpuscope info --json"
    ),
)
@handle_errors
def info_cmd(as_json: bool = typer.Option(False, "--json", help="Print a JSON object instead of tables.")) -> None:
    info = collect()
    if as_json:
        emit(info, sort_keys=True)
        return
    render(info)

"""`gpuscope bandwidth`: H2D/D2H line rate for pinned, pageable and registered host memory."""

from __future__ import annotations

import sys
from typing import Any

import typer

from gpuscope.cli import bounds
from gpuscope.cli._common import emit, handle_errors, stdout_console
from gpuscope.cli.app import app
from gpuscope.errors import NoGpuError, ResourceError, UsageError


def _render(result: dict[str, Any], saved: str | None) -> None:
    from rich.table import Table

    from gpuscope.hostbw import summary_rows

    con = stdout_console()
    g = result["gpu"]
    cont = result["contention_threads"]
    title = f"GPU {g['index']} {g['name']}: median of {result['repeats']}, CUDA events"
    if cont:
        title += f", {cont} host threads copying memory ({result['contention_host_copy_gbs'] or 0:.1f} GB/s)"
    t = Table(title=title, title_justify="left")
    for col in ("size", "memory", "H2D GB/s", "D2H GB/s"):
        t.add_column(col, justify="right" if "GB/s" in col else "left")
    for r in summary_rows(result):
        t.add_row(r["size"], r["kind"], f"{r.get('h2d_gbs', float('nan')):.1f}", f"{r.get('d2h_gbs', float('nan')):.1f}")
    con.print(t)
    p = result["pinning"]
    parts = []
    if p.get("host_alloc_s_per_gib") is not None:
        parts.append(f"cudaHostAlloc {p['host_alloc_s_per_gib'] * 1e3:.0f} ms/GiB")
    if p.get("host_register_s_per_gib") is not None:
        parts.append(f"cudaHostRegister {p['host_register_s_per_gib'] * 1e3:.0f} ms/GiB")
    if parts:
        con.print("Cost of pinning: " + ", ".join(parts))
    if result.get("line_rate_gbs"):
        con.print(f"Line rate (best pinned H2D median): {result['line_rate_gbs']:.1f} GB/s"
                  + (f", saved to {saved}" if saved else ""))


@app.command(
    "bandwidth",
    help=(
        "Measure host-to-device and device-to-host copy bandwidth for pinned (cudaHostAlloc), "
        "pageable (plain heap) and registered (cudaHostRegister) host memory, timed with CUDA "
        "events (median of --repeats), plus the cost of pinning per GiB. --contention N runs N "
        "host threads copying memory meanwhile (pageable copies collapse under it, pinned ones "
        "do not). The best pinned H2D rate is saved as this GPU's measured line rate, which "
        "`analyze` and `run` use. Needs CuPy and a GPU (exit 5 without).\n\n"
        "Example: gpuscope bandwidth --sizes 64M,512M,1536M --repeats 5 --contention 8"
    ),
)
@handle_errors
def bandwidth_cmd(
    sizes: str = typer.Option("64M,512M,1536M", "--sizes", metavar="LIST", help="Copy sizes (K/M/G and KiB/MiB/GiB binary, KB/MB/GB decimal)."),
    repeats: int = typer.Option(5, "--repeats", callback=bounds.REPEATS.callback, metavar="N", help="Copies per measurement (median taken)."),
    contention: int = typer.Option(0, "--contention", callback=bounds.CONTENTION.callback, metavar="N", help="Host threads copying memory meanwhile."),
    device: int = typer.Option(0, "--device", callback=bounds.DEVICE.callback, metavar="I", help="CUDA device index."),
    as_json: bool = typer.Option(False, "--json", help="Print the result as JSON."),
    save: bool = typer.Option(True, "--save/--no-save", help="Save the line rate to the cache."),
) -> None:
    from gpuscope import cuda, hostbw

    size_list = hostbw.parse_sizes(sizes)
    if repeats < 1:
        raise UsageError("--repeats must be at least 1")
    if contention < 0:
        raise UsageError("--contention must be 0 or more")
    cupy, n = cuda.require_devices("bandwidth")
    if not 0 <= device < n:
        raise UsageError(f"--device: no CUDA device {device} (this machine has {n})")
    try:
        result = hostbw.measure(size_list, repeats=repeats, contention=contention, device=device)
    except (cupy.cuda.memory.OutOfMemoryError, MemoryError) as e:
        raise ResourceError(f"out of memory: {' '.join(str(e).split())[:200]} (try smaller --sizes)") from None
    except cupy.cuda.runtime.CUDARuntimeError as e:
        msg = " ".join(str(e).split())[:200]
        if "memory" in msg.lower():
            raise ResourceError(f"out of memory: {msg} (try smaller --sizes)") from None
        raise NoGpuError(f"CUDA error: {msg}") from None
    saved = None
    if save and result.get("line_rate_gbs"):
        from gpuscope import linerate

        try:
            saved = str(linerate.save(result["gpu"]["uuid"], result))
        except OSError as e:
            sys.stderr.write(f"gpuscope: could not save the line rate ({e.strerror or e}); result not cached\n")
    if as_json:
        emit(result, sort_keys=True)
        return
    _render(result, saved)

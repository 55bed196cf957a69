"""`gpuscope bench kernels`: time the workload's GPU kernels (CUDA events, median of runs)."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

import typer

from gpuscope.cli import bounds
from gpuscope.cli._common import emit, handle_errors, stdout_console
from gpuscope.cli.app import app
from gpuscope.errors import NoGpuError, UsageError

if TYPE_CHECKING:
    from gpuscope.workload.gpu import GpuBackend

bench_app = typer.Typer(
    help="Benchmarks. Example: gpuscope bench kernels --sizes 20,22,24 --repeats 5",
    no_args_is_help=True,
)
app.add_typer(bench_app, name="bench")


def _sizes(text: str) -> list[int]:
    try:
        sizes = [int(s) for s in text.split(",") if s.strip()]
    except ValueError:
        raise UsageError(f"--sizes takes comma-separated log2 sizes such as 20,22,24, got {text!r}") from None
    if not sizes:
        raise UsageError("--sizes is empty")
    return sizes


@bench_app.command("kernels")
@handle_errors
def kernels(
    sizes: str = typer.Option("20,22,24", "--sizes", help="log2 sizes, comma-separated (10..26)."),
    repeats: int = typer.Option(5, "--repeats", callback=bounds.REPEATS.callback, help="timed runs per kernel after one warm-up (median reported)."),
    as_json: bool = typer.Option(False, "--json", help="print the rows as JSON."),
) -> None:
    """Time NTT, H, MSM, batch_add and tail MSM on the GPU beside their floors.

    Data is generated on the GPU first; each kernel is timed with CUDA events.

    Example: gpuscope bench kernels --sizes 20,22,24 --repeats 5 --json
    """

    from gpuscope.workload.backends import get_backend
    from gpuscope.workload.bench import bench_kernels, check_args, describe_device

    parsed = _sizes(sizes)
    check_args(parsed, repeats)  # bad options exit 2 before the GPU is looked for
    try:
        gpu = cast("GpuBackend", get_backend("gpu"))  # the GPU backend, or NoGpuError
    except NoGpuError as e:  # exit 5; the backend's hint (--backend cpu) is not an option here
        raise NoGpuError(f"bench kernels times the GPU kernels: {e}",
                         hint="the CPU reference is covered by `make test`") from None
    rows = bench_kernels(parsed, repeats, backend=gpu)
    if as_json:
        emit([r.to_dict() for r in rows])
        return
    from rich.table import Table

    table = Table(title=f"gpuscope kernel timings on {describe_device(gpu)} "
                        f"(CUDA events, median of {repeats})")
    for col in ("kernel", "log2 n", "median ms", "min ms", "floor ms", "target ms"):
        table.add_column(col, justify="left" if col == "kernel" else "right")
    for r in rows:
        table.add_row(
            r.kernel,
            str(r.log_n),
            f"{r.median_ms:.2f}",
            f"{r.min_ms:.2f}",
            "" if r.floor_ms is None else f"{r.floor_ms:.2f}",
            "" if r.target_ms is None else f"{r.target_ms:.0f}",
        )
    stdout_console().print(table)

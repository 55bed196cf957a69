"""The options that name and read a source, defined once for every command that opens one
(analyze, compare, plot, export): the same flag, metavar and help wherever it appears.

    def plot_cmd(..., samples: options.Samples = None, fmt: options.Format = None, ...)

`--format`'s help is the table's words (parsers.formats.help_text, held equal by
tests/test_parsers_formats.py) kept literal here, so `--help` loads no parser."""

from __future__ import annotations

from typing import Annotated

import typer

from gpuscope.cli import bounds

Format = Annotated[str | None, typer.Option(
    "--format", metavar="F", help="Force the log format: cuzk, condensed, kv, lines.")]
Model = Annotated[str | None, typer.Option(
    "--model", metavar="FILE.toml",
    help="Role model (default: built-in cuzk for CuZK logs, else roles guessed from the names).")]
Samples = Annotated[str | None, typer.Option(
    "--samples", metavar="FILE",
    help="NVML samples (samples.csv, nvidia-smi dmon, query-gpu or `-l 1` table output, dcgmi dmon, gpustat; default: the run's own).")]
Trace = Annotated[str | None, typer.Option(
    "--trace", metavar="TRACE", help="A profiler trace of the same program: PyTorch (.json[.gz] or a folder) or Nsight Systems (.sqlite export, .nsys-rep).")]
LineRate = Annotated[float | None, typer.Option(
    "--line-rate", metavar="GBPS", callback=bounds.LINE_RATE.callback,
    help="PCIe line rate in GB/s (default: the run's measured rate, else `gpuscope bandwidth`'s for its GPU, "
         "else its PCIe link's raw rate x 0.88, else 50).")]
AbcBytes = Annotated[str | None, typer.Option(
    "--abc-bytes", metavar="SIZE",
    help="Bytes uploaded per partition (1536M, 1.5G) when the log does not say, for the H2D projection.")]
Json = Annotated[bool, typer.Option("--json", help="Print the result as JSON (stable keys).")]
Html = Annotated[str | None, typer.Option(
    "--html", metavar="FILE", help="Also write a self-contained HTML report (tables, diagnosis, timeline).")]

"""The typer application every command registers on (one module per command, in this package)."""

from __future__ import annotations

import typer

from gpuscope import __version__

app = typer.Typer(
    name="gpuscope",
    help=(
        "Profile and diagnose GPU programs whose GPU sits idle: where the time goes "
        "(bytes moving over PCIe either way, the GPU waiting for the host, lock contention, "
        "or real compute), from NVML samples, the timing lines a program prints and profiler traces."
    ),
    no_args_is_help=True,
    add_completion=False,
    context_settings={"help_option_names": ["-h", "--help"]},
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
)


def _version_callback(value: bool) -> None:
    if value:
        typer.echo(f"gpuscope {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version_callback, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """gpuscope: profile and diagnose GPU pipelines."""

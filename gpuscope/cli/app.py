"""The typer application every command registers on (one module per command, in this package)."""

from __future__ import annotations

import typer

from gpuscope import __version__

app = typer.Typer(
    name="gpuscope",
    help=(
        "Profile and diagnose GPU pipelines: where the time under the GPU lock goes "
        "(moving bytes over PCIe, waiting for the CPU, lock contention, or compute)."
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

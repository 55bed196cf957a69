"""The typer application every command registers on (one module per command, in this package)."""

from __future__ import annotations

import sys
from typing import Any

import typer
from typer.core import TyperGroup

from gpuscope.reports.safe_text import visible

try:  # typer >= 0.26 carries its own copy of click
    from typer._click.exceptions import ClickException, NoArgsIsHelpError, UsageError
except ImportError:  # pragma: no cover  (an older typer: click itself)
    from click.exceptions import ClickException, NoArgsIsHelpError, UsageError  # type: ignore[no-redef,import-not-found,unused-ignore]

from gpuscope import __version__


class OneLineUsageError(ClickException):
    """A command line typer/click refused (an unknown option, a value that is not a number, a
    missing argument), said as gpuscope says its own usage errors: one stderr line
    `gpuscope: ...` and exit 2, not click's four-line usage box."""

    exit_code = 2

    def show(self, file: Any = None) -> None:
        (file or sys.stderr).write(f"gpuscope: {visible(self.message)}\n")


def _one_line(e: UsageError, where: str = "gpuscope") -> OneLineUsageError:
    path = e.ctx.command_path if e.ctx is not None and " " in e.ctx.command_path else where
    msg = " ".join(e.format_message().split())
    return OneLineUsageError(f"{msg} (see `{path} -h`)")


class GpuscopeGroup(TyperGroup):
    """The application's group: each usage error, the group's own or a command's (their
    parsing happens inside the group's invoke), becomes one line. `gpuscope` alone still
    prints the help (NoArgsIsHelpError), `-h` still works."""

    def make_context(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return super().make_context(*args, **kwargs)
        except NoArgsIsHelpError:
            raise
        except UsageError as e:
            raise _one_line(e) from None

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except NoArgsIsHelpError:
            raise
        except UsageError as e:
            sub = ctx.invoked_subcommand
            raise _one_line(e, f"{ctx.command_path} {sub}" if sub else ctx.command_path) from None


app = typer.Typer(
    cls=GpuscopeGroup,
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

"""The ``ember logs`` and ``ember trace`` subcommands, offered to the ``ember`` command through
the ``ember.cli`` entry point group (typer comes with the ``ember`` command, not with this package)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ember.logs._state import registry
from ember.logs.report import write_report


def logs_command() -> None:
    """List every log component and artifact with its description."""
    typer.echo(registry.help_text())


trace_app = typer.Typer(help="Work with EMBER_TRACE directories.", no_args_is_help=True, add_completion=False)


@trace_app.callback()
def _trace() -> None:
    """Work with EMBER_TRACE directories."""


@trace_app.command("report")
def report(
    directory: Annotated[Path, typer.Argument(help="A directory written with EMBER_TRACE=DIR.")],
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help="Where to write the page (default DIR/index.html).")
    ] = None,
) -> None:
    """Write an HTML page listing the trace's events, grouped, with payloads viewable."""
    if not directory.is_dir():
        raise typer.BadParameter(f"{str(directory)!r} is not a directory", param_hint="DIRECTORY")
    path = write_report(directory, out)
    typer.echo(f"wrote {path}")

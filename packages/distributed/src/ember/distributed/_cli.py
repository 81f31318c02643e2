"""The ``ember run`` and ``ember fr`` subcommands, offered to the ``ember`` command through the
``ember.cli`` entry point group (typer comes with the ``ember`` command, not with this package)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ember.distributed import run as _run
from ember.distributed._fr_analyze import analyze


def run_command(ctx: typer.Context) -> None:
    """Start the ranks of a distributed job, as torchrun does: ember run --nproc-per-node 4 train.py ARGS."""
    _run.main(list(ctx.args))


# Every argument, --help included, goes to the launcher's own (torchrun-compatible) parser.
run_command.__ember_cli__ = {  # type: ignore[attr-defined]
    "context_settings": {"allow_extra_args": True, "ignore_unknown_options": True},
    "add_help_option": False,
}

fr_app = typer.Typer(help="Read Flight Recorder dumps.", no_args_is_help=True, add_completion=False)


@fr_app.callback()
def _fr() -> None:
    """Read Flight Recorder dumps."""


@fr_app.command("analyze")
def analyze_command(
    directory: Annotated[Path, typer.Argument(help="A directory of rank_N.json Flight Recorder dumps.")],
) -> None:
    """Name the rank that never joined a collective, or the ranks whose collectives disagree."""
    if not directory.is_dir():
        raise typer.BadParameter(f"{str(directory)!r} is not a directory", param_hint="DIRECTORY")
    report, found = analyze(directory)
    typer.echo(report)
    raise typer.Exit(1 if found else 0)

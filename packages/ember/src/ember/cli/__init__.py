"""The ``ember`` command. Packages add subcommands through the ``ember.cli`` entry point group:
an entry point names either a ``typer.Typer`` (added as a group) or a function (added as a command;
a function may carry ``__ember_cli__``, a dict of ``typer.Typer.command`` keyword arguments, e.g. to
pass every argument through to its own parser as ``ember run`` does).
"""

from __future__ import annotations

import sys
from importlib.metadata import entry_points

import typer

from ember.cli.env import env_command

app = typer.Typer(help="Ember: the PyTorch 2 stack in readable Python.", no_args_is_help=True, add_completion=False)
app.command("env")(env_command)


def _add_plugins(app: typer.Typer) -> None:
    for entry in sorted(entry_points(group="ember.cli"), key=lambda e: e.name):
        try:
            target = entry.load()
        except Exception as error:  # a broken plugin must not take the other commands down
            print(f"ember: cannot load subcommand {entry.name!r} from {entry.value}: {error}", file=sys.stderr)
            continue
        if isinstance(target, typer.Typer):
            app.add_typer(target, name=entry.name)
        elif callable(target):
            app.command(entry.name, **getattr(target, "__ember_cli__", {}))(target)
        else:
            print(f"ember: entry point {entry.name!r} is neither a Typer app nor a function", file=sys.stderr)


_add_plugins(app)


def main() -> None:
    app(prog_name="ember")

"""The commands of ``costopt``, in the order ``--help`` lists them.

Add a command by writing ``cli/commands/<name>.py`` with a typer-annotated function and listing it
here. Command modules keep heavy imports inside the function bodies.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module
from typing import Any

_TABLE: list[tuple[str, str]] = [
    # (command name, "module:function")
    ("plan", "plan:plan_command"),
    ("estimate", "estimate:estimate_command"),
    ("breakeven", "breakeven:breakeven_command"),
    ("prices", "prices:prices_command"),
    ("history", "history:history_command"),
    ("sql", "sql:sql_command"),
    ("refresh", "refresh:refresh_command"),
    ("schedule", "schedule:schedule_command"),
    ("runs", "runs:runs_command"),
    ("export", "export:export_command"),
    ("publish", "publish:publish_command"),
    ("reparse", "reparse:reparse_command"),
    ("import", "import_archive:import_command"),
    ("status", "status:status_command"),
    ("completion", "completion:completion_command"),
]


NAMES: list[str] = [name for name, _ in _TABLE]


def _load(spec: str) -> Callable[..., Any]:
    module, _, function = spec.partition(":")
    return getattr(import_module(f"cli.commands.{module}"), function)  # type: ignore[no-any-return]


def commands(only: str | None = None) -> list[tuple[str, Callable[..., Any]]]:
    """Every command, or only the one named ``only``: a command that runs needs no other command's module."""
    return [(name, _load(spec)) for name, spec in _TABLE if only is None or name == only]

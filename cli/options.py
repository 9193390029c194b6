"""Options shared by several commands, declared once, and the rule for flags that contradict each other."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from cli.output import Format

DbOption = Annotated[
    Path | None,
    typer.Option("--db", envvar="COSTOPT_DB", help="Warehouse file (default: per-user data dir).", show_default=False),
]
FormatOption = Annotated[Format, typer.Option("--format", "-f", help="Output format.")]
ExactOption = Annotated[
    bool,
    typer.Option(
        "--exact", help="JSON/CSV numbers unrounded (default: cents, 4 significant digits; README: JSON contracts)."
    ),
]
WideOption = Annotated[
    bool, typer.Option("--wide", help="Every column at full width, whatever the terminal (tables only).")
]


def either(yes: bool, no: bool, yes_flag: str, no_flag: str) -> bool | None:
    """A flag pair given as two flags: True, False or None (neither); both at once is refused (exit 2).

    Click lets the last of ``--spot --no-spot`` win silently; a command line that asks for both is a
    mistake worth one line rather than a guess.
    """
    if yes and no:
        from warehouse.errors import UsageError

        raise UsageError(f"{yes_flag} and {no_flag} contradict each other: give one of them")
    return True if yes else False if no else None


def only_one(**flags: object) -> None:
    """Refuse options that exclude each other (``runs --flags --alerts``): name them, exit 2."""
    given = [name for name, value in flags.items() if value]
    if len(given) > 1:
        from warehouse.errors import UsageError

        names = [f"--{name.replace('_', '-')}" for name in given]
        raise UsageError(f"{' and '.join(names)} exclude each other: give one of them")

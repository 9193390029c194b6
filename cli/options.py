"""Options shared by several commands, declared once."""

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

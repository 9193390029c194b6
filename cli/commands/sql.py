"""``costopt sql``: read-only SQL over the warehouse."""

from __future__ import annotations

from typing import Annotated

import typer

from cli.options import DbOption, FormatOption, WideOption
from cli.output import Format


def sql_command(
    query: Annotated[str, typer.Argument(help='A SQL query, e.g. "SELECT * FROM current_prices LIMIT 5".')],
    db: DbOption = None,
    format: FormatOption = Format.table,
    wide: WideOption = False,
) -> None:
    """Run read-only SQL over the warehouse (tables and views are in the README)."""
    from cli.output import Column, emit
    from cli.warehouse_access import open_for_reading
    from warehouse.sql import run_read_only

    with open_for_reading(db) as wh:
        columns, rows = run_read_only(wh.con, query)
    # too wide for the terminal: the rightmost columns are hidden first (named in the footer), never squeezed
    spec = [Column(name, drop=i) for i, name in enumerate(columns)]
    emit(rows, spec, format, caption=f"{len(rows):,} row{'s' if len(rows) != 1 else ''}", wide=wide)

"""``costopt sql``: read-only SQL over the warehouse."""

from __future__ import annotations

from typing import Annotated

import typer

from cli.options import DbOption, FormatOption
from cli.output import Format


def sql_command(
    query: Annotated[str, typer.Argument(help='A SQL query, e.g. "SELECT * FROM current_prices LIMIT 5".')],
    db: DbOption = None,
    format: FormatOption = Format.table,
) -> None:
    """Run read-only SQL over the warehouse (tables and views are in the README)."""
    from cli.output import emit
    from cli.warehouse_access import open_for_reading
    from warehouse.sql import run_read_only

    with open_for_reading(db) as wh:
        columns, rows = run_read_only(wh.con, query)
    emit(rows, columns, format, caption=f"{len(rows)} rows")

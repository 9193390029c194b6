"""``costopt export``: the price history as hive-partitioned Parquet for other engines."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from cli.options import DbOption


def export_command(
    parquet: Annotated[Path, typer.Option("--parquet", help="Target directory (replaced atomically).")],
    db: DbOption = None,
) -> None:
    """Write price_history (partitioned provider=/date=), scrape_runs and gpus as Parquet."""
    from cli.output import note
    from cli.warehouse_access import open_for_reading
    from warehouse.export import export_parquet

    with open_for_reading(db) as wh:
        counts = export_parquet(wh.con, parquet)
    note(f"costopt: wrote {parquet}: " + ", ".join(f"{n} {name} rows" for name, n in counts.items()))
    typer.echo(str(parquet))

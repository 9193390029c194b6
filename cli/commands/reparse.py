"""``costopt reparse``: re-run today's parsers over the stored raw payloads of the last runs."""

from __future__ import annotations

from typing import Annotated

import typer

from cli.commands.refresh import ProvidersOption
from cli.options import DbOption, FormatOption
from cli.output import Format

COLUMNS = ["provider", "status", "offers", "prices_changed", "prices_closed", "unknown", "error"]


def reparse_command(
    provider: ProvidersOption = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Parse and count, load nothing.")] = False,
    db: DbOption = None,
    format: FormatOption = Format.table,
) -> None:
    """Re-parse each provider's last successful run from its stored raw payloads and load the result."""
    from cli.output import emit
    from cli.warehouse_access import resolve_db
    from scraper.reparse import reparse

    outcomes = reparse(resolve_db(db), provider, dry_run=dry_run)
    emit([o.as_dict() for o in outcomes], COLUMNS, format, title="Re-parse of stored raw payloads")
    if any(o.status == "failed" for o in outcomes):
        raise typer.Exit(1)

"""``costopt reparse``: re-run today's parsers over the stored raw payloads of the last runs."""

from __future__ import annotations

from typing import Annotated

import typer

from cli.commands.refresh import AcceptDropOption, ProvidersOption
from cli.options import DbOption, FormatOption
from cli.output import Format

COLUMNS = ["provider", "status", "offers", "prices_changed", "prices_closed", "unknown", "error"]


def reparse_command(
    provider: ProvidersOption = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Parse and count, load nothing.")] = False,
    accept_drop: AcceptDropOption = None,
    db: DbOption = None,
    format: FormatOption = Format.table,
) -> None:
    """Re-parse each provider's last successful run from its stored raw payloads and load the result."""
    from cli.output import emit, note
    from cli.warehouse_access import existing_db
    from scraper.reparse import reparse

    outcomes = reparse(existing_db(db), provider, dry_run=dry_run, accept_drop=accept_drop or ())
    emit([o.as_dict() for o in outcomes], COLUMNS, format, title="Re-parse of stored raw payloads")
    for o in outcomes:
        if o.status == "failed" and o.error:
            note(f"costopt: {o.provider} failed: {o.error}")
    if any(o.status == "failed" for o in outcomes):
        raise typer.Exit(1)

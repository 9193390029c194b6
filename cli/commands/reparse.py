"""``costopt reparse``: re-run today's parsers over the stored raw payloads of the last runs."""

from __future__ import annotations

from typing import Annotated

import typer

from cli.commands.refresh import AcceptDropOption, ProvidersOption
from cli.options import DbOption, FormatOption, WideOption
from cli.output import Column, Format

COLUMNS = ["provider", "status", "offers", "prices_changed", "prices_closed", "unknown", "run_id", "error", "notes"]
TABLE_COLUMNS = [
    Column("provider", kind="name"),
    Column("status", kind="name"),
    Column("offers", kind="count"),
    Column("prices_changed", "changed", "count"),
    Column("prices_closed", "closed", "count"),
    Column("unknown", "skipped items", "count", drop=1),
    Column("note", "note", "text"),
]


def reparse_command(
    provider: ProvidersOption = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Parse and count, load nothing.")] = False,
    accept_drop: AcceptDropOption = None,
    db: DbOption = None,
    format: FormatOption = Format.table,
    wide: WideOption = False,
) -> None:
    """Re-parse each provider's last successful run from its stored raw payloads and load the result."""
    from cli.names import check_providers
    from cli.output import emit, note
    from cli.warehouse_access import existing_db
    from scraper.reparse import reparse

    providers = check_providers(None, provider)
    accepted = check_providers(None, accept_drop, flag="--accept-drop") if accept_drop else None
    outcomes = reparse(existing_db(db), providers, dry_run=dry_run, accept_drop=accepted or ())
    rows = []
    for o in outcomes:
        failed = o.status == "failed"
        notes = o.notes or ([o.error] if o.error else [])
        row = dict(o.as_dict(), error=o.error if failed else None, notes=notes)
        # the table's one text column: why it failed, else what happened (a skip's reason, a dry run)
        row["note"] = o.error if failed else "; ".join(notes)
        rows.append(row)
    emit(
        rows,
        COLUMNS if format is not Format.table else TABLE_COLUMNS,
        format,
        title="Re-parse of stored raw payloads" + (" (dry run: nothing loaded)" if dry_run else ""),
        wide=wide,
    )
    for o in outcomes:
        if o.status == "failed" and o.error:
            note(f"costopt: {o.provider} failed: {o.reason}")
    if any(o.status == "failed" for o in outcomes):
        raise typer.Exit(1)

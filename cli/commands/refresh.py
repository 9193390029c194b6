"""``costopt refresh``: scrape every provider (or replay recordings) into the warehouse."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from cli.options import DbOption, FormatOption
from cli.output import Format

COLUMNS = ["provider", "status", "offers", "prices_changed", "flags", "unknown", "bytes_downloaded", "seconds", "error"]


def refresh_command(
    provider: Annotated[
        list[str] | None, typer.Option("--provider", "-p", help="Only these providers (repeatable).")
    ] = None,
    replay: Annotated[
        Path | None, typer.Option("--replay", help="Serve requests from recorded files (e.g. fixtures/).")
    ] = None,
    db: DbOption = None,
    format: FormatOption = Format.table,
) -> None:
    """Fetch current prices from every provider (concurrently) and load them; exit 0 only if all succeeded."""
    run_refresh(provider, replay, db, format)


def run_refresh(provider: list[str] | None, replay: Path | None, db: Path | None, format: Format) -> int:
    import sys

    from cli.output import emit, note
    from cli.warehouse_access import resolve_db
    from scraper.refresh import refresh

    path = resolve_db(db)
    progress = _progress_printer() if sys.stderr.isatty() and format is Format.table else _log_line
    outcomes = refresh(path, provider, replay=replay, progress=progress)
    rows = [
        {
            "provider": o.provider,
            "status": o.status,
            "offers": o.offers,
            "prices_changed": o.prices_changed,
            "flags": o.flags,
            "unknown": o.unknown,
            "bytes_downloaded": o.bytes_downloaded,
            "seconds": round(o.seconds, 2),
            "error": o.error,
        }
        for o in outcomes
    ]
    emit(
        rows,
        COLUMNS,
        format,
        title=f"Refresh into {path}",
        headers={"prices_changed": "changed", "bytes_downloaded": "bytes", "unknown": "skipped items"},
    )
    failed = [o for o in outcomes if o.status == "failed" or (provider and o.status == "skipped")]
    for o in failed:
        note(f"costopt: {o.provider} {o.status}: {o.error}")
    if failed:
        raise typer.Exit(1)
    return 0


def _log_line(provider: str, message: str) -> None:
    from cli.output import note

    note(f"[{provider}] {message}")


def _progress_printer():  # type: ignore[no-untyped-def]
    from rich.console import Console

    console = Console(stderr=True)

    def show(provider: str, message: str) -> None:
        console.print(f"[dim]{provider:>10}[/dim] {message}")

    return show

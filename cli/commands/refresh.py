"""``costopt refresh``: scrape every provider (or replay recordings) into the warehouse."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer

from cli.commands.publish import CatalogUriOption, LakeOption, NamespaceOption, PublishOption, publish_target
from cli.completion import complete_provider
from cli.options import DbOption, FormatOption, WideOption
from cli.output import Column, Format

COLUMNS = ["provider", "status", "offers", "prices_changed", "flags", "unknown", "bytes_downloaded", "seconds", "error"]
TABLE_COLUMNS = [
    Column("provider", kind="name"),
    Column("status", kind="name"),
    Column("offers", kind="count"),
    Column("prices_changed", "changed", "count"),
    Column("flags", kind="count"),
    Column("unknown", "skipped items", "count", drop=2),
    Column("bytes_downloaded", "bytes", "count", drop=3),
    Column("seconds", "s", "number", drop=3),
    Column("error", kind="text", drop=1),
]
ProvidersOption = Annotated[
    list[str] | None,
    typer.Option("--provider", "-p", help="Only these providers (repeatable).", autocompletion=complete_provider),
]
ReplayOption = Annotated[
    Path | None, typer.Option("--replay", help="Serve requests from recorded files, e.g. fixtures/ (no network).")
]
NotifyOption = Annotated[str | None, typer.Option("--notify", help="POST a JSON summary of failures and alerts here.")]
KeepRawOption = Annotated[
    int | None, typer.Option("--keep-raw-days", min=0, help="Delete stored raw payloads older than N days.")
]
AcceptDropOption = Annotated[
    list[str] | None,
    typer.Option(
        "--accept-drop",
        help="Load this provider even if a source answers with far fewer offers than its last good run "
        "(a confirmed real change; repeatable).",
    ),
]


def refresh_command(
    provider: ProvidersOption = None,
    replay: ReplayOption = None,
    notify: NotifyOption = None,
    keep_raw_days: KeepRawOption = None,
    accept_drop: AcceptDropOption = None,
    db: DbOption = None,
    format: FormatOption = Format.table,
    publish: PublishOption = False,
    catalog_uri: CatalogUriOption = None,
    warehouse: LakeOption = None,
    namespace: NamespaceOption = None,
    wide: WideOption = False,
) -> None:
    """Fetch current prices from every provider concurrently and load them.

    Exit 0: all loaded; 1: a provider failed or answered with suspiciously few offers (its previous
    prices are kept); 3: loaded with warnings; 4: loaded, but --publish failed; 2: bad input;
    130: interrupted.
    """
    from cli.names import check_providers
    from cli.output import emit, note
    from cli.warehouse_access import resolve_db
    from scraper.job import run_job

    provider = check_providers(None, provider)
    accept_drop = check_providers(None, accept_drop, flag="--accept-drop") if accept_drop else None
    path = resolve_db(db)
    publisher = publish_target(path, publish, catalog_uri, warehouse, namespace)
    progress = _progress_printer() if sys.stderr.isatty() and format is Format.table else None
    outcomes, code = run_job(
        path,
        provider,
        replay=replay,
        notify=notify,
        keep_raw_days=keep_raw_days,
        progress=progress,
        log=None if format is not Format.table else _quiet,
        accept_drop=accept_drop or (),
        publish=publisher,
    )
    rows = [o.as_dict() for o in outcomes]
    emit(
        rows, COLUMNS if format is not Format.table else TABLE_COLUMNS, format, title=f"Refresh into {path}", wide=wide
    )
    for o in outcomes:
        if o.status != "ok" and o.error:
            note(f"costopt: {o.provider} {o.status}: {o.reason}")
        for alert in o.alerts:
            if alert.severity != "info" and alert.message != o.error:  # a suspect drop is said once
                note(f"costopt: {alert.severity}: {alert.message}")
    if code:
        raise typer.Exit(code)


def _quiet(line: str) -> None:
    """Per-provider log lines are for the scheduler's log; the table says the same here."""
    if "pruned" in line or "notif" in line or "publish" in line:
        from cli.output import note

        note(f"costopt: {line}")


def _progress_printer() -> Callable[[str, str], None]:
    """Live progress on a terminal's stderr, the provider dimmed (no rich: its import was ~36 ms of a
    refresh that prints a few dozen lines); ``NO_COLOR`` turns the dimming off."""
    dim, plain = ("", "") if os.environ.get("NO_COLOR") else ("\x1b[2m", "\x1b[0m")

    def show(provider: str, message: str) -> None:
        sys.stderr.write(f"{dim}{provider:>10}{plain} {message}\n")
        sys.stderr.flush()

    return show

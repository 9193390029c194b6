"""``costopt runs``: the scrape-run log — what ran, what failed, what was flagged."""

from __future__ import annotations

from typing import Annotated

import typer

from cli.completion import complete_provider
from cli.options import DbOption, FormatOption, WideOption
from cli.output import Column, Format

COLUMNS = [
    "run_id",
    "provider",
    "mode",
    "started_at",
    "status",
    "offers",
    "prices_changed",
    "prices_closed",
    "flags",
    "unknown_items",
    "bytes_downloaded",
    "seconds",
    "error",
    "notes",
]
TABLE_COLUMNS = [
    Column("run_id", "run", "int"),
    Column("provider", kind="name"),
    Column("mode", kind="name", drop=3),
    Column("started_at", "started", "name"),
    Column("status", kind="name"),
    Column("offers", kind="count"),
    Column("prices_changed", "changed", "count", drop=2),
    Column("prices_closed", "closed", "count", drop=2),
    Column("flags", kind="count", drop=4),
    Column("unknown_items", "skipped", "count", drop=4),
    Column("bytes_downloaded", "bytes", "count", drop=5),
    Column("seconds", "s", "number", drop=5),
    Column("error", kind="text", drop=1),
    Column("notes", kind="text", wide=True),
]
FLAG_COLUMNS = ["run_id", "provider", "region", "instance_type", "pricing", "old_usd", "new_usd", "change_pct"]
FLAG_TABLE = [
    Column("run_id", "run", "int"),
    Column("provider", kind="name"),
    Column("region", kind="name", drop=1),
    Column("instance_type", "instance", "name"),
    Column("pricing", kind="name"),
    Column("old_usd", "old $/h", "money"),
    Column("new_usd", "new $/h", "money"),
    Column("change_pct", "change %", "number"),
]
ALERT_COLUMNS = ["run_id", "provider", "created_at", "severity", "kind", "message"]
ALERT_TABLE = [
    Column("run_id", "run", "int"),
    Column("provider", kind="name"),
    Column("created_at", "raised", "name"),
    Column("severity", kind="name"),
    Column("kind", kind="name", drop=1),
    Column("message", kind="text"),
]
DEFAULT_LIMIT = 20


def runs_command(
    limit: Annotated[
        int | None,
        typer.Option(
            "--limit",
            min=1,
            help=f"How many, newest first (table: {DEFAULT_LIMIT}; json/csv: all).",
            show_default=False,
        ),
    ] = None,
    provider: Annotated[
        str | None, typer.Option("--provider", help="Only this provider.", autocompletion=complete_provider)
    ] = None,
    flags: Annotated[bool, typer.Option("--flags", help="Show flagged price moves instead of runs.")] = False,
    alerts: Annotated[bool, typer.Option("--alerts", help="Show alerts raised after runs instead of runs.")] = False,
    db: DbOption = None,
    format: FormatOption = Format.table,
    wide: WideOption = False,
) -> None:
    """The scrape-run log: status, counts, bytes, errors; --flags lists large price moves, --alerts the alerts."""
    from cli.names import check_providers
    from cli.options import only_one
    from cli.output import emit, limited
    from cli.warehouse_access import open_for_reading
    from warehouse.queries import rows

    only_one(flags=flags, alerts=alerts)
    with open_for_reading(db, need_prices=False) as wh:
        named = check_providers(wh.con, [provider] if provider else None)
        where, params = ("WHERE provider = ?", named) if named else ("", [])
        if alerts:
            sql = f"SELECT {', '.join(ALERT_COLUMNS)} FROM alerts {where} ORDER BY created_at DESC, run_id DESC"
            columns, table, title = ALERT_COLUMNS, ALERT_TABLE, "Alerts, newest first"
        elif flags:
            sql = f"""SELECT f.run_id, o.provider, o.region, o.instance_type, f.pricing, f.old_usd, f.new_usd,
                             round(100 * f.change_pct, 1) AS change_pct
                      FROM price_flags f JOIN offers o USING (offer_id) {where.replace("provider", "o.provider")}
                      ORDER BY f.run_id DESC, o.provider, o.region, o.instance_type, f.pricing"""
            columns, table = FLAG_COLUMNS, FLAG_TABLE
            title = "Flagged price moves (> 60 % against the last observation)"
        else:
            sql = f"""SELECT run_id, provider, mode, started_at, status, offers, prices_changed, prices_closed,
                             flags, unknown_items, bytes_downloaded, round(seconds, 2) AS seconds, error, notes
                      FROM scrape_runs {where} ORDER BY run_id DESC"""
            columns, table, title = COLUMNS, TABLE_COLUMNS, "Scrape runs, newest first"
        data = rows(wh.con, sql, params)
    shown, total = limited(data, limit, format, DEFAULT_LIMIT)
    emit(shown, columns if format is not Format.table else table, format, title=title, total=total, wide=wide)

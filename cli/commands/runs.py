"""``costopt runs``: the scrape-run log — what ran, what failed, what was flagged."""

from __future__ import annotations

from typing import Annotated

import typer

from cli.options import DbOption, FormatOption
from cli.output import Format

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
FLAG_COLUMNS = ["run_id", "provider", "region", "instance_type", "pricing", "old_usd", "new_usd", "change_pct"]


def runs_command(
    limit: Annotated[int, typer.Option("--limit", min=1, help="How many recent runs.")] = 20,
    provider: Annotated[str | None, typer.Option("--provider", help="Only this provider.")] = None,
    flags: Annotated[bool, typer.Option("--flags", help="Show flagged price moves instead of runs.")] = False,
    alerts: Annotated[bool, typer.Option("--alerts", help="Show alerts raised after runs instead of runs.")] = False,
    db: DbOption = None,
    format: FormatOption = Format.table,
) -> None:
    """The scrape-run log: status, counts, bytes, errors; --flags lists large price moves, --alerts the alerts."""
    from cli.output import emit
    from cli.warehouse_access import open_for_reading
    from warehouse.queries import rows

    where, params = ("WHERE provider = ?", [provider]) if provider else ("", [])
    with open_for_reading(db, need_prices=False) as wh:
        if alerts:
            data = rows(
                wh.con,
                f"SELECT run_id, provider, created_at, severity, kind, message FROM alerts {where} "
                f"ORDER BY created_at DESC, run_id DESC LIMIT {int(limit)}",
                params,
            )
            emit(
                data,
                ["run_id", "provider", "created_at", "severity", "kind", "message"],
                format,
                title="Alerts, newest first",
            )
            return
        if flags:
            data = rows(
                wh.con,
                f"""SELECT f.run_id, o.provider, o.region, o.instance_type, f.pricing, f.old_usd, f.new_usd,
                           round(100 * f.change_pct, 1) AS change_pct
                    FROM price_flags f JOIN offers o USING (offer_id) {where.replace("provider", "o.provider")}
                    ORDER BY f.run_id DESC LIMIT {int(limit)}""",
                params,
            )
            emit(data, FLAG_COLUMNS, format, title="Flagged price moves (> 60 % against the last observation)")
            return
        data = rows(
            wh.con,
            f"""SELECT run_id, provider, mode, started_at, status, offers, prices_changed, prices_closed, flags,
                       unknown_items, bytes_downloaded, round(seconds, 2) AS seconds, error, notes
                FROM scrape_runs {where} ORDER BY run_id DESC LIMIT {int(limit)}""",
            params,
        )
    shown = COLUMNS if format is not Format.table else COLUMNS[:-1]
    emit(
        data,
        shown,
        format,
        title="Scrape runs, newest first",
        headers={
            "prices_changed": "changed",
            "prices_closed": "closed",
            "unknown_items": "skipped",
            "bytes_downloaded": "bytes",
        },
    )

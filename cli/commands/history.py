"""``costopt history``: how a GPU's price moved, per provider."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from cli.options import DbOption, FormatOption
from cli.output import Format

SUMMARY_COLUMNS = [
    "provider",
    "pricing",
    "first_day",
    "last_day",
    "days",
    "min",
    "median",
    "max",
    "first",
    "last",
    "change_pct",
    "source",
]
DAILY_COLUMNS = ["day", "provider", "pricing", "gpu", "min_usd_per_gpu_hour", "offers", "imported"]


def history_command(
    gpu: Annotated[str, typer.Option("--gpu", help="GPU name or alias, e.g. H100.")],
    since: Annotated[str, typer.Option("--since", help="Period: 90d, 12w, 6m, 1y, all, or a date 2026-01-31.")] = "90d",
    provider: Annotated[list[str] | None, typer.Option("--provider", help="Provider (repeatable).")] = None,
    plot: Annotated[Path | None, typer.Option("--plot", help="Draw the daily cheapest price to a PNG.")] = None,
    db: DbOption = None,
    format: FormatOption = Format.table,
) -> None:
    """Cheapest $/GPU-hour per provider over time: a summary, the daily series (json/csv), or a chart."""
    from cli.output import emit
    from cli.warehouse_access import open_for_reading
    from warehouse.history import daily_cheapest, parse_since, summarize
    from warehouse.queries import canonical_gpus

    name = (canonical_gpus([gpu]) or [gpu])[0]
    start = parse_since(since)
    with open_for_reading(db) as wh:
        daily = daily_cheapest(wh.con, name, start, providers=provider)
        caption = wh.prices_note
    if plot is not None:
        from warehouse.plot import plot_history

        plot_history(daily, name, plot)
        from cli.output import note

        note(f"costopt: wrote {plot}")
    if format is not Format.table:
        emit(daily, DAILY_COLUMNS, format)
        return
    emit(
        summarize(daily),
        SUMMARY_COLUMNS,
        format,
        title=f"{name}: cheapest $/GPU-hour per provider" + (f" since {start:%Y-%m-%d}" if since != "all" else ""),
        caption=(
            f"{caption}; min/median/max over the daily cheapest offer; change = last vs first day; "
            "source: imported = from a public price archive (costopt import), scraped = costopt's own scrapes"
        ),
        headers={"change_pct": "change %", "first_day": "from", "last_day": "to"},
    )

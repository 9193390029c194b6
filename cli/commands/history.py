"""``costopt history``: how a GPU's price moved, per provider."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from cli.completion import complete_gpu, complete_provider
from cli.options import DbOption, FormatOption, WideOption
from cli.output import Column, Format

SUMMARY_COLUMNS = [
    Column("provider", kind="name"),
    Column("pricing", kind="name"),
    Column("first_day", "from", "name"),
    Column("last_day", "to", "name"),
    Column("days", "days", "count"),
    Column("min", "min", "money"),
    Column("median", "median", "money"),
    Column("max", "max", "money"),
    Column("first", "first", "money", drop=2),
    Column("last", "last", "figure"),
    Column("change_pct", "change %", "number"),
    Column("source", "source", "name", drop=1),
]
DAILY_COLUMNS = ["day", "provider", "pricing", "gpu", "min_usd_per_gpu_hour", "offers", "imported", "data_origin"]


def history_command(
    gpu: Annotated[str, typer.Option("--gpu", help="GPU name or alias, e.g. H100.", autocompletion=complete_gpu)],
    since: Annotated[
        str, typer.Option("--since", help="Period back from now: 90d, 12w, 6mo, 1y, 36h; a date 2026-01-31; all.")
    ] = "90d",
    provider: Annotated[
        list[str] | None, typer.Option("--provider", help="Provider (repeatable).", autocompletion=complete_provider)
    ] = None,
    plot: Annotated[Path | None, typer.Option("--plot", help="Draw the daily cheapest price to a PNG.")] = None,
    db: DbOption = None,
    format: FormatOption = Format.table,
    wide: WideOption = False,
) -> None:
    """Cheapest $/GPU-hour per provider over time: a summary, the daily series (json/csv), or a chart."""
    from cli.names import check_gpus, check_providers
    from cli.output import emit
    from cli.plan_table import origin_legend
    from cli.warehouse_access import open_for_reading
    from warehouse.history import daily_cheapest, parse_since, summarize

    name = (check_gpus([gpu]) or [gpu])[0]
    start = parse_since(since)
    with open_for_reading(db) as wh:
        providers = check_providers(wh.con, provider)
        daily = daily_cheapest(wh.con, name, start, providers=providers)
        caption = wh.prices_note
    if plot is not None:
        from warehouse.plot import plot_history

        plot_history(daily, name, plot)
        from cli.output import note

        note(f"costopt: wrote {plot}")
    if format is not Format.table:
        emit(daily, DAILY_COLUMNS, format)
        return
    summary = [dict(r, last=_marked(r["last"], r["data_origins"])) for r in summarize(daily)]
    emit(
        summary,
        SUMMARY_COLUMNS,
        format,
        title=f"{name}: cheapest $/GPU-hour per provider" + (f" since {start:%Y-%m-%d}" if since != "all" else ""),
        caption=[
            f"{caption}; min/median/max over the daily cheapest offer; change = last vs first day; "
            "source: imported = from a public price archive (costopt import), scraped = costopt's own scrapes",
            *origin_legend(o for r in summary for o in r["data_origins"]),
        ],
        wide=wide,
    )


def _marked(value: float, origins: list[str]) -> str:
    """The last price with the mark of a derived or generated recording behind the series (as plan and prices)."""
    from cli.plan_table import ORIGIN_MARKS

    return f"{value:.4f}" + "".join(ORIGIN_MARKS[o] for o in ("derived", "generated") if o in origins)

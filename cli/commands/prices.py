"""``costopt prices``: current prices, cheapest GPU-hour first."""

from __future__ import annotations

from typing import Annotated

import typer

from cli.completion import complete_gpu, complete_provider
from cli.options import DbOption, FormatOption, WideOption
from cli.output import Column, Format

COLUMNS = [
    "provider",
    "region",
    "instance_type",
    "gpu",
    "gpu_count",
    "pricing",
    "usd_per_hour",
    "usd_per_gpu_hour",
    "observed_at",
    "age_hours",
    "source",
    "source_time",
    "source_age_hours",
    "data_origin",
    "market_basis",
]
TABLE_COLUMNS = [
    Column("provider", kind="name"),
    Column("region", kind="name", drop=1),
    Column("instance_type", "instance", "name"),
    Column("gpu", "GPU", "name", drop=3),
    Column("gpu_count", "GPUs", "number"),
    Column("pricing", kind="name"),
    Column("usd_per_hour", "$/hour", "money"),
    Column("price", "$/GPU-h", "figure"),
    Column("age", "age", "figure", drop=2),
    Column("observed_at", "observed", "name", wide=True),
    Column("source", "source", "name", wide=True),
]
DEFAULT_LIMIT = 50
# the price's true age, as plan shows it: a recording or a derived file carries figures older than the scrape
AGE_NOTE = "age: since the source's own time (an offer file's publication, a recording's vintage), else the last scrape"
MARKET_NOTE = (
    "marketplace (Vast.ai): a group's price is the median of its listings, for a country --region names the median "
    "of its listings there (market_basis in json/csv)"
)


def prices_command(
    gpu: Annotated[
        list[str] | None,
        typer.Option("--gpu", help="GPU name or alias (repeatable), e.g. H100.", autocompletion=complete_gpu),
    ] = None,
    provider: Annotated[
        list[str] | None, typer.Option("--provider", help="Provider (repeatable).", autocompletion=complete_provider)
    ] = None,
    region: Annotated[
        list[str] | None,
        typer.Option(
            "--region",
            help="Provider region (us-east-1), or a marketplace listing's country (US: Vast.ai groups priced by their "
            "listings there); repeatable.",
        ),
    ] = None,
    spot: Annotated[bool, typer.Option("--spot", help="Only spot and interruptible prices.")] = False,
    on_demand: Annotated[bool, typer.Option("--on-demand", help="Only on-demand prices.")] = False,
    limit: Annotated[
        int | None,
        typer.Option(
            "--limit",
            min=1,
            help=f"At most this many rows (table: {DEFAULT_LIMIT}; json/csv: all).",
            show_default=False,
        ),
    ] = None,
    db: DbOption = None,
    format: FormatOption = Format.table,
    wide: WideOption = False,
) -> None:
    """Current prices per instance-hour and per GPU-hour, cheapest GPU-hour first."""
    from cli.names import check_providers, check_regions
    from cli.options import either
    from cli.output import age_text, emit, limited
    from cli.plan_table import ORIGIN_MARKS, origin_legend
    from cli.warehouse_access import open_for_reading
    from warehouse.queries import current_prices

    kind = either(spot, on_demand, "--spot", "--on-demand")
    with open_for_reading(db) as wh:
        providers = check_providers(wh.con, provider)
        regions = check_regions(wh.con, region, providers=providers, countries=True)
        every = current_prices(wh.con, gpus=gpu, providers=providers, regions=regions, spot=kind)
        rows, total = limited(every, limit, format, DEFAULT_LIMIT)
        caption = [f"{wh.prices_note}; {AGE_NOTE}"]
        if format is Format.table:
            rows = [
                dict(
                    r,
                    age=age_text(r["source_age_hours"]),
                    price=f"{r['usd_per_gpu_hour']:.4f}{ORIGIN_MARKS.get(r['data_origin'], '')}",
                )
                for r in rows
            ]
            caption += origin_legend(r["data_origin"] for r in rows)
            caption += [MARKET_NOTE] if any(r["market_basis"] for r in rows) else []
        emit(
            rows,
            COLUMNS if format is not Format.table else TABLE_COLUMNS,
            format,
            title="Current GPU prices",
            caption=caption,
            total=total,
            wide=wide,
        )

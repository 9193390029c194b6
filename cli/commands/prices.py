"""``costopt prices``: current prices, cheapest GPU-hour first."""

from __future__ import annotations

from typing import Annotated

import typer

from cli.options import DbOption, FormatOption
from cli.output import Format

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
]
TABLE_COLUMNS = [*COLUMNS[:8], "age_hours"]
HEADERS = {"usd_per_hour": "$/hour", "usd_per_gpu_hour": "$/GPU-hour", "gpu_count": "GPUs", "age_hours": "age h"}


def prices_command(
    gpu: Annotated[list[str] | None, typer.Option("--gpu", help="GPU name or alias (repeatable), e.g. H100.")] = None,
    provider: Annotated[list[str] | None, typer.Option("--provider", help="Provider (repeatable).")] = None,
    region: Annotated[list[str] | None, typer.Option("--region", help="Region (repeatable).")] = None,
    spot: Annotated[
        bool | None, typer.Option("--spot/--on-demand", help="Only spot/interruptible, or only on-demand.")
    ] = None,
    limit: Annotated[int, typer.Option("--limit", min=1, help="At most this many rows.")] = 50,
    db: DbOption = None,
    format: FormatOption = Format.table,
) -> None:
    """Current prices per instance-hour and per GPU-hour, cheapest GPU-hour first."""
    from cli.output import emit
    from cli.warehouse_access import open_for_reading
    from warehouse.queries import current_prices

    with open_for_reading(db) as wh:
        rows = current_prices(wh.con, gpus=gpu, providers=provider, regions=region, spot=spot, limit=limit)
        emit(
            rows,
            COLUMNS if format is not Format.table else TABLE_COLUMNS,
            format,
            title="Current GPU prices",
            caption=f"{wh.prices_note}; {len(rows)} rows (--limit {limit})",
            headers=HEADERS,
        )

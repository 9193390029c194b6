"""Read-side queries shared by the CLI and the optimizer (plain SQL over the public views)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import duckdb

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def utc_datetime(microseconds: int | None) -> datetime | None:
    """A time read as ``epoch_us(ts)`` as an aware UTC datetime (None kept).

    Read paths select ``epoch_us(...)`` instead of a TIMESTAMPTZ: DuckDB hands a TIMESTAMPTZ to Python
    through pytz (importing it, ~5-10 ms, and localizing every value), for the same instant this gives."""
    return None if microseconds is None else _EPOCH + timedelta(microseconds=microseconds)


def canonical_gpus(names: list[str] | None) -> list[str] | None:
    """Resolve user GPU names and aliases; an unknown one raises UnknownGpu listing the known names."""
    if not names:
        return None
    from warehouse.gpus import catalog

    return sorted({catalog().resolve(name).name for name in names})


def rows(con: duckdb.DuckDBPyConnection, sql: str, params: list[Any] | None = None) -> list[dict[str, Any]]:
    cursor = con.execute(sql, params or [])
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def current_prices(
    con: duckdb.DuckDBPyConnection,
    *,
    gpus: list[str] | None = None,
    providers: list[str] | None = None,
    regions: list[str] | None = None,
    spot: bool | None = None,
    limit: int | None = None,
) -> list[dict[str, Any]]:
    where, params = ["true"], []
    canonical = canonical_gpus(gpus)
    if canonical:
        where.append(f"gpu IN ({','.join('?' * len(canonical))})")
        params += canonical
    if providers:
        where.append(f"provider IN ({','.join('?' * len(providers))})")
        params += providers
    if regions:
        where.append(f"region IN ({','.join('?' * len(regions))})")
        params += regions
    if spot is True:
        where.append("pricing IN ('spot', 'interruptible')")
    elif spot is False:
        where.append("pricing = 'on_demand'")
    sql = (
        "SELECT provider, region, instance_type, gpu, gpu_count, pricing, usd_per_hour, usd_per_gpu_hour, "
        "epoch_us(observed_at) AS observed_at, age_hours, source, epoch_us(source_time) AS source_time, "
        "coalesce(source_age_hours, age_hours) AS source_age_hours, data_origin "
        f"FROM current_prices WHERE {' AND '.join(where)} "
        "ORDER BY usd_per_gpu_hour, usd_per_hour, provider, region, instance_type"
    )
    if limit:
        sql += f" LIMIT {int(limit)}"
    out = rows(con, sql, params)
    for row in out:
        row["observed_at"] = utc_datetime(row["observed_at"])
        row["source_time"] = utc_datetime(row["source_time"])
    return out

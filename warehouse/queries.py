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


def _listings(count: str, where: str) -> str:
    """SQL text: ``1 listing`` or ``median of 5 listings`` (``where`` appends e.g. `` in US``)."""
    return f"CASE WHEN {count} = 1 THEN '1 listing' ELSE 'median of ' || {count} || ' listings' END{where}"


def current_prices(
    con: duckdb.DuckDBPyConnection,
    *,
    gpus: list[str] | None = None,
    providers: list[str] | None = None,
    regions: list[str] | None = None,
    spot: bool | None = None,
    limit: int | None = None,
) -> list[dict[str, Any]]:
    """Current prices, cheapest GPU-hour first; a marketplace group's says what it is (``market_basis``).

    ``regions`` may name provider regions and marketplace listing countries (``US``). A Vast.ai group spans
    countries (its region is ``all``, its price the median of all its listings: ``median of 5 listings``), so
    for a country it is shown as the median of its listings in that country (``median of 2 listings in US``),
    the region column naming the country; time, source and origin are the group's. The listings are those
    ``market_current`` holds for the groups listed now.
    """
    where, params = ["true"], []
    canonical = canonical_gpus(gpus)
    if canonical:
        where.append(f"c.gpu IN ({','.join('?' * len(canonical))})")
        params += canonical
    if providers:
        where.append(f"c.provider IN ({','.join('?' * len(providers))})")
        params += providers
    if spot is True:
        where.append("c.pricing IN ('spot', 'interruptible')")
    elif spot is False:
        where.append("c.pricing = 'on_demand'")
    own, countries = list(regions or []), []
    if regions:
        places = {r for (r,) in con.execute("SELECT DISTINCT region FROM offers").fetchall()}
        own, countries = [r for r in regions if r in places], [r for r in regions if r not in places]
    in_region = [f"c.region IN ({','.join('?' * len(own))})" if own else "false"] if regions else []
    select = (
        "SELECT c.provider, {region} AS region, c.instance_type, c.gpu, c.gpu_count, c.pricing, {usd} AS usd_per_hour, "
        "{usd} / c.gpu_count AS usd_per_gpu_hour, epoch_us(c.observed_at) AS observed_at, c.age_hours, c.source, "
        "epoch_us(c.source_time) AS source_time, coalesce(c.source_age_hours, c.age_hours) AS source_age_hours, "
        "c.data_origin, {basis} AS market_basis FROM current_prices c "
    )
    sql = select.format(region="c.region", usd="c.usd_per_hour", basis=_listings("m.offer_count", "")) + (
        "LEFT JOIN market_current m ON m.provider = c.provider AND m.region = c.region "
        f"AND m.instance_type = c.instance_type AND m.pricing = c.pricing WHERE {' AND '.join(where + in_region)}"
    )
    args = params + own
    if countries:
        # the group's listings in each country asked for, priced as the group is (their median)
        sql += " UNION ALL " + select.format(
            region="x.country",
            usd="median(x.usd_per_hour)",
            basis=_listings("count(*)", " || ' in ' || x.country"),
        ).replace(" FROM current_prices c ", " FROM (")
        sql += (
            "SELECT c.*, unnest(m.listings) AS x FROM current_prices c JOIN market_current m "
            "ON m.provider = c.provider AND m.region = c.region AND m.instance_type = c.instance_type "
            f"AND m.pricing = c.pricing) c WHERE {' AND '.join(where)} "
            f"AND x.country IN ({','.join('?' * len(countries))}) "
            "GROUP BY c.provider, x.country, c.instance_type, c.gpu, c.gpu_count, c.pricing, c.observed_at, "
            "c.age_hours, c.source, c.source_time, c.source_age_hours, c.data_origin"
        )
        args += params + countries
    sql = f"SELECT * FROM ({sql}) ORDER BY usd_per_gpu_hour, usd_per_hour, provider, region, instance_type"
    if limit:
        sql += f" LIMIT {int(limit)}"
    out = rows(con, sql, args)
    for row in out:
        row["observed_at"] = utc_datetime(row["observed_at"])
        row["source_time"] = utc_datetime(row["source_time"])
    return out

"""What the planner and breakeven read from the warehouse: current offers, spot risk, rent history."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from optimizer import defaults

if TYPE_CHECKING:
    import duckdb

MARKETPLACES = ("vastai",)  # providers whose prices are distributions of listings, not a price list


def _vintage(day: str | None, origin: str | None) -> str:
    """When a rent's figures are from, and whether they are derived or generated: said wherever the rent is shown."""
    kind = f"{origin} data, " if origin in ("derived", "generated") else ""
    return f"{kind}as of {day}" if day else f"{kind}age unknown"


def _utc(column: str) -> str:
    """A TIMESTAMPTZ column as UTC text ("2026-11-20 03:00:00+00") whatever the session's time zone."""
    return f"strftime(timezone('UTC', {column}), '%Y-%m-%d %H:%M:%S') || '+00'"


def current_offers(con: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    """Every open price, with its provenance and, for marketplaces, the group's listings (Vast.ai).

    In a fixed order, so that a plan (its ties, its list of dropped offers) is the same on every run."""
    cursor = con.execute(
        f"""SELECT c.provider, c.region, c.instance_type, c.gpu, c.gpu_count, c.pricing, c.usd_per_hour,
                  {_utc("c.observed_at")} AS observed_at, c.age_hours, c.source,
                  {_utc("c.source_time")} AS source_time, c.source_age_hours, c.source_basis,
                  {_utc("c.effective_since")} AS effective_since, c.data_origin,
                  m.offer_count, m.listings
           FROM current_prices c
           LEFT JOIN market_current m USING (provider, region, instance_type, pricing)
           WHERE c.pricing IN ('on_demand', 'spot', 'interruptible')
           ORDER BY c.provider, c.region, c.instance_type, c.pricing"""
    )
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def spot_risk(con: duckdb.DuckDBPyConnection) -> dict[tuple[str, str, str], tuple[float, float]]:
    rows = con.execute(
        """SELECT provider, region, instance_type, interruption_pct_min, interruption_pct_max FROM spot_risk
           WHERE interruption_pct_min IS NOT NULL"""
    ).fetchall()
    return {(p, r, i): (lo, hi) for p, r, i, lo, hi in rows}


def prices_as_of(con: duckdb.DuckDBPyConnection) -> str:
    row = con.execute(f"SELECT {_utc('min(observed_at)')}, {_utc('max(observed_at)')} FROM current_prices").fetchone()
    if row is None or row[0] is None:
        return ""
    return row[1] if row[0][:10] == row[1][:10] else f"{row[0]} .. {row[1]}"


def rent_observed(
    con: duckdb.DuckDBPyConnection,
    gpu: str,
    days: int = 90,
    min_reliability: float = defaults.MIN_RELIABILITY.value,
) -> dict[str, Any]:
    """The rent a GPU box competes with: a price a renter can really get, and its recent history.

    * ``cloud``: the cheapest current on-demand $/GPU-hour among providers with a price list (a listed
      price, available wherever the provider has capacity);
    * ``market``: the median $/GPU-hour of the GPU's reliable marketplace listings (every group and
      GPU count pooled, listings at or above ``min_reliability``), with how many listings it rests on;
    * ``current``: the lower of the two, and ``current_from`` says which -- never one listing's floor;
    * ``median``: the trailing ``days``-day median of the same choice made day by day (the lower of the
      day's cheapest cloud on-demand and the day's marketplace median), shown beside it.
    """
    markets = ", ".join(f"'{m}'" for m in MARKETPLACES)
    cloud = con.execute(
        f"""SELECT usd_per_gpu_hour, provider, region, instance_type,
                   strftime(timezone('UTC', coalesce(source_time, observed_at)), '%Y-%m-%d'), data_origin
            FROM current_prices
            WHERE gpu = ? AND pricing = 'on_demand' AND gpu_count >= 1 AND provider NOT IN ({markets})
            ORDER BY usd_per_gpu_hour, provider, region, instance_type LIMIT 1""",
        [gpu],
    ).fetchone()
    market = con.execute(
        """WITH listed AS (
               SELECT m.provider, unnest(m.listings) AS l, m.gpu_count FROM market_current m
               WHERE m.gpu = ? AND m.pricing = 'on_demand' AND m.listings IS NOT NULL
                 -- a group the latest run no longer lists keeps its last distribution in market_current: its
                 -- listings are gone, and a rent from them was quoted for a GPU no longer on the market
                 AND EXISTS (SELECT 1 FROM current_prices c WHERE c.provider = m.provider AND c.region = m.region
                             AND c.instance_type = m.instance_type AND c.pricing = m.pricing))
           SELECT quantile_cont(l.usd_per_hour / gpu_count, 0.5), count(*), min(provider) FROM listed
           WHERE l.reliability >= ?""",
        [gpu, min_reliability],
    ).fetchone()
    market_origin = con.execute(  # the listings' vintage and origin: those of the provider's current prices
        """SELECT strftime(timezone('UTC', min(coalesce(source_time, observed_at))), '%Y-%m-%d'), min(data_origin)
           FROM current_prices WHERE provider = ? AND gpu = ? AND pricing = 'on_demand'""",
        [market[2] if market is not None else None, gpu],
    ).fetchone()
    median = con.execute(
        f"""WITH cloud AS (
               SELECT day, min(min_usd_per_gpu_hour) AS v FROM gpu_hourly
               WHERE gpu = ? AND pricing = 'on_demand' AND provider NOT IN ({markets})
                 AND day >= current_date - ?::INTEGER GROUP BY day),
           listed AS (
               SELECT m.observed_at, unnest(m.listings) AS l, o.gpu_count
               FROM market_stats m JOIN offers o USING (offer_id)
               WHERE o.gpu = ? AND m.pricing = 'on_demand' AND m.listings IS NOT NULL
                 AND m.observed_at >= current_date - ?::INTEGER),
           market AS (
               SELECT observed_at::DATE AS day, quantile_cont(l.usd_per_hour / gpu_count, 0.5) AS v FROM listed
               WHERE l.reliability >= ? GROUP BY 1),
           daily AS (
               SELECT day, min(v) AS cheapest FROM (SELECT * FROM cloud UNION ALL SELECT * FROM market) GROUP BY day)
           SELECT median(cheapest), count(*) FROM daily""",
        [gpu, days, gpu, days, min_reliability],
    ).fetchone()
    out: dict[str, Any] = {"current": None, "median": None, "median_days": 0, "cloud": None, "market": None}
    if cloud is not None:
        out["cloud"] = {
            "usd_per_gpu_hour": cloud[0],
            "from": f"cheapest cloud on-demand: {cloud[1]} {cloud[2]} {cloud[3]} ({_vintage(cloud[4], cloud[5])})",
        }
    if market is not None and market[0] is not None:
        out["market"] = {
            "usd_per_gpu_hour": market[0],
            "listings": market[1],
            "from": f"{market[2]} median of {market[1]} listings (reliability >= {min_reliability:g}; "
            f"{_vintage(*(market_origin or (None, None)))})",
        }
    candidates = [c for c in (out["cloud"], out["market"]) if c is not None]
    if candidates:
        best = min(candidates, key=lambda c: c["usd_per_gpu_hour"])
        out["current"], out["current_from"] = best["usd_per_gpu_hour"], best["from"]
    if median is not None and median[0] is not None:
        out["median"], out["median_days"] = median[0], median[1]
    return out

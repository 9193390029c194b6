"""What the planner and breakeven read from the warehouse: current offers, spot risk, rent history."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import duckdb


def current_offers(con: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    """Every open price, with the marketplace listing count where there is one (Vast.ai)."""
    cursor = con.execute(
        """SELECT c.provider, c.region, c.instance_type, c.gpu, c.gpu_count, c.pricing, c.usd_per_hour,
                  c.observed_at::VARCHAR AS observed_at, c.age_hours, c.source, m.offer_count
           FROM current_prices c
           LEFT JOIN market_current m USING (provider, region, instance_type, pricing)
           WHERE c.pricing IN ('on_demand', 'spot', 'interruptible')"""
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
    row = con.execute("SELECT min(observed_at)::VARCHAR, max(observed_at)::VARCHAR FROM current_prices").fetchone()
    if row is None or row[0] is None:
        return ""
    return row[1] if row[0][:10] == row[1][:10] else f"{row[0]} .. {row[1]}"


def rent_observed(con: duckdb.DuckDBPyConnection, gpu: str, days: int = 90) -> dict[str, Any]:
    """Cheapest current on-demand $/GPU-hour for the GPU, and the trailing median of the daily cheapest."""
    current = con.execute(
        """SELECT usd_per_gpu_hour, provider, region, instance_type, observed_at::VARCHAR FROM current_prices
           WHERE gpu = ? AND pricing = 'on_demand' AND gpu_count >= 1 ORDER BY usd_per_gpu_hour LIMIT 1""",
        [gpu],
    ).fetchone()
    median = con.execute(
        """WITH daily AS (
               SELECT day, min(min_usd_per_gpu_hour) AS cheapest FROM gpu_hourly
               WHERE gpu = ? AND pricing = 'on_demand' AND day >= current_date - ?::INTEGER GROUP BY day)
           SELECT median(cheapest), count(*) FROM daily""",
        [gpu, days],
    ).fetchone()
    out: dict[str, Any] = {"current": None, "median": None, "median_days": 0}
    if current is not None:
        out["current"] = current[0]
        out["current_from"] = f"{current[1]} {current[2]} {current[3]} ({current[4]})"
    if median is not None and median[0] is not None:
        out["median"], out["median_days"] = median[0], median[1]
    return out

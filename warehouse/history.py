"""Price history read back as a daily series: the cheapest offer per provider and pricing kind."""

from __future__ import annotations

import re
import statistics
from datetime import UTC, date, datetime, timedelta
from typing import TYPE_CHECKING, Any

from warehouse.errors import UsageError
from warehouse.queries import rows

if TYPE_CHECKING:
    import duckdb

_UNITS = {"h": 1 / 24, "d": 1, "w": 7, "m": 30, "y": 365}


def parse_since(text: str, now: datetime | None = None) -> datetime:
    """``90d``, ``12w``, ``6m``, ``1y``, ``36h`` back from now, or an ISO date."""
    now = now or datetime.now(UTC)
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([hdwmy])\s*", text.lower())
    if match:
        return now - timedelta(days=float(match.group(1)) * _UNITS[match.group(2)])
    try:
        day = date.fromisoformat(text.strip())
    except ValueError:
        raise UsageError(f"cannot read --since {text!r}: use 90d, 12w, 6m, 1y, 36h or a date like 2026-01-31") from None
    return datetime(day.year, day.month, day.day, tzinfo=UTC)


def daily_cheapest(
    con: duckdb.DuckDBPyConnection, gpu: str, since: datetime, *, providers: list[str] | None = None
) -> list[dict[str, Any]]:
    """The cheapest $/GPU-hour per provider, pricing kind and day since ``since`` (a calendar range join)."""
    params: list[Any] = [since, gpu]
    where = ""
    if providers:
        where = f" AND h.provider IN ({','.join('?' * len(providers))})"
        params += providers
    return rows(
        con,
        f"""WITH days AS (
                SELECT unnest(generate_series(date_trunc('day', ?::TIMESTAMPTZ),
                                              date_trunc('day', (SELECT max(last_seen) FROM prices)),
                                              INTERVAL 1 DAY)) AS day)
            SELECT d.day::DATE AS day, h.provider, h.pricing, h.gpu,
                   min(h.usd_per_gpu_hour) AS min_usd_per_gpu_hour, count(*) AS offers
            FROM price_history h
            JOIN days d ON h.valid_from < d.day + INTERVAL 1 DAY AND coalesce(h.valid_to, h.last_seen) > d.day
            WHERE h.gpu = ? {where}
            GROUP BY ALL ORDER BY h.provider, h.pricing, day""",
        params,
    )


def summarize(daily: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per provider and pricing kind: min / median / max of the daily cheapest, and the change."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for row in daily:
        groups.setdefault((row["provider"], row["pricing"]), []).append(row)
    out = []
    for (provider, pricing), series in sorted(groups.items()):
        values = [r["min_usd_per_gpu_hour"] for r in series]
        first, last = values[0], values[-1]
        out.append(
            {
                "provider": provider,
                "pricing": pricing,
                "days": len(values),
                "min": min(values),
                "median": statistics.median(values),
                "max": max(values),
                "first": first,
                "last": last,
                "change_pct": round(100 * (last - first) / first, 1),
            }
        )
    return sorted(out, key=lambda r: r["last"])

"""Price history read back as a daily series: the cheapest offer per provider and pricing kind."""

from __future__ import annotations

import re
import statistics
from datetime import UTC, date, datetime
from typing import TYPE_CHECKING, Any

from warehouse.durations import parse_duration
from warehouse.errors import UsageError
from warehouse.queries import rows

if TYPE_CHECKING:
    import duckdb

EVERYTHING = datetime(1970, 1, 1, tzinfo=UTC)


def parse_since(text: str, now: datetime | None = None) -> datetime:
    """A duration back from now (``90d``, ``12w``, ``6mo``, ``1y``, ``36h``: ``warehouse.durations``),
    a date (``2026-01-31``, UTC midnight), or ``all``."""
    now = now or datetime.now(UTC)
    if text.strip().lower() == "all":
        return EVERYTHING
    try:
        day = date.fromisoformat(text.strip())
    except ValueError as exc:
        _refuse_a_bad_date(text, exc)
    else:
        return datetime(day.year, day.month, day.day, tzinfo=UTC)
    if not re.match(r"^\s*[0-9.]", text):
        raise UsageError(
            f"cannot read --since {text!r}: write a period back from now (90d, 12w, 6mo, 1y, 36h), "
            "a date like 2026-01-31, or all"
        )
    try:
        return now - parse_duration(text, what="--since")
    except OverflowError:
        return EVERYTHING


def _refuse_a_bad_date(text: str, exc: ValueError) -> None:
    """A ``--since`` that starts like a date (``2026-``) is one, not a duration: an impossible day
    (``2026-02-30``) or another layout (``2026-1-1``, ``2026-01-01T00:00``) is told so, rather than given
    the duration parser's "write a number and a unit", which never mentions dates."""
    if not re.match(r"^\s*[0-9]{4}-", text):
        return
    if re.match(r"^\s*[0-9]{4}-[0-9]{2}-[0-9]{2}\s*$", text):
        raise UsageError(f"--since {text!r} is not a real date: {exc}") from None
    raise UsageError(f"--since {text!r} is not a date: write a date as YYYY-MM-DD, e.g. 2026-01-31") from None


def daily_cheapest(
    con: duckdb.DuckDBPyConnection, gpu: str, since: datetime, *, providers: list[str] | None = None
) -> list[dict[str, Any]]:
    """The cheapest $/GPU-hour per provider, pricing kind and UTC day since ``since`` (a calendar range join).

    ``imported`` says whether that day's cheapest price came from an imported archive rather than a scrape.
    The calendar starts at the GPU's first price when ``since`` is earlier, so ``--since all`` costs no more
    than the history there is.
    """
    con.execute("SET TimeZone = 'UTC'")  # day buckets are UTC days whatever the host
    params: list[Any] = [since, gpu, gpu]
    where = ""
    if providers:
        where = f" AND o.provider IN ({','.join('?' * len(providers))})"
        params += providers
    return rows(
        con,
        f"""WITH h AS (
                SELECT p.offer_id, o.provider, p.pricing, o.gpu, p.usd_per_hour / o.gpu_count AS usd_per_gpu_hour,
                       p.valid_from, coalesce(p.valid_to, p.last_seen) AS valid_until, p.valid_to IS NULL AS open,
                       p.archive_commit IS NOT NULL AS imported, coalesce(r.data_origin, 'unknown') AS origin
                FROM prices p JOIN offers o USING (offer_id) LEFT JOIN scrape_runs r ON r.run_id = p.last_run),
            days AS (
                SELECT unnest(generate_series(
                    date_trunc('day', greatest(?::TIMESTAMPTZ,
                                               (SELECT min(p.valid_from) FROM prices p JOIN offers o USING (offer_id)
                                                WHERE o.gpu = ?))),
                    date_trunc('day', (SELECT max(last_seen) FROM prices)),
                    INTERVAL 1 DAY)) AS day)
            SELECT d.day::DATE AS day, h.provider, h.pricing, h.gpu,
                   min(h.usd_per_gpu_hour) AS min_usd_per_gpu_hour, count(DISTINCT h.offer_id) AS offers,
                   arg_min(h.imported, h.usd_per_gpu_hour) AS imported,
                   arg_min(h.origin, h.usd_per_gpu_hour) AS data_origin
            FROM h
            JOIN days d ON h.valid_from < d.day + INTERVAL 1 DAY
                       AND (h.valid_until > d.day OR (h.open AND h.valid_until >= d.day))
            WHERE h.gpu = ? {where.replace("o.provider", "h.provider")}
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
        imported = sum(1 for r in series if r.get("imported"))
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
                "source": "imported" if imported == len(series) else "scraped" if not imported else "imported+scraped",
                # a recording's declared origin (derived, generated): labelled wherever the prices are shown
                "data_origins": sorted({r["data_origin"] for r in series if r.get("data_origin")}),
                "first_day": series[0]["day"],
                "last_day": series[-1]["day"],
            }
        )
    return sorted(out, key=lambda r: r["last"])

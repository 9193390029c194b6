"""One rule for the names people type: providers, regions, GPUs.

A name matches without regard to case (``AWS``, ``us-EAST-1``, ``us`` for a marketplace country);
an unknown one is a usage error (exit 2) that lists the known values and suggests the closest, in
every command, instead of an empty table or "no offer left". What is known comes from the warehouse
(every region an offer was ever listed in, every provider it has run or priced) plus, for providers,
the registry the caller passes in (a configured provider that has not run yet is known, not a typo).
GPU names resolve through the GPU table (``warehouse.gpus``), which has the same rule.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from warehouse.errors import UsageError

if TYPE_CHECKING:
    import duckdb


def resolve(kind: str, given: Sequence[str] | None, known: Iterable[str], *, flag: str) -> list[str] | None:
    """``given`` in the spelling of ``known`` (deduplicated, in order); None when nothing was given.

    An unknown name raises ``UsageError``: ``unknown region 'mars-1' (--region); known regions: ...``
    with ``did you mean ...?`` when one is close.
    """
    if not given:
        return None
    by_key: dict[str, str] = {}
    for name in known:
        by_key.setdefault(name.lower(), name)
    out: list[str] = []
    unknown: list[str] = []
    for name in given:
        canonical = by_key.get(name.strip().lower())
        if canonical is None:
            unknown.append(name)
        elif canonical not in out:
            out.append(canonical)
    if unknown:
        close = difflib.get_close_matches(unknown[0].strip().lower(), list(by_key), n=1, cutoff=0.6)
        listed = ", ".join(sorted(by_key.values(), key=str.lower)) or "none yet"
        plural = "es" if kind.endswith("s") else "s"
        raise UsageError(
            f"unknown {kind} {', '.join(repr(u) for u in unknown)} ({flag}); known {kind}{plural}: {listed}",
            hint=f"did you mean {by_key[close[0]]}?" if close else None,
        )
    return out


def _column(con: duckdb.DuckDBPyConnection, sql: str) -> list[str]:
    return [row[0] for row in con.execute(sql).fetchall() if row[0]]


def warehouse_providers(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Every provider the warehouse has an offer or a run of."""
    return _column(con, "SELECT provider FROM offers UNION SELECT provider FROM scrape_runs")


def warehouse_regions(
    con: duckdb.DuckDBPyConnection, *, providers: Sequence[str] | None = None, countries: bool = False
) -> list[str]:
    """Every region an offer of ``providers`` (default: any) was listed in; with ``countries``, also the
    countries of marketplace listings (``plan --region US`` keeps a Vast.ai group's listings in the US)."""
    where, params = "", list(providers or [])
    if providers:
        where = f" WHERE provider IN ({', '.join('?' * len(params))})"
    regions = [r[0] for r in con.execute(f"SELECT DISTINCT region FROM offers{where}", params).fetchall() if r[0]]
    if countries:
        sql = f"SELECT DISTINCT unnest(listings).country FROM market_current{where}"
        regions += [r[0] for r in con.execute(sql, params).fetchall() if r[0] and r[0] != "unknown"]
    return regions
